//===- CostModel.cpp - An alpha-beta model of a refit's time --------------===//
//
// The model charges every message a latency plus its bytes over its link's
// bandwidth. A rank's sends in one step run one after another, and so do its
// receives; the two directions overlap. A step lasts as long as its busiest
// rank, plus a fixed cost of its own, and steps run one after another.
//
//===----------------------------------------------------------------------===//

#include "m2n/Plan/CostModel.h"

#include "FanOut.h"

#include "m2n/Plan/Decompose.h"

#include "m2n/Spec/JsonFile.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

using namespace m2n;
using namespace m2n::plan;
using llvm::Error;
using llvm::StringRef;
namespace json = llvm::json;

//===----------------------------------------------------------------------===//
// Reading a topology
//===----------------------------------------------------------------------===//

namespace {
/// The keys of a topology file, in the order the format lists them.
constexpr StringRef kLatencyKey = "latency_us";
constexpr StringRef kStepKey = "step_us";
constexpr StringRef kIntraKey = "intra_node_gbps";
constexpr StringRef kInterKey = "inter_node_gbps";
constexpr StringRef kRanksPerNodeKey = "ranks_per_node";
constexpr StringRef kKeys[] = {kLatencyKey, kStepKey, kIntraKey, kInterKey,
                               kRanksPerNodeKey};
} // namespace

static std::string quote(StringRef s) {
  std::string out;
  llvm::raw_string_ostream(out) << json::Value(s);
  return out;
}

static std::string kindName(const json::Value &value) {
  switch (value.kind()) {
  case json::Value::Null:
    return "null";
  case json::Value::Boolean:
    return "a boolean";
  case json::Value::Number:
    return "a number";
  case json::Value::String:
    return "a string";
  case json::Value::Array:
    return "an array";
  case json::Value::Object:
    return "an object";
  }
  llvm_unreachable("unknown JSON kind");
}

static std::string formatNumber(double number) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%g", number);
  return text;
}

/// An error "<key>: <what>"; parseTopology adds the file name.
static Error fail(StringRef key, const llvm::Twine &what) {
  return llvm::createStringError(key + ": " + what);
}

/// Reads the number at `key`, scaled by `scale`, which must come out finite
/// and positive, or non-negative where `zeroAllowed`: a zero bandwidth or
/// latency would make every time infinite or meaningless, while a step may
/// cost nothing beyond its messages.
static Error readNumber(const json::Object &object, StringRef key,
                        double scale, double &out, bool zeroAllowed = false) {
  const json::Value *value = object.get(key);
  if (!value)
    return Error::success();
  std::optional<double> number = value->getAsNumber();
  if (!number)
    return fail(key, "expected a number, got " + kindName(*value));
  double scaled = *number * scale;
  bool inRange = zeroAllowed ? *number >= 0 : *number > 0;
  if (!inRange || !std::isfinite(scaled))
    return fail(key, llvm::Twine("expected a finite ") +
                         (zeroAllowed ? "non-negative" : "positive") +
                         " number, got " + formatNumber(*number));
  out = scaled;
  return Error::success();
}

/// Reads ranks_per_node, a non-negative integer (0 puts every rank on a node
/// of its own, as Topology documents).
static Error readRanksPerNode(const json::Object &object, int64_t &out) {
  const json::Value *value = object.get(kRanksPerNodeKey);
  if (!value)
    return Error::success();
  std::optional<int64_t> integer = value->getAsInteger();
  if (!integer) {
    std::optional<double> number = value->getAsNumber();
    if (!number)
      return fail(kRanksPerNodeKey,
                  "expected an integer, got " + kindName(*value));
    return fail(kRanksPerNodeKey,
                "expected an integer, got " + formatNumber(*number));
  }
  if (*integer < 0)
    return fail(kRanksPerNodeKey, "expected a non-negative integer, got " +
                                      llvm::Twine(*integer));
  out = *integer;
  return Error::success();
}

