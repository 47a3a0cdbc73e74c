//===- Relay.cpp - Forwarding regions among destination ranks -------------===//
//
// A region is the part of one destination box that lies in one source box.
// When several destination ranks hold that destination box (replicas), each
// of them receives the region from the source side, so its bytes leave the
// source side once per replica. A relay sends them once: the source side
// sends the region to one receiver, and the receivers forward it to each
// other along a tree, a chain being the tree of fan-out 1. The region goes in
// chunks along its outermost dimension longer than 1, and chunk c reaches a
// receiver at depth d (the first receiver has depth 1) in round c + d - 1, so
// all hops of the tree work at once once the pipeline is full.
//
// Whether and how to relay is decided region by region, largest saving
// first, on an estimate of each rank's busy time: the seconds its sends and
// receives take over their links. The root is the least busy source holder,
// and the tree's fan-out the one whose pipeline (rounds over chunks, plus a
// latency per round) moves the region fastest on its own. Then the region's
// ranks, with all their other traffic, decide: direct, their busiest time as
// it is; relayed, the same with the region's share stretched by the
// pipeline. The cheaper wins, and its load stays on its ranks for the
// regions decided after it.
//
// Before that, the regions of one destination box that many receivers need
// whole, held by the source side in many pieces, are gathered as a family
// (see Family): deciding them piece by piece would give every receiver a
// slice per piece.
//
//===----------------------------------------------------------------------===//

#include "m2n/Plan/Relay.h"

#include "FanOut.h"

#include "m2n/Plan/Coalesce.h"
#include "m2n/Plan/Decompose.h"
#include "m2n/Support/Assert.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>

using namespace m2n;
using namespace m2n::plan;

namespace {
/// The distinct boxes of one layout of a group, and which ranks hold which.
struct LayoutBoxes {
  std::vector<Box> boxes;
  std::vector<std::vector<int64_t>> holders;
  /// The box of each rank of the mesh, in mesh order, and where a rank is.
  std::vector<int64_t> boxOfPosition;
  RankIndex positions;

  LayoutBoxes(const Plan &plan, const TransferGroup &group,
              const PlanLayout &layout)
      : positions(plan.meshes[layout.mesh].ranks) {
    const Mesh &mesh = plan.meshes[layout.mesh];
    std::vector<Box> all = localBoxes(group.shape, mesh, layout.placements);
    std::map<std::pair<Dims, Dims>, size_t> index;
    for (size_t i = 0; i < all.size(); ++i) {
      auto [it, inserted] = index.try_emplace(
          std::make_pair(all[i].offsets, all[i].sizes), boxes.size());
      if (inserted) {
        boxes.push_back(all[i]);
        holders.emplace_back();
      }
      holders[it->second].push_back(mesh.ranks[i]);
      boxOfPosition.push_back(static_cast<int64_t>(it->second));
    }
  }

  /// The index of the box `rank` holds, or -1 when it is not on the mesh.
  int64_t find(int64_t rank) const {
    int64_t position = positions.find(rank);
    return position < 0 ? -1 : boxOfPosition[position];
  }
};

/// A region that two or more destination ranks receive from the source side.
struct Region {
  int32_t group = 0;
  /// The index of its destination box among the group's distinct ones.
  int64_t destination = 0;
  Box box;
  /// Bytes of the region, all members.
  int64_t bytes = 0;
  /// The ranks holding the source box the region lies in, ascending.
  std::vector<int64_t> holders;
  /// The ranks receiving it, ascending.
  std::vector<int64_t> receivers;
  /// The ranks that need its destination box whole: the receivers, and the
  /// holders that hold that box too (on colocated sides), which copy the
  /// region within themselves. Ascending.
  std::vector<int64_t> members;
  /// The group's slices that bring it to them now.
  std::vector<size_t> slices;
  /// Per slice of `slices`: its sender, receiver and bytes (all members),
  /// read where the region is found. Deciding on the region reads them
  /// again and again, and a slice is large and far from the last one.
  struct Transfer {
    int64_t sender, receiver, bytes;
  };
  std::vector<Transfer> transfers;
  /// Whether the region went with its family in a gather.
  bool gathered = false;
  /// Where `slices` is one fan-out slice: the members that copy the region
  /// locally, whose copies that slice stands for too and which stay when
  /// the region is relayed.
  std::vector<int64_t> copiers;
};

/// How a region travels when relayed: the root (a source holder) sends it
/// to order[0]; order[i] for i >= 1 gets it from order[(i - 1) / fanOut].
struct Tree {
  int64_t root = 0;
  std::vector<int64_t> order;
  int64_t fanOut = 1;
  /// The region goes as chunkBox(box, chunks), which makes numChunks pieces.
  int64_t chunks = 1;
  int64_t numChunks = 1;
  /// Per receiver in `order`, its distance from the root in hops.
  std::vector<int32_t> depth;
  int32_t rounds = 0;
  /// Estimates of the busiest involved rank's time: with the region's
  /// traffic alone, and with all the traffic of the plan.
  double ownSeconds = 0;
  double seconds = 0;

  int64_t parent(size_t i) const {
    return i == 0 ? root : order[(i - 1) / fanOut];
  }
};

/// The bytes of a slice over all of its group's members.
int64_t sliceLoadBytes(const TransferGroup &group, const Slice &slice) {
  return sliceBytes(group, slice) * static_cast<int64_t>(group.members.size());
}

/// Each rank's busy seconds in either direction, over the whole plan.
struct Loads {
  std::vector<double> send, receive;

  /// The load of every remote slice of every group in `plan`.
  Loads(const Plan &plan, const CostModel &model) {
    int64_t worldSize = plan.worldSize();
    for (const TransferGroup &group : plan.groups)
      for (const Slice &slice : group.slices)
        worldSize = std::max({worldSize, slice.sender + 1, slice.receiver + 1});
    send.assign(worldSize, 0);
    receive.assign(worldSize, 0);
    for (const TransferGroup &group : plan.groups) {
      std::optional<FanOutIndex> fanOuts;
      if (hasFanOuts(group))
        fanOuts.emplace(plan, group);
      for (const Slice &slice : group.slices) {
        if (slice.sender < 0)
          continue;
        int64_t bytes = sliceLoadBytes(group, slice);
        if (slice.isFanOut()) {
          fanOuts->forEachDelivery(slice, [&](int64_t from, int64_t to) {
            if (from != to && to < worldSize)
              add(model, from, to, bytes, 1);
          });
        } else if (!slice.isLocalCopy() && slice.receiver >= 0) {
          add(model, slice.sender, slice.receiver, bytes, 1);
        }
      }
    }
  }

  /// Adds `bytes` from `sender` to `receiver`, weighted by `scale` (-1
  /// takes them away).
  void add(const CostModel &model, int64_t sender, int64_t receiver,
           int64_t bytes, double scale) {
    double seconds =
        scale * static_cast<double>(bytes) / model.bandwidth(sender, receiver);
    send[sender] += seconds;
    receive[receiver] += seconds;
  }

  /// Adds the direct sends that bring `region` to its receivers now,
  /// weighted by `scale`.
  void addTransfers(const CostModel &model, const Region &region,
                    double scale) {
    for (const Region::Transfer &transfer : region.transfers)
      add(model, transfer.sender, transfer.receiver, transfer.bytes, scale);
  }

  /// The busiest rank's seconds, over all ranks.
  double busiest() const {
    return std::max(send.empty() ? 0 : *llvm::max_element(send),
                    receive.empty() ? 0 : *llvm::max_element(receive));
  }

  double busiest(llvm::ArrayRef<int64_t> ranks) const {
    double seconds = 0;
    for (int64_t rank : ranks)
      seconds = std::max({seconds, send[rank], receive[rank]});
    return seconds;
  }
};
} // namespace

//===----------------------------------------------------------------------===//
// Finding regions
//===----------------------------------------------------------------------===//

/// Sorts `ranks` and drops repeats; ranks often come in order already.
static void sortUnique(std::vector<int64_t> &ranks) {
  if (!std::is_sorted(ranks.begin(), ranks.end()))
    llvm::sort(ranks);
  ranks.erase(llvm::unique(ranks), ranks.end());
}

