//===- runs_table.cpp - Walks simplified and laid out for the kernel ------===//

#include "cuda/pack_kernels.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace m2n::cuda {
namespace {

// Walks start 16-byte aligned in a batch's byte space, so that tile
// boundaries never split a 16-byte vector of a run that could use them.
constexpr uint64_t kWalkAlignment = 16;
constexpr uint32_t kMinTileShift = 10; // 1 KiB: small batches spread out
constexpr uint32_t kMaxTileShift = 14; // 16 KiB: big ones search less
// Resident warps per multiprocessor at full occupancy (2048 threads).
constexpr uint64_t kWarpsPerSm = 64;

void removeLevel(Walk &walk, uint32_t level) {
  for (uint32_t l = level; l + 1 < walk.levels; ++l) {
    walk.count[l] = walk.count[l + 1];
    walk.fromStride[l] = walk.fromStride[l + 1];
    walk.toStride[l] = walk.toStride[l + 1];
  }
  --walk.levels;
  walk.count[walk.levels] = 0;
  walk.fromStride[walk.levels] = 0;
  walk.toStride[walk.levels] = 0;
}

// The innermost level continues the run on both sides.
bool joinInnermost(Walk &walk) {
  if (walk.levels == 0)
    return false;
  uint32_t l = walk.levels - 1;
  int64_t run = static_cast<int64_t>(walk.runBytes);
  if (walk.fromStride[l] != run || walk.toStride[l] != run)
    return false;
  walk.runBytes *= static_cast<uint64_t>(walk.count[l]);
  removeLevel(walk, l);
  return true;
}

// `outer * count[inner]` equals `next`, without overflow.
bool nests(int64_t outer, int64_t count, int64_t inner) {
  int64_t product = 0;
  return !__builtin_mul_overflow(count, inner, &product) && product == outer;
}

// Level l and l + 1 walk one dense sequence on both sides.
bool mergeAdjacent(Walk &walk) {
  for (uint32_t l = walk.levels; l-- > 1;) {
    uint32_t outer = l - 1;
    if (!nests(walk.fromStride[outer], walk.count[l], walk.fromStride[l]) ||
        !nests(walk.toStride[outer], walk.count[l], walk.toStride[l]))
      continue;
    walk.count[l] *= walk.count[outer];
    removeLevel(walk, outer);
    return true;
  }
  return false;
}

uint64_t alignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

template <typename T>
uint64_t append(std::vector<uint8_t> &image, const T *data, size_t count) {
  uint64_t offset = alignUp(image.size(), alignof(std::max_align_t));
  image.resize(offset + count * sizeof(T));
  std::memcpy(image.data() + offset, data, count * sizeof(T));
  return offset;
}

uint32_t tileShiftFor(uint64_t bytes, int smCount) {
  uint64_t warps = static_cast<uint64_t>(std::max(smCount, 1)) * kWarpsPerSm;
  // Aim for two tiles per resident warp before tiles reach their cap.
  uint64_t target = bytes / (2 * warps);
  uint32_t shift = kMinTileShift;
  while (shift < kMaxTileShift && (uint64_t(1) << shift) < target)
    ++shift;
  return shift;
}

} // namespace

Walk simplifyWalk(const Walk &walk) {
  Walk out = walk;
  for (uint32_t l = out.levels; l-- > 0;)
    if (out.count[l] == 1)
      removeLevel(out, l);
  while (joinInnermost(out) || mergeAdjacent(out)) {
  }
  out.runs = 1;
  for (uint32_t l = 0; l < out.levels; ++l)
    out.runs *= static_cast<uint64_t>(out.count[l]);
  return out;
}

uint32_t RunsTableBuilder::addBatch(const std::vector<Walk> &walks,
                                    int smCount) {
  Placed placed = {};
  std::vector<Walk> simplified;
  std::vector<uint64_t> begins;
  uint64_t offset = 0;
  for (const Walk &walk : walks) {
    simplified.push_back(simplifyWalk(walk));
    const Walk &added = simplified.back();
    begins.push_back(offset);
    placed.batch.bytes += added.runs * added.runBytes;
    offset += alignUp(added.runs * added.runBytes, kWalkAlignment);
  }
  begins.push_back(offset);
  if (!simplified.empty()) {
    placed.walksOffset = append(image_, simplified.data(), simplified.size());
    placed.beginsOffset = append(image_, begins.data(), begins.size());
    placed.batch.records = static_cast<uint32_t>(simplified.size());
    placed.batch.tileShift = tileShiftFor(offset, smCount);
    placed.batch.tiles =
        (offset + (uint64_t(1) << placed.batch.tileShift) - 1) >>
        placed.batch.tileShift;
  }
  placed_.push_back(placed);
  return static_cast<uint32_t>(placed_.size() - 1);
}

RunsBatch RunsTableBuilder::batch(uint32_t index, const uint8_t *device) const {
  const Placed &placed = placed_[index];
  RunsBatch batch = placed.batch;
  if (!batch.empty()) {
    batch.walks = reinterpret_cast<const Walk *>(device + placed.walksOffset);
    batch.begins =
        reinterpret_cast<const uint64_t *>(device + placed.beginsOffset);
  }
  return batch;
}

} // namespace m2n::cuda
