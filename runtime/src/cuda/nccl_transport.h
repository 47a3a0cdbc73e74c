//===- nccl_transport.h - Moving a step's messages with NCCL ----*- C++ -*-===//
//
// The nccl transport: one process per rank, CUDA memory only. Exchanges
// are enqueued on the executor's stream as one NCCL group; the agreement
// gathers every rank's notice (transport.h) with one ncclAllGather, so
// that its verdict is word for word that of the other transports. Host
// waits on NCCL poll the work, the communicator's asynchronous error and
// the time, and abort the communicator on error or timeout.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_CUDA_NCCL_TRANSPORT_H
#define M2N_CUDA_NCCL_TRANSPORT_H

#include "cuda/cuda_util.h"
#include "cuda/nccl_loader.h"

#include "transport.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace m2n::cuda {

/// A communicator, borrowed or owned, and the waits on it. Once it has
/// been aborted every call fails with ABORTED.
class NcclTransport final : public TransportImpl {
public:
  /// Bytes of one ncclSend or ncclRecv at most; longer transfers are split
  /// the same way on both peers. NCCL takes size_t counts, but staying
  /// below 2^31 keeps clear of any int arithmetic on sizes.
  static constexpr uint64_t kMaxChunkBytes = uint64_t(1) << 30;

  /// Over `comm`, which the caller keeps owning.
  static m2n_status_t borrow(ncclComm_t comm,
                             std::unique_ptr<NcclTransport> *out);
  /// Over a new non-blocking communicator of `nranks` joined by `id`.
  static m2n_status_t create(const ncclUniqueId &id, int nranks, int rank,
                             std::unique_ptr<NcclTransport> *out);
  ~NcclTransport() override;

  /// Splits transfers at `bytes` instead of kMaxChunkBytes (for tests).
  void setChunkBytes(uint64_t bytes) { chunkBytes_ = bytes; }

  uint32_t rank() const override { return static_cast<uint32_t>(rank_); }
  uint32_t worldSize() const override { return static_cast<uint32_t>(size_); }
  const char *name() const override { return "nccl"; }
  std::string cannotCarry(const DeviceImpl &device) const override;
  bool streamOrdered() const override { return true; }
  void setTimeout(double seconds) override {
    timeoutMs_ = static_cast<int64_t>(seconds * 1000);
  }

  /// Gathers every rank's notice on the device's stream and waits for
  /// them: the same verdict on every rank.
  m2n_status_t agree(uint64_t planHash, bool ready, const std::string &why,
                     DeviceImpl &device) override;
  /// Enqueues the step's messages on the device's stream as one NCCL
  /// group, in order.
  m2n_status_t exchange(uint64_t step, const std::vector<TransferOp> &ops,
                        DeviceImpl &device) override;
  m2n_status_t synchronize(DeviceImpl &device) override;
  void abort(const std::string &why) override { m2n_status_free(fail(why)); }
  /// ABORTED if the communicator failed or was aborted.
  m2n_status_t health() override;

private:
  NcclTransport(const NcclApi *api, ncclComm_t comm, bool owned);
  m2n_status_t query();
  m2n_status_t ncclStatus(ncclResult_t result, const char *what);
  /// Waits for a non-blocking communicator to finish the call in progress.
  m2n_status_t settle(ncclResult_t result, const char *what);
  /// Aborts the communicator: ABORTED, saying why.
  m2n_status_t fail(const std::string &why);
  bool timedOut(int64_t startNs) const;
  /// Waits until `event` completes, watching the communicator for errors
  /// and the timeout.
  m2n_status_t wait(cudaEvent_t event, const char *what);
  m2n_status_t enqueue(const TransferOp &op, cudaStream_t stream);

  const NcclApi *api_;
  ncclComm_t comm_;
  bool owned_;
  bool aborted_ = false;
  int size_ = 0;
  int rank_ = 0;
  int device_ = 0;
  int64_t timeoutMs_;
  uint64_t chunkBytes_ = kMaxChunkBytes;
  // The agreement's notices, every rank's, on the device and pinned on the
  // host; and the event of a host wait.
  DeviceBuffer agreeDevice_;
  AgreeNotice *agreeHost_ = nullptr;
  Event waited_;
};

} // namespace m2n::cuda

#endif // M2N_CUDA_NCCL_TRANSPORT_H
