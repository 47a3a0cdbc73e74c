//===- Plan.cpp - The transfer plan of a refit ----------------------------===//
//
// Builds the undecomposed plan of a spec and answers the plan's basic
// questions: its ranks, the bytes of a slice, the box a rank holds.
//
//===----------------------------------------------------------------------===//

#include "m2n/Plan/Plan.h"

#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <map>
#include <tuple>

using namespace m2n;
using namespace m2n::plan;

namespace {

/// What makes two tensors share a group, as an ordered key.
using GroupKey =
    std::tuple<std::vector<int64_t>, DType, int32_t, std::vector<int64_t>,
               int32_t, std::vector<int64_t>>;

std::vector<int64_t> placementDims(const std::vector<Placement> &placements) {
  std::vector<int64_t> dims;
  dims.reserve(placements.size());
  for (const Placement &placement : placements)
    dims.push_back(placement.dim);
  return dims;
}

} // namespace

std::vector<int64_t> Plan::ranks() const {
  std::vector<int64_t> result;
  for (const Mesh &mesh : meshes)
    result.insert(result.end(), mesh.ranks.begin(), mesh.ranks.end());
  std::sort(result.begin(), result.end());
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

int64_t Plan::worldSize() const {
  int64_t largest = -1;
  for (const Mesh &mesh : meshes)
    for (int64_t rank : mesh.ranks)
      largest = std::max(largest, rank);
  return largest + 1;
}

Plan m2n::plan::planFromSpec(const spec::RefitSpec &spec) {
  Plan plan;
  llvm::StringMap<int32_t> meshIndex;
  for (const spec::MeshSpec &mesh : spec.meshes) {
    meshIndex.try_emplace(mesh.name, static_cast<int32_t>(plan.meshes.size()));
    plan.meshNames.push_back(mesh.name);
    plan.meshes.push_back(Mesh{mesh.shape, mesh.ranks});
  }
  // A spec that names an unknown mesh is invalid; -1 lets verifyPlan say so.
  auto layoutOf = [&](const spec::LayoutSpec &layout) {
    auto it = meshIndex.find(layout.mesh);
    int32_t mesh = it == meshIndex.end() ? -1 : it->second;
    return PlanLayout{mesh, layout.placements};
  };

  std::map<GroupKey, int32_t> groupOf;
  for (const spec::TensorSpec &tensor : spec.tensors) {
    PlanLayout src = layoutOf(tensor.src);
    PlanLayout dst = layoutOf(tensor.dst);
    GroupKey key{tensor.shape, tensor.dtype,
                 src.mesh,     placementDims(src.placements),
                 dst.mesh,     placementDims(dst.placements)};
    auto [it, inserted] =
        groupOf.try_emplace(key, static_cast<int32_t>(plan.groups.size()));
    if (inserted) {
      TransferGroup group;
      group.shape = tensor.shape;
      group.dtype = tensor.dtype;
      group.src = std::move(src);
      group.dst = std::move(dst);
      plan.groups.push_back(std::move(group));
    }
    int32_t index = static_cast<int32_t>(plan.tensors.size());
    plan.groups[it->second].members.push_back(index);
    plan.tensors.push_back(TensorInfo{tensor.name, it->second});
  }
  return plan;
}

bool m2n::plan::sliceLess(const Slice &a, const Slice &b) {
  // Spelled out rather than with std::tie, which would compare each box
  // dimension list twice (a < b, then b < a).
  if (a.round != b.round)
    return a.round < b.round;
  if (a.receiver != b.receiver)
    return a.receiver < b.receiver;
  if (a.sender != b.sender)
    return a.sender < b.sender;
  if (a.box.offsets != b.box.offsets)
    return a.box.offsets < b.box.offsets;
  if (a.origin != b.origin)
    return a.origin < b.origin;
  return a.box.sizes < b.box.sizes;
}

void m2n::plan::sortSlices(std::vector<Slice> &slices) {
  // A lambda, unlike a function pointer, lets the comparison inline.
  auto less = [](const Slice &a, const Slice &b) { return sliceLess(a, b); };
  // Passes mostly hand over slices that are already in order. The order is
  // total, so any sort gives the same result and skipping one changes
  // nothing.
  if (!std::is_sorted(slices.begin(), slices.end(), less))
    std::sort(slices.begin(), slices.end(), less);
}

Box m2n::plan::sourceBox(const Plan &plan, const TransferGroup &group,
                         int64_t rank) {
  return HeldBoxes(plan, group, group.src).of(rank);
}

Box m2n::plan::destinationBox(const Plan &plan, const TransferGroup &group,
                              int64_t rank) {
  return HeldBoxes(plan, group, group.dst).of(rank);
}

RankIndex::RankIndex(const std::vector<int64_t> &ranks) {
  if (ranks.empty())
    return;
  auto [lowest, highest] = std::minmax_element(ranks.begin(), ranks.end());
  uint64_t span = static_cast<uint64_t>(*highest - *lowest) + 1;
  if (span <= 4 * ranks.size() + 64) {
    firstRank = *lowest;
    table.assign(span, -1);
    for (size_t i = 0; i < ranks.size(); ++i)
      table[ranks[i] - firstRank] = static_cast<int32_t>(i);
    return;
  }
  for (size_t i = 0; i < ranks.size(); ++i)
    sorted.emplace_back(ranks[i], static_cast<int64_t>(i));
  std::sort(sorted.begin(), sorted.end());
}

int64_t RankIndex::find(int64_t rank) const {
  if (!table.empty()) {
    uint64_t offset =
        static_cast<uint64_t>(rank) - static_cast<uint64_t>(firstRank);
    return offset < table.size() ? table[offset] : -1;
  }
  auto it = std::lower_bound(sorted.begin(), sorted.end(),
                             std::make_pair(rank, int64_t(0)));
  return it != sorted.end() && it->first == rank ? it->second : -1;
}

bool m2n::plan::isValidLayout(const Plan &plan,
                             const std::vector<int64_t> &shape,
                             const PlanLayout &layout) {
  if (layout.mesh < 0 ||
      layout.mesh >= static_cast<int32_t>(plan.meshes.size()))
    return false;
  const Mesh &mesh = plan.meshes[layout.mesh];
  return checkMesh(mesh.shape, mesh.ranks).empty() &&
         checkTensorShape(shape).empty() &&
         checkPlacements(layout.placements,
                         static_cast<int64_t>(mesh.shape.size()),
                         static_cast<int64_t>(shape.size()))
             .empty();
}

/// The ranks of the layout's mesh, or none for an invalid layout.
static const std::vector<int64_t> &layoutRanks(const Plan &plan, bool valid,
                                               const PlanLayout &layout) {
  static const std::vector<int64_t> none;
  return valid ? plan.meshes[layout.mesh].ranks : none;
}

HeldBoxes::HeldBoxes(const Plan &plan, const TransferGroup &group,
                     const PlanLayout &layout)
    : HeldBoxes(plan, group, layout,
                isValidLayout(plan, group.shape, layout)) {}

HeldBoxes::HeldBoxes(const Plan &plan, const TransferGroup &group,
                     const PlanLayout &layout, bool valid)
    : index(layoutRanks(plan, valid, layout)) {
  // A rank-0 box always holds its one element, so "nothing" needs a
  // dimension to be empty in. (A shape of more dimensions than a box can
  // have is invalid, and so is its layout.)
  size_t emptyRank = std::clamp<size_t>(group.shape.size(), 1, kMaxTensorRank);
  nothing = Box{Dims(emptyRank, 0), Dims(emptyRank, 0)};
  if (!valid)
    return;
  const Mesh &mesh = plan.meshes[layout.mesh];
  boxes = localBoxes(group.shape, mesh, layout.placements);
}

const Box &HeldBoxes::of(int64_t rank) const {
  int64_t position = index.find(rank);
  return position < 0 ? nothing : boxes[position];
}