/// `"a", "b" or "c"` for the known keys.
static std::string knownKeys() {
  std::string out;
  for (size_t i = 0; i < std::size(kKeys); ++i) {
    if (i > 0)
      out += i + 1 == std::size(kKeys) ? " or " : ", ";
    out += quote(kKeys[i]);
  }
  return out;
}

static Error readTopologyValue(const json::Value &value, Topology &topology) {
  const json::Object *object = value.getAsObject();
  if (!object)
    return llvm::createStringError("expected an object, got " +
                                   kindName(value));
  // Unknown keys are most likely typos that would silently keep a default.
  // Objects iterate in hash order; report the same key on every run.
  std::vector<StringRef> unknown;
  for (const auto &entry : *object)
    if (!llvm::is_contained(kKeys, StringRef(entry.first)))
      unknown.push_back(entry.first);
  if (!unknown.empty())
    return fail(*llvm::min_element(unknown),
                "unknown key (expected " + knownKeys() + ")");
  if (Error error =
          readNumber(*object, kLatencyKey, 1e-6, topology.latencySeconds))
    return error;
  if (Error error = readNumber(*object, kStepKey, 1e-6, topology.stepSeconds,
                               /*zeroAllowed=*/true))
    return error;
  if (Error error =
          readNumber(*object, kIntraKey, 1e9, topology.intraNodeBandwidth))
    return error;
  if (Error error =
          readNumber(*object, kInterKey, 1e9, topology.interNodeBandwidth))
    return error;
  return readRanksPerNode(*object, topology.ranksPerNode);
}

llvm::Expected<Topology> plan::parseTopology(StringRef text,
                                             StringRef fileName) {
  llvm::Expected<json::Value> value = parseJsonFile(text, fileName);
  if (!value)
    return value.takeError();
  Topology topology;
  if (Error error = readTopologyValue(*value, topology))
    return llvm::createStringError(
        fileName + ": error: " + llvm::toString(std::move(error)));
  return topology;
}

llvm::Expected<Topology> plan::readTopology(StringRef path) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      readTextFile(path);
  if (!buffer)
    return buffer.takeError();
  return parseTopology((*buffer)->getBuffer(), path);
}

//===----------------------------------------------------------------------===//
// Links
//===----------------------------------------------------------------------===//

double CostModel::messageSeconds(int64_t sender, int64_t receiver,
                                 int64_t bytes) const {
  return topology.latencySeconds +
         static_cast<double>(bytes) / bandwidth(sender, receiver);
}

/// The bucket size at which a message's latency is about 1% of its time
/// over a link of `bandwidth`, within [4, 256] MiB.
static int64_t bucketBytesAt(double latencySeconds, double bandwidth) {
  constexpr double kMiB = 1 << 20;
  constexpr double kMinMiB = 4, kMaxMiB = 256;
  // latency / (latency + bytes / bandwidth) = 1% when bytes / bandwidth is
  // 99 latencies.
  double mib = 99 * latencySeconds * bandwidth / kMiB;
  // Written so that NaN, from a hand-built topology, lands on the minimum.
  if (!(mib >= kMinMiB))
    return int64_t(kMinMiB) << 20;
  if (mib > kMaxMiB)
    return int64_t(kMaxMiB) << 20;
  return std::llround(mib) << 20;
}

int64_t CostModel::defaultBucketBytes() const {
  return bucketBytesAt(topology.latencySeconds, topology.interNodeBandwidth);
}

int64_t CostModel::defaultNodeBucketBytes() const {
  return bucketBytesAt(topology.latencySeconds, topology.intraNodeBandwidth);
}

//===----------------------------------------------------------------------===//
// Costing a plan
//===----------------------------------------------------------------------===//