/// Whether the region's slices bring each receiver the whole region and
/// nothing else: they lie within it and their volumes add up to it (slices
/// to one receiver never overlap). A group's slices are sorted by receiver,
/// so each receiver's slices come together; where they do not (a plan read
/// from bad IR) the region is not relayed.
static bool coversExactly(const TransferGroup &group, const Region &region) {
  if (region.slices.size() == 1 && group.slices[region.slices[0]].isFanOut())
    return group.slices[region.slices[0]].box == region.box;
  int64_t receiver = -1, volume = 0;
  auto wholeRun = [&] {
    return receiver < 0 || volume == region.box.volume();
  };
  for (size_t i : region.slices) {
    const Slice &slice = group.slices[i];
    if (!contains(region.box, slice.box))
      return false;
    if (slice.receiver != receiver) {
      if (slice.receiver < receiver || !wholeRun())
        return false;
      receiver = slice.receiver;
      volume = 0;
    }
    volume += slice.box.volume();
  }
  return wholeRun();
}

/// The receivers of the fan-out `slice` and its sends to them, into
/// `region`, in the order of receivers that slices to each would have;
/// the ranks that copy it locally into region.copiers.
static void addDeliveries(const FanOutIndex &fanOuts,
                          const TransferGroup &group, const Slice &slice,
                          Region &region) {
  int64_t bytes = sliceLoadBytes(group, slice);
  fanOuts.forEachDelivery(slice, [&](int64_t sender, int64_t receiver) {
    if (sender == receiver) {
      region.copiers.push_back(receiver);
      return;
    }
    region.receivers.push_back(receiver);
    region.transfers.push_back({sender, receiver, bytes});
  });
  llvm::sort(region.transfers,
             [](const Region::Transfer &a, const Region::Transfer &b) {
               return a.receiver < b.receiver;
             });
}

/// The regions of group `g` that several receivers get from the source side
/// in round 0. A group that already forwards anything is left alone.
static void findRegions(const Plan &plan, int32_t g,
                        std::vector<Region> &regions) {
  const TransferGroup &group = plan.groups[g];
  if (group.members.empty() ||
      llvm::any_of(group.slices, [](const Slice &slice) {
        return slice.round != 0 || slice.origin != Origin::Source;
      }))
    return;
  LayoutBoxes src(plan, group, group.src), dst(plan, group, group.dst);
  std::optional<FanOutIndex> fanOuts;
  if (hasFanOuts(group))
    fanOuts.emplace(plan, group);
  // The destination box, among dst's, that `slice` goes to.
  auto destinationOf = [&](const Slice &slice) -> int64_t {
    if (!slice.isFanOut())
      return dst.find(slice.receiver);
    int32_t id = fanOuts->destinationOf(slice);
    return id < 0 ? -1
                  : dst.find(fanOuts->destination().holders(id).front());
  };
  // Per (destination box, source box), the slices of that region.
  llvm::DenseMap<std::pair<int64_t, int64_t>, size_t> regionOf;
  std::vector<std::pair<int64_t, int64_t>> keys;
  std::vector<std::vector<size_t>> slicesOf;
  for (size_t i = 0; i < group.slices.size(); ++i) {
    const Slice &slice = group.slices[i];
    int64_t from = src.find(slice.sender), to = destinationOf(slice);
    // A receiver that holds the source box itself cannot forward it better
    // than any other holder; leave such odd slices alone.
    if (slice.isLocalCopy() || from < 0 || to < 0 ||
        src.find(slice.receiver) == from)
      continue;
    auto [it, inserted] = regionOf.try_emplace({to, from}, keys.size());
    if (inserted) {
      keys.emplace_back(to, from);
      slicesOf.emplace_back();
    }
    slicesOf[it->second].push_back(i);
  }
  // Regions go in order of their keys: the order of discovery breaks ties
  // between equal savings later.
  std::vector<size_t> byKey(keys.size());
  std::iota(byKey.begin(), byKey.end(), 0);
  llvm::sort(byKey, [&](size_t a, size_t b) { return keys[a] < keys[b]; });
  regions.reserve(regions.size() + keys.size());
  for (size_t k : byKey) {
    const std::pair<int64_t, int64_t> &key = keys[k];
    std::vector<size_t> &slices = slicesOf[k];
    Region region;
    region.group = g;
    region.destination = key.first;
    region.box = intersect(dst.boxes[key.first], src.boxes[key.second]);
    region.bytes = region.box.volume() * group.elementBytes() *
                   static_cast<int64_t>(group.members.size());
    region.holders = src.holders[key.second];
    sortUnique(region.holders);
    // A fan-out slice brings the region to its receivers alone; mixed
    // with other slices of it (only in malformed IR), it is left alone.
    bool fanOut = llvm::any_of(slices, [&](size_t i) {
      return group.slices[i].isFanOut();
    });
    if (fanOut && slices.size() > 1)
      continue;
    if (fanOut) {
      addDeliveries(*fanOuts, group, group.slices[slices.front()], region);
    } else {
      region.receivers.reserve(slices.size());
      region.transfers.reserve(slices.size());
      for (size_t i : slices) {
        const Slice &slice = group.slices[i];
        region.receivers.push_back(slice.receiver);
        region.transfers.push_back(
            {slice.sender, slice.receiver, sliceLoadBytes(group, slice)});
      }
    }
    sortUnique(region.receivers);
    region.members = region.receivers;
    for (int64_t holder : region.holders)
      if (dst.find(holder) == key.first)
        region.members.push_back(holder);
    sortUnique(region.members);
    region.slices = std::move(slices);
    if (region.receivers.size() < 2 || region.bytes <= 0 ||
        !coversExactly(group, region))
      continue;
    regions.push_back(std::move(region));
  }
}

//===----------------------------------------------------------------------===//
// Choosing a tree
//===----------------------------------------------------------------------===//

/// The pieces of `box` along its outermost dimension longer than 1, as
/// torch.chunk makes them (empty ones dropped).
static std::vector<Box> chunkBox(const Box &box, int64_t count) {
  auto dim = llvm::find_if(box.sizes, [](int64_t size) { return size > 1; });
  if (dim == box.sizes.end())
    return {box};
  size_t d = dim - box.sizes.begin();
  std::vector<Box> chunks;
  for (int64_t i = 0; i < count; ++i) {
    Chunk part = chunk(box.sizes[d], count, i);
    if (part.size == 0)
      continue;
    chunks.push_back(box);
    chunks.back().offsets[d] += part.offset;
    chunks.back().sizes[d] = part.size;
  }
  return chunks;
}

/// The largest number of chunks `box` splits into.
static int64_t chunkableExtent(const Box &box) {
  auto dim = llvm::find_if(box.sizes, [](int64_t size) { return size > 1; });
  return dim == box.sizes.end() ? 1 : *dim;
}

/// How many pieces chunkBox(box, count) makes, without making them: with
/// c = ceil(n / count), torch.chunk's pieces of n are non-empty while they
/// start below n, which ceil(n / c) of them do.
static int64_t numChunks(const Box &box, int64_t count) {
  int64_t n = chunkableExtent(box);
  if (n == 1)
    return 1;
  int64_t c = n / count + (n % count != 0);
  return n / c + (n % c != 0);
}

/// The holder that is least busy once it sends the region to its nearest
/// receiver; the lowest rank among equals.
static int64_t chooseRoot(const Region &region, const Loads &loads,
                          const CostModel &model) {
  int64_t best = region.holders.front();
  double bestSeconds = std::numeric_limits<double>::infinity();
  for (int64_t holder : region.holders) {
    double bandwidth = model.getTopology().interNodeBandwidth;
    for (int64_t receiver : region.receivers)
      bandwidth = std::max(bandwidth, model.bandwidth(holder, receiver));
    double seconds =
        loads.send[holder] + static_cast<double>(region.bytes) / bandwidth;
    if (seconds < bestSeconds) {
      best = holder;
      bestSeconds = seconds;
    }
  }
  return best;
}

