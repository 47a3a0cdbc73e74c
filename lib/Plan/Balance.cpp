//===- Balance.cpp - Choosing senders among replicas ----------------------===//
//
// A longest-processing-time greedy: regions in decreasing order of bytes go
// to their least-loaded holder. A region is split among several holders only
// when sending it whole would lift the busiest sender above both the current
// maximum and the lower bound, and the split lands lower; it then uses the
// fewest pieces that stay within that level, so that splitting does not
// multiply messages where whole regions balance as well.
//
// The lower bound reported as the ideal is the largest of:
//  - for each set H of ranks that is some region's holder set, or the union
//    of all of them: the bytes that only ranks of H can send (regions whose
//    holders lie within H, plus what ranks of H send that is not balanced,
//    such as relays) spread evenly over H;
//  - the busiest rank's unbalanced bytes;
//  - the largest region that may not be split, which some rank sends whole.
//
//===----------------------------------------------------------------------===//

#include "m2n/Plan/Balance.h"

#include "FanOut.h"

#include "m2n/Plan/Decompose.h"

#include "m2n/Plan/Parallel.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <tuple>

using namespace m2n;
using namespace m2n::plan;

namespace {

/// A round-0 remote slice whose sender is to be chosen.
struct Region {
  int32_t group = 0;
  int32_t slice = 0;
  /// Bytes of all members.
  int64_t weight = 0;
  /// Dense indices of the ranks able to send it, in source mesh order.
  std::vector<int32_t> holders;
  bool splittable = false;
};

/// Where a region goes: one sender per piece.
struct Piece {
  int32_t sender = 0;
  Box box;
};

/// Where a region goes: whole from `sender` when `pieces` is empty, which
/// most are (a region's box is not copied for them: a plan has millions),
/// else in its pieces.
struct Assignment {
  int32_t sender = 0;
  std::vector<Piece> pieces;
};

/// Ranks numbered densely, so that loads live in a vector.
class RankTable {
public:
  explicit RankTable(std::vector<int64_t> ranks) : ranks(std::move(ranks)) {
    std::sort(this->ranks.begin(), this->ranks.end());
    this->ranks.erase(std::unique(this->ranks.begin(), this->ranks.end()),
                      this->ranks.end());
  }
  int32_t index(int64_t rank) const {
    return static_cast<int32_t>(
        std::lower_bound(ranks.begin(), ranks.end(), rank) - ranks.begin());
  }
  int64_t rank(int32_t index) const { return ranks[index]; }
  size_t size() const { return ranks.size(); }

private:
  std::vector<int64_t> ranks;
};

bool isRemote(const Slice &slice) { return !slice.isLocalCopy(); }

/// Whether balancing may choose the sender of the remote `slice`, which
/// lies within its tensor.
bool isBalanced(const Slice &slice) {
  return slice.origin == Origin::Source && slice.round == 0 &&
         !slice.box.empty();
}

/// Every rank of the plan and every sender, which a malformed plan may name
/// outside the meshes.
RankTable rankTable(const Plan &plan) {
  std::vector<int64_t> ranks = plan.ranks();
  RankIndex onMeshes(ranks);
  // Senders are looked up rather than all added and sorted away: a plan
  // has hundreds of thousands of slices and few ranks.
  for (const TransferGroup &group : plan.groups)
    for (const Slice &slice : group.slices)
      if (onMeshes.find(slice.sender) < 0)
        ranks.push_back(slice.sender);
  return RankTable(std::move(ranks));
}

/// The dimension a region is split along: its largest, the outermost among
/// equals, which keeps the pieces contiguous as far as the box allows.
size_t splitDim(const Box &box) {
  size_t best = 0;
  for (size_t d = 1; d < box.sizes.size(); ++d)
    if (box.sizes[d] > box.sizes[best])
      best = d;
  return best;
}

/// The loads of the senders, by dense rank index: what balancing cannot
/// move, and what they send before balancing.
struct SendLoads {
  /// Remote slices that are not balanced: relays, later rounds, regions
  /// without a holder to choose.
  std::vector<int64_t> unbalanced;
  /// Regions with exactly one holder, its sender. Most regions are such
  /// (sources that are not replicated); they need no choice, but they still
  /// count in the lower bound as the regions of a one-rank holder set.
  std::vector<int64_t> soleHolder;
  /// All remote slices, from their senders before balancing.
  std::vector<int64_t> before;
};

/// The one holder that may send a region to `receiver`, or -1 when there
/// are none or several.
int64_t soleHolder(llvm::ArrayRef<int64_t> holders, int64_t receiver) {
  int64_t sole = -1;
  for (int64_t holder : holders) {
    if (holder == receiver)
      continue;
    if (sole >= 0)
      return -1;
    sole = holder;
  }
  return sole;
}

/// Whether the fan-out `slice` has a single holder to send it: then there
/// is nothing to choose, and it stays one slice.
bool hasSoleHolder(const FanOutIndex &index, const Slice &slice) {
  int32_t id = index.sourceOf(slice);
  return id >= 0 && index.source().holders(id).size() == 1 &&
         index.source().holders(id).front() == slice.sender;
}

/// Expands the fan-out slices that have several holders to choose from:
/// each of their receivers may get its slice from another.
void expandChoices(Plan &plan, llvm::ThreadPoolInterface *pool) {
  forEachGroup(plan, pool, [&](size_t g) {
    TransferGroup &group = plan.groups[g];
    if (!hasFanOuts(group))
      return;
    FanOutIndex index(plan, group);
    expandFanOuts(group, plan, [&](const Slice &slice) {
      return !hasSoleHolder(index, slice);
    });
  });
}

/// The load of the fan-out `slice`, which has a sole holder: its sender's
/// sends to every rank that does not copy it locally.
void addFanOutLoad(const FanOutIndex &index, const TransferGroup &group,
                   const Slice &slice, int32_t sender, SendLoads &loads) {
  int64_t weight = sliceBytes(group, slice) *
                   static_cast<int64_t>(group.members.size());
  index.forEachDelivery(slice, [&](int64_t from, int64_t receiver) {
    if (from == receiver)
      return;
    loads.before[sender] += weight;
    loads.soleHolder[sender] += weight;
  });
}

/// The regions of group `g` to balance, and its slices' part of the
/// senders' loads.
void collectGroupRegions(const Plan &plan, size_t g, const RankTable &table,
                         const BalanceOptions &options, SendLoads &loads,
                         std::vector<Region> &regions) {
  const TransferGroup &group = plan.groups[g];
  FanOutIndex index(plan, group);
  const LayoutIndex &src = index.source();
  for (size_t i = 0; i < group.slices.size(); ++i) {
    const Slice &slice = group.slices[i];
    if (slice.isFanOut()) {
      addFanOutLoad(index, group, slice, table.index(slice.sender), loads);
      continue;
    }
    if (!isRemote(slice))
      continue;
    // A malformed slice, whose size may not even be computable, weighs
    // nothing and stays as it is.
    bool within = isWithinTensor(slice.box, group.shape);
    int64_t weight = within ? sliceBytes(group, slice) *
                                  static_cast<int64_t>(group.members.size())
                            : 0;
    int32_t sender = table.index(slice.sender);
    loads.before[sender] += weight;
    int32_t id =
        within && isBalanced(slice) ? containingSourceBox(src, slice) : -1;
    llvm::ArrayRef<int64_t> holders =
        id >= 0 ? src.holders(id) : llvm::ArrayRef<int64_t>();
    if (holders.empty()) {
      loads.unbalanced[sender] += weight;
      continue;
    }
    if (soleHolder(holders, slice.receiver) == slice.sender) {
      loads.soleHolder[sender] += weight;
      continue;
    }
    Region region;
    // The receiver is never among them: it would have a local copy.
    for (int64_t holder : holders)
      if (holder != slice.receiver)
        region.holders.push_back(table.index(holder));
    region.group = static_cast<int32_t>(g);
    region.slice = static_cast<int32_t>(i);
    region.weight = weight;
    // A scalar has no dimension to split along.
    region.splittable = options.split && weight >= options.minSplitBytes &&
                        region.holders.size() > 1 &&
                        !slice.box.sizes.empty() &&
                        slice.box.sizes[splitDim(slice.box)] > 1;
    regions.push_back(std::move(region));
  }
}

/// The regions to balance, in plan order, and the senders' loads. Groups
/// are looked through on `options.pool`, each into loads of its own.
std::vector<Region> collectRegions(const Plan &plan, const RankTable &table,
                                   const BalanceOptions &options,
                                   SendLoads &loads) {
  std::vector<SendLoads> groupLoads(plan.groups.size(), loads);
  std::vector<std::vector<Region>> groupRegions(plan.groups.size());
  forEachGroup(plan, options.pool, [&](size_t g) {
    collectGroupRegions(plan, g, table, options, groupLoads[g],
                        groupRegions[g]);
  });
  std::vector<Region> regions;
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    for (size_t rank = 0; rank < table.size(); ++rank) {
      loads.unbalanced[rank] += groupLoads[g].unbalanced[rank];
      loads.soleHolder[rank] += groupLoads[g].soleHolder[rank];
      loads.before[rank] += groupLoads[g].before[rank];
    }
    std::move(groupRegions[g].begin(), groupRegions[g].end(),
              std::back_inserter(regions));
  }
  return regions;
}

