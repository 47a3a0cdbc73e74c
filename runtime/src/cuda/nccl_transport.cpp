//===- nccl_transport.cpp - Moving a step's messages with NCCL ------------===//

#include "cuda/nccl_transport.h"

#include "device.h"

#include "m2n/cuda.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace m2n::cuda {
namespace {

constexpr int64_t kDefaultTimeoutMs = 600 * 1000;
// Between polls of a wait: short next to NCCL's own latencies, long enough
// not to keep a core busy.
constexpr auto kPollInterval = std::chrono::microseconds(20);

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t defaultTimeoutMs() {
  const char *text = std::getenv("M2N_NCCL_TIMEOUT_SECONDS");
  if (!text || !*text)
    return kDefaultTimeoutMs;
  char *end = nullptr;
  double seconds = std::strtod(text, &end);
  if (*end || seconds < 0)
    return kDefaultTimeoutMs;
  return static_cast<int64_t>(seconds * 1000);
}

// A peer that failed or vanished is ABORTED; anything else is misuse or a
// bug.
m2n_status_code_t codeOf(ncclResult_t result) {
  return result == ncclRemoteError || result == ncclSystemError
             ? M2N_STATUS_ABORTED
             : M2N_STATUS_INTERNAL;
}

} // namespace

NcclTransport::NcclTransport(const NcclApi *api, ncclComm_t comm, bool owned)
    : api_(api), comm_(comm), owned_(owned), timeoutMs_(defaultTimeoutMs()) {}

NcclTransport::~NcclTransport() {
  DeviceGuard guard(device_);
  if (owned_ && !aborted_) {
    // Finalizing flushes the communicator's work; on failure or timeout it
    // is aborted instead, which frees it.
    m2n_status_t status = settle(api_->commFinalize(comm_), "ncclCommFinalize");
    if (!status)
      api_->commDestroy(comm_);
    m2n_status_free(status);
  }
  if (agreeHost_)
    cudaFreeHost(agreeHost_);
  agreeDevice_.reset();
  waited_.reset();
}

m2n_status_t NcclTransport::borrow(ncclComm_t comm,
                                   std::unique_ptr<NcclTransport> *out) {
  const NcclApi *api = nullptr;
  M2N_RETURN_IF_ERROR(loadNccl(&api));
  std::unique_ptr<NcclTransport> transport(
      new NcclTransport(api, comm, /*owned=*/false));
  M2N_RETURN_IF_ERROR(transport->settle(api->commCount(comm, &transport->size_),
                                        "ncclCommCount"));
  M2N_RETURN_IF_ERROR(transport->settle(
      api->commUserRank(comm, &transport->rank_), "ncclCommUserRank"));
  M2N_RETURN_IF_ERROR(transport->settle(
      api->commCuDevice(comm, &transport->device_), "ncclCommCuDevice"));
  DeviceGuard guard(transport->device_);
  M2N_RETURN_IF_ERROR(guard.status());
  M2N_RETURN_IF_ERROR(transport->waited_.create());
  *out = std::move(transport);
  return nullptr;
}

m2n_status_t NcclTransport::create(const ncclUniqueId &id, int nranks, int rank,
                                   std::unique_ptr<NcclTransport> *out) {
  const NcclApi *api = nullptr;
  M2N_RETURN_IF_ERROR(loadNccl(&api));
  int device = 0;
  M2N_RETURN_IF_ERROR(currentDevice(&device));
  // Non-blocking: joining returns at once and is polled, so that a rank
  // that never joins is a timeout rather than a hang.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclResult_t result =
      api->commInitRankConfig(&comm, nranks, id, rank, &config);
  if (result != ncclSuccess && result != ncclInProgress) {
    std::string message =
        concat("NCCL: ncclCommInitRankConfig of rank ", rank, " of ", nranks,
               " failed: ", api->getErrorString(result));
    return m2n_status_create(codeOf(result), message.c_str());
  }
  std::unique_ptr<NcclTransport> transport(
      new NcclTransport(api, comm, /*owned=*/true));
  transport->device_ = device;
  M2N_RETURN_IF_ERROR(transport->settle(result, "joining the communicator"));
  M2N_RETURN_IF_ERROR(transport->waited_.create());
  transport->size_ = nranks;
  transport->rank_ = rank;
  *out = std::move(transport);
  return nullptr;
}

bool NcclTransport::timedOut(int64_t startNs) const {
  return timeoutMs_ > 0 && nowNs() - startNs > timeoutMs_ * 1000000;
}

m2n_status_t NcclTransport::fail(const std::string &why) {
  if (!aborted_) {
    api_->commAbort(comm_);
    aborted_ = true;
  }
  std::string message =
      owned_ ? concat("NCCL: ", why, "; the communicator was aborted")
             : concat("NCCL: ", why,
                      "; the caller's communicator was aborted (ncclCommAbort "
                      "freed it) and must not be used or destroyed again");
  return m2n_status_create(M2N_STATUS_ABORTED, message.c_str());
}