/// The holder least busy once it sends `bytes` to `receiver`, the first
/// among equals; `sendLoad` says how busy a rank's sends keep it.
template <typename SendLoad>
static int64_t leastBusyHolder(llvm::ArrayRef<int64_t> holders,
                               int64_t receiver, int64_t bytes,
                               const CostModel &model, SendLoad sendLoad) {
  int64_t best = holders.front();
  double bestSeconds = std::numeric_limits<double>::infinity();
  for (int64_t holder : holders) {
    double seconds = sendLoad(holder) + static_cast<double>(bytes) /
                                            model.bandwidth(holder, receiver);
    if (seconds < bestSeconds) {
      best = holder;
      bestSeconds = seconds;
    }
  }
  return best;
}

/// The receivers on the root's node first, so that the first hops stay on
/// the node, then the others by rank, which keeps each node's ranks
/// together when nodes hold consecutive ranks.
static std::vector<int64_t> receiverOrder(const Region &region, int64_t root,
                                          const CostModel &model) {
  std::vector<int64_t> order = region.receivers;
  std::stable_partition(order.begin(), order.end(), [&](int64_t receiver) {
    return model.sameNode(root, receiver);
  });
  return order;
}

namespace {
/// What the candidate trees of one region share: the root, the receivers in
/// tree order, and the ranks whose load decides between the trees (ascending),
/// with the root's and each receiver's index among those.
struct TreeBasis {
  int64_t root = 0;
  std::vector<int64_t> order;
  std::vector<int64_t> involved;
  size_t rootSlot = 0;
  std::vector<size_t> orderSlots;
  /// The region's seconds over an intra-node and an inter-node link.
  double intraSeconds = 0, interSeconds = 0;
  /// The node of each involved rank, worked out once for all the fan-outs
  /// tried: the rank-to-node division is not free.
  std::vector<int64_t> nodes;
  /// The (send, receive) load of each involved rank, gathered once: every
  /// fan-out tried reads them all.
  std::vector<std::pair<double, double>> loadsBefore;

  TreeBasis(const Region &region, int64_t root, const Loads &loads,
            const CostModel &model)
      : root(root), order(receiverOrder(region, root, model)) {
    // The receivers are sorted; the senders are few, and repeat.
    std::vector<int64_t> senders = {root};
    for (const Region::Transfer &transfer : region.transfers)
      if (transfer.sender != senders.back())
        senders.push_back(transfer.sender);
    sortUnique(senders);
    involved.reserve(region.receivers.size() + senders.size());
    std::merge(region.receivers.begin(), region.receivers.end(),
               senders.begin(), senders.end(), std::back_inserter(involved));
    involved.erase(llvm::unique(involved), involved.end());
    rootSlot = slotOf(root);
    orderSlots.reserve(order.size());
    for (int64_t receiver : order)
      orderSlots.push_back(slotOf(receiver));
    const Topology &topology = model.getTopology();
    double bytes = static_cast<double>(region.bytes);
    intraSeconds = bytes / topology.intraNodeBandwidth;
    interSeconds = bytes / topology.interNodeBandwidth;
    nodes.reserve(involved.size());
    loadsBefore.reserve(involved.size());
    for (int64_t rank : involved) {
      nodes.push_back(model.node(rank));
      loadsBefore.emplace_back(loads.send[rank], loads.receive[rank]);
    }
  }

  /// The seconds the region takes from involved rank `from` to receiver
  /// `i` of `order`, as CostModel::bandwidth prices the link.
  double seconds(size_t from, size_t i) const {
    return nodes[from] == nodes[orderSlots[i]] ? intraSeconds : interSeconds;
  }

  /// The index of `rank`, one of `involved`, in it.
  size_t slotOf(int64_t rank) const {
    return llvm::lower_bound(involved, rank) - involved.begin();
  }
};
} // namespace

/// The number of chunks: as the options ask, or else the count that
/// minimizes (chunks + depth - 1) * (latency * fanOut + busy / chunks), the
/// time of a pipeline whose busiest rank has `busy` seconds of work; always
/// within what the rounds and the region's extent allow.
static int64_t chooseChunks(const Region &region, const RelayOptions &options,
                            const CostModel &model, int32_t depth,
                            int64_t fanOut, double busy) {
  double most = std::min<double>(options.maxRounds - depth + 1,
                                 chunkableExtent(region.box));
  double wanted;
  if (options.chunkBytes > 0)
    wanted = std::ceil(static_cast<double>(region.bytes) /
                       static_cast<double>(options.chunkBytes));
  else
    wanted = std::sqrt((depth - 1) * busy /
                       (model.getTopology().latencySeconds * fanOut));
  // NaN and infinity (no latency) ask for as many chunks as allowed.
  if (!(wanted <= most))
    wanted = most;
  return std::max<int64_t>(1, std::llround(wanted));
}

/// The relay of `region` along an f-ary tree of fan-out `fanOut`, with the
/// busiest involved rank's estimated seconds, or nullopt when its depth
/// leaves no room within maxRounds. The tree's order and depths are left to
/// the caller, for the one tree chosen; `own` is scratch.
static std::optional<Tree>
planTree(const Region &region, const TreeBasis &basis, int64_t fanOut,
         const CostModel &model, const RelayOptions &options,
         std::vector<std::pair<double, double>> &own) {
  Tree tree;
  tree.root = basis.root;
  tree.fanOut = fanOut;
  size_t count = basis.order.size();
  // Receivers fill the tree level by level: fanOut^(d-1) of them at depth d.
  int32_t depth = 0;
  for (size_t covered = 0, level = 1; covered < count;
       covered += level, level *= static_cast<size_t>(fanOut))
    ++depth;
  if (depth > options.maxRounds)
    return std::nullopt;

  // The region's own busy seconds (send, receive) per involved rank, before
  // pipelining.
  own.assign(basis.involved.size(), {0, 0});
  for (size_t i = 0; i < count; ++i) {
    size_t from = i == 0 ? basis.rootSlot : basis.orderSlots[(i - 1) / fanOut];
    double seconds = basis.seconds(from, i);
    own[from].first += seconds;
    own[basis.orderSlots[i]].second += seconds;
  }
  // The busiest involved rank with the region's traffic stretched by
  // `stretch`: with the region's traffic alone, and with all the plan's.
  auto busiest = [&](double stretch) {
    double alone = 0, all = 0;
    for (size_t slot = 0; slot < own.size(); ++slot) {
      auto [send, receive] = own[slot];
      auto [sendBefore, receiveBefore] = basis.loadsBefore[slot];
      alone = std::max({alone, send * stretch, receive * stretch});
      all = std::max({all, sendBefore + send * stretch,
                      receiveBefore + receive * stretch});
    }
    return std::make_pair(alone, all);
  };

  // Chunks fused with other traffic cost no latency of their own, so the
  // count follows the ranks' whole load.
  tree.chunks = chooseChunks(region, options, model, depth, fanOut,
                             busiest(1).second);
  tree.numChunks = numChunks(region.box, tree.chunks);
  tree.rounds = static_cast<int32_t>(tree.numChunks + depth - 1);
  double stretch = static_cast<double>(tree.rounds) / tree.numChunks;
  double latency = model.getTopology().latencySeconds * fanOut * tree.rounds;
  auto [alone, all] = busiest(stretch);
  tree.ownSeconds = alone + latency;
  tree.seconds = all + latency;
  return tree;
}

/// Fan-outs worth trying for `receivers` receivers: powers of two, and the
/// star in which the first receiver feeds all others.
static std::vector<int64_t> fanOuts(int64_t receivers) {
  std::vector<int64_t> result;
  for (int64_t fanOut = 1; fanOut < receivers - 1; fanOut *= 2)
    result.push_back(fanOut);
  result.push_back(std::max<int64_t>(1, receivers - 1));
  return result;
}

