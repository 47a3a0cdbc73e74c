//===- LayoutIndex.cpp - The distinct boxes of a layout -------------------===//

#include "LayoutIndex.h"

using namespace m2n;
using namespace m2n::plan;

namespace {

/// The position of `value` in the ascending `values`, which holds it.
int64_t positionOf(const std::vector<int64_t> &values, int64_t value) {
  return std::lower_bound(values.begin(), values.end(), value) - values.begin();
}

} // namespace

bool m2n::plan::isWithinTensor(const Box &box,
                               const std::vector<int64_t> &shape) {
  if (box.offsets.size() != shape.size() || box.sizes.size() != shape.size())
    return false;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (box.offsets[d] < 0 || box.sizes[d] < 0 || box.offsets[d] > shape[d] ||
        box.sizes[d] > shape[d] - box.offsets[d])
      return false;
  }
  return true;
}

LayoutIndex::LayoutIndex(const Plan &plan, const std::vector<int64_t> &shape,
                         const PlanLayout &layout) {
  if (!isValidLayout(plan, shape, layout))
    return;
  isValid = true;
  const Mesh &mesh = plan.meshes[layout.mesh];
  ranks = mesh.ranks;
  indexOfRank = RankIndex(ranks);

  std::vector<Box> local = localBoxes(shape, mesh, layout.placements);
  size_t rank = shape.size();
  starts.resize(rank);
  ends.resize(rank);
  for (const Box &box : local) {
    if (box.empty())
      continue;
    for (size_t d = 0; d < rank; ++d)
      starts[d].push_back(box.offsets[d]);
  }
  // The non-empty extents along a dimension partition it, so an extent is
  // known by its start.
  for (size_t d = 0; d < rank; ++d) {
    std::sort(starts[d].begin(), starts[d].end());
    starts[d].erase(std::unique(starts[d].begin(), starts[d].end()),
                    starts[d].end());
  }
  for (const Box &box : local) {
    if (box.empty())
      continue;
    for (size_t d = 0; d < rank; ++d) {
      int64_t position = positionOf(starts[d], box.offsets[d]);
      if (ends[d].empty())
        ends[d].assign(starts[d].size(), 0);
      ends[d][position] = box.offsets[d] + box.sizes[d];
    }
  }

  // Cells in row-major order are boxes in order of their offsets; the ids
  // follow that order so that callers enumerate boxes deterministically.
  int64_t numCells = 1;
  for (size_t d = 0; d < rank; ++d)
    numCells *= static_cast<int64_t>(starts[d].size());
  std::vector<int64_t> cellOfIndex(local.size(), -1);
  cellBoxes.assign(numCells, -1);
  for (size_t i = 0; i < local.size(); ++i) {
    if (local[i].empty())
      continue;
    int64_t cell = 0;
    for (size_t d = 0; d < rank; ++d)
      cell = cell * static_cast<int64_t>(starts[d].size()) +
             positionOf(starts[d], local[i].offsets[d]);
    cellOfIndex[i] = cell;
    cellBoxes[cell] = 0;
  }
  std::vector<int64_t> boxCells;
  for (int64_t cell = 0; cell < numCells; ++cell) {
    if (cellBoxes[cell] < 0)
      continue;
    cellBoxes[cell] = static_cast<int32_t>(boxCells.size());
    boxCells.push_back(cell);
  }
  boxes.resize(boxCells.size());
  holderLists.resize(boxCells.size());
  boxOfIndex.assign(local.size(), -1);
  for (size_t i = 0; i < local.size(); ++i) {
    if (cellOfIndex[i] < 0)
      continue;
    int32_t id = cellBoxes[cellOfIndex[i]];
    boxOfIndex[i] = id;
    if (holderLists[id].empty())
      boxes[id] = local[i];
    holderLists[id].push_back(ranks[i]);
  }
}

bool LayoutIndex::isProperRegion(const Box &region, size_t rank) {
  if (region.sizes.size() != rank || region.offsets.size() != rank)
    return false;
  return std::all_of(region.sizes.begin(), region.sizes.end(),
                     [](int64_t size) { return size > 0; });
}

bool LayoutIndex::onMesh(int64_t rank) const { return meshIndexOf(rank) >= 0; }

int32_t LayoutIndex::boxOf(int64_t rank) const {
  int64_t index = meshIndexOf(rank);
  return index < 0 ? -1 : boxOfIndex[index];
}

int32_t LayoutIndex::boxOfCell(llvm::ArrayRef<int64_t> cell) const {
  int64_t linear = 0;
  for (size_t d = 0; d < cell.size(); ++d)
    linear = linear * static_cast<int64_t>(starts[d].size()) + cell[d];
  return cellBoxes[linear];
}

int32_t LayoutIndex::findContaining(const Box &region) const {
  size_t rank = starts.size();
  if (boxes.empty() || !isProperRegion(region, rank))
    return -1;
  llvm::SmallVector<int64_t, 8> cell(rank);
  for (size_t d = 0; d < rank; ++d) {
    // The last interval starting at or before the region's start.
    auto it =
        std::upper_bound(starts[d].begin(), starts[d].end(), region.offsets[d]);
    if (it == starts[d].begin())
      return -1;
    cell[d] = (it - starts[d].begin()) - 1;
    if (region.offsets[d] + region.sizes[d] > ends[d][cell[d]])
      return -1;
  }
  return boxOfCell(cell);
}