namespace {
/// What one rank does in one step.
struct RankStep {
  double sendSeconds = 0;
  double receiveSeconds = 0;
  int64_t staging = 0;
};

/// Accumulates the messages of a plan, step by step.
class Traffic {
public:
  Traffic(const CostModel &model, PlanCost &cost, int64_t worldSize)
      : model(model), cost(cost) {
    cost.sendBytes.assign(worldSize, 0);
    cost.receiveBytes.assign(worldSize, 0);
    cost.messagesSent.assign(worldSize, 0);
  }

  /// Adds `count` messages of `bytes` each. Ranks outside [0, worldSize)
  /// cannot occur in a plan that verifies; they are skipped rather than
  /// indexed.
  void add(int64_t step, int64_t sender, int64_t receiver, int64_t bytes,
           bool staged, int64_t count = 1) {
    int64_t worldSize = static_cast<int64_t>(cost.sendBytes.size());
    if (sender < 0 || receiver < 0 || sender >= worldSize ||
        receiver >= worldSize || count <= 0)
      return;
    cost.messages += count;
    cost.sendBytes[sender] += bytes * count;
    cost.receiveBytes[receiver] += bytes * count;
    cost.messagesSent[sender] += count;
    double seconds = model.messageSeconds(sender, receiver, bytes) * count;
    llvm::DenseMap<int64_t, RankStep> &ranks = steps[step];
    ranks[sender].sendSeconds += seconds;
    ranks[receiver].receiveSeconds += seconds;
    if (staged) {
      ranks[sender].staging += bytes * count;
      ranks[receiver].staging += bytes * count;
    }
  }

  /// Fills the step count, staging peak and predicted time: every step,
  /// empty or not, costs its own overhead, since every rank runs it.
  void finish(int64_t scheduledSteps) {
    cost.steps = scheduledSteps;
    if (!steps.empty())
      cost.steps = std::max(cost.steps, steps.rbegin()->first + 1);
    cost.predictedSeconds =
        static_cast<double>(cost.steps) * model.getTopology().stepSeconds;
    for (const auto &[step, ranks] : steps) {
      double longest = 0;
      for (const auto &[rank, load] : ranks) {
        longest = std::max({longest, load.sendSeconds, load.receiveSeconds});
        cost.stagingPeak = std::max(cost.stagingPeak, load.staging);
      }
      cost.predictedSeconds += longest;
    }
  }

private:
  const CostModel &model;
  PlanCost &cost;
  std::map<int64_t, llvm::DenseMap<int64_t, RankStep>> steps;
};

/// The boxes of one layout of a group, deduplicated: distinct boxes of a
/// DTensor layout are disjoint and tile the tensor.
struct DistinctBoxes {
  std::vector<Box> boxes;
  /// Per distinct box, the ranks that hold it, in mesh order.
  std::vector<std::vector<int64_t>> holders;
  /// Per rank of the mesh, its distinct box.
  llvm::DenseMap<int64_t, size_t> boxOf;

  DistinctBoxes(const Plan &plan, const TransferGroup &group,
                const PlanLayout &layout) {
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
      boxOf[mesh.ranks[i]] = it->second;
    }
  }
};

/// What one rank must move, over all groups, in bytes.
struct RankNeeds {
  /// Destination bytes it does not hold as a source.
  int64_t lacks = 0;
  /// Of those, bytes that no rank of its node holds as a source.
  int64_t offNode = 0;
  /// Its destination box in each group it receives, as (group, distinct
  /// box): ranks of one node with the same boxes lack the same off-node
  /// bytes.
  std::vector<std::pair<uint32_t, uint32_t>> boxes;
};

/// What the ranks that all hold the same source bytes (one rank, or a
/// replicated source such as data-parallel trainers) must send of them, in
/// bytes: each such byte that another rank needs leaves the set at least
/// once, the set's ranks sharing that work. Over a NIC when no rank on the
/// set's nodes needs it, since a rank forwards only what it needs itself.
struct HolderSetNeeds {
  int64_t remote = 0;
  int64_t local = 0;
};
using HolderSets = std::map<std::vector<int64_t>, HolderSetNeeds>;

