//===- nccl_transport.h - Moving a step's messages with NCCL -----*- C++
//-*-===//

#ifndef M2N_CUDA_NCCL_TRANSPORT_H
#define M2N_CUDA_NCCL_TRANSPORT_H

#include "cuda/cuda_util.h"
#include "cuda/nccl_loader.h"

#include "m2n/status.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace m2n::cuda {

/// One send or receive of a step, resolved to device memory.
struct Transfer {
  bool send = false;
  uint32_t peer = 0; // communicator rank
  uint8_t *data = nullptr;
  uint64_t bytes = 0;
};

/// A communicator, borrowed or owned, and the waits on it. Once it has
/// been aborted every call fails with ABORTED.
class NcclTransport {
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
  ~NcclTransport();

  void setTimeoutMs(int64_t milliseconds) { timeoutMs_ = milliseconds; }
  /// Splits transfers at `bytes` instead of kMaxChunkBytes (for tests).
  void setChunkBytes(uint64_t bytes) { chunkBytes_ = bytes; }

  int size() const { return size_; }
  int rank() const { return rank_; }
  int device() const { return device_; }

  /// Enqueues `transfers` on `stream` as one NCCL group, in order.
  m2n_status_t exchange(const std::vector<Transfer> &transfers,
                        cudaStream_t stream);
  /// Checks on `stream` that every rank passes the same `hash`, and waits
  /// for the verdict. ABORTED on every rank when they differ.
  m2n_status_t agree(uint64_t hash, cudaStream_t stream);
  /// Waits until `event` completes, watching the communicator for errors
  /// and the timeout.
  m2n_status_t wait(cudaEvent_t event, const char *what);
  /// ABORTED if the communicator failed or was aborted.
  m2n_status_t health();

private:
  NcclTransport(const NcclApi *api, ncclComm_t comm, bool owned);
  m2n_status_t query();
  m2n_status_t ncclStatus(ncclResult_t result, const char *what);
  /// Waits for a non-blocking communicator to finish the call in progress.
  m2n_status_t settle(ncclResult_t result, const char *what);
  m2n_status_t abort(const std::string &why);
  bool timedOut(int64_t startNs) const;
  m2n_status_t enqueue(const Transfer &transfer, cudaStream_t stream);

  const NcclApi *api_;
  ncclComm_t comm_;
  bool owned_;
  bool aborted_ = false;
  int size_ = 0;
  int rank_ = 0;
  int device_ = 0;
  int64_t timeoutMs_;
  uint64_t chunkBytes_ = kMaxChunkBytes;
  // The agreement's two words, on the device and pinned on the host.
  DeviceBuffer agreeDevice_;
  uint64_t *agreeHost_ = nullptr;
  Event agreed_;
};

} // namespace m2n::cuda

/// The C handle.
struct m2n_cuda_transport_s {
  std::unique_ptr<m2n::cuda::NcclTransport> nccl;
};

#endif // M2N_CUDA_NCCL_TRANSPORT_H
