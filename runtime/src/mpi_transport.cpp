//===- mpi_transport.cpp - One process per rank over MPI ------------------===//
//
// The transport works on its own duplicate of the caller's communicator,
// with MPI_ERRORS_RETURN, so that its messages never meet the caller's and
// MPI errors come back as statuses. A step's messages are nonblocking sends
// and receives completed together; MPI's non-overtaking rule matches the
// k-th send of a rank to a peer with the peer's k-th receive from it, which
// is the plan's rule too. Messages over the size limit go in pieces, cut the
// same way on both sides.
//
// Waiting polls instead of blocking in MPI_Waitall, so that it can give up
// after the timeout and notice that a peer failed: every rank keeps a
// receive posted for failure notices, and a rank that fails sends one to
// every peer. The agreement, too, is point-to-point rather than an
// allgather: a rank that gives up can cancel its receives, while a
// collective cannot be cancelled and would leave MPI_Finalize waiting.
//
//===----------------------------------------------------------------------===//

#include "transport.h"

#include "plan_internal.h"

#if M2N_HAVE_MPI

// Only MPI's C API: the deprecated C++ bindings would need a library more.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <set>
#include <thread>

namespace m2n {
namespace {

constexpr int kDataTag = 1;
constexpr int kFailureTag = 2;
constexpr int kAgreeTag = 3;

// What a rank tells the others in an agreement or when it fails travels as
// an AgreeNotice (transport.h); a failure's text is its why.
using Notice = AgreeNotice;

Notice makeNotice(uint64_t planHash, bool ready, const std::string &text) {
  return agreeNotice({planHash, ready, text});
}

std::string noticeText(const Notice &notice) { return agreeRecord(notice).why; }

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int size = 0;
  if (MPI_Error_string(code, text, &size) != MPI_SUCCESS)
    return concat("MPI error ", code);
  return std::string(text, size);
}

class MpiTransport final : public TransportImpl {
public:
  MpiTransport(MPI_Comm comm, uint64_t maxMessageBytes)
      : comm_(comm), maxMessageBytes_(maxMessageBytes) {
    int rank = 0, size = 0;
    MPI_Comm_rank(comm_, &rank);
    MPI_Comm_size(comm_, &size);
    rank_ = static_cast<uint32_t>(rank);
    size_ = static_cast<uint32_t>(size);
  }
  ~MpiTransport() override;

  /// Posts the receive for failure notices.
  m2n_status_t start();

  uint32_t rank() const override { return rank_; }
  uint32_t worldSize() const override { return size_; }
  const char *name() const override { return "mpi"; }
  void setTimeout(double seconds) override { timeout_ = seconds; }
  m2n_status_t agree(uint64_t planHash, bool ready, const std::string &why,
                     DeviceImpl &device) override;
  m2n_status_t exchange(uint64_t step, const std::vector<TransferOp> &ops,
                        DeviceImpl &device) override;
  void abort(const std::string &why) override { fail(why); }

private:
  // A request in flight and whom it waits for.
  struct Pending {
    MPI_Request request;
    uint32_t peer;
    bool receive;
  };

  m2n_status_t post(bool receive, void *data, int count, uint32_t peer,
                    int tag);
  m2n_status_t complete(const std::string &where);
  std::string openPeers();
  bool peerFailed();
  void withdraw();
  m2n_status_t fail(const std::string &why);
  m2n_status_t failure() const {
    return m2n_status_create(M2N_STATUS_ABORTED, failure_.c_str());
  }

  MPI_Comm comm_;
  uint32_t rank_ = 0;
  uint32_t size_ = 0;
  uint64_t maxMessageBytes_;
  double timeout_ = M2N_TRANSPORT_DEFAULT_TIMEOUT_S;
  std::vector<Pending> pending_;
  std::vector<MPI_Request> requests_; // of pending_, for MPI_Testall
  // The agreement's buffers live as long as the transport: sends that were
  // given up may still read them.
  Notice agreeMine_ = {};
  std::vector<Notice> agreeAll_;
  Notice incoming_ = {};
  MPI_Request incomingRequest_ = MPI_REQUEST_NULL;
  // Sent to every peer on failure; on the heap, as sends to peers that never
  // receive it may outlive the transport.
  std::unique_ptr<Notice> outgoing_;
  std::vector<MPI_Request> outgoingRequests_;
  std::string failure_; // empty while healthy
};

MpiTransport::~MpiTransport() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized)
    return;
  if (incomingRequest_ != MPI_REQUEST_NULL) {
    MPI_Cancel(&incomingRequest_);
    MPI_Wait(&incomingRequest_, MPI_STATUS_IGNORE);
  }
  int sent = 1;
  if (!outgoingRequests_.empty())
    MPI_Testall(static_cast<int>(outgoingRequests_.size()),
                outgoingRequests_.data(), &sent, MPI_STATUSES_IGNORE);
  if (!sent) {
    for (MPI_Request &request : outgoingRequests_)
      if (request != MPI_REQUEST_NULL)
        MPI_Request_free(&request);
    // MPI may still read the notice for the sends it goes on with.
    (void)outgoing_.release();
  }
  // The communicator is not freed. Once any rank has failed, messages may
  // still arrive for it (an agreement or a failure notice from a peer that
  // gave up on this one), and Open MPI hands those of a freed communicator
  // to the next one that gets its context id, or stalls on them: a later
  // collective on MPI_COMM_WORLD was seen to hang. Kept, it costs one
  // communicator per transport until MPI_Finalize.
}