/// What one node must move through its ranks' NICs, in bytes.
struct NodeNeeds {
  /// Bytes its ranks need that no rank of it holds, counted once.
  int64_t in = 0;
  /// Bytes that only its ranks hold and a rank of another node needs.
  int64_t out = 0;
  /// The plan's ranks on it.
  std::vector<int64_t> ranks;
};
} // namespace

/// A plan's ranks may exceed its meshes' only in a plan that does not verify;
/// size the per-rank tables to hold them anyway.
static int64_t observedWorldSize(const Plan &plan) {
  int64_t worldSize = plan.worldSize();
  for (const TransferGroup &group : plan.groups)
    for (const Slice &slice : group.slices)
      worldSize = std::max({worldSize, slice.sender + 1, slice.receiver + 1});
  for (const Message &message : plan.messages)
    worldSize = std::max({worldSize, message.sender + 1, message.receiver + 1});
  return worldSize;
}

/// The distinct nodes of `ranks`, ascending.
static std::vector<int64_t> nodesOf(const CostModel &model,
                                    llvm::ArrayRef<int64_t> ranks) {
  std::vector<int64_t> nodes;
  nodes.reserve(ranks.size());
  for (int64_t rank : ranks)
    nodes.push_back(model.node(rank));
  llvm::sort(nodes);
  nodes.erase(llvm::unique(nodes), nodes.end());
  return nodes;
}

/// Adds what one group asks of each rank and node: every destination box
/// against every source box it meets (distinct boxes of a layout tile the
/// tensor), on the receiving side and on the sending side.
static void addNeeds(const CostModel &model, const Plan &plan, uint32_t g,
                     const TransferGroup &group, std::vector<RankNeeds> &ranks,
                     llvm::DenseMap<int64_t, NodeNeeds> &nodes,
                     HolderSets &holderSets) {
  if (group.src.mesh < 0 || group.dst.mesh < 0 ||
      group.src.mesh >= static_cast<int64_t>(plan.meshes.size()) ||
      group.dst.mesh >= static_cast<int64_t>(plan.meshes.size()))
    return;
  int64_t unitBytes =
      group.elementBytes() * static_cast<int64_t>(group.members.size());
  DistinctBoxes src(plan, group, group.src);
  DistinctBoxes dst(plan, group, group.dst);
  auto holds = [](const DistinctBoxes &boxes, int64_t rank, size_t box) {
    auto it = boxes.boxOf.find(rank);
    return it != boxes.boxOf.end() && it->second == box;
  };
  std::vector<std::vector<int64_t>> srcNodes, dstNodes;
  for (const std::vector<int64_t> &holders : src.holders)
    srcNodes.push_back(nodesOf(model, holders));
  for (const std::vector<int64_t> &holders : dst.holders)
    dstNodes.push_back(nodesOf(model, holders));
  for (size_t d = 0; d < dst.holders.size(); ++d)
    for (int64_t rank : dst.holders[d])
      ranks[rank].boxes.emplace_back(g, static_cast<uint32_t>(d));

  for (size_t s = 0; s < src.boxes.size(); ++s) {
    HolderSetNeeds shared;
    for (size_t d = 0; d < dst.boxes.size(); ++d) {
      int64_t bytes =
          intersect(dst.boxes[d], src.boxes[s]).volume() * unitBytes;
      if (bytes == 0)
        continue;
      // Receiving: a rank lacks the bytes unless it holds the source box; a
      // node, unless one of its ranks does.
      std::vector<int64_t> needing;
      for (int64_t rank : dst.holders[d]) {
        if (holds(src, rank, s))
          continue;
        needing.push_back(rank);
        ranks[rank].lacks += bytes;
        if (!llvm::binary_search(srcNodes[s], model.node(rank)))
          ranks[rank].offNode += bytes;
      }
      for (int64_t node : nodesOf(model, needing))
        if (!llvm::binary_search(srcNodes[s], node))
          nodes[node].in += bytes;
      if (needing.empty())
        continue;
      // Sending: what a set of ranks alone holds leaves the set; what one
      // node alone holds leaves the node when another node needs it.
      bool local = llvm::any_of(needing, [&](int64_t rank) {
        return llvm::binary_search(srcNodes[s], model.node(rank));
      });
      (local ? shared.local : shared.remote) += bytes;
      if (srcNodes[s].size() == 1 &&
          llvm::any_of(dstNodes[d],
                       [&](int64_t node) { return node != srcNodes[s][0]; }))
        nodes[srcNodes[s][0]].out += bytes;
    }
    if (shared.local + shared.remote > 0) {
      std::vector<int64_t> holders = src.holders[s];
      llvm::sort(holders);
      HolderSetNeeds &set = holderSets[std::move(holders)];
      set.local += shared.local;
      set.remote += shared.remote;
    }
  }
}

