//===- CostModel.cpp - An alpha-beta model of a refit's time --------------===//
//
// The model charges every message a latency plus its bytes over its link's
// bandwidth. A rank's sends in one step run one after another, and so do its
// receives; the two directions overlap. A step lasts as long as its busiest
// rank, and steps run one after another.
//
//===----------------------------------------------------------------------===//

#include "m2n/Plan/CostModel.h"

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
constexpr StringRef kIntraKey = "intra_node_gbps";
constexpr StringRef kInterKey = "inter_node_gbps";
constexpr StringRef kRanksPerNodeKey = "ranks_per_node";
constexpr StringRef kKeys[] = {kLatencyKey, kIntraKey, kInterKey,
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
/// and positive: a zero bandwidth or latency would make every time infinite
/// or meaningless.
static Error readPositive(const json::Object &object, StringRef key,
                          double scale, double &out) {
  const json::Value *value = object.get(key);
  if (!value)
    return Error::success();
  std::optional<double> number = value->getAsNumber();
  if (!number)
    return fail(key, "expected a number, got " + kindName(*value));
  double scaled = *number * scale;
  if (!(*number > 0) || !std::isfinite(scaled))
    return fail(key, "expected a finite positive number, got " +
                         formatNumber(*number));
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
          readPositive(*object, kLatencyKey, 1e-6, topology.latencySeconds))
    return error;
  if (Error error =
          readPositive(*object, kIntraKey, 1e9, topology.intraNodeBandwidth))
    return error;
  if (Error error =
          readPositive(*object, kInterKey, 1e9, topology.interNodeBandwidth))
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

int64_t CostModel::defaultBucketBytes() const {
  constexpr double kMiB = 1 << 20;
  constexpr double kMinMiB = 4, kMaxMiB = 256;
  // latency / (latency + bytes / bandwidth) = 1% when bytes / bandwidth is
  // 99 latencies.
  double mib =
      99 * topology.latencySeconds * topology.interNodeBandwidth / kMiB;
  // Written so that NaN, from a hand-built topology, lands on the minimum.
  if (!(mib >= kMinMiB))
    return int64_t(kMinMiB) << 20;
  if (mib > kMaxMiB)
    return int64_t(kMaxMiB) << 20;
  return std::llround(mib) << 20;
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

  /// Fills the step count, staging peak and predicted time.
  void finish(int64_t scheduledSteps) {
    cost.steps = scheduledSteps;
    if (!steps.empty())
      cost.steps = std::max(cost.steps, steps.rbegin()->first + 1);
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

/// Bytes a rank must move in one direction, and whether some of them must
/// cross to another node.
struct Unavoidable {
  int64_t bytes = 0;
  bool interNode = false;
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

/// Adds what each rank of one group must receive (what its destination box
/// holds beyond its source box) and must send (what only it holds and
/// another rank needs).
static void addUnavoidable(const CostModel &model, const Plan &plan,
                           const TransferGroup &group,
                           std::vector<Unavoidable> &receive,
                           std::vector<Unavoidable> &send) {
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

  for (size_t d = 0; d < dst.boxes.size(); ++d) {
    for (size_t s = 0; s < src.boxes.size(); ++s) {
      // The same for every holder of the destination box.
      int64_t volume = intersect(dst.boxes[d], src.boxes[s]).volume();
      if (volume == 0)
        continue;
      for (int64_t rank : dst.holders[d]) {
        if (holds(src, rank, s))
          continue;
        receive[rank].bytes += volume * unitBytes;
        // The nearest holder sets the link the bytes need at best.
        if (llvm::none_of(src.holders[s], [&](int64_t holder) {
              return model.sameNode(holder, rank);
            }))
          receive[rank].interNode = true;
      }
    }
  }

  for (size_t s = 0; s < src.boxes.size(); ++s) {
    if (src.holders[s].size() != 1)
      continue;
    int64_t holder = src.holders[s].front();
    for (size_t d = 0; d < dst.boxes.size(); ++d) {
      int64_t volume = intersect(src.boxes[s], dst.boxes[d]).volume();
      bool needed = false, remote = false;
      for (int64_t rank : dst.holders[d]) {
        if (rank == holder)
          continue;
        needed = true;
        remote |= !model.sameNode(holder, rank);
      }
      if (volume == 0 || !needed)
        continue;
      send[holder].bytes += volume * unitBytes;
      send[holder].interNode |= remote;
    }
  }
}

/// The busiest rank's unavoidable bytes over the bandwidth of the link they
/// need (the inter-node one when any of them must cross nodes), plus one
/// message's latency: moving any byte takes at least one message.
static double lowerBound(const CostModel &model, const Plan &plan,
                         int64_t worldSize) {
  std::vector<Unavoidable> receive(worldSize), send(worldSize);
  for (const TransferGroup &group : plan.groups)
    addUnavoidable(model, plan, group, receive, send);
  const Topology &topology = model.getTopology();
  auto seconds = [&](const Unavoidable &traffic) {
    if (traffic.bytes == 0)
      return 0.0;
    return topology.latencySeconds +
           static_cast<double>(traffic.bytes) /
               (traffic.interNode ? topology.interNodeBandwidth
                                  : topology.intraNodeBandwidth);
  };
  double bound = 0;
  for (int64_t rank = 0; rank < worldSize; ++rank)
    bound = std::max({bound, seconds(receive[rank]), seconds(send[rank])});
  return bound;
}

PlanCost CostModel::cost(const Plan &plan) const {
  PlanCost result;
  int64_t worldSize = observedWorldSize(plan);
  Traffic traffic(*this, result, worldSize);
  bool fused = !plan.messages.empty();
  for (const TransferGroup &group : plan.groups) {
    int64_t members = static_cast<int64_t>(group.members.size());
    for (const Slice &slice : group.slices) {
      int64_t bytes = sliceBytes(group, slice);
      if (slice.isLocalCopy()) {
        result.localCopyBytes += bytes * members;
        continue;
      }
      result.wireBytes += bytes * members;
      // An unfused plan sends each member's slice as a message of its own.
      if (!fused)
        traffic.add(slice.round, slice.sender, slice.receiver, bytes,
                    /*staged=*/true, members);
    }
  }
  for (const Message &message : plan.messages)
    traffic.add(message.step, message.sender, message.receiver, message.bytes,
                !message.zeroCopy);
  traffic.finish(plan.numSteps);
  result.lowerBoundSeconds = lowerBound(*this, plan, worldSize);
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
