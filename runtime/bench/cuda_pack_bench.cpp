//===- cuda_pack_bench.cpp - Pack kernel throughput against memcpy --------===//
//
// A refit-like batch: many walks (one per tensor), each a strided run per
// row of a shard (every other run of the source, as when half the columns
// of a row-major matrix move), packed into a dense staging buffer in one
// launch; the same unpacked; and cudaMemcpyAsync of as many bytes,
// contiguous, for the ceiling. GB/s counts the bytes moved once (each is
// read and written), as cudaMemcpy bandwidths usually do.
//
//   m2n_cuda_pack_bench [GiB moved, default 1]
//
// The last line, "M2N_BENCH key=value ...", is for scripts.
//
//===----------------------------------------------------------------------===//

#include "cuda/pack_kernels.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using m2n::cuda::RunsBatch;
using m2n::cuda::RunsTableBuilder;
using m2n::cuda::Walk;

constexpr int kWarmups = 2;
constexpr int kIterations = 10;

#define CHECK(call)                                                            \
  do {                                                                         \
    cudaError_t error_ = (call);                                               \
    if (error_ != cudaSuccess) {                                               \
      std::fprintf(stderr, "%s failed: %s\n", #call,                           \
                   cudaGetErrorString(error_));                                \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

// Walks moving `total` bytes in runs whose sizes cycle through `runSizes`,
// `perWalk` bytes per walk. The strided side (index `strided`) skips a run
// after each run; the dense side (the other index) packs them.
std::vector<Walk> refitWalks(uint64_t total, uint64_t perWalk,
                             const std::vector<uint64_t> &runSizes,
                             uint32_t strided) {
  std::vector<Walk> walks;
  uint64_t stridedAt = 0, denseAt = 0;
  for (uint64_t k = 0; denseAt < total; ++k) {
    Walk walk;
    walk.runBytes = runSizes[k % runSizes.size()];
    walk.levels = 1;
    walk.count[0] = static_cast<int64_t>(perWalk / walk.runBytes);
    int64_t stridedStep = static_cast<int64_t>(2 * walk.runBytes);
    int64_t denseStep = static_cast<int64_t>(walk.runBytes);
    walk.from = strided == 0 ? 0 : 1;
    walk.to = 1 - walk.from;
    walk.fromOffset = strided == 0 ? stridedAt : denseAt;
    walk.toOffset = strided == 0 ? denseAt : stridedAt;
    walk.fromStride[0] = strided == 0 ? stridedStep : denseStep;
    walk.toStride[0] = strided == 0 ? denseStep : stridedStep;
    stridedAt += 2 * perWalk;
    denseAt += perWalk;
    walks.push_back(walk);
  }
  return walks;
}

struct Timer {
  cudaEvent_t start, stop;
  Timer() {
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
  }
  ~Timer() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  // Milliseconds per call of `enqueue`, after warm-ups.
  template <typename F> double time(cudaStream_t stream, F enqueue) {
    for (int i = 0; i < kWarmups; ++i)
      enqueue();
    CHECK(cudaEventRecord(start, stream));
    for (int i = 0; i < kIterations; ++i)
      enqueue();
    CHECK(cudaEventRecord(stop, stream));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    return ms / kIterations;
  }
};

struct Result {
  std::string name;
  uint64_t bytes;
  double ms;
  double gbps() const { return bytes / ms / 1e6; }
};

} // namespace

int main(int argc, char **argv) {
  double gib = argc > 1 ? std::atof(argv[1]) : 1.0;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "no CUDA device: nothing to measure\n");
    return 2;
  }
  int device = 0, sms = 0;
  CHECK(cudaGetDevice(&device));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  cudaDeviceProp properties;
  CHECK(cudaGetDeviceProperties(&properties, device));
  const uint64_t total = static_cast<uint64_t>(gib * (1 << 30));

  // Strided buffer (twice the bytes moved), dense buffer, the bases table.
  uint8_t *strided = nullptr, *dense = nullptr;
  uint8_t **bases = nullptr;
  CHECK(cudaMalloc(&strided, 2 * total));
  CHECK(cudaMalloc(&dense, total));
  CHECK(cudaMalloc(&bases, 2 * sizeof(uint8_t *)));
  uint8_t *hostBases[] = {strided, dense};
  CHECK(
      cudaMemcpy(bases, hostBases, sizeof(hostBases), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(strided, 1, 2 * total));
  CHECK(cudaMemset(dense, 2, total));

  const std::vector<uint64_t> large = {4096, 8192, 16384, 32768, 65536};
  const std::vector<uint64_t> small = {128, 256, 512, 1024};
  const uint64_t perWalk = uint64_t(4) << 20;
  RunsTableBuilder table;
  uint32_t packLarge =
      table.addBatch(refitWalks(total, perWalk, large, 0), sms);
  uint32_t unpackLarge =
      table.addBatch(refitWalks(total, perWalk, large, 1), sms);
  uint32_t packSmall =
      table.addBatch(refitWalks(total, perWalk, small, 0), sms);
  uint8_t *image = nullptr;
  CHECK(cudaMalloc(&image, table.image().size()));
  CHECK(cudaMemcpy(image, table.image().data(), table.image().size(),
                   cudaMemcpyHostToDevice));

  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  Timer timer;
  auto runs = [&](uint32_t index) {
    RunsBatch batch = table.batch(index, image);
    return timer.time(stream, [&] {
      CHECK(m2n::cuda::launchRuns(batch, bases, sms, stream));
    });
  };
  std::vector<Result> results;
  results.push_back(
      {"cudaMemcpyAsync, contiguous", total, timer.time(stream, [&] {
         CHECK(cudaMemcpyAsync(dense, strided, total, cudaMemcpyDeviceToDevice,
                               stream));
       })});
  results.push_back({"pack, runs of 4-64 KiB", total, runs(packLarge)});
  results.push_back({"unpack, runs of 4-64 KiB", total, runs(unpackLarge)});
  results.push_back({"pack, runs of 128 B-1 KiB", total, runs(packSmall)});

  std::printf("device: %s, %d multiprocessors; %.2f GiB per copy, %d "
              "walks of 4 MiB per batch\n",
              properties.name, sms, gib, int(total / perWalk));
  std::printf("%-30s %10s %10s %10s\n", "copy", "ms", "GB/s", "vs memcpy");
  for (const Result &result : results)
    std::printf("%-30s %10.3f %10.1f %10.2f\n", result.name.c_str(), result.ms,
                result.gbps(), result.gbps() / results[0].gbps());
  std::printf("M2N_BENCH memcpy_gbps=%.1f pack_gbps=%.1f unpack_gbps=%.1f "
              "pack_small_gbps=%.1f pack_ratio=%.2f unpack_ratio=%.2f\n",
              results[0].gbps(), results[1].gbps(), results[2].gbps(),
              results[3].gbps(), results[1].gbps() / results[0].gbps(),
              results[2].gbps() / results[0].gbps());
  cudaStreamDestroy(stream);
  cudaFree(image);
  cudaFree(bases);
  cudaFree(dense);
  cudaFree(strided);
  return 0;
}