/// The best relay of `region`, or nullopt when sending it directly is
/// estimated to be at least as fast. `loads` must exclude the region.
static std::optional<Tree>
chooseTree(const Region &region, const Loads &loads,
           const CostModel &model, const RelayOptions &options,
           double directSeconds) {
  TreeBasis basis(region, chooseRoot(region, loads, model), loads, model);
  std::optional<Tree> best;
  std::vector<std::pair<double, double>> own;
  for (int64_t fanOut :
       fanOuts(static_cast<int64_t>(region.receivers.size()))) {
    std::optional<Tree> tree =
        planTree(region, basis, fanOut, model, options, own);
    // The shape is chosen on the region's own traffic: the other loads on
    // its ranks, the root's above all, may be regions still to be relayed,
    // and would favor shapes that spare the root at the receivers' cost.
    if (tree && (!best || tree->ownSeconds < best->ownSeconds))
      best = std::move(tree);
  }
  if (!best || best->seconds >= directSeconds)
    return std::nullopt;
  best->order = std::move(basis.order);
  best->depth.resize(best->order.size());
  for (size_t i = 0; i < best->depth.size(); ++i)
    best->depth[i] = i == 0 ? 1 : best->depth[(i - 1) / best->fanOut] + 1;
  return best;
}

//===----------------------------------------------------------------------===//
// Exchanging
//===----------------------------------------------------------------------===//

namespace {
/// How a region travels when exchanged among its receivers: it is cut into
/// parts, one per receiver as far as its extent allows; the source side
/// sends each part once, to its owner; the owner passes it to the other
/// receivers of its node and to one entry receiver of every other node,
/// which passes it on within its node. Every receiver then receives the
/// region once, and its sends are about what it receives, so the receivers'
/// links carry the replicas' traffic instead of the source side's.
///
/// Where some receivers share a node with a holder (the two sides share
/// nodes), those take the region whole from the holder over the node's
/// links, and the parts are for the other nodes' receivers alone: each part
/// comes from the least busy of the holders and those receivers, so the
/// region leaves the holders' nodes through all of their ranks' NICs, not
/// only the holders'.
/// An exchange's parts are at least a bucket over this.
constexpr int64_t kPartsPerBucket = 8;

struct Exchange {
  /// The parts, and after them the whole region once per receiver that
  /// takes it from a holder of its node (a part that no one passes on).
  std::vector<Box> parts;
  /// Per part: its bytes (all members), the rank that first sends it (a
  /// source holder, or a receiver that has the whole region), and its
  /// owner.
  std::vector<int64_t> bytes, holders, owners;
  /// Per part, the round of that first send: 0 from a source holder, 1
  /// from a receiver.
  std::vector<int32_t> firstRounds;
  /// Per part, the hops after the first: (sender, receiver, round).
  struct Hop {
    int64_t sender, receiver;
    int32_t round;
  };
  std::vector<std::vector<Hop>> hops;
  /// The busiest involved rank's estimated seconds with all the plan's
  /// traffic.
  double seconds = 0;
};

/// Tentative loads: the plan's, plus the traffic of an exchange being
/// planned, kept apart until the exchange is chosen.
class LoadDelta {
public:
  LoadDelta(const Loads &loads, const CostModel &model)
      : loads(loads), model(model) {}

  void add(int64_t sender, int64_t receiver, int64_t bytes) {
    double seconds =
        static_cast<double>(bytes) / model.bandwidth(sender, receiver);
    delta[sender].first += seconds;
    delta[receiver].second += seconds;
  }
  double send(int64_t rank) const {
    auto it = delta.find(rank);
    return loads.send[rank] + (it == delta.end() ? 0 : it->second.first);
  }
  double receive(int64_t rank) const {
    auto it = delta.find(rank);
    return loads.receive[rank] + (it == delta.end() ? 0 : it->second.second);
  }
  double busiest() const {
    double seconds = 0;
    for (const auto &entry : delta)
      seconds = std::max({seconds, send(entry.first), receive(entry.first)});
    return seconds;
  }

private:
  const Loads &loads;
  const CostModel &model;
  llvm::DenseMap<int64_t, std::pair<double, double>> delta;
};
} // namespace

/// `ranks` (ascending) by node, nodes in ascending order.
static std::vector<std::vector<int64_t>>
ranksByNode(llvm::ArrayRef<int64_t> ranks, const CostModel &model) {
  std::vector<std::vector<int64_t>> nodes;
  for (int64_t receiver : ranks) {
    if (nodes.empty() || !model.sameNode(nodes.back().front(), receiver))
      nodes.emplace_back();
    nodes.back().push_back(receiver);
  }
  return nodes;
}

/// The receivers of `nodes` taken one from each node in turn: owners spread
/// over the nodes. Receivers are ascending, so a node's come together
/// unless nodes interleave ranks, which a rank-to-node division cannot.
static std::vector<int64_t>
interleave(const std::vector<std::vector<int64_t>> &nodes) {
  std::vector<int64_t> interleaved;
  for (size_t i = 0, found = 1; found; ++i) {
    found = 0;
    for (const std::vector<int64_t> &node : nodes)
      if (i < node.size()) {
        interleaved.push_back(node[i]);
        found = 1;
      }
  }
  return interleaved;
}

/// The least busy sender among `receivers` that owns no part yet, on a node
/// that has no owner yet where there is one: with fewer parts than
/// receivers, owning parts of many regions then spreads over all receivers
/// and over the nodes.
static int64_t leastBusyOwner(llvm::ArrayRef<int64_t> receivers,
                              llvm::ArrayRef<int64_t> owners,
                              const LoadDelta &delta, const CostModel &model) {
  auto owns = [&](int64_t rank) { return llvm::is_contained(owners, rank); };
  auto nodeOwns = [&](int64_t rank) {
    return llvm::any_of(
        owners, [&](int64_t owner) { return model.sameNode(owner, rank); });
  };
  std::optional<int64_t> best;
  auto better = [&](int64_t rank) {
    if (!best)
      return true;
    bool freshNode = !nodeOwns(rank), bestFreshNode = !nodeOwns(*best);
    if (freshNode != bestFreshNode)
      return freshNode;
    return delta.send(rank) < delta.send(*best);
  };
  for (int64_t rank : receivers)
    if (!owns(rank) && better(rank))
      best = rank;
  return *best;
}

/// The exchange of `region` whose parts go to the receivers of `nodes`,
/// `local` (receivers on a holder's node) taking it whole from a holder of
/// their node and feeding parts; nullopt when it cannot be cut into parts
/// (two, without local receivers) or needs more rounds than allowed.
/// `loads` must exclude the region.
static std::optional<Exchange>
exchangeAmong(const Region &region,
              const std::vector<std::vector<int64_t>> &nodes,
              llvm::ArrayRef<int64_t> local, const Loads &loads,
              const CostModel &model, const RelayOptions &options) {
  std::vector<int64_t> owners = interleave(nodes);
  // A part per receiver, but none much smaller than a bucket: each part is
  // a message from the source side, whose latency a small part would not
  // pay for, while parts too large pipeline poorly. A region too small for
  // two such parts is not worth the hops' latencies.
  int64_t fewest = local.empty() ? 2 : 1;
  int64_t smallest =
      std::max<int64_t>(1, model.defaultBucketBytes() / kPartsPerBucket);
  if (region.bytes < 2 * smallest || owners.empty())
    return std::nullopt;
  Exchange exchange;
  exchange.parts = chunkBox(
      region.box,
      std::clamp<int64_t>(region.bytes / smallest, fewest,
                          std::max<int64_t>(fewest, owners.size())));
  if (static_cast<int64_t>(exchange.parts.size()) < fewest)
    return std::nullopt;
  // Rounds: local receivers feed parts a round after theirs arrive, owners
  // pass them on in the next, and entries within their node in a third.
  int32_t latestFeed = local.empty() ? 0 : 1;
  if (options.maxRounds < latestFeed + 2)
    return std::nullopt;
  bool entries = options.maxRounds >= latestFeed + 3;
  // Bytes per element, all members: exact, and a part's bytes then cannot
  // overflow on the way as volume * region bytes would.
  int64_t elementBytes = region.bytes / region.box.volume();
  LoadDelta delta(loads, model);
  std::vector<int64_t> wholeFrom;
  for (int64_t receiver : local) {
    std::vector<int64_t> near;
    for (int64_t holder : region.holders)
      if (model.sameNode(holder, receiver))
        near.push_back(holder);
    wholeFrom.push_back(
        leastBusyHolder(near, receiver, region.bytes, model,
                        [&](int64_t rank) { return delta.send(rank); }));
    delta.add(wholeFrom.back(), receiver, region.bytes);
  }
  std::vector<int64_t> feeders = region.holders;
  llvm::append_range(feeders, local);
  for (size_t p = 0; p < exchange.parts.size(); ++p) {
    int64_t bytes = exchange.parts[p].volume() * elementBytes;
    int64_t owner = owners[p];
    if (exchange.parts.size() < owners.size())
      owner = leastBusyOwner(owners, exchange.owners, delta, model);
    int64_t feeder =
        leastBusyHolder(feeders, owner, bytes, model,
                        [&](int64_t rank) { return delta.send(rank); });
    int32_t first = llvm::is_contained(local, feeder) ? 1 : 0;
    delta.add(feeder, owner, bytes);
    std::vector<Exchange::Hop> hops;
    auto hop = [&](int64_t from, int64_t to, int32_t round) {
      delta.add(from, to, bytes);
      hops.push_back({from, to, round});
    };
    for (const std::vector<int64_t> &node : nodes) {
      bool own = model.sameNode(node.front(), owner);
      if (own || !entries || node.size() == 1) {
        for (int64_t receiver : node)
          if (receiver != owner)
            hop(owner, receiver, first + 1);
        continue;
      }
      // The entry is the node's least busy receiver.
      int64_t entry = *llvm::min_element(node, [&](int64_t a, int64_t b) {
        return delta.receive(a) < delta.receive(b);
      });
      hop(owner, entry, first + 1);
      for (int64_t receiver : node)
        if (receiver != entry)
          hop(entry, receiver, first + 2);
    }
    exchange.bytes.push_back(bytes);
    exchange.holders.push_back(feeder);
    exchange.owners.push_back(owner);
    exchange.firstRounds.push_back(first);
    exchange.hops.push_back(std::move(hops));
  }
  for (size_t i = 0; i < local.size(); ++i) {
    exchange.parts.push_back(region.box);
    exchange.bytes.push_back(region.bytes);
    exchange.holders.push_back(wholeFrom[i]);
    exchange.owners.push_back(local[i]);
    exchange.firstRounds.push_back(0);
    exchange.hops.emplace_back();
  }
  // Fused with the other traffic between the same ranks, the hops cost no
  // latency of their own: one, as a direct send pays.
  exchange.seconds = delta.busiest() + model.getTopology().latencySeconds;
  return exchange;
}

