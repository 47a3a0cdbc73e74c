//===- pack_kernels.cu - Strided copies of many walks in one launch -------===//

#include "cuda/pack_kernels.h"

#include <cuda_runtime.h>

#include <cassert>

namespace m2n::cuda {
namespace {

constexpr uint32_t kWarpSize = 32;
constexpr uint32_t kBlockThreads = 256;
constexpr uint32_t kWarpsPerBlock = kBlockThreads / kWarpSize;
// Resident blocks per multiprocessor at full occupancy; the grid is no
// larger, and warps stride over the tiles.
constexpr uint32_t kBlocksPerSm = 2048 / kBlockThreads;
// Runs at least this long are copied by a whole warp; shorter ones one per
// lane, so that small runs do not leave most lanes idle.
constexpr uint64_t kWarpRunBytes = 512;
// Vectors each lane loads before it stores, to keep more bytes in flight.
constexpr uint32_t kUnroll = 4;

template <typename V>
__host__ __device__ void copyVectors(uint8_t *to, const uint8_t *from,
                                     uint64_t count, uint32_t lane,
                                     uint32_t lanes) {
  V *out = reinterpret_cast<V *>(to);
  const V *in = reinterpret_cast<const V *>(from);
#ifndef __CUDA_ARCH__
  // The host forgives misaligned vectors, the GPU does not: emulated runs
  // must fail where the kernel would.
  assert(count == 0 || (reinterpret_cast<uintptr_t>(to) % sizeof(V) == 0 &&
                        reinterpret_cast<uintptr_t>(from) % sizeof(V) == 0));
#endif
  uint64_t i = lane;
  for (; i + (kUnroll - 1) * lanes < count; i += kUnroll * lanes) {
    V v[kUnroll];
#pragma unroll
    for (uint32_t u = 0; u < kUnroll; ++u)
      v[u] = in[i + u * lanes];
#pragma unroll
    for (uint32_t u = 0; u < kUnroll; ++u)
      out[i + u * lanes] = v[u];
  }
  for (; i < count; i += lanes)
    out[i] = in[i];
}

__host__ __device__ void copyBytes(uint8_t *to, const uint8_t *from,
                                   uint64_t count, uint32_t lane,
                                   uint32_t lanes) {
  for (uint64_t i = lane; i < count; i += lanes)
    to[i] = from[i];
}

// Copies `bytes` with the widest accesses both addresses allow: when they
// agree modulo the width, a few head bytes bring them to alignment, the
// body moves in vectors, and a few tail bytes finish. Lanes `lane`,
// `lane + lanes`, ... share the work.
__host__ __device__ void copySegment(uint8_t *to, const uint8_t *from,
                                     uint64_t bytes, uint32_t lane,
                                     uint32_t lanes) {
  uintptr_t differ =
      reinterpret_cast<uintptr_t>(to) ^ reinterpret_cast<uintptr_t>(from);
  uint32_t width = (differ & 15) == 0  ? 16
                   : (differ & 7) == 0 ? 8
                   : (differ & 3) == 0 ? 4
                   : (differ & 1) == 0 ? 2
                                       : 1;
  uint64_t misalign = reinterpret_cast<uintptr_t>(from) & (width - 1);
  uint64_t head = misalign ? width - misalign : 0;
  head = head < bytes ? head : bytes;
  copyBytes(to, from, head, lane, lanes);
  to += head;
  from += head;
  bytes -= head;
  uint64_t vectors = bytes / width;
  switch (width) {
  case 16:
    copyVectors<uint4>(to, from, vectors, lane, lanes);
    break;
  case 8:
    copyVectors<uint2>(to, from, vectors, lane, lanes);
    break;
  case 4:
    copyVectors<uint32_t>(to, from, vectors, lane, lanes);
    break;
  case 2:
    copyVectors<uint16_t>(to, from, vectors, lane, lanes);
    break;
  default:
    copyBytes(to, from, vectors, lane, lanes);
    break;
  }
  uint64_t body = vectors * width;
  copyBytes(to + body, from + body, bytes - body, lane, lanes);
}

// The byte offsets of run `run` on both sides, innermost level fastest.
__host__ __device__ void locateRun(const Walk &walk, uint64_t run,
                                   uint64_t *from, uint64_t *to) {
  uint64_t f = walk.fromOffset;
  uint64_t t = walk.toOffset;
  for (uint32_t l = walk.levels; l-- > 0;) {
    uint64_t count = static_cast<uint64_t>(walk.count[l]);
    int64_t index = static_cast<int64_t>(run % count);
    run /= count;
    // Strides may be negative: two's complement wraps to the right offset.
    f += static_cast<uint64_t>(index * walk.fromStride[l]);
    t += static_cast<uint64_t>(index * walk.toStride[l]);
  }
  *from = f;
  *to = t;
}

// Moves the bytes [first, last) of the walk's own byte space, which lie in
// the warp's tile.
__host__ __device__ void copyWalkPart(const Walk &walk, uint64_t first,
                                      uint64_t last, uint8_t *const *bases,
                                      uint32_t lane) {
  const uint8_t *from = bases[walk.from];
  uint8_t *to = bases[walk.to];
  uint64_t runBytes = walk.runBytes;
  bool wholeWarp = runBytes >= kWarpRunBytes;
  uint64_t run = first / runBytes + (wholeWarp ? 0 : lane);
  uint64_t step = wholeWarp ? 1 : kWarpSize;
  for (; run * runBytes < last; run += step) {
    uint64_t start = run * runBytes;
    uint64_t lo = first > start ? first : start;
    uint64_t hi = last < start + runBytes ? last : start + runBytes;
    uint64_t f, t;
    locateRun(walk, run, &f, &t);
    uint64_t skip = lo - start;
    copySegment(to + t + skip, from + f + skip, hi - lo, wholeWarp ? lane : 0,
                wholeWarp ? kWarpSize : 1);
  }
}

// The last walk that begins at or before `offset`, searching from `low`.
__host__ __device__ uint32_t findWalk(const uint64_t *begins, uint32_t low,
                                      uint32_t records, uint64_t offset) {
  uint32_t high = records;
  while (high - low > 1) {
    uint32_t mid = low + (high - low) / 2;
    if (begins[mid] <= offset)
      low = mid;
    else
      high = mid;
  }
  return low;
}

// One lane's share of tile `tile`: the walks that overlap the tile, each
// clipped to it. `record` carries the search's start from tile to tile.
__host__ __device__ void copyTile(const Walk *walks, const uint64_t *begins,
                                  uint32_t records, uint32_t tileShift,
                                  uint64_t tile, uint8_t *const *bases,
                                  uint32_t lane, uint32_t *record) {
  uint64_t start = tile << tileShift;
  uint64_t end = start + (uint64_t(1) << tileShift);
  *record = findWalk(begins, *record, records, start);
  for (uint32_t r = *record; r < records && begins[r] < end; ++r) {
    const Walk &walk = walks[r];
    uint64_t begin = begins[r];
    uint64_t bytes = walk.runs * walk.runBytes;
    uint64_t first = start > begin ? start - begin : 0;
    uint64_t last = end - begin < bytes ? end - begin : bytes;
    if (first < last)
      copyWalkPart(walk, first, last, bases, lane);
  }
}

// Each warp copies tiles warp, warp + warps, ...
__global__ void __launch_bounds__(kBlockThreads)
    runsKernel(const Walk *walks, const uint64_t *begins, uint32_t records,
               uint32_t tileShift, uint64_t tiles, uint8_t *const *bases) {
  uint32_t lane = threadIdx.x % kWarpSize;
  uint64_t warp = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarpSize;
  uint64_t warps = uint64_t(gridDim.x) * blockDim.x / kWarpSize;
  uint32_t record = 0;
  for (uint64_t tile = warp; tile < tiles; tile += warps)
    copyTile(walks, begins, records, tileShift, tile, bases, lane, &record);
}

} // namespace

cudaError_t launchRuns(const RunsBatch &batch, uint8_t *const *bases,
                       int smCount, cudaStream_t stream) {
  if (batch.empty())
    return cudaSuccess;
  uint64_t blocks = (batch.tiles + kWarpsPerBlock - 1) / kWarpsPerBlock;
  uint64_t cap = uint64_t(smCount > 0 ? smCount : 1) * kBlocksPerSm;
  dim3 grid(static_cast<unsigned>(blocks < cap ? blocks : cap));
  dim3 block(kBlockThreads);
  const Walk *walks = batch.walks;
  const uint64_t *begins = batch.begins;
  uint32_t records = batch.records;
  uint32_t tileShift = batch.tileShift;
  uint64_t tiles = batch.tiles;
  void *args[] = {&walks, &begins, &records, &tileShift, &tiles, &bases};
  return cudaLaunchKernel(reinterpret_cast<const void *>(&runsKernel), grid,
                          block, args, 0, stream);
}

void emulateRuns(const RunsBatch &batch, uint8_t *const *bases) {
  // Lanes share no state and write disjoint bytes, so running them one
  // after another gives what the warp gives. A few warps stride over the
  // tiles as the grid's do, each lane carrying its search start.
  constexpr uint64_t kWarps = 3;
  for (uint64_t warp = 0; warp < kWarps; ++warp)
    for (uint32_t lane = 0; lane < kWarpSize; ++lane) {
      uint32_t record = 0;
      for (uint64_t tile = warp; tile < batch.tiles; tile += kWarps)
        copyTile(batch.walks, batch.begins, batch.records, batch.tileShift,
                 tile, bases, lane, &record);
    }
}

} // namespace m2n::cuda
