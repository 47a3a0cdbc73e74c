//===- cuda_executor.h - One rank's part of a plan on a GPU ------*- C++
//-*-===//
//
// Built once from the rank's instructions: one batch of walks for the
// local copies, and per step a batch of packs, the step's transfers and a
// batch of unpacks. The walks live on the device from creation on; binding
// only rewrites the table of base pointers they index (the rank's
// bindings, then its staging buffer, which is allocated once).
//
//===----------------------------------------------------------------------===//

#ifndef M2N_CUDA_CUDA_EXECUTOR_H
#define M2N_CUDA_CUDA_EXECUTOR_H

#include "cuda/cuda_util.h"
#include "cuda/nccl_transport.h"
#include "cuda/pack_kernels.h"

#include "m2n/cuda.h"
#include "plan_internal.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace m2n::cuda {

/// A send or receive of a step, in plan terms: `bytes` at `offset` of
/// buffer `buffer` (a binding, or the staging buffer's index).
struct Message {
  bool send = false;
  uint32_t peer = 0;
  uint32_t buffer = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

struct StepWork {
  uint32_t step = 0;
  RunsBatch pack;
  std::vector<Message> messages; // in record order
  RunsBatch unpack;
};

class CudaExecutor {
public:
  /// Builds the executor for `rank` of `plan`; `transport` may be null
  /// (the local world).
  static m2n_status_t create(const LoadedPlan &plan, uint32_t rank,
                             NcclTransport *transport, cudaStream_t stream,
                             std::unique_ptr<CudaExecutor> *out);
  ~CudaExecutor();

  m2n_status_t bind(const char *name, m2n_role_t role, void *pointer,
                    m2n_dtype_t dtype, uint32_t ndim, const int64_t *shape);
  void setSynchronize(bool synchronize) { synchronize_ = synchronize; }
  /// The whole refit over the NCCL transport.
  m2n_status_t run();

  // For the local world, which drives ranks step by step.
  const LoadedPlan &plan() const { return plan_; }
  uint32_t rank() const { return rank_; }
  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  bool hasTransport() const { return transport_ != nullptr; }
  bool synchronize() const { return synchronize_; }
  const std::vector<StepWork> &steps() const { return steps_; }
  /// INVALID_ARGUMENT naming the first shard left unbound.
  m2n_status_t checkBound() const;
  /// Enqueues the local copies, or a step's packs or unpacks.
  m2n_status_t launch(const RunsBatch &batch, const char *what);
  const RunsBatch &copies() const { return copies_; }
  /// The device address of `message`'s bytes.
  uint8_t *address(const Message &message) const;
  /// An event of the executor's own, for the local world's barriers.
  cudaEvent_t event() const { return event_.get(); }

private:
  CudaExecutor(const LoadedPlan &plan, uint32_t rank, NcclTransport *transport,
               cudaStream_t stream, int device);
  m2n_status_t build();
  m2n_status_t upload(const RunsTableBuilder &table,
                      const std::vector<uint32_t> &batchIndices);
  m2n_status_t uploadBases();
  m2n_status_t checkPointer(const void *pointer, const char *name) const;
  m2n_status_t runSteps();

  const LoadedPlan &plan_;
  uint32_t rank_;
  NcclTransport *transport_;
  cudaStream_t stream_;
  int device_;
  int smCount_ = 1;
  bool synchronize_ = false;
  bool agreed_ = false;
  uint32_t bindingCount_ = 0;
  uint64_t stagingBytes_ = 0;
  // Bases of the bindings, then of the staging buffer: host copy and table.
  std::vector<uint8_t *> bases_;
  std::vector<bool> bound_;
  DeviceBuffer basesDevice_;
  DeviceBuffer staging_;
  DeviceBuffer walks_;
  RunsBatch copies_;
  std::vector<StepWork> steps_;
  Event event_;
};

/// Runs every rank of a local world, `executors` in rank order and all
/// without a transport, in one process on one device (local_world.cpp).
m2n_status_t runLocalWorld(const std::vector<CudaExecutor *> &executors);

} // namespace m2n::cuda

/// The C handle.
struct m2n_cuda_executor_s {
  std::unique_ptr<m2n::cuda::CudaExecutor> executor;
};

#endif // M2N_CUDA_CUDA_EXECUTOR_H