m2n_status_t MpiTransport::start() {
  int code = MPI_Irecv(&incoming_, sizeof(Notice), MPI_BYTE, MPI_ANY_SOURCE,
                       kFailureTag, comm_, &incomingRequest_);
  if (code != MPI_SUCCESS)
    return m2n_status_create(
        M2N_STATUS_UNAVAILABLE,
        concat("mpi transport: MPI_Irecv failed: ", mpiError(code)).c_str());
  return nullptr;
}

m2n_status_t MpiTransport::agree(uint64_t planHash, bool ready,
                                 const std::string &why, DeviceImpl &) {
  if (!failure_.empty())
    return failure();
  agreeMine_ = makeNotice(planHash, ready, why);
  agreeAll_.assign(size_, Notice{});
  agreeAll_[rank_] = agreeMine_;
  pending_.clear();
  for (bool receive : {true, false}) {
    for (uint32_t peer = 0; peer < size_; ++peer) {
      if (peer == rank_)
        continue;
      void *data = receive ? &agreeAll_[peer] : &agreeMine_;
      if (m2n_status_t status =
              post(receive, data, sizeof(Notice), peer, kAgreeTag)) {
        withdraw();
        return status;
      }
    }
  }
  M2N_RETURN_IF_ERROR(complete("in the agreement"));

  std::vector<AgreeRecord> records(size_);
  for (uint32_t rank = 0; rank < size_; ++rank)
    records[rank] = agreeRecord(agreeAll_[rank]);
  return agreementStatus(records);
}

m2n_status_t MpiTransport::exchange(uint64_t step,
                                    const std::vector<TransferOp> &ops,
                                    DeviceImpl &) {
  if (!failure_.empty())
    return failure();
  pending_.clear();
  for (const TransferOp &op : ops) {
    for (uint64_t offset = 0; offset < op.bytes; offset += maxMessageBytes_) {
      int count = static_cast<int>(
          std::min<uint64_t>(maxMessageBytes_, op.bytes - offset));
      void *data = static_cast<uint8_t *>(op.data) + offset;
      if (m2n_status_t status = post(op.kind == TransferOp::Receive, data,
                                     count, op.peer, kDataTag)) {
        withdraw();
        return status;
      }
    }
  }
  return complete(concat("in step ", step));
}

m2n_status_t MpiTransport::post(bool receive, void *data, int count,
                                uint32_t peer, int tag) {
  MPI_Request request = MPI_REQUEST_NULL;
  int source = static_cast<int>(peer);
  int code =
      receive ? MPI_Irecv(data, count, MPI_BYTE, source, tag, comm_, &request)
              : MPI_Isend(data, count, MPI_BYTE, source, tag, comm_, &request);
  if (code != MPI_SUCCESS)
    return fail(concat(receive ? "MPI_Irecv from rank " : "MPI_Isend to rank ",
                       peer, " failed: ", mpiError(code)));
  pending_.push_back({request, peer, receive});
  return nullptr;
}