/// Whether some receiver of `region` shares a node with a holder.
static bool hasLocalReceivers(const Region &region, const CostModel &model) {
  return llvm::any_of(region.receivers, [&](int64_t receiver) {
    return llvm::any_of(region.holders, [&](int64_t holder) {
      return model.sameNode(holder, receiver);
    });
  });
}

/// An exchange of `region`: among all its receivers, or, when `fed` and
/// some share a node with a holder, fed by those among the others where
/// that can be planned. `loads` must exclude the region.
static std::optional<Exchange> planExchange(const Region &region,
                                            const Loads &loads,
                                            const CostModel &model,
                                            const RelayOptions &options,
                                            bool fed) {
  if (!options.exchange || options.maxRounds < 2)
    return std::nullopt;
  std::vector<std::vector<int64_t>> nodes =
      ranksByNode(region.receivers, model);
  if (fed) {
    std::vector<std::vector<int64_t>> remote;
    std::vector<int64_t> local;
    for (const std::vector<int64_t> &node : nodes) {
      bool held = llvm::any_of(region.holders, [&](int64_t holder) {
        return model.sameNode(holder, node.front());
      });
      if (held)
        llvm::append_range(local, node);
      else
        remote.push_back(node);
    }
    if (!local.empty() && !remote.empty())
      if (std::optional<Exchange> exchange =
              exchangeAmong(region, remote, local, loads, model, options))
        return exchange;
  }
  return exchangeAmong(region, nodes, {}, loads, model, options);
}

/// The slices that carry `region` along `exchange`.
static void addExchangeSlices(const Exchange &exchange,
                              std::vector<Slice> &out) {
  for (size_t p = 0; p < exchange.parts.size(); ++p) {
    Slice first;
    first.sender = exchange.holders[p];
    first.receiver = exchange.owners[p];
    first.round = exchange.firstRounds[p];
    first.origin = first.round > 0 ? Origin::Destination : Origin::Source;
    first.box = exchange.parts[p];
    out.push_back(first);
    for (const Exchange::Hop &hop : exchange.hops[p]) {
      Slice slice;
      slice.sender = hop.sender;
      slice.receiver = hop.receiver;
      slice.origin = Origin::Destination;
      slice.round = hop.round;
      slice.box = exchange.parts[p];
      out.push_back(std::move(slice));
    }
  }
}

//===----------------------------------------------------------------------===//
// Gathering among many receivers
//===----------------------------------------------------------------------===//

namespace {
/// Families of at least this many (region, receiver) pairs are gathered:
/// relayed region by region, they would take a slice per pair.
constexpr int64_t kGatherSlices = 256;
/// The most that the steps a gather adds may cost, as a share of sending
/// its pieces directly.
constexpr double kGatherStepShare = 0.05;

/// The regions of one destination box of a group that go to the same
/// members (Region::members): a tensor the source side holds in pieces,
/// which every member needs whole; on colocated sides a member holds a
/// piece itself and receives the others. Relayed region by region, every receiver gets each
/// piece in a slice of its own, so the plan grows with pieces × receivers.
/// Gathered, the pieces are scattered over the receivers and the receivers
/// then pass on runs of adjacent pieces as single boxes, the runs doubling
/// round by round (Bruck's allgather), first among one receiver per node
/// and then within each node: every receiver gets what it lacks once, a
/// node's bytes enter it once over its ranks' NICs, and the plan grows
/// with pieces + receivers × rounds.
struct Family {
  /// Indices into the regions, all of one group, destination and receivers.
  std::vector<size_t> regions;
  /// Their bytes, all members.
  int64_t bytes = 0;
};

/// A piece of a family's destination box that one owner receives first.
struct Block {
  Box box;
  int64_t bytes = 0;
  const Region *region = nullptr;
};

/// The receivers of a gather as columns × nodes: owner j * nodes + m is the
/// j-th receiver of node m, and owns blocks [first[owner], first[owner+1]).
struct Arrangement {
  std::vector<std::vector<int64_t>> nodes;
  size_t columns = 1;
  std::vector<size_t> first;

  int64_t owner(size_t index) const {
    return nodes[index % nodes.size()][index / nodes.size()];
  }
};
} // namespace

/// Families of `regions` worth gathering, largest first: regions come from
/// findRegions in order of (group, destination), so a family's regions are
/// neighbours.
static std::vector<Family> findFamilies(const std::vector<Region> &regions) {
  std::vector<Family> families;
  for (size_t begin = 0; begin < regions.size();) {
    const Region &head = regions[begin];
    size_t end = begin + 1;
    while (end < regions.size() && regions[end].group == head.group &&
           regions[end].destination == head.destination &&
           regions[end].members == head.members)
      ++end;
    int64_t slices = static_cast<int64_t>(end - begin) *
                     static_cast<int64_t>(head.receivers.size());
    if (slices >= kGatherSlices) {
      Family family;
      family.regions.resize(end - begin);
      std::iota(family.regions.begin(), family.regions.end(), begin);
      for (size_t r : family.regions)
        family.bytes += regions[r].bytes;
      families.push_back(std::move(family));
    }
    begin = end;
  }
  llvm::stable_sort(families, [](const Family &a, const Family &b) {
    return a.bytes > b.bytes;
  });
  return families;
}

/// Rounds of Bruck's allgather among `count` members: the runs double.
static int32_t bruckRounds(size_t count) {
  int32_t rounds = 0;
  for (size_t held = 1; held < count; held *= 2)
    ++rounds;
  return rounds;
}

/// The blocks of `family`, in order of their boxes, cut so that there are at
/// least `owners` where the regions' extents allow.
static std::vector<Block> familyBlocks(const Family &family,
                                       const std::vector<Region> &regions,
                                       size_t owners) {
  size_t count = family.regions.size();
  int64_t parts = static_cast<int64_t>((owners + count - 1) / count);
  std::vector<Block> blocks;
  for (size_t r : family.regions) {
    const Region &region = regions[r];
    int64_t elements = region.box.volume();
    for (Box &part : chunkBox(region.box, parts)) {
      int64_t bytes = part.volume() * (region.bytes / elements);
      blocks.push_back({std::move(part), bytes, &region});
    }
  }
  llvm::sort(blocks, [](const Block &a, const Block &b) {
    return a.box.offsets < b.box.offsets;
  });
  return blocks;
}

