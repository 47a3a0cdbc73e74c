//===- LayoutIndex.h - The distinct boxes of a layout -----------*- C++ -*-===//
//
// Within one layout, two ranks' boxes are either identical or disjoint, and
// the distinct non-empty boxes tile the tensor. Along each dimension their
// extents form a partition of that dimension (the leaves of the nested
// torch.chunk splits), and the boxes are exactly the products of one interval
// per dimension, because the mesh axes that split one dimension are not the
// ones that split another. So the boxes that meet a region are found by a
// binary search per dimension, not by testing every rank.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_LIB_PLAN_LAYOUTINDEX_H
#define M2N_LIB_PLAN_LAYOUTINDEX_H

#include "m2n/Plan/Plan.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace m2n::plan {

/// Whether `box` has the rank of a tensor of `shape` and lies within it,
/// decided without overflow, so that passes can skip the malformed boxes
/// that only a plan read from bad IR has.
bool isWithinTensor(const Box &box, const std::vector<int64_t> &shape);

class LayoutIndex {
public:
  /// Indexes one layout of a tensor of `shape`. An invalid layout, which
  /// only a plan read from malformed IR has, indexes no box and no rank.
  LayoutIndex(const Plan &plan, const std::vector<int64_t> &shape,
              const PlanLayout &layout);

  /// Whether the layout was valid.
  bool valid() const { return isValid; }
  /// The distinct non-empty boxes, ordered by their offsets.
  int32_t numBoxes() const { return static_cast<int32_t>(boxes.size()); }
  const Box &box(int32_t id) const { return boxes[id]; }
  /// The ranks that hold box `id`, in mesh order.
  llvm::ArrayRef<int64_t> holders(int32_t id) const { return holderLists[id]; }

  /// The mesh's ranks in mesh order, and the id of the box the rank at each
  /// mesh index holds (-1 when it holds nothing).
  llvm::ArrayRef<int64_t> meshRanks() const { return ranks; }
  int32_t boxAt(int64_t meshIndex) const { return boxOfIndex[meshIndex]; }
  /// Whether `rank` is on the mesh, and the id of the box it holds (-1 when
  /// it holds nothing or is not on the mesh).
  bool onMesh(int64_t rank) const;
  int32_t boxOf(int64_t rank) const;

  /// Calls `fn(id)` for every box that shares an element with `region`, in
  /// increasing id order.
  template <typename Fn>
  void forEachIntersecting(const Box &region, Fn fn) const;
  /// The box that contains all of the non-empty `region`, or -1.
  int32_t findContaining(const Box &region) const;

private:
  /// Whether `region` has `rank` dimensions, each of positive size.
  static bool isProperRegion(const Box &region, size_t rank);
  /// The mesh index of `rank`, or -1.
  int64_t meshIndexOf(int64_t rank) const { return indexOfRank.find(rank); }
  /// The id of the box made of interval `cell[d]` in each dimension d.
  int32_t boxOfCell(llvm::ArrayRef<int64_t> cell) const;

  bool isValid = false;
  std::vector<Box> boxes;
  std::vector<std::vector<int64_t>> holderLists;
  std::vector<int64_t> ranks;
  std::vector<int32_t> boxOfIndex;
  RankIndex indexOfRank{{}};
  /// Per dimension, the partition's interval starts and ends, ascending.
  std::vector<std::vector<int64_t>> starts, ends;
  /// Box id per cell (one interval per dimension, row-major), or -1.
  std::vector<int32_t> cellBoxes;
};

template <typename Fn>
void LayoutIndex::forEachIntersecting(const Box &region, Fn fn) const {
  size_t rank = starts.size();
  if (boxes.empty() || !isProperRegion(region, rank))
    return;
  // The intervals of each dimension that meet the region: a range [lo, hi).
  llvm::SmallVector<int64_t, 8> lo(rank), hi(rank);
  for (size_t d = 0; d < rank; ++d) {
    int64_t begin = region.offsets[d];
    int64_t end = begin + region.sizes[d];
    lo[d] = std::upper_bound(ends[d].begin(), ends[d].end(), begin) -
            ends[d].begin();
    hi[d] = std::lower_bound(starts[d].begin(), starts[d].end(), end) -
            starts[d].begin();
    if (lo[d] >= hi[d])
      return;
  }
  // Walk the product of the ranges row-major, which is increasing id order.
  llvm::SmallVector<int64_t, 8> cell = lo;
  while (true) {
    int32_t id = boxOfCell(cell);
    if (id >= 0)
      fn(id);
    size_t d = rank;
    while (d > 0 && ++cell[d - 1] == hi[d - 1]) {
      cell[d - 1] = lo[d - 1];
      --d;
    }
    if (d == 0)
      return;
  }
}

} // namespace m2n::plan

#endif // M2N_LIB_PLAN_LAYOUTINDEX_H
