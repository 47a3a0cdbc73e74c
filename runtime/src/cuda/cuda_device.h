//===- cuda_device.h - Executing in CUDA device memory ----------*- C++ -*-===//

#ifndef M2N_CUDA_CUDA_DEVICE_H
#define M2N_CUDA_CUDA_DEVICE_H

#include "device.h"

#include <cuda_runtime_api.h>

#include <memory>

namespace m2n::cuda {

/// A device whose buffers are memory of CUDA device `device` and whose
/// work goes on `stream`; runs wait for their work when `synchronize`.
m2n_status_t createCudaDevice(int device, cudaStream_t stream,
                              bool synchronize,
                              std::unique_ptr<DeviceImpl> *out);

} // namespace m2n::cuda

#endif // M2N_CUDA_CUDA_DEVICE_H