m2n_status_t MpiTransport::complete(const std::string &where) {
  requests_.clear();
  for (const Pending &pending : pending_)
    requests_.push_back(pending.request);
  auto start = std::chrono::steady_clock::now();
  for (;;) {
    int done = 0;
    int code = MPI_Testall(static_cast<int>(requests_.size()), requests_.data(),
                           &done, MPI_STATUSES_IGNORE);
    if (code != MPI_SUCCESS) {
      withdraw();
      return fail(concat(where, ": MPI_Testall failed: ", mpiError(code)));
    }
    if (done) {
      pending_.clear();
      return nullptr;
    }
    if (peerFailed()) {
      withdraw();
      return failure();
    }
    std::chrono::duration<double> waited =
        std::chrono::steady_clock::now() - start;
    if (timeout_ > 0 && waited.count() > timeout_) {
      std::string peers = openPeers();
      withdraw();
      return fail(concat("timed out after ", formatSeconds(timeout_), " ",
                         where, ", waiting for rank ", peers));
    }
    // Ranks may share cores (oversubscribed tests); let the others run.
    std::this_thread::yield();
  }
}

bool MpiTransport::peerFailed() {
  if (!failure_.empty())
    return true;
  if (incomingRequest_ == MPI_REQUEST_NULL)
    return false;
  int arrived = 0;
  if (MPI_Test(&incomingRequest_, &arrived, MPI_STATUS_IGNORE) != MPI_SUCCESS ||
      !arrived)
    return false;
  failure_ = noticeText(incoming_);
  return true;
}

// The peers of the requests still open, in rank order: "1, 3".
std::string MpiTransport::openPeers() {
  std::set<uint32_t> open;
  for (size_t i = 0; i < pending_.size(); ++i) {
    // MPI_Testall left every request as it was; test them one by one.
    int finished = 0;
    MPI_Test(&requests_[i], &finished, MPI_STATUS_IGNORE);
    pending_[i].request = requests_[i];
    if (!finished)
      open.insert(pending_[i].peer);
  }
  std::string peers;
  for (uint32_t peer : open)
    peers += concat(peers.empty() ? "" : ", ", peer);
  return peers;
}

// Gives up the requests in flight: receives are cancelled; sends cannot be,
// and are left to MPI.
void MpiTransport::withdraw() {
  for (Pending &pending : pending_) {
    if (pending.request == MPI_REQUEST_NULL)
      continue;
    if (pending.receive) {
      MPI_Cancel(&pending.request);
      MPI_Wait(&pending.request, MPI_STATUS_IGNORE);
    } else {
      MPI_Request_free(&pending.request);
    }
  }
  pending_.clear();
}

m2n_status_t MpiTransport::fail(const std::string &why) {
  if (!failure_.empty())
    return failure();
  failure_ = failedRankMessage(rank_, why);
  outgoing_ = std::make_unique<Notice>(makeNotice(0, false, failure_));
  for (uint32_t peer = 0; peer < size_; ++peer) {
    if (peer == rank_)
      continue;
    MPI_Request request = MPI_REQUEST_NULL;
    if (MPI_Isend(outgoing_.get(), sizeof(Notice), MPI_BYTE,
                  static_cast<int>(peer), kFailureTag, comm_,
                  &request) == MPI_SUCCESS)
      outgoingRequests_.push_back(request);
  }
  return failure();
}

} // namespace

m2n_status_t createMpiTransport(const void *comm, uint64_t maxMessageBytes,
                                std::unique_ptr<TransportImpl> *out) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    return m2n_status_create(
        M2N_STATUS_UNAVAILABLE,
        "mpi transport: MPI is not initialized (call MPI_Init first)");
  MPI_Comm base = comm ? *static_cast<const MPI_Comm *>(comm) : MPI_COMM_WORLD;
  MPI_Comm own = MPI_COMM_NULL;
  int code = MPI_Comm_dup(base, &own);
  if (code != MPI_SUCCESS)
    return m2n_status_create(
        M2N_STATUS_UNAVAILABLE,
        concat("mpi transport: MPI_Comm_dup failed: ", mpiError(code)).c_str());
  MPI_Comm_set_errhandler(own, MPI_ERRORS_RETURN);
  uint64_t pieceBytes =
      std::clamp<uint64_t>(maxMessageBytes, 1, uint64_t(INT_MAX));
  auto transport = std::make_unique<MpiTransport>(own, pieceBytes);
  M2N_RETURN_IF_ERROR(transport->start());
  *out = std::move(transport);
  return nullptr;
}

} // namespace m2n

#else // !M2N_HAVE_MPI

namespace m2n {

m2n_status_t createMpiTransport(const void *, uint64_t,
                                std::unique_ptr<TransportImpl> *) {
  return m2n_status_create(M2N_STATUS_UNAVAILABLE,
                           "mpi transport: this build of the m2n runtime has "
                           "no MPI (MPI was not found, or "
                           "M2N_RUNTIME_ENABLE_MPI is OFF)");
}

} // namespace m2n

#endif // M2N_HAVE_MPI
