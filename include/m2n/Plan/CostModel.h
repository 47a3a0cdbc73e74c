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
#include "llvm/Support/Error.h"

#include <vector>

namespace m2n::plan {

/// The machine as the cost model sees it. Defaults: H100/H200 nodes of 8
/// GPUs, NVLink at about 370 GB/s per direction, one 400 Gb/s NIC per GPU
/// at about 46 GB/s, about 10 us per message.
struct Topology {
  double latencySeconds = 10e-6;
  /// Bytes per second per rank and direction.
  double intraNodeBandwidth = 370e9;
  double interNodeBandwidth = 46e9;
  /// Ranks r and s share a node when r / ranksPerNode == s / ranksPerNode;
  /// 0 puts every rank on a node of its own.
  int64_t ranksPerNode = 8;
};

/// Reads a topology from JSON: {"latency_us": 10, "intra_node_gbps": 370,
/// "inter_node_gbps": 46, "ranks_per_node": 8}, every key optional (GB/s
/// are 1e9 bytes per second). Errors name the file and key.
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
  /// same refit: the busiest rank's unavoidable receive bytes (what it lacks
  /// locally) or unavoidable send bytes (what only it holds and others need)
  /// over its bandwidth, plus one message's latency.
  double predictedSeconds = 0;
  double lowerBoundSeconds = 0;
};

class CostModel {
public:
  explicit CostModel(Topology topology = Topology()) : topology(topology) {}

  const Topology &getTopology() const { return topology; }
  bool sameNode(int64_t a, int64_t b) const {
    if (topology.ranksPerNode <= 0)
      return a == b;
    return a / topology.ranksPerNode == b / topology.ranksPerNode;
  }
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

  /// The cost of a plan. Unfused plans are costed as if every remote slice
  /// of every member were its own message in the step of its round.
  PlanCost cost(const Plan &plan) const;
  /// cost(plan).predictedSeconds of a plan whose messages are `messages`
  /// (once fused, a plan's time depends on its messages alone), without
  /// the rest of the cost.
  double predictedSeconds(const std::vector<Message> &messages) const;

private:
  Topology topology;
};

} // namespace m2n::plan

#endif // M2N_PLAN_COSTMODEL_H