/// The members of `region` as columns × nodes, with the blocks split among
/// them by bytes; nodes with unequal numbers of members count as one node
/// per member.
static Arrangement arrange(const Region &region, const CostModel &model,
                           const std::vector<Block> &blocks) {
  Arrangement arrangement;
  arrangement.nodes = ranksByNode(region.members, model);
  size_t columns = arrangement.nodes.front().size();
  if (llvm::any_of(arrangement.nodes, [&](const std::vector<int64_t> &node) {
        return node.size() != columns;
      })) {
    arrangement.nodes.clear();
    for (int64_t member : region.members)
      arrangement.nodes.push_back({member});
    columns = 1;
  }
  arrangement.columns = columns;
  // Block b goes to the owner in whose share of the bytes its middle lies,
  // which is monotone in b, so each owner's blocks are a run.
  size_t owners = columns * arrangement.nodes.size();
  double total = 0;
  for (const Block &block : blocks)
    total += static_cast<double>(block.bytes);
  arrangement.first.assign(owners + 1, blocks.size());
  double before = 0;
  size_t owner = 0;
  for (size_t b = 0; b < blocks.size(); ++b) {
    double middle = before + static_cast<double>(blocks[b].bytes) / 2;
    size_t wanted =
        total > 0 ? static_cast<size_t>(middle * static_cast<double>(owners) /
                                        total)
                  : owners - 1;
    wanted = std::min(wanted, owners - 1);
    for (; owner <= wanted; ++owner)
      arrangement.first[owner] = b;
    before += static_cast<double>(blocks[b].bytes);
  }
  return arrangement;
}

namespace {
/// The slices of one gather, and their load on the plan's ranks.
class GatherWriter {
public:
  /// `colocated` when members hold blocks themselves (Region::members).
  GatherWriter(const TransferGroup &group, const std::vector<Block> &blocks,
               bool colocated, Loads &loads, const CostModel &model,
               std::vector<Slice> &out)
      : group(group), blocks(blocks), colocated(colocated), loads(loads),
        model(model), out(out) {
    // Blocks that continue one another along one dimension make a run that
    // is one box, found without merging.
    linear = true;
    for (size_t b = 1; b < blocks.size() && linear; ++b)
      linear = continues(blocks[b - 1].box, blocks[b].box);
  }

  /// Blocks [begin, end) from `sender` (already holding them) to `receiver`,
  /// but for those `receiver` holds as a source, which it copies itself.
  void forward(int64_t sender, int64_t receiver, int32_t round, size_t begin,
               size_t end) {
    if (!colocated) {
      forwardRun(sender, receiver, round, begin, end);
      return;
    }
    while (begin < end) {
      while (begin < end && holds(receiver, begin))
        ++begin;
      size_t runEnd = begin;
      while (runEnd < end && !holds(receiver, runEnd))
        ++runEnd;
      forwardRun(sender, receiver, round, begin, runEnd);
      begin = runEnd;
    }
  }

  /// Block `b` from the source side to its owner, from the holder least busy
  /// once it sends it; nothing when the owner holds it.
  void scatter(size_t b, int64_t owner) {
    const Block &block = blocks[b];
    if (holds(owner, b))
      return;
    Slice slice;
    slice.sender =
        leastBusyHolder(block.region->holders, owner, block.bytes, model,
                        [&](int64_t rank) { return loads.send[rank]; });
    slice.receiver = owner;
    slice.box = block.box;
    add(std::move(slice));
  }

private:
  bool holds(int64_t rank, size_t b) const {
    return colocated && llvm::binary_search(blocks[b].region->holders, rank);
  }

  void forwardRun(int64_t sender, int64_t receiver, int32_t round,
                  size_t begin, size_t end) {
    if (begin >= end)
      return;
    for (Box &box : runBoxes(begin, end)) {
      Slice slice;
      slice.sender = sender;
      slice.receiver = receiver;
      slice.origin = Origin::Destination;
      slice.round = round;
      slice.box = std::move(box);
      add(std::move(slice));
    }
  }

  static bool continues(const Box &a, const Box &b) {
    size_t differ = 0, dim = 0;
    for (size_t d = 0; d < a.sizes.size(); ++d)
      if (a.offsets[d] != b.offsets[d] || a.sizes[d] != b.sizes[d]) {
        ++differ;
        dim = d;
      }
    return differ == 1 && a.offsets[dim] + a.sizes[dim] == b.offsets[dim];
  }

  std::vector<Box> runBoxes(size_t begin, size_t end) const {
    if (linear) {
      Box box = blocks[begin].box;
      const Box &last = blocks[end - 1].box;
      for (size_t d = 0; d < box.sizes.size(); ++d)
        box.sizes[d] = last.offsets[d] + last.sizes[d] - box.offsets[d];
      return {box};
    }
    std::vector<Box> boxes;
    for (size_t b = begin; b < end; ++b)
      boxes.push_back(blocks[b].box);
    return mergeBoxes(std::move(boxes), group.shape);
  }

  void add(Slice slice) {
    loads.add(model, slice.sender, slice.receiver,
              sliceLoadBytes(group, slice), 1);
    out.push_back(std::move(slice));
  }

  const TransferGroup &group;
  const std::vector<Block> &blocks;
  bool colocated;
  Loads &loads;
  const CostModel &model;
  std::vector<Slice> &out;
  bool linear = true;
};
} // namespace

/// Bruck's allgather among `members`, member i holding blocks [first[i],
/// first[i+1]) and all of them [first.front(), first.back()) at the end, in
/// rounds from `round` on: member i passes its first `s` items (a cyclic
/// run, so at most two runs of blocks) to member i - held, and each member
/// then holds held + s items from its own on.
static void bruck(llvm::ArrayRef<int64_t> members, llvm::ArrayRef<size_t> first,
                  int32_t round, GatherWriter &writer) {
  size_t count = members.size();
  for (size_t held = 1; held < count; ++round) {
    size_t s = std::min(held, count - held);
    for (size_t i = 0; i < count; ++i) {
      int64_t to = members[(i + count - held) % count];
      if (i + s <= count) {
        writer.forward(members[i], to, round, first[i], first[i + s]);
      } else {
        writer.forward(members[i], to, round, first[i], first[count]);
        writer.forward(members[i], to, round, first[0], first[i + s - count]);
      }
    }
    held += s;
  }
}

/// Where every block has a holder among the members (colocated sides), makes
/// each block that holder's to own: blocks go in order of their owners, so
/// that no piece leaves its holder to be scattered, nor enters its holder's
/// node again on its way round. Runs of blocks are then no longer adjacent
/// in the tensor, and pass on in more boxes.
static void ownBlocksHeld(Arrangement &arrangement,
                          std::vector<Block> &blocks) {
  size_t owners = arrangement.first.size() - 1;
  llvm::DenseMap<int64_t, size_t> ownerOf;
  for (size_t o = 0; o < owners; ++o)
    ownerOf[arrangement.owner(o)] = o;
  std::vector<size_t> wanted;
  for (const Block &block : blocks) {
    std::optional<size_t> best;
    for (int64_t holder : block.region->holders)
      if (auto it = ownerOf.find(holder); it != ownerOf.end())
        best = std::min(best.value_or(it->second), it->second);
    if (!best)
      return;
    wanted.push_back(*best);
  }
  std::vector<size_t> order(blocks.size());
  std::iota(order.begin(), order.end(), 0);
  llvm::stable_sort(order,
                    [&](size_t a, size_t b) { return wanted[a] < wanted[b]; });
  std::vector<Block> sorted;
  sorted.reserve(blocks.size());
  for (size_t b : order)
    sorted.push_back(std::move(blocks[b]));
  blocks = std::move(sorted);
  // Owner o owns blocks [first[o], first[o + 1]).
  size_t b = 0;
  for (size_t o = 0; o <= owners; ++o) {
    while (b < order.size() && wanted[order[b]] < o)
      ++b;
    arrangement.first[o] = b;
  }
}

