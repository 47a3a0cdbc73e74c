//===- local_world.cpp - All ranks of a plan in one process ---------------===//
//
// Tests and single-GPU tools run every rank in one process on one device,
// each rank's work on its executor's own stream. Ranks advance step by
// step from one host thread: all packs of a step, a barrier of events
// across the streams, each receiver copying its messages straight out of
// its senders' buffers on its own stream, another barrier (so that no
// sender reuses staging before its receivers have copied), then all
// unpacks. Simple rather than fast: the barriers serialise the ranks.
//
//===----------------------------------------------------------------------===//

#include "cuda/cuda_executor.h"

#include <map>
#include <string>

namespace m2n::cuda {
namespace {

using Ranks = std::vector<CudaExecutor *>;

m2n_status_t checkWorld(const Ranks &ranks) {
  const CudaExecutor &first = *ranks[0];
  uint64_t hash = first.plan().header().content_hash;
  if (ranks.size() != first.plan().worldSize()) {
    std::string message = concat("m2n_cuda_local_world_run: the plan has ",
                                 first.plan().worldSize(), " ranks, got ",
                                 ranks.size(), " executors");
    return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT, message.c_str());
  }
  for (const CudaExecutor *executor : ranks) {
    std::string problem;
    if (executor->hasTransport())
      problem = "was created with a transport";
    else if (executor->plan().header().content_hash != hash)
      problem =
          concat("runs plan ", hex64(executor->plan().header().content_hash),
                 ", rank 0 runs ", hex64(hash));
    else if (executor->device() != first.device())
      problem = concat("is on device ", executor->device(), ", rank 0 on ",
                       first.device());
    if (!problem.empty()) {
      std::string message = concat("m2n_cuda_local_world_run: the executor "
                                   "of rank ",
                                   executor->rank(), " ", problem);
      return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT, message.c_str());
    }
    M2N_RETURN_IF_ERROR(executor->checkBound());
  }
  return nullptr;
}

// Every stream waits for the work enqueued so far on every other one.
m2n_status_t barrier(const Ranks &ranks) {
  for (CudaExecutor *executor : ranks)
    M2N_CUDA_RETURN_IF_ERROR(
        cudaEventRecord(executor->event(), executor->stream()));
  for (CudaExecutor *waiter : ranks)
    for (CudaExecutor *executor : ranks)
      if (executor != waiter)
        M2N_CUDA_RETURN_IF_ERROR(
            cudaStreamWaitEvent(waiter->stream(), executor->event(), 0));
  return nullptr;
}

// The streams of ranks 1.. start after what rank 0's stream holds, and
// rank 0's stream ends after all of them: a graph captured on rank 0's
// stream then holds the whole refit.
m2n_status_t fork(const Ranks &ranks) {
  M2N_CUDA_RETURN_IF_ERROR(
      cudaEventRecord(ranks[0]->event(), ranks[0]->stream()));
  for (size_t r = 1; r < ranks.size(); ++r)
    M2N_CUDA_RETURN_IF_ERROR(
        cudaStreamWaitEvent(ranks[r]->stream(), ranks[0]->event(), 0));
  return nullptr;
}

m2n_status_t join(const Ranks &ranks) {
  for (size_t r = 1; r < ranks.size(); ++r) {
    M2N_CUDA_RETURN_IF_ERROR(
        cudaEventRecord(ranks[r]->event(), ranks[r]->stream()));
    M2N_CUDA_RETURN_IF_ERROR(
        cudaStreamWaitEvent(ranks[0]->stream(), ranks[r]->event(), 0));
  }
  return nullptr;
}

// Each receive copies from the matching send: the k-th receive of rank b
// from rank a is the k-th send of a to b within the step.
m2n_status_t copyMessages(const Ranks &ranks,
                          const std::vector<const StepWork *> &work) {
  // sends[a][b]: a's sends to b, in record order.
  std::vector<std::map<uint32_t, std::vector<const Message *>>> sends(
      ranks.size());
  for (size_t a = 0; a < ranks.size(); ++a)
    if (work[a])
      for (const Message &message : work[a]->messages)
        if (message.send)
          sends[a][message.peer].push_back(&message);
  for (size_t b = 0; b < ranks.size(); ++b) {
    if (!work[b])
      continue;
    std::map<uint32_t, size_t> received;
    for (const Message &message : work[b]->messages) {
      if (message.send)
        continue;
      const Message *sent = sends[message.peer][b][received[message.peer]++];
      M2N_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
          ranks[b]->address(message), ranks[message.peer]->address(*sent),
          message.bytes, cudaMemcpyDeviceToDevice, ranks[b]->stream()));
    }
  }
  return nullptr;
}

m2n_status_t runSteps(const Ranks &ranks) {
  for (CudaExecutor *executor : ranks)
    M2N_RETURN_IF_ERROR(
        executor->launch(executor->copies(), "the local copies"));
  std::vector<size_t> next(ranks.size(), 0);
  uint32_t stepCount = ranks[0]->plan().header().step_count;
  for (uint32_t step = 0; step < stepCount; ++step) {
    // Ranks list only the steps in which they have work.
    std::vector<const StepWork *> work(ranks.size(), nullptr);
    bool any = false;
    for (size_t r = 0; r < ranks.size(); ++r) {
      const std::vector<StepWork> &steps = ranks[r]->steps();
      if (next[r] < steps.size() && steps[next[r]].step == step) {
        work[r] = &steps[next[r]++];
        any = true;
      }
    }
    if (!any)
      continue;
    for (size_t r = 0; r < ranks.size(); ++r)
      if (work[r])
        M2N_RETURN_IF_ERROR(ranks[r]->launch(work[r]->pack, "a step's packs"));
    M2N_RETURN_IF_ERROR(barrier(ranks));
    M2N_RETURN_IF_ERROR(copyMessages(ranks, work));
    M2N_RETURN_IF_ERROR(barrier(ranks));
    for (size_t r = 0; r < ranks.size(); ++r)
      if (work[r])
        M2N_RETURN_IF_ERROR(
            ranks[r]->launch(work[r]->unpack, "a step's unpacks"));
  }
  return nullptr;
}

} // namespace

m2n_status_t runLocalWorld(const Ranks &ranks) {
  M2N_RETURN_IF_ERROR(checkWorld(ranks));
  DeviceGuard guard(ranks[0]->device());
  M2N_RETURN_IF_ERROR(guard.status());
  bool synchronize = false;
  for (const CudaExecutor *executor : ranks)
    synchronize = synchronize || executor->synchronize();
  bool capturing = false;
  M2N_RETURN_IF_ERROR(isCapturing(ranks[0]->stream(), &capturing));
  if (capturing && synchronize)
    return m2n_status_create(
        M2N_STATUS_INVALID_ARGUMENT,
        "m2n_cuda_local_world_run: a synchronizing run cannot be captured");
  M2N_RETURN_IF_ERROR(fork(ranks));
  M2N_RETURN_IF_ERROR(runSteps(ranks));
  M2N_RETURN_IF_ERROR(join(ranks));
  if (synchronize)
    for (const CudaExecutor *executor : ranks)
      M2N_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(executor->stream()));
  return nullptr;
}

} // namespace m2n::cuda
