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

#include "m2n/Plan/Parallel.h"

using namespace m2n;
using namespace m2n::plan;

namespace {

/// A piece of a destination box: the part of it in source box `srcId`.
struct Piece {
  int32_t srcId;
  Box box;
};

/// The pieces of every distinct destination box, by box id: replicated
/// destinations share them, so they are cut once per box, not per rank.
std::vector<std::vector<Piece>> piecesByBox(const LayoutIndex &src,
                                            const LayoutIndex &dst) {
  std::vector<std::vector<Piece>> pieces(dst.numBoxes());
  for (int32_t dstId = 0; dstId < dst.numBoxes(); ++dstId) {
    const Box &dstBox = dst.box(dstId);
    src.forEachIntersecting(dstBox, [&](int32_t srcId) {
      pieces[dstId].push_back(Piece{srcId, intersect(src.box(srcId), dstBox)});
    });
  }
  return pieces;
}

/// The slices of one group, and their counts into `stats`.
std::vector<Slice> decomposeGroup(const Plan &plan, const TransferGroup &group,
                                  DecomposeStats &stats) {
  LayoutIndex src(plan, group.shape, group.src);
  LayoutIndex dst(plan, group.shape, group.dst);
  std::vector<std::vector<Piece>> pieces = piecesByBox(src, dst);
  int64_t members = static_cast<int64_t>(group.members.size());
  llvm::ArrayRef<int64_t> receivers = dst.meshRanks();
  size_t count = 0;
  for (size_t index = 0; index < receivers.size(); ++index)
    if (dst.boxAt(index) >= 0)
      count += pieces[dst.boxAt(index)].size();
  std::vector<Slice> slices;
  slices.reserve(count);
  for (size_t index = 0; index < receivers.size(); ++index) {
    int32_t dstId = dst.boxAt(index);
    if (dstId < 0)
      continue;
    int64_t receiver = receivers[index];
    // The receiver already holds a region exactly when its own source box
    // is the one the region comes from.
    int32_t ownId = src.boxOf(receiver);
    for (const Piece &piece : pieces[dstId]) {
      Slice &slice = slices.emplace_back();
      slice.receiver = receiver;
      slice.sender =
          piece.srcId == ownId ? receiver : src.holders(piece.srcId).front();
      slice.box = piece.box;
      int64_t bytes = sliceBytes(group, slice) * members;
      if (slice.isLocalCopy()) {
        stats.localCopies += members;
        stats.localBytes += bytes;
      } else {
        stats.remoteSlices += members;
        stats.wireBytes += bytes;
      }
    }
  }
  sortSlices(slices);
  return slices;
}

} // namespace

DecomposeStats m2n::plan::decompose(Plan &plan,
                                    llvm::ThreadPoolInterface *pool) {
  std::vector<DecomposeStats> groupStats(plan.groups.size());
  forEachGroup(plan, pool, [&](size_t g) {
    plan.groups[g].slices =
        decomposeGroup(plan, plan.groups[g], groupStats[g]);
  });
  DecomposeStats stats;
  for (const DecomposeStats &group : groupStats) {
    stats.remoteSlices += group.remoteSlices;
    stats.wireBytes += group.wireBytes;
    stats.localCopies += group.localCopies;
    stats.localBytes += group.localBytes;
  }
  return stats;
}