/// Gathers `family` among its receivers, if its rounds fit in maxRounds:
/// appends its slices to `out` and their load to `loads`, and returns the
/// rounds it takes (0 when it does not fit).
static int32_t gather(const Plan &plan, const Family &family,
                      const std::vector<Region> &regions, Loads &loads,
                      const CostModel &model, const RelayOptions &options,
                      std::vector<Slice> &out) {
  const Region &head = regions[family.regions.front()];
  std::vector<Block> blocks =
      familyBlocks(family, regions, head.members.size());
  Arrangement arrangement = arrange(head, model, blocks);
  ownBlocksHeld(arrangement, blocks);
  size_t nodes = arrangement.nodes.size(), columns = arrangement.columns;
  int32_t rounds = 1 + bruckRounds(nodes) + bruckRounds(columns);
  if (rounds > options.maxRounds)
    return 0;
  // Receivers too may hold blocks (colocated sides where every holder of
  // the box receives it), so members != receivers would not tell.
  bool colocated = llvm::any_of(blocks, [&](const Block &block) {
    return llvm::any_of(block.region->holders, [&](int64_t holder) {
      return llvm::binary_search(head.members, holder);
    });
  });
  GatherWriter writer(plan.groups[head.group], blocks, colocated, loads, model,
                      out);
  for (size_t owner = 0; owner < nodes * columns; ++owner)
    for (size_t b = arrangement.first[owner]; b < arrangement.first[owner + 1];
         ++b)
      writer.scatter(b, arrangement.owner(owner));
  // Among nodes, column by column: receiver j of every node ends with the
  // blocks of column j.
  std::vector<int64_t> members;
  for (size_t j = 0; j < columns; ++j) {
    members.clear();
    for (size_t m = 0; m < nodes; ++m)
      members.push_back(arrangement.nodes[m][j]);
    llvm::ArrayRef<size_t> first(arrangement.first);
    bruck(members, first.slice(j * nodes, nodes + 1), 1, writer);
  }
  // Within each node, the columns.
  std::vector<size_t> columnFirst;
  for (size_t j = 0; j <= columns; ++j)
    columnFirst.push_back(arrangement.first[j * nodes]);
  for (const std::vector<int64_t> &node : arrangement.nodes)
    bruck(node, columnFirst, 1 + bruckRounds(nodes), writer);
  return rounds;
}

/// Gathers `family` when the estimate says that is no slower than sending
/// its pieces straight to every receiver (the busiest involved rank, with
/// all the plan's traffic), and the rounds it adds to the `roundsInUse`
/// that the plan has so far cost, at a step and a latency each, at most
/// kGatherStepShare of that: where direct sends are as fast (on a flat
/// topology every receiver takes the whole tensor over its own link
/// anyway), the gather still keeps the plan from growing with pieces ×
/// receivers, but tiny tensors must not pay rounds of steps for it.
/// Updates `loads` and `roundsInUse` and appends the slices to `out` when
/// it gathers.
static bool tryGather(const Plan &plan, const Family &family,
                      const std::vector<Region> &regions, Loads &loads,
                      const CostModel &model, const RelayOptions &options,
                      int32_t &roundsInUse, std::vector<Slice> &out) {
  const TransferGroup &group =
      plan.groups[regions[family.regions.front()].group];
  // The ranks whose loads the gather changes, each once: a family of a
  // large refit sends millions of slices among a few thousand ranks.
  std::vector<int64_t> involved;
  std::vector<bool> seen(loads.send.size());
  auto involve = [&](int64_t rank) {
    if (!seen[rank]) {
      seen[rank] = true;
      involved.push_back(rank);
    }
  };
  for (size_t r : family.regions)
    for (const Region::Transfer &transfer : regions[r].transfers) {
      involve(transfer.sender);
      involve(transfer.receiver);
    }
  const Topology &topology = model.getTopology();
  double directSeconds = loads.busiest(involved) + topology.latencySeconds;
  auto addDirect = [&](double scale) {
    for (size_t r : family.regions)
      loads.addTransfers(model, regions[r], scale);
  };
  addDirect(-1);
  size_t start = out.size();
  int32_t rounds = gather(plan, family, regions, loads, model, options, out);
  if (rounds > 0) {
    for (size_t i = start; i < out.size(); ++i)
      involve(out[i].sender);
    double seconds = loads.busiest(involved) + topology.latencySeconds;
    double stepSeconds = std::max(0, rounds - roundsInUse) *
                         (topology.stepSeconds + topology.latencySeconds);
    // Loads taken away and added again differ in their last bits: a gather
    // that leaves the busiest rank as busy is no slower.
    if (seconds <= directSeconds * (1 + 1e-9) &&
        stepSeconds <= kGatherStepShare * directSeconds) {
      roundsInUse = std::max(roundsInUse, rounds);
      return true;
    }
    for (size_t i = start; i < out.size(); ++i)
      loads.add(model, out[i].sender, out[i].receiver,
                sliceLoadBytes(group, out[i]), -1);
    out.resize(start);
  }
  addDirect(1);
  return false;
}

//===----------------------------------------------------------------------===//
// Relaying
//===----------------------------------------------------------------------===//

/// The slices that carry `region` along `tree`.
static void addTreeSlices(const Region &region, const Tree &tree,
                          std::vector<Slice> &out) {
  std::vector<Box> chunks = chunkBox(region.box, tree.chunks);
  M2N_ASSERT(static_cast<int64_t>(chunks.size()) == tree.numChunks,
             "numChunks counts the pieces chunkBox makes");
  for (size_t i = 0; i < tree.order.size(); ++i) {
    for (size_t c = 0; c < chunks.size(); ++c) {
      Slice slice;
      slice.sender = tree.parent(i);
      slice.receiver = tree.order[i];
      slice.origin = i == 0 ? Origin::Source : Origin::Destination;
      slice.round = static_cast<int32_t>(c) + tree.depth[i] - 1;
      slice.box = chunks[c];
      out.push_back(std::move(slice));
    }
  }
}

static int32_t roundsUsed(const Plan &plan) {
  int32_t rounds = 0;
  for (const TransferGroup &group : plan.groups)
    for (const Slice &slice : group.slices)
      rounds = std::max(rounds, slice.round + 1);
  return rounds;
}

namespace {
/// How one region travels: along a tree, by an exchange, or (neither) as
/// it is.
struct Decision {
  std::optional<Tree> tree;
  std::optional<Exchange> exchange;
};
} // namespace

/// What deciding a region goes by: its ranks' estimate alone; or an
/// exchange wherever one is possible; or that, fed by the receivers on a
/// holder's node wherever there are some.
enum class Preference { Estimate, Exchange, FedExchange };

/// Adds the traffic of `region` as `decision` sends it to `loads`,
/// weighted by `scale` (-1 takes it away).
static void addDecisionLoad(Loads &loads, const CostModel &model,
                            const Region &region, const Decision &decision,
                            double scale) {
  if (const std::optional<Exchange> &exchange = decision.exchange) {
    for (size_t p = 0; p < exchange->parts.size(); ++p) {
      int64_t bytes = exchange->bytes[p];
      loads.add(model, exchange->holders[p], exchange->owners[p], bytes,
                scale);
      for (const Exchange::Hop &hop : exchange->hops[p])
        loads.add(model, hop.sender, hop.receiver, bytes, scale);
    }
  } else if (const std::optional<Tree> &tree = decision.tree) {
    double stretch = static_cast<double>(tree->rounds) / tree->numChunks;
    for (size_t i = 0; i < tree->order.size(); ++i)
      loads.add(model, tree->parent(i), tree->order[i], region.bytes,
                stretch * scale);
  } else {
    loads.addTransfers(model, region, scale);
  }
}

