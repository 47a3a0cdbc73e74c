//===- device_world.cpp - All ranks of a plan on one GPU, for tests -------===//

#include "device_world.h"

#include "../step_driver.h"

#include <thread>

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
                         std::vector<m2n_transport_t> transports)
    : plan_(plan), loaded_(plan->plan), transports_(std::move(transports)) {}

DeviceWorld::~DeviceWorld() {
  for (m2n_executor_t executor : executors_)
    m2n_executor_destroy(executor);
  for (m2n_transport_t transport : transports_)
    m2n_transport_destroy(transport);
  for (std::vector<void *> &rank : buffers_)
    for (void *buffer : rank)
      cudaFree(buffer);
  for (cudaStream_t stream : streams_)
    cudaStreamDestroy(stream);
}

::testing::AssertionResult DeviceWorld::setUp(uint32_t flags) {
  initial_ = initialBuffers(loaded_);
  uint32_t world = loaded_.worldSize();
  buffers_.resize(world);
  if (transports_.empty()) {
    m2n_sim_world_t sim = nullptr;
    if (auto ok = isOk(m2n_sim_world_create(static_cast<int>(world), &sim));
        !ok)
      return ok;
    transports_.resize(world);
    for (uint32_t r = 0; r < world; ++r)
      if (auto ok = isOk(m2n_sim_world_transport(sim, static_cast<int>(r),
                                                 &transports_[r]));
          !ok)
        return ok;
    m2n_sim_world_destroy(sim);
  }
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
    m2n_device_t device = nullptr;
    if (auto ok = isOk(m2n_cuda_device_create(-1, stream, flags, &device)); !ok)
      return ok;
    m2n_executor_t executor = nullptr;
    ::testing::AssertionResult created = isOk(
        m2n_executor_create(plan_, transports_[r], device, &executor));
    m2n_device_destroy(device);
    if (!created)
      return created << " (creating rank " << r << ")";
    executors_.push_back(executor);
  }
  if (auto ok = upload(/*destinationsOnly=*/false); !ok)
    return ok;
  for (uint32_t r = 0; r < world; ++r) {
    for (uint32_t i = 0; i < buffers_[r].size(); ++i) {
      const m2n::Binding &b = loaded_.binding(r, i);
      const m2n_plan_tensor_t &t = loaded_.tensor(b.tensor);
      std::string name(loaded_.tensorName(b.tensor));
      if (auto ok = isOk(m2n_executor_bind(
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
  // One rank runs on the caller's thread, so that a stream capture of its
  // own sees the run.
  if (executors_.size() == 1)
    return isOk(m2n_executor_run(executors_[0]));
  std::vector<m2n_status_t> statuses(executors_.size(), nullptr);
  std::vector<std::thread> threads;
  for (size_t r = 0; r < executors_.size(); ++r)
    threads.emplace_back(
        [&, r] { statuses[r] = m2n_executor_run(executors_[r]); });
  for (std::thread &thread : threads)
    thread.join();
  ::testing::AssertionResult result = ::testing::AssertionSuccess();
  for (size_t r = 0; r < statuses.size(); ++r)
    if (auto ok = isOk(statuses[r]); !ok && result)
      result = ok << " (rank " << r << ")";
  return result;
}

::testing::AssertionResult DeviceWorld::runStepWise() {
  std::string problem;
  cudaError_t failed = cudaSuccess;
  std::vector<Outcome> outcomes =
      StepDriver(executors_, [&](void *to, const void *from, uint64_t bytes) {
        // The packs are on the ranks' own streams.
        cudaError_t error = cudaDeviceSynchronize();
        if (error == cudaSuccess)
          error = cudaMemcpy(to, from, bytes, cudaMemcpyDeviceToDevice);
        if (failed == cudaSuccess)
          failed = error;
      }).run(&problem);
  if (auto ok = M2N_CUDA_OK(failed); !ok)
    return ok;
  if (!problem.empty())
    return ::testing::AssertionFailure() << problem;
  for (size_t r = 0; r < outcomes.size(); ++r)
    if (!outcomes[r].ok())
      return ::testing::AssertionFailure()
             << "rank " << r << ": " << outcomes[r].message;
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
