//===- Coalesce.cpp - Merging adjacent slices; strided runs ---------------===//
//
// Merging works one dimension at a time: sorted by everything but the
// dimension's offset, boxes that continue one another along it are
// neighbours in the order, so a sweep merges each chain. The sweeps repeat
// over all dimensions until a whole round merges nothing, since a merge
// along one dimension can make boxes equal in another.
//
//===----------------------------------------------------------------------===//

#include "m2n/Plan/Coalesce.h"

#include "m2n/Plan/Parallel.h"

#include "LayoutIndex.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <tuple>

using namespace m2n;
using namespace m2n::plan;

namespace {

/// Whether `box` covers elements of a tensor of `shape`. Others (empty, or
/// malformed in a plan read from bad IR) are left as they are.
bool isMergeable(const Box &box, const std::vector<int64_t> &shape) {
  return isWithinTensor(box, shape) && !box.empty();
}

/// Whether `a` and `b` agree in every dimension but `dim`.
bool equalExcept(const Box &a, const Box &b, size_t dim) {
  for (size_t d = 0; d < a.sizes.size(); ++d)
    if (d != dim && (a.offsets[d] != b.offsets[d] || a.sizes[d] != b.sizes[d]))
      return false;
  return true;
}

/// Merges chains of boxes that continue one another along `dim`; returns
/// whether any merged.
bool mergeAlong(std::vector<Box> &boxes, size_t dim) {
  std::sort(boxes.begin(), boxes.end(), [dim](const Box &a, const Box &b) {
    for (size_t d = 0; d < a.sizes.size(); ++d) {
      if (d == dim)
        continue;
      if (a.offsets[d] != b.offsets[d])
        return a.offsets[d] < b.offsets[d];
      if (a.sizes[d] != b.sizes[d])
        return a.sizes[d] < b.sizes[d];
    }
    return a.offsets[dim] < b.offsets[dim];
  });
  std::vector<Box> merged;
  for (Box &box : boxes) {
    if (!merged.empty()) {
      Box &last = merged.back();
      if (equalExcept(last, box, dim) &&
          last.offsets[dim] + last.sizes[dim] == box.offsets[dim]) {
        last.sizes[dim] += box.sizes[dim];
        continue;
      }
    }
    merged.push_back(std::move(box));
  }
  bool changed = merged.size() != boxes.size();
  boxes = std::move(merged);
  return changed;
}

/// The order of sliceLess on (round, receiver, sender) alone. Slices that may
/// merge share those (and their origin), so it brings them together.
bool runLess(const Slice &a, const Slice &b) {
  return std::tie(a.round, a.receiver, a.sender) <
         std::tie(b.round, b.receiver, b.sender);
}

/// Merges the boxes of the slices `bucket` of `slices`, which share sender,
/// receiver, origin and round. When any merge, marks the slices replaced
/// and appends the merged ones to `merged`.
void mergeBucket(const std::vector<Slice> &slices,
                 const std::vector<size_t> &bucket,
                 const std::vector<int64_t> &shape, std::vector<bool> &replaced,
                 std::vector<Slice> &merged) {
  if (bucket.size() < 2)
    return;
  std::vector<Box> boxes;
  for (size_t i : bucket)
    boxes.push_back(slices[i].box);
  boxes = mergeBoxes(std::move(boxes), shape);
  if (boxes.size() == bucket.size())
    return;
  for (size_t i : bucket)
    replaced[i] = true;
  for (Box &box : boxes) {
    Slice slice = slices[bucket.front()];
    slice.box = std::move(box);
    merged.push_back(std::move(slice));
  }
}

void coalesceGroup(TransferGroup &group) {
  std::vector<Slice> &slices = group.slices;
  // Every pass leaves slices in sliceLess order, so this rarely sorts. A
  // stable sort keeps each bucket's boxes in the order they came in, which
  // mergeBoxes sees.
  if (!std::is_sorted(slices.begin(), slices.end(), runLess))
    std::stable_sort(slices.begin(), slices.end(), runLess);

  std::vector<bool> replaced(slices.size(), false);
  std::vector<Slice> merged;
  std::vector<size_t> run;
  auto originLess = [&](size_t a, size_t b) {
    return slices[a].origin < slices[b].origin;
  };
  for (size_t begin = 0; begin < slices.size();) {
    size_t end = begin + 1;
    while (end < slices.size() && !runLess(slices[begin], slices[end]))
      ++end;
    // Most runs are single slices, which have nothing to merge with.
    if (end - begin > 1) {
      run.resize(end - begin);
      std::iota(run.begin(), run.end(), begin);
      std::stable_sort(run.begin(), run.end(), originLess);
      std::vector<size_t> bucket;
      for (size_t i = 0; i < run.size(); ++i) {
        bucket.push_back(run[i]);
        if (i + 1 == run.size() || originLess(run[i], run[i + 1])) {
          mergeBucket(slices, bucket, group.shape, replaced, merged);
          bucket.clear();
        }
      }
    }
    begin = end;
  }

  if (!merged.empty()) {
    std::vector<Slice> result;
    result.reserve(slices.size() + merged.size());
    for (size_t i = 0; i < slices.size(); ++i)
      if (!replaced[i])
        result.push_back(std::move(slices[i]));
    llvm::append_range(result, merged);
    slices = std::move(result);
  }
  sortSlices(slices);
}

/// The strided runs of `slice` in each of `buffers` at once: a dimension
/// folds into the run, or two levels merge, only where they do in every
/// buffer.
/// The exporter asks this for every part of every message: what it needs
/// lives on the stack, but for the levels of the result.
llvm::SmallVector<StridedRuns, 2> describe(const Box &slice,
                                           llvm::ArrayRef<const Box *> buffers,
                                           int64_t elementBytes) {
  size_t numBuffers = buffers.size();
  llvm::SmallVector<StridedRuns, 2> result(numBuffers);
  if (slice.volume() == 0)
    return result;
  size_t rank = slice.sizes.size();

  // Byte strides per buffer and dimension, and the slice's start.
  llvm::SmallVector<std::array<int64_t, kMaxTensorRank>, 2> strides(numBuffers);
  for (size_t b = 0; b < numBuffers; ++b) {
    int64_t stride = elementBytes;
    for (size_t d = rank; d-- > 0;) {
      strides[b][d] = stride;
      result[b].offset += (slice.offsets[d] - buffers[b]->offsets[d]) * stride;
      stride *= buffers[b]->sizes[d];
    }
  }

  // Dimensions inside a whole one fold into the run.
  auto wholeInAll = [&](size_t d) {
    for (const Box *buffer : buffers)
      if (slice.sizes[d] != buffer->sizes[d])
        return false;
    return true;
  };
  size_t innermost = rank == 0 ? 0 : rank - 1;
  while (innermost > 0 && wholeInAll(innermost))
    --innermost;
  int64_t runElements = 1;
  for (size_t d = innermost; d < rank; ++d)
    runElements *= slice.sizes[d];
  for (StridedRuns &runs : result)
    runs.runBytes = runElements * elementBytes;

  // One level per outer dimension of more than one element, outermost
  // first; a level that steps exactly over the span of the one inside it
  // merges with it.
  for (size_t d = 0; d < innermost; ++d) {
    if (slice.sizes[d] == 1)
      continue;
    bool merges = !result.front().count.empty();
    for (size_t b = 0; b < numBuffers && merges; ++b)
      merges = result[b].stride.back() == slice.sizes[d] * strides[b][d];
    for (size_t b = 0; b < numBuffers; ++b) {
      if (merges) {
        result[b].count.back() *= slice.sizes[d];
        result[b].stride.back() = strides[b][d];
        continue;
      }
      result[b].count.push_back(slice.sizes[d]);
      result[b].stride.push_back(strides[b][d]);
    }
  }
  return result;
}

} // namespace