/// How `region` travels, as `preference` says, on `loads` without it;
/// `directSeconds` is the estimate of sending it directly.
static Decision decide(const Region &region, const Loads &loads,
                       const CostModel &model, const RelayOptions &options,
                       Preference preference, double directSeconds) {
  Decision decision;
  std::optional<Tree> tree =
      chooseTree(region, loads, model, options, directSeconds);
  std::optional<Exchange> exchange =
      planExchange(region, loads, model, options,
                   preference == Preference::FedExchange);
  // An exchange that leaves the busiest rank as busy as a direct send
  // still wins: each byte then leaves the source side once, which leaves
  // the source side's links free for what only they can send.
  bool preferExchange = preference != Preference::Estimate;
  if (exchange &&
      (preferExchange || exchange->seconds <= directSeconds) &&
      (!tree || exchange->seconds <= tree->seconds))
    decision.exchange = std::move(exchange);
  else
    decision.tree = std::move(tree);
  return decision;
}

/// Passes over the regions when fed exchanges are preferred. In the first,
/// each region is decided on the decisions before it and the direct sends
/// of those after it, which load the holders many times over: the first
/// regions then feed their parts from the receivers beside the holders
/// alone, and the last from the holders alone. In the second, each is
/// decided again on all the others' decisions, which spreads the feeding.
constexpr int kFedPasses = 2;

/// A fed exchange adds a hop, whose fill and drain the busy seconds do not
/// see: the regions go so only when that leaves the busiest rank this
/// much less busy than the other ways.
constexpr double kFedGain = 0.9;

/// Decides `regions` in order, as `preference` says, on `loads`, which
/// hold their traffic at the end.
static std::vector<Decision> decideInOrder(const std::vector<Region> &regions,
                                           Loads &loads, const CostModel &model,
                                           const RelayOptions &options,
                                           Preference preference) {
  // Every region starts direct, as `loads` has it.
  std::vector<Decision> decisions(regions.size());
  int passes = preference == Preference::FedExchange ? kFedPasses : 1;
  for (int pass = 0; pass < passes; ++pass)
    for (size_t r = 0; r < regions.size(); ++r) {
      const Region &region = regions[r];
      if (pass > 0) {
        addDecisionLoad(loads, model, region, decisions[r], -1);
        loads.addTransfers(model, region, 1);
      }
      std::vector<int64_t> direct = region.receivers;
      for (const Region::Transfer &transfer : region.transfers)
        direct.push_back(transfer.sender);
      double directSeconds =
          loads.busiest(direct) + model.getTopology().latencySeconds;
      loads.addTransfers(model, region, -1);
      decisions[r] =
          decide(region, loads, model, options, preference, directSeconds);
      addDecisionLoad(loads, model, region, decisions[r], 1);
    }
  return decisions;
}

/// How every region travels. Each is decided on its own ranks' estimate,
/// but where ranks both send and receive much (colocated sides, above
/// all), exchanging one region leaves its ranks as busy as before, since
/// their other direction carries the regions not yet decided, and every
/// region stays direct although exchanging all of them would halve the
/// busiest rank's time. Likewise a fed exchange spares the links of the
/// holders' nodes only once most regions go so. So the regions are also
/// decided preferring exchanges, and fed ones where the sides share nodes
/// (the latter kept only for a clear gain, kFedGain), and whichever leaves
/// the plan's busiest rank least busy is kept; `loads` ends with its
/// traffic.
static std::vector<Decision> decideRegions(const std::vector<Region> &regions,
                                           Loads &loads, const CostModel &model,
                                           const RelayOptions &options) {
  Loads initial = loads;
  std::vector<Decision> decisions =
      decideInOrder(regions, loads, model, options, Preference::Estimate);
  if (!options.exchange)
    return decisions;
  auto tryPreference = [&](Preference preference, double gain) {
    Loads preferring = initial;
    std::vector<Decision> preferred =
        decideInOrder(regions, preferring, model, options, preference);
    if (preferring.busiest() < loads.busiest() * gain) {
      loads = std::move(preferring);
      decisions = std::move(preferred);
    }
  };
  tryPreference(Preference::Exchange, 1 - 1e-9);
  if (llvm::any_of(regions, [&](const Region &region) {
        return hasLocalReceivers(region, model);
      }))
    tryPreference(Preference::FedExchange, kFedGain);
  return decisions;
}

RelayStats plan::relay(Plan &plan, const CostModel &model,
                       const RelayOptions &options) {
  RelayStats stats;
  // A relay needs a round to reach the first receiver and one to forward.
  if (options.enable && options.maxRounds >= 2) {
    // Each group's regions are found on their own, on options.pool.
    std::vector<std::vector<Region>> groupRegions(plan.groups.size());
    forEachGroup(plan, options.pool, [&](size_t g) {
      findRegions(plan, static_cast<int32_t>(g), groupRegions[g]);
    });
    std::vector<Region> regions;
    size_t total = 0;
    for (const std::vector<Region> &found : groupRegions)
      total += found.size();
    regions.reserve(total);
    for (std::vector<Region> &found : groupRegions)
      std::move(found.begin(), found.end(), std::back_inserter(regions));

    Loads loads(plan, model);
    std::vector<std::vector<bool>> replaced(plan.groups.size());
    std::vector<std::vector<Slice>> added(plan.groups.size());
    auto replace = [&](const Region &region) {
      TransferGroup &group = plan.groups[region.group];
      replaced[region.group].resize(group.slices.size());
      for (size_t i : region.slices)
        replaced[region.group][i] = true;
      // The local copies that a replaced fan-out slice stood for stay.
      for (int64_t copier : region.copiers) {
        Slice &copy = added[region.group].emplace_back();
        copy.sender = copier;
        copy.receiver = copier;
        copy.box = region.box;
      }
      ++stats.relayedRegions;
      stats.sourceSendsSaved +=
          static_cast<int64_t>(region.receivers.size()) - 1;
    };
    // Families first, largest first: they are the plan's largest share of
    // slices, their load is even over their receivers, and the rounds of
    // the large ones are free for the small ones.
    if (options.exchange) {
      int32_t roundsInUse = roundsUsed(plan);
      for (const Family &family : findFamilies(regions)) {
        if (!tryGather(plan, family, regions, loads, model, options,
                       roundsInUse,
                       added[regions[family.regions.front()].group]))
          continue;
        for (size_t r : family.regions) {
          regions[r].gathered = true;
          replace(regions[r]);
        }
      }
    }
    llvm::erase_if(regions,
                   [](const Region &region) { return region.gathered; });
    // Largest saving first: those decide the busiest ranks. Equal savings
    // keep the order of discovery, by group and then by box.
    auto saving = [](const Region &region) {
      return static_cast<double>(region.bytes) *
             static_cast<double>(region.receivers.size() - 1);
    };
    llvm::stable_sort(regions, [&](const Region &a, const Region &b) {
      return saving(a) > saving(b);
    });

    std::vector<Decision> decisions =
        decideRegions(regions, loads, model, options);
    for (size_t r = 0; r < regions.size(); ++r) {
      const Region &region = regions[r];
      const Decision &decision = decisions[r];
      if (decision.exchange)
        addExchangeSlices(*decision.exchange, added[region.group]);
      else if (decision.tree)
        addTreeSlices(region, *decision.tree, added[region.group]);
      else
        continue;
      replace(region);
    }

    for (size_t g = 0; g < plan.groups.size(); ++g) {
      if (added[g].empty())
        continue;
      // The kept slices stay in order, so only the added ones are sorted,
      // and merged in.
      std::vector<Slice> &slices = plan.groups[g].slices;
      std::vector<Slice> kept;
      kept.reserve(slices.size());
      for (size_t i = 0; i < slices.size(); ++i)
        if (!replaced[g][i])
          kept.push_back(std::move(slices[i]));
      sortSlices(kept);
      sortSlices(added[g]);
      slices.clear();
      slices.reserve(kept.size() + added[g].size());
      std::merge(std::make_move_iterator(kept.begin()),
                 std::make_move_iterator(kept.end()),
                 std::make_move_iterator(added[g].begin()),
                 std::make_move_iterator(added[g].end()),
                 std::back_inserter(slices), sliceLess);
    }
    if (stats.relayedRegions > 0) {
      // Messages name slices by index; those of a fused plan no longer
      // apply.
      plan.messages.clear();
      plan.numSteps = 0;
    }
  }
  stats.rounds = roundsUsed(plan);
  return stats;
}