m2n_status_t NcclTransport::ncclStatus(ncclResult_t result, const char *what) {
  std::string message =
      concat("NCCL: ", what, " failed: ", api_->getErrorString(result));
  const char *last = api_->getLastError(comm_);
  if (last && *last)
    message += concat(" (", last, ")");
  return m2n_status_create(codeOf(result), message.c_str());
}

m2n_status_t NcclTransport::query() {
  ncclResult_t state = ncclSuccess;
  ncclResult_t result = api_->commGetAsyncError(comm_, &state);
  if (result != ncclSuccess)
    return ncclStatus(result, "ncclCommGetAsyncError");
  if (state == ncclSuccess || state == ncclInProgress)
    return nullptr;
  std::string why =
      concat("the communicator failed: ", api_->getErrorString(state));
  const char *last = api_->getLastError(comm_);
  if (last && *last)
    why += concat(" (", last, ")");
  return fail(why);
}

m2n_status_t NcclTransport::health() {
  if (aborted_)
    return m2n_status_create(M2N_STATUS_ABORTED,
                             "NCCL: the communicator was aborted earlier");
  return query();
}

m2n_status_t NcclTransport::settle(ncclResult_t result, const char *what) {
  if (result == ncclSuccess)
    return nullptr;
  if (result != ncclInProgress)
    return ncclStatus(result, what);
  int64_t start = nowNs();
  for (;;) {
    ncclResult_t state = ncclSuccess;
    ncclResult_t queried = api_->commGetAsyncError(comm_, &state);
    if (queried != ncclSuccess)
      return ncclStatus(queried, "ncclCommGetAsyncError");
    if (state == ncclSuccess)
      return nullptr;
    if (state != ncclInProgress)
      return fail(concat(what, " failed: ", api_->getErrorString(state)));
    if (timedOut(start))
      return fail(concat(what, " timed out after ", timeoutMs_, " ms"));
    std::this_thread::sleep_for(kPollInterval);
  }
}

m2n_status_t NcclTransport::wait(cudaEvent_t event, const char *what) {
  int64_t start = nowNs();
  for (;;) {
    cudaError_t error = cudaEventQuery(event);
    if (error == cudaSuccess)
      return query();
    if (error != cudaErrorNotReady)
      return cudaStatus(error, what);
    M2N_RETURN_IF_ERROR(query());
    if (timedOut(start))
      return fail(concat(what, " timed out after ", timeoutMs_,
                         " ms (set M2N_NCCL_TIMEOUT_SECONDS or "
                         "m2n_transport_set_timeout)"));
    std::this_thread::sleep_for(kPollInterval);
  }
}

std::string NcclTransport::cannotCarry(const DeviceImpl &device) const {
  if (device.memoryKind() != MemoryKind::Cuda)
    return concat("the nccl transport moves CUDA memory only, not ",
                  device.describe());
  if (device.cudaDevice() != device_)
    return concat("the communicator is on CUDA device ", device_,
                  ", the executor's memory on ", device.describe());
  return "";
}

m2n_status_t NcclTransport::enqueue(const TransferOp &op, cudaStream_t stream) {
  bool send = op.kind == TransferOp::Send;
  auto *data = static_cast<uint8_t *>(op.data);
  for (uint64_t done = 0; done < op.bytes; done += chunkBytes_) {
    uint64_t bytes = std::min(chunkBytes_, op.bytes - done);
    int peer = static_cast<int>(op.peer);
    ncclResult_t result =
        send ? api_->send(data + done, bytes, ncclChar, peer, comm_, stream)
             : api_->recv(data + done, bytes, ncclChar, peer, comm_, stream);
    if (result != ncclSuccess && result != ncclInProgress)
      return ncclStatus(result, send ? "ncclSend" : "ncclRecv");
  }
  return nullptr;
}

m2n_status_t NcclTransport::exchange(uint64_t,
                                     const std::vector<TransferOp> &ops,
                                     DeviceImpl &device) {
  M2N_RETURN_IF_ERROR(health());
  if (ops.empty())
    return nullptr;
  DeviceGuard guard(device_);
  M2N_RETURN_IF_ERROR(guard.status());
  auto stream = static_cast<cudaStream_t>(device.stream());
  ncclResult_t result = api_->groupStart();
  if (result != ncclSuccess)
    return ncclStatus(result, "ncclGroupStart");
  m2n_status_t failed = nullptr;
  for (const TransferOp &op : ops) {
    if ((failed = enqueue(op, stream)))
      break;
  }
  // The group is closed even after a failure, so that NCCL's group state
  // stays balanced for the caller's next collective.
  m2n_status_t ended = settle(api_->groupEnd(), "ncclGroupEnd");
  if (failed) {
    m2n_status_free(ended);
    return failed;
  }
  return ended;
}