/// The least time in which a set of ranks holding the same bytes sends them
/// out once, sharing the work evenly.
static double holderSetSeconds(const CostModel &model,
                               const std::vector<int64_t> &holders,
                               const HolderSetNeeds &needs) {
  const Topology &topology = model.getTopology();
  double work =
      static_cast<double>(needs.remote) / topology.interNodeBandwidth +
      static_cast<double>(needs.local) /
          std::max(topology.intraNodeBandwidth, topology.interNodeBandwidth);
  return work / static_cast<double>(holders.size());
}

/// A node's ranks by their destination boxes: ranks with the same boxes in
/// every group (the same shard of different replicas) lack the same
/// off-node bytes, which enter the node once between them.
static std::vector<std::vector<int64_t>>
twinsOf(const NodeNeeds &node, const std::vector<RankNeeds> &ranks) {
  std::vector<int64_t> order = node.ranks;
  auto boxesLess = [&](int64_t a, int64_t b) {
    return ranks[a].boxes < ranks[b].boxes;
  };
  llvm::stable_sort(order, boxesLess);
  std::vector<std::vector<int64_t>> twins;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || boxesLess(order[i - 1], order[i]))
      twins.emplace_back();
    twins.back().push_back(order[i]);
  }
  return twins;
}

/// The least time in which a node's ranks receive what they lack, when x_r
/// of rank r's bytes come through its NIC (at most what it lacks off the
/// node) and the rest from ranks of its node, and the x_r add up to what
/// enters the node: rank r takes x_r / inter + (lacks_r - x_r) / intra.
/// Twins (twinsOf) lack the same off-node bytes, and a rank forwards only
/// what it needs itself, so their x_r add up to at most what one of them
/// lacks off the node.
static double nodeReceiveSeconds(const CostModel &model,
                                 const NodeNeeds &node,
                                 const std::vector<RankNeeds> &ranks) {
  const Topology &topology = model.getTopology();
  double inter = 1 / topology.interNodeBandwidth;
  double intra = 1 / topology.intraNodeBandwidth;
  auto seconds = [&](const RankNeeds &rank, double viaNic) {
    return viaNic * inter + (static_cast<double>(rank.lacks) - viaNic) * intra;
  };
  // With every off-node byte through the rank's own NIC the node's bytes
  // surely enter; with none, each rank still receives all it lacks.
  double least = 0, most = 0;
  for (int64_t r : node.ranks) {
    least = std::max(least, seconds(ranks[r], 0));
    most = std::max(most,
                    seconds(ranks[r], static_cast<double>(ranks[r].offNode)));
  }
  if (inter <= intra)
    return most;
  std::vector<std::vector<int64_t>> twins = twinsOf(node, ranks);
  auto enters = [&](double time) {
    double bytes = 0;
    for (const std::vector<int64_t> &twin : twins) {
      double taken = 0;
      for (int64_t r : twin) {
        double room = (time - seconds(ranks[r], 0)) / (inter - intra);
        taken += std::clamp(room, 0.0, static_cast<double>(ranks[r].offNode));
      }
      bytes +=
          std::min(taken, static_cast<double>(ranks[twin.front()].offNode));
    }
    return bytes >= static_cast<double>(node.in);
  };
  if (enters(least))
    return least;
  for (int i = 0; i < 60 && most - least > 1e-9 * most; ++i) {
    double middle = (least + most) / 2;
    (enters(middle) ? most : least) = middle;
  }
  return most;
}

