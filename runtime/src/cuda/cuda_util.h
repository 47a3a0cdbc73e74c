//===- cuda_util.h - CUDA errors as statuses, the device guard --*- C++ -*-===//

#ifndef M2N_CUDA_CUDA_UTIL_H
#define M2N_CUDA_CUDA_UTIL_H

#include "plan_internal.h"

#include "m2n/status.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace m2n::cuda {

/// NULL for cudaSuccess; otherwise a status naming `what` failed and why.
/// Running out of memory is RESOURCE_EXHAUSTED, a missing device or driver
/// UNAVAILABLE, anything else INTERNAL.
m2n_status_t cudaStatus(cudaError_t error, const char *what);

#define M2N_CUDA_RETURN_IF_ERROR(call)                                         \
  M2N_RETURN_IF_ERROR(::m2n::cuda::cudaStatus((call), #call))

/// Makes `device` current for the guard's lifetime, so that calls made on
/// an engine's thread leave its current device as they found it.
class DeviceGuard {
public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;
  /// The error of making the device current, if any.
  m2n_status_t status() const;

private:
  int previous_ = -1;
  int device_;
  cudaError_t error_ = cudaSuccess;
};

/// The current device, or the status of failing to get one (UNAVAILABLE
/// when there is no device or driver).
m2n_status_t currentDevice(int *device);

/// Whether `stream` is being captured into a graph.
m2n_status_t isCapturing(cudaStream_t stream, bool *capturing);

/// A device allocation freed when it goes.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  /// Allocates `bytes` (none for 0) with cudaMalloc; call once.
  m2n_status_t allocate(uint64_t bytes, const char *what);
  uint8_t *get() const { return data_; }
  /// Frees now, while the owner's device is current.
  void reset();

private:
  uint8_t *data_ = nullptr;
};

/// A timing-free event, destroyed when it goes.
class Event {
public:
  Event() = default;
  ~Event();
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
  m2n_status_t create();
  cudaEvent_t get() const { return event_; }
  /// Destroys now, while the owner's device is current.
  void reset();

private:
  cudaEvent_t event_ = nullptr;
};

} // namespace m2n::cuda

#endif // M2N_CUDA_CUDA_UTIL_H