int64_t ceilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }

/// The lower bound described at the top of this file.
int64_t idealMaxSendBytes(const std::vector<Region> &regions,
                          const SendLoads &fixed) {
  const std::vector<int64_t> &fixedLoad = fixed.unbalanced;
  int64_t bound = fixedLoad.empty()
                      ? 0
                      : *std::max_element(fixedLoad.begin(), fixedLoad.end());
  std::map<std::vector<int32_t>, int64_t> weightOfSet;
  std::vector<int32_t> all;
  for (size_t rank = 0; rank < fixed.soleHolder.size(); ++rank) {
    if (fixed.soleHolder[rank] == 0)
      continue;
    weightOfSet[{static_cast<int32_t>(rank)}] += fixed.soleHolder[rank];
    all.push_back(static_cast<int32_t>(rank));
  }
  // Regions come in runs with the same holders (a replicated region, one
  // per receiver), which add to the entry of the run's first.
  const std::vector<int32_t> *lastHolders = nullptr;
  int64_t *lastWeight = nullptr;
  for (const Region &region : regions) {
    if (!lastHolders || region.holders != *lastHolders) {
      std::vector<int32_t> set = region.holders;
      std::sort(set.begin(), set.end());
      auto [it, inserted] = weightOfSet.try_emplace(set, 0);
      if (inserted)
        all.insert(all.end(), set.begin(), set.end());
      lastHolders = &region.holders;
      lastWeight = &it->second;
    }
    *lastWeight += region.weight;
    if (!region.splittable)
      bound = std::max(bound, region.weight);
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());

  auto boundOf = [&](const std::vector<int32_t> &set) {
    int64_t bytes = 0;
    for (int32_t rank : set)
      bytes += fixedLoad[rank];
    for (const auto &[subset, weight] : weightOfSet)
      if (subset.size() <= set.size() &&
          std::includes(set.begin(), set.end(), subset.begin(), subset.end()))
        bytes += weight;
    return ceilDiv(bytes, static_cast<int64_t>(set.size()));
  };
  for (const auto &entry : weightOfSet)
    bound = std::max(bound, boundOf(entry.first));
  if (!all.empty())
    bound = std::max(bound, boundOf(all));
  return bound;
}