std::vector<Box> plan::mergeBoxes(std::vector<Box> boxes,
                            const std::vector<int64_t> &shape) {
  size_t rank = shape.size();
  std::vector<Box> empty;
  std::vector<Box> proper;
  for (Box &box : boxes)
    (isMergeable(box, shape) ? proper : empty).push_back(std::move(box));
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t dim = 0; dim < rank; ++dim)
      changed |= mergeAlong(proper, dim);
  }
  proper.insert(proper.end(), std::make_move_iterator(empty.begin()),
                std::make_move_iterator(empty.end()));
  return proper;
}

CoalesceStats m2n::plan::coalesce(Plan &plan,
                                  llvm::ThreadPoolInterface *pool) {
  CoalesceStats stats;
  for (const TransferGroup &group : plan.groups)
    stats.slicesBefore += static_cast<int64_t>(group.slices.size());
  forEachGroup(plan, pool, [&](size_t g) { coalesceGroup(plan.groups[g]); });
  for (const TransferGroup &group : plan.groups)
    stats.slicesAfter += static_cast<int64_t>(group.slices.size());
  return stats;
}

int64_t StridedRuns::runs() const {
  if (runBytes == 0)
    return 0;
  int64_t result = 1;
  for (int64_t repeat : count)
    result *= repeat;
  return result;
}

StridedRuns m2n::plan::stridedRuns(const Box &slice, const Box &buffer,
                                   int64_t elementBytes) {
  return std::move(describe(slice, {&buffer}, elementBytes).front());
}

std::pair<StridedRuns, StridedRuns>
m2n::plan::stridedRunsPair(const Box &slice, const Box &from, const Box &to,
                           int64_t elementBytes) {
  llvm::SmallVector<StridedRuns, 2> both =
      describe(slice, {&from, &to}, elementBytes);
  return {std::move(both[0]), std::move(both[1])};
}
