//===- HandBuiltPlans.h - Small plans for the scheduling tests --*- C++ -*-===//
//
// Helpers that build plans by hand, so that the tests of the cost model,
// relay, fusion and scheduling depend on no other pass.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_UNITTESTS_PLAN_HANDBUILTPLANS_H
#define M2N_UNITTESTS_PLAN_HANDBUILTPLANS_H

#include "m2n/Plan/CostModel.h"
#include "m2n/Plan/Decompose.h"
#include "m2n/Plan/Fuse.h"
#include "m2n/Plan/Plan.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

namespace m2n::plan::testing {

/// A box from its offsets and sizes.
inline Box box(std::vector<int64_t> offsets, std::vector<int64_t> sizes) {
  return Box{std::move(offsets), std::move(sizes)};
}

inline Mesh mesh(std::vector<int64_t> shape, std::vector<int64_t> ranks) {
  return Mesh{std::move(shape), std::move(ranks)};
}

/// The ranks first, first + 1, ..., first + count - 1.
inline std::vector<int64_t> rankRange(int64_t first, int64_t count) {
  std::vector<int64_t> ranks(count);
  for (int64_t i = 0; i < count; ++i)
    ranks[i] = first + i;
  return ranks;
}

inline Slice slice(int64_t sender, int64_t receiver, Box box, int32_t round = 0,
                   Origin origin = Origin::Source) {
  Slice result;
  result.sender = sender;
  result.receiver = receiver;
  result.origin = origin;
  result.round = round;
  result.box = std::move(box);
  return result;
}

/// Adds the meshes `src` and `dst` (named "src" and "dst") to an empty plan.
inline Plan planWithMeshes(Mesh src, Mesh dst) {
  Plan plan;
  plan.meshNames = {"src", "dst"};
  plan.meshes = {std::move(src), std::move(dst)};
  return plan;
}

/// Adds a group of `members` tensors named "<prefix>0", "<prefix>1", ...
/// laid out with `srcPlacements` on mesh 0 and `dstPlacements` on mesh 1,
/// without slices; returns its index.
inline int32_t addGroup(Plan &plan, std::vector<int64_t> shape, DType dtype,
                        std::vector<Placement> srcPlacements,
                        std::vector<Placement> dstPlacements,
                        int32_t members = 1, std::string prefix = "t") {
  TransferGroup group;
  group.shape = std::move(shape);
  group.dtype = dtype;
  group.src = PlanLayout{0, std::move(srcPlacements)};
  group.dst = PlanLayout{1, std::move(dstPlacements)};
  int32_t index = static_cast<int32_t>(plan.groups.size());
  for (int32_t i = 0; i < members; ++i) {
    group.members.push_back(static_cast<int32_t>(plan.tensors.size()));
    plan.tensors.push_back(TensorInfo{prefix + std::to_string(i), index});
  }
  plan.groups.push_back(std::move(group));
  return index;
}

/// The slices that decompose() gives group `g`, leaving the other groups
/// as they are.
inline void addDirectSlices(Plan &plan, int32_t g) {
  Plan decomposed = plan;
  decompose(decomposed);
  plan.groups[g].slices = std::move(decomposed.groups[g].slices);
}

/// The model's bucket for every pair, and with `nodes` the model's larger
/// bucket for pairs within a node, as m2n-fuse takes them.
inline FuseOptions modelBuckets(const CostModel &model, bool nodes) {
  FuseOptions options{model.defaultBucketBytes()};
  if (nodes) {
    options.nodeBucketBytes = model.defaultNodeBucketBytes();
    options.ranksPerNode = model.getTopology().ranksPerNode;
  }
  return options;
}

} // namespace m2n::plan::testing

#endif // M2N_UNITTESTS_PLAN_HANDBUILTPLANS_H
