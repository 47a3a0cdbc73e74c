//===- device_world.h - All ranks of a plan on one GPU, for tests -*- C++
//-*-===//

#ifndef M2N_RUNTIME_TEST_CUDA_DEVICE_WORLD_H
#define M2N_RUNTIME_TEST_CUDA_DEVICE_WORLD_H

#include "refit_check.h"

#include "m2n/cuda.h"
#include "m2n/executor.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace m2n::test {

/// Whether a CUDA device is usable; if not, why.
bool cudaDeviceAvailable(std::string *why);

#define M2N_REQUIRE_GPU()                                                      \
  do {                                                                         \
    std::string why_;                                                          \
    if (!::m2n::test::cudaDeviceAvailable(&why_))                              \
      GTEST_SKIP() << "no CUDA device (" << why_ << "): GPU test skipped";     \
  } while (0)

/// A CUDA call as a test result.
::testing::AssertionResult cudaOk(cudaError_t error, const char *what);
#define M2N_CUDA_OK(call) ::m2n::test::cudaOk((call), #call)

/// Every rank of a plan on the current device, each with its own stream,
/// buffers and executor (on a CUDA device), bound to its shards.
class DeviceWorld {
public:
  /// `transports[r]` is rank r's transport, which the world takes; empty
  /// for a sim world of the plan's size, one thread per rank.
  explicit DeviceWorld(m2n_plan_t plan,
                       std::vector<m2n_transport_t> transports = {});
  ~DeviceWorld();
  DeviceWorld(const DeviceWorld &) = delete;
  DeviceWorld &operator=(const DeviceWorld &) = delete;

  /// Streams, buffers (sources filled, destinations the complement of
  /// what they must become), executors with `flags`
  /// (m2n_cuda_device_create's), bindings.
  ::testing::AssertionResult setUp(uint32_t flags = 0);
  /// Destinations back to the complement of what they must become.
  ::testing::AssertionResult resetDestinations();
  /// Every rank's m2n_executor_run, each on a thread of its own.
  ::testing::AssertionResult run();
  /// Every rank's run step by step (external transports), from this
  /// thread: each message a device-to-device copy once the streams are
  /// done with the packs.
  ::testing::AssertionResult runStepWise();
  /// Waits for all streams and compares every binding.
  ::testing::AssertionResult check();

  const std::vector<m2n_executor_t> &executors() const { return executors_; }
  cudaStream_t stream(uint32_t rank) const { return streams_[rank]; }

private:
  ::testing::AssertionResult upload(bool destinationsOnly);

  m2n_plan_t plan_;
  const LoadedPlan &loaded_;
  std::vector<m2n_transport_t> transports_;
  std::vector<cudaStream_t> streams_;
  std::vector<m2n_executor_t> executors_;
  // Device buffers per rank and binding; NULL for empty shards.
  std::vector<std::vector<void *>> buffers_;
  std::vector<HostRank> initial_;
};

} // namespace m2n::test

#endif // M2N_RUNTIME_TEST_CUDA_DEVICE_WORLD_H
