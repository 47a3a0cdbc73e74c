//===- CostModel.h - An alpha-beta model of a refit's time -----*- C++ -*-===//
//
// Each message costs a latency plus its bytes over the bandwidth of its
// link: a faster intra-node link between ranks of one node, the NIC between
// nodes. Within a step every rank sends and receives concurrently, each
// direction limited by its own bandwidth; steps run one after another.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_PLAN_COSTMODEL_H
#define M2N_PLAN_COSTMODEL_H

#include "m2n/Plan/Plan.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace m2n::plan {

/// The machine as the cost model sees it. Defaults: H100/H200 nodes of 8
/// GPUs, NVLink at about 370 GB/s per direction, one 400 Gb/s NIC per GPU
/// at about 46 GB/s, about 10 us per message and 20 us per step (a group's
/// start and end, and the pack and unpack launches on a GPU).
struct Topology {
  double latencySeconds = 10e-6;
  /// What every step costs beyond its messages; 0 is allowed.
  double stepSeconds = 20e-6;
  /// Bytes per second per rank and direction.
  double intraNodeBandwidth = 370e9;
  double interNodeBandwidth = 46e9;
  /// Ranks r and s share a node when r / ranksPerNode == s / ranksPerNode;
  /// 0 puts every rank on a node of its own.
  int64_t ranksPerNode = 8;
};

/// Reads a topology from JSON: {"latency_us": 10, "step_us": 20,
/// "intra_node_gbps": 370, "inter_node_gbps": 46, "ranks_per_node": 8},
/// every key optional (GB/s are 1e9 bytes per second). Errors name the file
/// and key.
llvm::Expected<Topology> parseTopology(llvm::StringRef text,
                                       llvm::StringRef fileName);
llvm::Expected<Topology> readTopology(llvm::StringRef path);

/// What a plan costs, by the model.
struct PlanCost {
  /// Bytes that cross between ranks, and bytes copied within ranks.
  int64_t wireBytes = 0;
  int64_t localCopyBytes = 0;
  int64_t messages = 0;
  int64_t steps = 0;
  /// Per rank index 0..worldSize-1.
  std::vector<int64_t> sendBytes;
  std::vector<int64_t> receiveBytes;
  std::vector<int64_t> messagesSent;
  /// The largest staging bytes of any rank in any step.
  int64_t stagingPeak = 0;
  /// The model's time for the plan, and a lower bound for any plan of the
  /// same refit (see CostModel::lowerBound).
  double predictedSeconds = 0;
  double lowerBoundSeconds = 0;
};

class CostModel {
public:
  explicit CostModel(Topology topology = Topology())
      : topology(topology), nodeShift(shiftOf(topology.ranksPerNode)) {}

  const Topology &getTopology() const { return topology; }
  /// The node of a rank: every rank is a node of its own when
  /// ranksPerNode is 0.
  int64_t node(int64_t rank) const {
    if (topology.ranksPerNode <= 0)
      return rank;
    // Every message's cost asks for two nodes, and a division is slow
    // beside the rest of it: a power of two shifts.
    return nodeShift >= 0 && rank >= 0 ? rank >> nodeShift
                                       : rank / topology.ranksPerNode;
  }
  bool sameNode(int64_t a, int64_t b) const { return node(a) == node(b); }
  /// Bytes per second between two ranks.
  double bandwidth(int64_t sender, int64_t receiver) const {
    return sameNode(sender, receiver) ? topology.intraNodeBandwidth
                                      : topology.interNodeBandwidth;
  }
  /// Latency plus bytes over bandwidth.
  double messageSeconds(int64_t sender, int64_t receiver, int64_t bytes) const;
  /// The bucket size at which a message's latency is about 1% of its time
  /// on the inter-node link, rounded to MiB and kept within [4, 256] MiB.
  int64_t defaultBucketBytes() const;
  /// The same for a message between two ranks of one node: as many times
  /// larger as the node's links are faster, so that its latency takes the
  /// same share of its time.
  int64_t defaultNodeBucketBytes() const;

  /// The cost of a plan. Unfused plans are costed as if every remote slice
  /// of every member were its own message in the step of its round.
  PlanCost cost(const Plan &plan) const;
  /// A lower bound on the time of any plan of the plan's refit, by the
  /// topology: every rank receives what it lacks, and what no rank of its
  /// node holds enters the node through the NICs of the node's ranks that
  /// need it, once, to be passed on within the node; what only a set of
  /// ranks holds (one rank, or replicas) leaves the set once, its ranks
  /// sharing the work, and what only one node holds leaves the node through
  /// its ranks' NICs. The busiest rank, set or node, plus one message's
  /// latency and one step.
  double lowerBound(const Plan &plan) const;
  /// cost(plan).predictedSeconds of a plan whose messages are `messages`
  /// (once fused, a plan's time depends on its messages alone), without
  /// the rest of the cost.
  double predictedSeconds(const std::vector<Message> &messages) const;

private:
  /// log2 of `ranksPerNode` where it is a power of two, else -1.
  static int shiftOf(int64_t ranksPerNode) {
    if (ranksPerNode <= 0 || (ranksPerNode & (ranksPerNode - 1)) != 0)
      return -1;
    return llvm::countr_zero(static_cast<uint64_t>(ranksPerNode));
  }

  Topology topology;
  int nodeShift;
};

} // namespace m2n::plan

#endif // M2N_PLAN_COSTMODEL_H
