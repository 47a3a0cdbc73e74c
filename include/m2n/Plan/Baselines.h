//===- Baselines.h - What a refit costs without m2n -------------*- C++ -*-===//
//
// The ways refits are done today, priced by the same cost model as m2n's
// plans, so that a plan can be set against them figure for figure. Each
// baseline moves every tensor on its own, one tensor after another, as the
// per-tensor primitives it stands for do:
//
// - GatherBroadcast: the full tensor is gathered to one source rank (the
//   one that holds the most of it, the first in mesh order on a tie): every
//   other distinct source box is sent to it by its first holder in mesh
//   order, all in one step. Then it is broadcast to every rank of the
//   destination mesh as NCCL does, along a chain in mesh order that starts
//   at the root: each destination rank receives the whole tensor once and
//   forwards it once to the next, the last excepted; the root, should it be
//   a destination rank too, receives nothing. The chain is priced as
//   one step in which every link carries the whole tensor at once, the
//   pipeline's steady state; its fill time is left out, which favours the
//   baseline.
// - PointToPoint: the slices that decompose() gives, one message per
//   remote slice, in one step per tensor; each region is sent by its first
//   holder in mesh order (no balancing), with no fusion across tensors and
//   no relay. What per-tensor reshard primitives built on send and receive
//   do.
// - PaddedAllToAll: an all-to-all per tensor in which every source rank
//   sends every destination rank other than itself a message of one fixed
//   slot size, the largest that PointToPoint sends between any pair for
//   that tensor, padding included: what reshard primitives built on
//   all-to-all with equal splits do. Pairs within the source or within the
//   destination mesh are not counted, which favours the baseline.
//
// Regions a destination rank holds itself are copied locally in
// PointToPoint and PaddedAllToAll, as in a plan.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_PLAN_BASELINES_H
#define M2N_PLAN_BASELINES_H

#include "m2n/Plan/CostModel.h"
#include "m2n/Plan/Plan.h"

#include "llvm/ADT/StringRef.h"

namespace m2n::plan {

enum class Baseline {
  GatherBroadcast,
  PointToPoint,
  PaddedAllToAll,
};

/// The baselines, in the order of the enum.
inline constexpr Baseline kBaselines[] = {Baseline::GatherBroadcast,
                                          Baseline::PointToPoint,
                                          Baseline::PaddedAllToAll};

/// "gather_broadcast", "point_to_point" or "padded_all_to_all".
llvm::StringRef baselineName(Baseline baseline);

/// What `baseline` costs for the refit of `plan`, by `model`. Only the
/// plan's meshes, tensors and groups' layouts count: slices and messages it
/// may have are ignored. The messages of a step are priced exactly as
/// CostModel::cost prices a step of a fused plan, and the lower bound is
/// the refit's, the same as for any plan of it. The baselines' buffers are
/// not modelled: stagingPeak is 0, and so is localCopyBytes for
/// GatherBroadcast.
PlanCost costBaseline(const Plan &plan, Baseline baseline,
                      const CostModel &model);

/// The fewest bytes that any plan of the refit moves between ranks: what
/// each destination rank lacks in its own source shards, summed.
int64_t minimumWireBytes(const Plan &plan);

} // namespace m2n::plan

#endif // M2N_PLAN_BASELINES_H
