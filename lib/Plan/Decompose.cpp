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

#include "FanOut.h"

#include "m2n/Plan/Parallel.h"

#include "llvm/ADT/STLExtras.h"

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

/// Counts a slice of `box`, a local copy or not, for every member of
/// `group`, into `stats`.
void count(const TransferGroup &group, const Box &box, bool localCopy,
           DecomposeStats &stats) {
  int64_t members = static_cast<int64_t>(group.members.size());
  int64_t bytes = box.volume() * group.elementBytes() * members;
  if (localCopy) {
    stats.localCopies += members;
    stats.localBytes += bytes;
  } else {
    stats.remoteSlices += members;
    stats.wireBytes += bytes;
  }
}

/// The slices of one group, and their counts into `stats`: a fan-out slice
/// per piece of a destination box that several ranks hold, when `fanOut`
/// says so, and otherwise a slice per piece and receiver.
std::vector<Slice> decomposeGroup(const Plan &plan, const TransferGroup &group,
                                  bool fanOut, DecomposeStats &stats) {
  FanOutIndex index(plan, group);
  const LayoutIndex &src = index.source(), &dst = index.destination();
  std::vector<std::vector<Piece>> pieces = piecesByBox(src, dst);
  auto isFannedOut = [&](int32_t dstId) {
    return fanOut && dst.holders(dstId).size() > 1;
  };
  std::vector<Slice> slices;
  // A piece of a replicated box goes out as one fan-out slice, which
  // stands for a slice to each of the box's holders.
  for (int32_t dstId = 0; dstId < dst.numBoxes(); ++dstId) {
    if (!isFannedOut(dstId))
      continue;
    for (const Piece &piece : pieces[dstId]) {
      Slice &slice = slices.emplace_back();
      slice.sender = src.holders(piece.srcId).front();
      slice.receiver = kEveryHolder;
      slice.box = piece.box;
      index.forEachDelivery(slice, [&](int64_t sender, int64_t receiver) {
        count(group, slice.box, sender == receiver, stats);
      });
    }
  }
  llvm::ArrayRef<int64_t> receivers = dst.meshRanks();
  for (size_t position = 0; position < receivers.size(); ++position) {
    int32_t dstId = dst.boxAt(position);
    if (dstId < 0 || isFannedOut(dstId))
      continue;
    int64_t receiver = receivers[position];
    int32_t ownId = src.boxOf(receiver);
    for (const Piece &piece : pieces[dstId]) {
      Slice &slice = slices.emplace_back();
      slice.receiver = receiver;
      slice.sender = copiesLocally(ownId, piece.srcId)
                         ? receiver
                         : src.holders(piece.srcId).front();
      slice.box = piece.box;
      count(group, slice.box, slice.isLocalCopy(), stats);
    }
  }
  sortSlices(slices);
  return slices;
}

} // namespace

DecomposeStats m2n::plan::decompose(Plan &plan,
                                    const DecomposeOptions &options) {
  std::vector<DecomposeStats> groupStats(plan.groups.size());
  forEachGroup(plan, options.pool, [&](size_t g) {
    plan.groups[g].slices = decomposeGroup(plan, plan.groups[g],
                                           options.fanOut, groupStats[g]);
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

bool m2n::plan::hasFanOuts(const TransferGroup &group) {
  return llvm::any_of(group.slices,
                      [](const Slice &slice) { return slice.isFanOut(); });
}

bool m2n::plan::hasFanOuts(const Plan &plan) {
  return llvm::any_of(plan.groups, [](const TransferGroup &group) {
    return hasFanOuts(group);
  });
}

bool m2n::plan::expandFanOuts(TransferGroup &group, const Plan &plan,
                              llvm::function_ref<bool(const Slice &)> which) {
  if (!hasFanOuts(group))
    return true;
  FanOutIndex index(plan, group);
  std::vector<Slice> slices;
  slices.reserve(group.slices.size());
  bool expanded = true;
  for (Slice &slice : group.slices) {
    if (slice.isFanOut() && which(slice))
      expanded &= index.expand(slice, slices);
    else
      slices.push_back(std::move(slice));
  }
  sortSlices(slices);
  group.slices = std::move(slices);
  return expanded;
}

std::string m2n::plan::expandFanOuts(Plan &plan,
                                     llvm::ThreadPoolInterface *pool) {
  if (!hasFanOuts(plan))
    return "";
  std::vector<char> expanded(plan.groups.size(), true);
  forEachGroup(plan, pool, [&](size_t g) {
    expanded[g] = expandFanOuts(plan.groups[g], plan,
                                [](const Slice &) { return true; });
  });
  for (size_t g = 0; g < plan.groups.size(); ++g)
    if (!expanded[g])
      return "group " + std::to_string(g) +
             " has a fan-out slice whose box lies in no one destination box";
  return "";
}
