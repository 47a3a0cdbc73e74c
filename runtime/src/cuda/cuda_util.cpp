//===- cuda_util.cpp - CUDA errors as statuses, the device guard ----------===//

#include "cuda/cuda_util.h"

namespace m2n::cuda {

m2n_status_t cudaStatus(cudaError_t error, const char *what) {
  if (error == cudaSuccess)
    return nullptr;
  m2n_status_code_t code = M2N_STATUS_INTERNAL;
  switch (error) {
  case cudaErrorMemoryAllocation:
    code = M2N_STATUS_RESOURCE_EXHAUSTED;
    break;
  case cudaErrorNoDevice:
  case cudaErrorInsufficientDriver:
  case cudaErrorInvalidDevice:
  case cudaErrorDevicesUnavailable:
  case cudaErrorStubLibrary:
    code = M2N_STATUS_UNAVAILABLE;
    break;
  default:
    break;
  }
  std::string message =
      concat("CUDA: ", what, " failed: ", cudaGetErrorString(error), " (",
             cudaGetErrorName(error), ")");
  return m2n_status_create(code, message.c_str());
}

DeviceGuard::DeviceGuard(int device) : device_(device) {
  error_ = cudaGetDevice(&previous_);
  if (error_ == cudaSuccess && previous_ != device_)
    error_ = cudaSetDevice(device_);
}

DeviceGuard::~DeviceGuard() {
  if (error_ == cudaSuccess && previous_ != device_)
    cudaSetDevice(previous_);
}

m2n_status_t DeviceGuard::status() const {
  return cudaStatus(error_, "making the executor's device current");
}

m2n_status_t currentDevice(int *device) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error == cudaSuccess && count == 0)
    error = cudaErrorNoDevice;
  M2N_RETURN_IF_ERROR(cudaStatus(error, "cudaGetDeviceCount"));
  return cudaStatus(cudaGetDevice(device), "cudaGetDevice");
}

m2n_status_t isCapturing(cudaStream_t stream, bool *capturing) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  M2N_CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(stream, &status));
  *capturing = status != cudaStreamCaptureStatusNone;
  return nullptr;
}

DeviceBuffer::~DeviceBuffer() { reset(); }

void DeviceBuffer::reset() {
  if (data_)
    cudaFree(data_);
  data_ = nullptr;
}

m2n_status_t DeviceBuffer::allocate(uint64_t bytes, const char *what) {
  if (bytes == 0)
    return nullptr;
  cudaError_t error = cudaMalloc(reinterpret_cast<void **>(&data_), bytes);
  if (error == cudaSuccess)
    return nullptr;
  data_ = nullptr;
  std::string call = concat("cudaMalloc of ", bytes, " bytes for ", what);
  return cudaStatus(error, call.c_str());
}

Event::~Event() { reset(); }

void Event::reset() {
  if (event_)
    cudaEventDestroy(event_);
  event_ = nullptr;
}

m2n_status_t Event::create() {
  return cudaStatus(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming),
                    "cudaEventCreateWithFlags");
}

} // namespace m2n::cuda