/// The least time in which what only a node's ranks hold, and a rank of
/// another node needs, leaves the node over its ranks' NICs.
static double nodeSendSeconds(const CostModel &model, const NodeNeeds &node) {
  return static_cast<double>(node.out) /
         (model.getTopology().interNodeBandwidth *
          static_cast<double>(std::max<size_t>(1, node.ranks.size())));
}

double CostModel::lowerBound(const Plan &plan) const {
  std::vector<RankNeeds> ranks(observedWorldSize(plan));
  llvm::DenseMap<int64_t, NodeNeeds> nodes;
  HolderSets holderSets;
  for (size_t g = 0; g < plan.groups.size(); ++g)
    addNeeds(*this, plan, static_cast<uint32_t>(g), plan.groups[g], ranks,
             nodes, holderSets);
  for (int64_t rank : plan.ranks())
    nodes[node(rank)].ranks.push_back(rank);
  double bound = 0;
  for (const auto &[id, node] : nodes)
    bound = std::max({bound, nodeReceiveSeconds(*this, node, ranks),
                      nodeSendSeconds(*this, node)});
  for (const auto &[holders, needs] : holderSets)
    bound = std::max(bound, holderSetSeconds(*this, holders, needs));
  // Moving any byte takes at least one message in one step.
  if (bound == 0)
    return 0;
  return bound + topology.latencySeconds + topology.stepSeconds;
}

PlanCost CostModel::cost(const Plan &plan) const {
  PlanCost result;
  int64_t worldSize = observedWorldSize(plan);
  Traffic traffic(*this, result, worldSize);
  bool fused = !plan.messages.empty();
  for (const TransferGroup &group : plan.groups) {
    int64_t members = static_cast<int64_t>(group.members.size());
    auto add = [&](const Slice &slice, int64_t sender, int64_t receiver) {
      int64_t bytes = sliceBytes(group, slice);
      if (sender == receiver) {
        result.localCopyBytes += bytes * members;
        return;
      }
      result.wireBytes += bytes * members;
      // An unfused plan sends each member's slice as a message of its own.
      if (!fused)
        traffic.add(slice.round, sender, receiver, bytes, /*staged=*/true,
                    members);
    };
    std::optional<FanOutIndex> fanOuts;
    if (hasFanOuts(group))
      fanOuts.emplace(plan, group);
    for (const Slice &slice : group.slices) {
      if (slice.isFanOut())
        fanOuts->forEachDelivery(slice, [&](int64_t sender, int64_t receiver) {
          add(slice, sender, receiver);
        });
      else
        add(slice, slice.sender, slice.receiver);
    }
  }
  for (const Message &message : plan.messages)
    traffic.add(message.step, message.sender, message.receiver, message.bytes,
                !message.zeroCopy);
  traffic.finish(plan.numSteps);
  result.lowerBoundSeconds = lowerBound(plan);
  return result;
}

double CostModel::predictedSeconds(const std::vector<Message> &messages) const {
  // The same traffic as cost() adds for a fused plan: every message, over
  // tables that hold all of their ranks.
  int64_t worldSize = 0;
  for (const Message &message : messages)
    worldSize = std::max({worldSize, message.sender + 1, message.receiver + 1});
  PlanCost result;
  Traffic traffic(*this, result, worldSize);
  for (const Message &message : messages)
    traffic.add(message.step, message.sender, message.receiver, message.bytes,
                !message.zeroCopy);
  traffic.finish(/*scheduledSteps=*/0);
  return result.predictedSeconds;
}
