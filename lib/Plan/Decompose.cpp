//===- Decompose.cpp - Reshards into slice transfers ----------------------===//
//
// Each destination box is cut by the distinct source boxes it meets. The
// distinct source boxes are disjoint, so the pieces tile the destination box
// and each has a set of holders; LayoutIndex finds the source boxes that meet
// a destination box by binary search per dimension, so a group costs about
// the number of slices it produces, not sources times destinations.
//
//===----------------------------------------------------------------------===//

#include "m2n/Plan/Decompose.h"

#include "LayoutIndex.h"

using namespace m2n;
using namespace m2n::plan;

namespace {

/// The slices of one group, and their counts into `stats`.
std::vector<Slice> decomposeGroup(const Plan &plan, const TransferGroup &group,
                                  DecomposeStats &stats) {
  std::vector<Slice> slices;
  LayoutIndex src(plan, group.shape, group.src);
  LayoutIndex dst(plan, group.shape, group.dst);
  int64_t members = static_cast<int64_t>(group.members.size());
  llvm::ArrayRef<int64_t> receivers = dst.meshRanks();
  for (size_t index = 0; index < receivers.size(); ++index) {
    int32_t dstId = dst.boxAt(index);
    if (dstId < 0)
      continue;
    int64_t receiver = receivers[index];
    const Box &dstBox = dst.box(dstId);
    // The receiver already holds a region exactly when its own source box
    // is the one the region comes from.
    int32_t ownId = src.boxOf(receiver);
    src.forEachIntersecting(dstBox, [&](int32_t srcId) {
      Slice slice;
      slice.receiver = receiver;
      slice.sender = srcId == ownId ? receiver : src.holders(srcId).front();
      slice.box = intersect(src.box(srcId), dstBox);
      int64_t bytes = sliceBytes(group, slice) * members;
      if (slice.isLocalCopy()) {
        stats.localCopies += members;
        stats.localBytes += bytes;
      } else {
        stats.remoteSlices += members;
        stats.wireBytes += bytes;
      }
      slices.push_back(std::move(slice));
    });
  }
  sortSlices(slices);
  return slices;
}

} // namespace

DecomposeStats m2n::plan::decompose(Plan &plan) {
  DecomposeStats stats;
  for (TransferGroup &group : plan.groups)
    group.slices = decomposeGroup(plan, group, stats);
  return stats;
}
