//===- device_world.cpp - All ranks of a plan on one GPU, for tests -------===//

#include "device_world.h"

namespace m2n::test {

bool cudaDeviceAvailable(std::string *why) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    *why = cudaGetErrorString(error);
    return false;
  }
  if (count == 0) {
    *why = "cudaGetDeviceCount found none";
    return false;
  }
  return true;
}

::testing::AssertionResult cudaOk(cudaError_t error, const char *what) {
  if (error == cudaSuccess)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": " << cudaGetErrorName(error) << ": "
         << cudaGetErrorString(error);
}

DeviceWorld::DeviceWorld(m2n_plan_t plan,
                         std::vector<m2n_cuda_transport_t> transports)
    : plan_(plan), loaded_(plan->plan), transports_(std::move(transports)) {}

DeviceWorld::~DeviceWorld() {
  for (m2n_cuda_executor_t executor : executors_)
    m2n_cuda_executor_destroy(executor);
  for (std::vector<void *> &rank : buffers_)
    for (void *buffer : rank)
      cudaFree(buffer);
  for (cudaStream_t stream : streams_)
    cudaStreamDestroy(stream);
}

::testing::AssertionResult DeviceWorld::setUp() {
  initial_ = initialBuffers(loaded_);
  uint32_t world = loaded_.worldSize();
  buffers_.resize(world);
  for (uint32_t r = 0; r < world; ++r) {
    cudaStream_t stream = nullptr;
    if (auto ok = M2N_CUDA_OK(
            cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        !ok)
      return ok;
    streams_.push_back(stream);
    for (const std::vector<uint8_t> &binding : initial_[r].bindings) {
      void *buffer = nullptr;
      if (!binding.empty())
        if (auto ok = M2N_CUDA_OK(cudaMalloc(&buffer, binding.size())); !ok)
          return ok;
      buffers_[r].push_back(buffer);
    }
    m2n_cuda_executor_t executor = nullptr;
    m2n_cuda_transport_t transport =
        transports_.empty() ? nullptr : transports_[r];
    if (auto ok = isOk(
            m2n_cuda_executor_create(plan_, r, transport, stream, &executor));
        !ok)
      return ok << " (creating rank " << r << ")";
    executors_.push_back(executor);
  }
  if (auto ok = upload(/*destinationsOnly=*/false); !ok)
    return ok;
  for (uint32_t r = 0; r < world; ++r) {
    for (uint32_t i = 0; i < buffers_[r].size(); ++i) {
      const m2n::Binding &b = loaded_.binding(r, i);
      const m2n_plan_tensor_t &t = loaded_.tensor(b.tensor);
      std::string name(loaded_.tensorName(b.tensor));
      if (auto ok = isOk(m2n_cuda_executor_bind(
              executors_[r], name.c_str(), static_cast<m2n_role_t>(b.role),
              buffers_[r][i], static_cast<m2n_dtype_t>(t.dtype), t.rank,
              b.shape));
          !ok)
        return ok << " (binding rank " << r << " binding " << i << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult DeviceWorld::upload(bool destinationsOnly) {
  for (uint32_t r = 0; r < buffers_.size(); ++r)
    for (uint32_t i = 0; i < buffers_[r].size(); ++i) {
      bool destination = loaded_.binding(r, i).role == M2N_ROLE_DESTINATION;
      const std::vector<uint8_t> &bytes = initial_[r].bindings[i];
      if ((destination || !destinationsOnly) && !bytes.empty())
        if (auto ok =
                M2N_CUDA_OK(cudaMemcpy(buffers_[r][i], bytes.data(),
                                       bytes.size(), cudaMemcpyHostToDevice));
            !ok)
          return ok;
    }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult DeviceWorld::resetDestinations() {
  if (auto ok = M2N_CUDA_OK(cudaDeviceSynchronize()); !ok)
    return ok;
  return upload(/*destinationsOnly=*/true);
}

::testing::AssertionResult DeviceWorld::run() {
  if (transports_.empty())
    return isOk(m2n_cuda_local_world_run(
        executors_.data(), static_cast<uint32_t>(executors_.size())));
  for (m2n_cuda_executor_t executor : executors_)
    if (auto ok = isOk(m2n_cuda_executor_run(executor)); !ok)
      return ok;
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult DeviceWorld::check() {
  if (auto ok = M2N_CUDA_OK(cudaDeviceSynchronize()); !ok)
    return ok;
  std::vector<HostRank> got = initial_;
  for (uint32_t r = 0; r < buffers_.size(); ++r)
    for (uint32_t i = 0; i < buffers_[r].size(); ++i) {
      std::vector<uint8_t> &bytes = got[r].bindings[i];
      if (!bytes.empty())
        if (auto ok =
                M2N_CUDA_OK(cudaMemcpy(bytes.data(), buffers_[r][i],
                                       bytes.size(), cudaMemcpyDeviceToHost));
            !ok)
          return ok;
    }
  return checkBuffers(loaded_, got);
}

} // namespace m2n::test
