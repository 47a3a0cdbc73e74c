//===- transport.h - The transport interface, for the runtime -*- C++ -*-===//
//
// The C handle m2n_transport_t wraps an m2n::TransportImpl. The executor
// needs two collective operations of it:
//
//   agree     every rank contributes (plan hash, ready, why); all ranks get
//             the same verdict, so that they fail together before any data
//             moves rather than some waiting on others that gave up.
//   exchange  one step's sends and receives, issued as one group (as an
//             NCCL group would be), matched between two ranks by their order
//             within the step.
//
// Both take the executor's DeviceImpl (device.h): where its buffers live and,
// on a GPU, the stream its work is ordered on. Host transports (mpi)
// complete an exchange before they return; a stream-ordered one (nccl)
// enqueues it on the device's stream and returns; sim, whose ranks share
// the process, copies on the receiver's device, ordered after the sender's
// packs and before the sender's next step by the devices' marks.
//
// A transport whose ranks share an address space (sim) can do better than
// carry bytes from one staging buffer to another: each rank publishes its
// bound buffers, and a receiver pulls a message itself, with walks from
// the sender's buffers straight into its own that fuse the sender's packs
// and its unpacks (program.h). The exchange still matches the message and
// orders it: a pull starts once the sender has posted the message, so
// after every earlier step of the sender (a relay forwards what it
// received then), and the sender's exchange ends once the pull is done, so
// its buffers stay put meanwhile. Pulls run on the host, so executors
// pull only in host memory.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_TRANSPORT_INTERNAL_H
#define M2N_TRANSPORT_INTERNAL_H

#include "m2n/transport.h"
#include "device.h"
#include "plan_internal.h"
#include "walk.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace m2n {

/// One message of an exchange, seen from this rank.
struct TransferOp {
  enum Kind : uint8_t { Send, Receive };
  Kind kind = Send;
  uint32_t peer = 0;
  void *data = nullptr; // the bytes, unless pulled; a send only reads them
  uint64_t bytes = 0;
  /// Pulled (only where the transport shares the address space): the bytes
  /// pass through no `data`; the receiver moves them with `walks`, from the
  /// sender's published buffers (their from side) into its own (their to
  /// side). Both ends of a message say so alike.
  bool pulled = false;
  const std::vector<Walk> *walks = nullptr; // a pulled receive's
};

/// One rank's part of an agreement.
struct AgreeRecord {
  uint64_t planHash = 0;
  bool ready = false;
  std::string why;        // when not ready
};

/// An AgreeRecord as it travels between processes: of a fixed size, so that
/// it goes as one buffer of bytes (the why is cut to fit).
struct AgreeNotice {
  uint64_t planHash;
  uint32_t ready;
  uint32_t textSize;
  char text[240];
};
static_assert(sizeof(AgreeNotice) == 256, "a notice is 256 bytes");

AgreeNotice agreeNotice(const AgreeRecord &record);
AgreeRecord agreeRecord(const AgreeNotice &notice);

class TransportImpl {
public:
  virtual ~TransportImpl() = default;

  virtual uint32_t rank() const = 0;
  virtual uint32_t worldSize() const = 0;
  /// The transport's kind, for messages: "sim", "mpi", "nccl", ...
  virtual const char *name() const = 0;
  /// "" when it can move buffers in the device's memory, else why not.
  virtual std::string cannotCarry(const DeviceImpl &device) const {
    if (device.memoryKind() == MemoryKind::Host)
      return "";
    return concat("the ", name(), " transport moves host memory only, not ",
                  device.describe());
  }
  /// Whether exchanges are only enqueued on the device's stream. Such a
  /// transport agrees on the first run only (and after a bind failed), so
  /// that later runs neither wait nor break a CUDA graph capture.
  virtual bool streamOrdered() const { return false; }
  /// Whether the executor hands each step's messages to the caller
  /// (m2n_executor_step_next) instead of calling exchange.
  virtual bool external() const { return false; }

  /// Whether every peer lives in this rank's address space, so that
  /// messages may be pulled (TransferOp::pulled). Such a transport carries
  /// pulled messages and takes publishBuffers.
  virtual bool sharesAddressSpace() const { return false; }

  /// Where sharesAddressSpace(): publishes this rank's bound buffers for its
  /// peers' pulls, or withdraws them (nullptr). The table must stay valid
  /// and unchanged while this rank runs: peers pull from it only during
  /// this rank's exchanges.
  virtual void publishBuffers(const BufferTable *buffers) { (void)buffers; }

  /// Seconds to wait for a peer in one call before aborting; 0 is forever.
  virtual void setTimeout(double seconds) = 0;

  /// Collective: gathers every rank's (planHash, ready, why) and returns
  /// agreementStatus of them, the same on every rank; or ABORTED when the
  /// group has failed.
  virtual m2n_status_t agree(uint64_t planHash, bool ready,
                             const std::string &why, DeviceImpl &device) = 0;

  /// Step `step`'s messages as one group, in record order. Between two
  /// ranks the k-th send of one matches the k-th receive of the other. On
  /// failure the transport has aborted the group: the peers are told.
  virtual m2n_status_t exchange(uint64_t step,
                                const std::vector<TransferOp> &ops,
                                DeviceImpl &device) = 0;

  /// Waits until the device's work so far, the transport's included, is
  /// done. A stream-ordered transport watches its own failures meanwhile.
  virtual m2n_status_t synchronize(DeviceImpl &device) {
    return device.synchronize();
  }

  /// Tells every peer that this rank failed because of `why`.
  virtual void abort(const std::string &why) = 0;

  /// ABORTED when the transport has failed, which a transport that learns
  /// of failures only as it waits (nccl, external) says before a run.
  virtual m2n_status_t health() { return nullptr; }
};

/// The verdict on an agreement, the same text on every rank: NULL when all
/// hold rank 0's plan and are ready, else ABORTED naming each rank that
/// holds another plan or is not ready, and why.
m2n_status_t agreementStatus(const std::vector<AgreeRecord> &records);

/// `seconds` for messages: "0.5 s".
std::string formatSeconds(double seconds);

/// The message ranks get when rank `rank` has aborted the group.
std::string failedRankMessage(uint32_t rank, const std::string &why);

/// A transport over MPI_COMM_WORLD or the MPI_Comm at `comm`, sending no
/// message larger than `maxMessageBytes` (larger ones go in pieces).
m2n_status_t createMpiTransport(const void *comm, uint64_t maxMessageBytes,
                                std::unique_ptr<TransportImpl> *out);

} // namespace m2n

/// The C handle.
struct m2n_transport_s {
  std::unique_ptr<m2n::TransportImpl> impl;
};

#endif // M2N_TRANSPORT_INTERNAL_H