/// The greedy: place() says where each region goes, in turn.
class Balancer {
public:
  Balancer(const Plan &plan, std::vector<int64_t> load, int64_t target)
      : plan(plan), load(std::move(load)), target(target) {
    for (int64_t bytes : this->load)
      currentMax = std::max(currentMax, bytes);
  }

  Assignment place(const Region &region);
  /// The busiest sender's bytes, with the regions placed so far.
  int64_t maxLoad() const { return currentMax; }

private:
  /// The holders by increasing load, then mesh order, in `ordered`.
  const std::vector<int32_t> &byLoad(const Region &region);
  void assign(int32_t rank, int64_t bytes) {
    load[rank] += bytes;
    currentMax = std::max(currentMax, load[rank]);
  }

  const Plan &plan;
  std::vector<int64_t> load;
  int64_t currentMax = 0;
  /// The level that a whole region may raise the busiest sender to without
  /// a split: the lower bound; the current maximum once above it.
  int64_t target;
  /// byLoad's answer, kept to spare an allocation per region.
  std::vector<int32_t> ordered;
};

const std::vector<int32_t> &Balancer::byLoad(const Region &region) {
  // The holders themselves, stably by load: the same order as sorting
  // their places, with no table of places.
  ordered.assign(region.holders.begin(), region.holders.end());
  std::stable_sort(ordered.begin(), ordered.end(), [&](int32_t a, int32_t b) {
    return load[a] < load[b];
  });
  return ordered;
}

Assignment Balancer::place(const Region &region) {
  const TransferGroup &group = plan.groups[region.group];
  const Box &box = group.slices[region.slice].box;
  const std::vector<int32_t> &holders = byLoad(region);
  int64_t wholePeak = load[holders.front()] + region.weight;
  int64_t level = std::max(currentMax, target);
  if (!region.splittable || wholePeak <= level) {
    assign(holders.front(), region.weight);
    return {holders.front(), {}};
  }

  // torch.chunk into k pieces gives `full` pieces of `c` units and one of
  // `rest` units; the largest pieces go to the least-loaded holders, so the
  // peak is the last full piece's or the rest's.
  size_t dim = splitDim(box);
  int64_t extent = box.sizes[dim];
  int64_t unitBytes = region.weight / extent;
  int64_t maxPieces = std::min<int64_t>(extent, holders.size());
  int64_t bestK = 1, bestPeak = wholePeak;
  for (int64_t k = 2; k <= maxPieces; ++k) {
    int64_t c = ceilDiv(extent, k);
    int64_t full = extent / c, rest = extent % c;
    int64_t peak = load[holders[full - 1]] + c * unitBytes;
    if (rest != 0)
      peak = std::max(peak, load[holders[full]] + rest * unitBytes);
    if (peak < bestPeak) {
      bestK = k;
      bestPeak = peak;
    }
    if (peak <= level)
      break;
  }

  Assignment assignment;
  std::vector<Piece> &pieces = assignment.pieces;
  for (int64_t i = 0; i < bestK; ++i) {
    Chunk part = chunk(extent, bestK, i);
    if (part.size == 0)
      continue;
    Box pieceBox = box;
    pieceBox.offsets[dim] += part.offset;
    pieceBox.sizes[dim] = part.size;
    int32_t sender = holders[pieces.size()];
    assign(sender, part.size * unitBytes);
    pieces.push_back(Piece{sender, std::move(pieceBox)});
  }
  assignment.sender = pieces.front().sender;
  return assignment;
}