m2n_status_t NcclTransport::agree(uint64_t planHash, bool ready,
                                  const std::string &why, DeviceImpl &device) {
  M2N_RETURN_IF_ERROR(health());
  DeviceGuard guard(device_);
  M2N_RETURN_IF_ERROR(guard.status());
  const size_t bytes = sizeof(AgreeNotice) * static_cast<size_t>(size_);
  if (!agreeHost_) {
    M2N_RETURN_IF_ERROR(agreeDevice_.allocate(bytes, "the plan agreement"));
    M2N_CUDA_RETURN_IF_ERROR(
        cudaMallocHost(reinterpret_cast<void **>(&agreeHost_), bytes));
  }
  auto stream = static_cast<cudaStream_t>(device.stream());
  AgreeNotice *all = reinterpret_cast<AgreeNotice *>(agreeDevice_.get());
  agreeHost_[rank_] = agreeNotice({planHash, ready, why});
  M2N_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(all + rank_, agreeHost_ + rank_,
                                           sizeof(AgreeNotice),
                                           cudaMemcpyHostToDevice, stream));
  // In place: rank r's notice is already at its place in the gathered
  // array, as ncclAllGather's in-place form wants.
  M2N_RETURN_IF_ERROR(
      settle(api_->allGather(all + rank_, all, sizeof(AgreeNotice), ncclChar,
                             comm_, stream),
             "ncclAllGather of the agreement"));
  M2N_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(agreeHost_, all, bytes,
                                           cudaMemcpyDeviceToHost, stream));
  M2N_CUDA_RETURN_IF_ERROR(cudaEventRecord(waited_.get(), stream));
  M2N_RETURN_IF_ERROR(wait(waited_.get(), "the agreement"));
  std::vector<AgreeRecord> records;
  for (int r = 0; r < size_; ++r)
    records.push_back(agreeRecord(agreeHost_[r]));
  return agreementStatus(records);
}

m2n_status_t NcclTransport::synchronize(DeviceImpl &device) {
  DeviceGuard guard(device_);
  M2N_RETURN_IF_ERROR(guard.status());
  M2N_CUDA_RETURN_IF_ERROR(cudaEventRecord(
      waited_.get(), static_cast<cudaStream_t>(device.stream())));
  return wait(waited_.get(), "the refit");
}

} // namespace m2n::cuda

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

using m2n::cuda::NcclTransport;

extern "C" {

m2n_status_t m2n_cuda_nccl_load(int *version) {
  const m2n::cuda::NcclApi *api = nullptr;
  M2N_RETURN_IF_ERROR(m2n::cuda::loadNccl(&api));
  if (version)
    *version = api->version;
  return nullptr;
}

m2n_status_t m2n_cuda_nccl_get_unique_id(void *out, size_t size) {
  if (!out || size < sizeof(ncclUniqueId))
    return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT,
                             "m2n_cuda_nccl_get_unique_id: needs a buffer of "
                             "M2N_CUDA_NCCL_UNIQUE_ID_BYTES bytes");
  const m2n::cuda::NcclApi *api = nullptr;
  M2N_RETURN_IF_ERROR(m2n::cuda::loadNccl(&api));
  ncclUniqueId id;
  ncclResult_t result = api->getUniqueId(&id);
  if (result != ncclSuccess) {
    std::string message = m2n::concat("NCCL: ncclGetUniqueId failed: ",
                                      api->getErrorString(result));
    return m2n_status_create(M2N_STATUS_UNAVAILABLE, message.c_str());
  }
  std::memcpy(out, &id, sizeof(id));
  return nullptr;
}

m2n_status_t m2n_cuda_transport_create_nccl(void *nccl_comm,
                                            m2n_transport_t *out) {
  if (!out)
    return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT,
                             "m2n_cuda_transport_create_nccl: out is NULL");
  *out = nullptr;
  if (!nccl_comm)
    return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT,
                             "m2n_cuda_transport_create_nccl: the "
                             "communicator is NULL");
  std::unique_ptr<NcclTransport> nccl;
  M2N_RETURN_IF_ERROR(
      NcclTransport::borrow(static_cast<ncclComm_t>(nccl_comm), &nccl));
  *out = new m2n_transport_s{std::move(nccl)};
  return nullptr;
}

m2n_status_t
m2n_cuda_transport_create_nccl_unique_id(const void *unique_id_bytes,
                                         int nranks, int rank,
                                         m2n_transport_t *out) {
  if (!out)
    return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT,
                             "m2n_cuda_transport_create_nccl_unique_id: out "
                             "is NULL");
  *out = nullptr;
  if (!unique_id_bytes || nranks < 1 || rank < 0 || rank >= nranks) {
    std::string message = m2n::concat(
        "m2n_cuda_transport_create_nccl_unique_id: needs a unique id and 0 "
        "<= rank < nranks, got rank ",
        rank, " of ", nranks);
    return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT, message.c_str());
  }
  ncclUniqueId id;
  std::memcpy(&id, unique_id_bytes, sizeof(id));
  std::unique_ptr<NcclTransport> nccl;
  M2N_RETURN_IF_ERROR(NcclTransport::create(id, nranks, rank, &nccl));
  *out = new m2n_transport_s{std::move(nccl)};
  return nullptr;
}

} // extern "C"