/// Whether `assignment` leaves `slice` as it is: whole, or in one piece of
/// its box, from its sender.
bool keepsSlice(const Slice &slice, const RankTable &table,
                const Assignment &assignment) {
  const std::vector<Piece> &pieces = assignment.pieces;
  if (pieces.empty())
    return table.rank(assignment.sender) == slice.sender;
  return pieces.size() == 1 && table.rank(pieces[0].sender) == slice.sender &&
         pieces[0].box == slice.box;
}

/// `slices` with the balanced ones replaced by their assignments.
std::vector<Slice>
withPieces(const std::vector<Slice> &slices, const RankTable &table,
           const std::vector<const Assignment *> &assignmentOf) {
  std::vector<Slice> result;
  result.reserve(slices.size());
  for (size_t i = 0; i < slices.size(); ++i) {
    const Assignment *assignment = assignmentOf[i];
    if (!assignment) {
      result.push_back(slices[i]);
      continue;
    }
    if (assignment->pieces.empty()) {
      result.push_back(slices[i]);
      result.back().sender = table.rank(assignment->sender);
      continue;
    }
    for (const Piece &piece : assignment->pieces) {
      Slice &part = result.emplace_back(slices[i]);
      part.sender = table.rank(piece.sender);
      part.box = piece.box;
    }
  }
  return result;
}

/// Rewrites the balanced slices with their assignments' senders and boxes.
/// A group whose regions all keep their sender and box is only sorted, as
/// a rewritten one is.
void applyPieces(Plan &plan, const RankTable &table,
                 const std::vector<Region> &regions,
                 const std::vector<Assignment> &assignments) {
  std::vector<std::vector<const Assignment *>> assignmentOf(
      plan.groups.size());
  std::vector<bool> changed(plan.groups.size(), false);
  for (size_t r = 0; r < regions.size(); ++r) {
    const Region &region = regions[r];
    const std::vector<Slice> &slices = plan.groups[region.group].slices;
    if (keepsSlice(slices[region.slice], table, assignments[r]))
      continue;
    std::vector<const Assignment *> &of = assignmentOf[region.group];
    if (of.empty())
      of.assign(slices.size(), nullptr);
    of[region.slice] = &assignments[r];
    changed[region.group] = true;
  }
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    std::vector<Slice> &slices = plan.groups[g].slices;
    if (changed[g])
      slices = withPieces(slices, table, assignmentOf[g]);
    sortSlices(slices);
  }
}

} // namespace

BalanceStats m2n::plan::balance(Plan &plan, const BalanceOptions &options) {
  BalanceStats stats;
  expandChoices(plan, options.pool);
  RankTable table = rankTable(plan);
  std::vector<int64_t> zeros(table.size(), 0);
  SendLoads loads{zeros, zeros, zeros};
  std::vector<Region> regions = collectRegions(plan, table, options, loads);
  stats.maxSendBytesBefore =
      zeros.empty() ? 0 : *llvm::max_element(loads.before);
  stats.idealMaxSendBytes = idealMaxSendBytes(regions, loads);
  std::vector<int64_t> fixedLoad = loads.unbalanced;
  for (size_t rank = 0; rank < fixedLoad.size(); ++rank)
    fixedLoad[rank] += loads.soleHolder[rank];

  // Largest first; ties in plan order, so that the result is deterministic.
  std::vector<size_t> order(regions.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return regions[a].weight > regions[b].weight;
  });

  Balancer balancer(plan, fixedLoad, stats.idealMaxSendBytes);
  std::vector<Assignment> assignments(regions.size());
  for (size_t r : order) {
    assignments[r] = balancer.place(regions[r]);
    stats.splitRegions += assignments[r].pieces.size() > 1;
  }
  applyPieces(plan, table, regions, assignments);
  stats.maxSendBytesAfter = balancer.maxLoad();
  return stats;
}
