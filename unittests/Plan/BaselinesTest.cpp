//===- BaselinesTest.cpp - Tests of the baselines' figures ----------------===//
//
// Small refits worked by hand: the bytes, messages and predicted time of
// each baseline, and m2n's compiled plan against them.
//
//===----------------------------------------------------------------------===//

#include "m2n/Plan/Baselines.h"

#include "m2n/Plan/Balance.h"
#include "m2n/Plan/Coalesce.h"
#include "m2n/Plan/Decompose.h"
#include "m2n/Plan/Fuse.h"
#include "m2n/Plan/Relay.h"
#include "m2n/Plan/Schedule.h"
#include "m2n/Plan/Verify.h"

#include "PlanTestUtil.h"

#include <algorithm>

using namespace m2n;
using namespace m2n::plan;
using namespace m2n::plan::test;

namespace {

using Bytes = std::vector<int64_t>;

/// Numbers easy to follow by hand: 1 us, 100 GB/s within nodes of 4 ranks,
/// 10 GB/s between them, and steps that cost nothing of their own.
CostModel roundModel() {
  Topology topology;
  topology.latencySeconds = 1e-6;
  topology.stepSeconds = 0;
  topology.intraNodeBandwidth = 1e11;
  topology.interNodeBandwidth = 1e10;
  topology.ranksPerNode = 4;
  return CostModel(topology);
}

/// Rows of 250 F32 elements, 1000 bytes each.
constexpr int64_t kColumns = 250;

/// Training ranks 0 and 1 (FSDP), serving ranks 2 to 5.
Refit twoToFour() {
  Refit refit;
  refit.mesh("train", {2}, 0).mesh("gen", {4}, 2);
  return refit;
}

/// m2n's plan, as the m2n-compile pipeline builds it.
Plan compile(Plan plan, const CostModel &model) {
  decompose(plan);
  balance(plan, BalanceOptions());
  relay(plan, model, RelayOptions());
  coalesce(plan);
  fuse(plan, FuseOptions{model.defaultBucketBytes()});
  llvm::cantFail(schedule(plan, ScheduleOptions()));
  return plan;
}

// 2 FSDP ranks -> 4 replicas of an 8000-byte tensor: each source rank holds
// 4000 bytes, and every destination rank needs all 8000.
TEST(Baselines, FsdpToReplicas) {
  Plan plan = twoToFour()
                  .tensor("w", {8, kColumns}, "train", {S(0)}, "gen", {R})
                  .plan();
  CostModel model = roundModel();
  EXPECT_EQ(minimumWireBytes(plan), 4 * 8000);

  // Rank 1 sends its half to rank 0 (1 us + 4000 B at 100 GB/s); then the
  // chain 0 -> 2 -> 3 -> 4 -> 5 carries 8000 bytes a link, the link 3 -> 4
  // between nodes the slowest (1 us + 8000 B at 10 GB/s).
  PlanCost gather = costBaseline(plan, Baseline::GatherBroadcast, model);
  EXPECT_EQ(gather.wireBytes, 4000 + 4 * 8000);
  EXPECT_EQ(gather.messages, 5);
  EXPECT_EQ(gather.steps, 2);
  EXPECT_EQ(gather.sendBytes, Bytes({8000, 4000, 8000, 8000, 8000, 0}));
  EXPECT_EQ(gather.receiveBytes, Bytes({4000, 0, 8000, 8000, 8000, 8000}));
  EXPECT_EQ(gather.messagesSent, Bytes({1, 1, 1, 1, 1, 0}));
  EXPECT_EQ(gather.localCopyBytes, 0);
  EXPECT_DOUBLE_EQ(gather.predictedSeconds, 1.04e-6 + 1.8e-6);

  // Each source rank sends its half to each destination rank: two within
  // its node (1.04 us each), two across (1.4 us each).
  PlanCost direct = costBaseline(plan, Baseline::PointToPoint, model);
  EXPECT_EQ(direct.wireBytes, 8 * 4000);
  EXPECT_EQ(direct.messages, 8);
  EXPECT_EQ(direct.steps, 1);
  EXPECT_EQ(direct.sendBytes, Bytes({16000, 16000, 0, 0, 0, 0}));
  EXPECT_EQ(direct.receiveBytes, Bytes({0, 0, 8000, 8000, 8000, 8000}));
  EXPECT_EQ(direct.messagesSent, Bytes({4, 4, 0, 0, 0, 0}));
  EXPECT_DOUBLE_EQ(direct.predictedSeconds, 2 * 1.04e-6 + 2 * 1.4e-6);

  // Every pair carries the same bytes: padding adds nothing.
  PlanCost padded = costBaseline(plan, Baseline::PaddedAllToAll, model);
  EXPECT_EQ(padded.wireBytes, direct.wireBytes);
  EXPECT_EQ(padded.messages, direct.messages);
  EXPECT_EQ(padded.sendBytes, direct.sendBytes);
  EXPECT_DOUBLE_EQ(padded.predictedSeconds, direct.predictedSeconds);
}

// 2 FSDP ranks of 5 rows each -> 4 ranks of 3, 3, 3 and 1 rows (torch.chunk
// of 10 rows over 4): rank 3 needs rows from both source ranks.
TEST(Baselines, UnevenReshard) {
  Plan plan = twoToFour()
                  .tensor("w", {10, kColumns}, "train", {S(0)}, "gen", {S(0)})
                  .plan();
  CostModel model = roundModel();
  EXPECT_EQ(minimumWireBytes(plan), 10000);

  // The whole 10000 bytes reach every destination rank.
  PlanCost gather = costBaseline(plan, Baseline::GatherBroadcast, model);
  EXPECT_EQ(gather.wireBytes, 5000 + 4 * 10000);
  EXPECT_EQ(gather.messages, 5);
  EXPECT_DOUBLE_EQ(gather.predictedSeconds, 1.05e-6 + 2e-6);

  // 0 -> 2: 3000, 0 -> 3: 2000, 1 -> 3: 1000, 1 -> 4: 3000, 1 -> 5: 1000.
  // Rank 1 is the busiest: 1.01 us within its node, 1.3 + 1.1 us across.
  PlanCost direct = costBaseline(plan, Baseline::PointToPoint, model);
  EXPECT_EQ(direct.wireBytes, 10000);
  EXPECT_EQ(direct.messages, 5);
  EXPECT_EQ(direct.sendBytes, Bytes({5000, 5000, 0, 0, 0, 0}));
  EXPECT_EQ(direct.receiveBytes, Bytes({0, 0, 3000, 3000, 3000, 1000}));
  EXPECT_EQ(direct.messagesSent, Bytes({2, 3, 0, 0, 0, 0}));
  EXPECT_DOUBLE_EQ(direct.predictedSeconds, 1.01e-6 + 1.3e-6 + 1.1e-6);

  // Slots of the largest pair, 3000 bytes, for all 2 x 4 pairs; each
  // source rank sends two within its node and two across.
  PlanCost padded = costBaseline(plan, Baseline::PaddedAllToAll, model);
  EXPECT_EQ(padded.wireBytes, 8 * 3000);
  EXPECT_EQ(padded.messages, 8);
  EXPECT_EQ(padded.sendBytes, Bytes({12000, 12000, 0, 0, 0, 0}));
  EXPECT_EQ(padded.receiveBytes, Bytes({0, 0, 6000, 6000, 6000, 6000}));
  EXPECT_EQ(padded.messagesSent, Bytes({4, 4, 0, 0, 0, 0}));
  EXPECT_DOUBLE_EQ(padded.predictedSeconds, 2 * 1.03e-6 + 2 * 1.3e-6);
}

// A group of three tensors moves as three tensors one after another.
TEST(Baselines, EveryTensorOfAGroupMovesOnItsOwn) {
  Refit refit = twoToFour();
  for (const char *name : {"a", "b", "c"})
    refit.tensor(name, {8, kColumns}, "train", {S(0)}, "gen", {R});
  Plan plan = refit.plan();
  ASSERT_EQ(plan.groups.size(), 1u);
  CostModel model = roundModel();
  EXPECT_EQ(minimumWireBytes(plan), 3 * 4 * 8000);

  PlanCost gather = costBaseline(plan, Baseline::GatherBroadcast, model);
  EXPECT_EQ(gather.wireBytes, 3 * (4000 + 4 * 8000));
  EXPECT_EQ(gather.messages, 3 * 5);
  EXPECT_EQ(gather.steps, 3 * 2);
  EXPECT_EQ(gather.messagesSent, Bytes({3, 3, 3, 3, 3, 0}));
  EXPECT_DOUBLE_EQ(gather.predictedSeconds, 3 * (1.04e-6 + 1.8e-6));

  for (Baseline baseline : {Baseline::PointToPoint, Baseline::PaddedAllToAll}) {
    PlanCost cost = costBaseline(plan, baseline, model);
    EXPECT_EQ(cost.wireBytes, 3 * 8 * 4000) << baselineName(baseline).str();
    EXPECT_EQ(cost.messages, 3 * 8) << baselineName(baseline).str();
    EXPECT_EQ(cost.steps, 3) << baselineName(baseline).str();
    EXPECT_DOUBLE_EQ(cost.predictedSeconds, 3 * (2 * 1.04e-6 + 2 * 1.4e-6))
        << baselineName(baseline).str();
  }
}

// Training and serving on the same two ranks: what a rank holds stays put,
// except in the broadcast, which sends the whole tensor regardless.
TEST(Baselines, ColocatedRanksCopyLocally) {
  Refit refit;
  refit.mesh("train", {2}, 0).mesh("gen", {2}, 0);
  Plan plan =
      refit.tensor("w", {8, kColumns}, "train", {S(0)}, "gen", {R}).plan();
  CostModel model = roundModel();
  EXPECT_EQ(minimumWireBytes(plan), 2 * 4000);

  // Rank 0 gathers rank 1's half, then sends rank 1 the whole tensor.
  PlanCost gather = costBaseline(plan, Baseline::GatherBroadcast, model);
  EXPECT_EQ(gather.wireBytes, 4000 + 8000);
  EXPECT_EQ(gather.messages, 2);
  EXPECT_EQ(gather.sendBytes, Bytes({8000, 4000}));
  EXPECT_EQ(gather.receiveBytes, Bytes({4000, 8000}));

  for (Baseline baseline : {Baseline::PointToPoint, Baseline::PaddedAllToAll}) {
    PlanCost cost = costBaseline(plan, baseline, model);
    EXPECT_EQ(cost.wireBytes, 2 * 4000) << baselineName(baseline).str();
    EXPECT_EQ(cost.localCopyBytes, 2 * 4000) << baselineName(baseline).str();
    EXPECT_EQ(cost.messages, 2) << baselineName(baseline).str();
    EXPECT_EQ(cost.sendBytes, Bytes({4000, 4000}))
        << baselineName(baseline).str();
  }
}

// A replicated source: the root holds the whole tensor and gathers nothing;
// the first holder sends every region; the all-to-all pads the pairs of the
// holder that sends nothing.
TEST(Baselines, ReplicatedSource) {
  Refit refit;
  refit.mesh("train", {2}, 0).mesh("gen", {2}, 2);
  Plan plan =
      refit.tensor("w", {8, kColumns}, "train", {R}, "gen", {S(0)}).plan();
  CostModel model = roundModel();

  PlanCost gather = costBaseline(plan, Baseline::GatherBroadcast, model);
  EXPECT_EQ(gather.wireBytes, 2 * 8000);
  EXPECT_EQ(gather.messages, 2);
  EXPECT_EQ(gather.steps, 1);

  PlanCost direct = costBaseline(plan, Baseline::PointToPoint, model);
  EXPECT_EQ(direct.wireBytes, 8000);
  EXPECT_EQ(direct.sendBytes, Bytes({8000, 0, 0, 0}));

  PlanCost padded = costBaseline(plan, Baseline::PaddedAllToAll, model);
  EXPECT_EQ(padded.wireBytes, 4 * 4000);
  EXPECT_EQ(padded.sendBytes, Bytes({8000, 8000, 0, 0}));
}

// Refits of several shapes, on nodes of 8 ranks.
std::vector<Plan> variedRefits() {
  std::vector<Plan> plans;
  plans.push_back(
      twoToFour()
          .tensor("w", {10, kColumns}, "train", {S(0)}, "gen", {S(0)})
          .plan());
  Refit mixed;
  mixed.mesh("train", {2, 4}, 0).mesh("gen", {3, 2}, 8);
  mixed.tensor("q", {96, 64}, "train", {S(0), S(1)}, "gen", {R, S(0)})
      .tensor("o", {64, 96}, "train", {S(0), S(1)}, "gen", {R, S(1)})
      .tensor("norm", {64}, "train", {S(0), R}, "gen", {R, R}, DType::BF16)
      .tensor("experts", {6, 32, 64}, "train", {S(0), S(1)}, "gen",
              {S(0), S(0)});
  plans.push_back(mixed.plan());
  // Few senders, many replicas across nodes, large enough: relays pay.
  Refit replicas;
  replicas.mesh("train", {2}, 0).mesh("gen", {4, 2}, 8);
  replicas.tensor("w", {4096, 1024}, "train", {S(0)}, "gen", {R, S(1)});
  plans.push_back(replicas.plan());
  Refit colocated;
  colocated.mesh("train", {4}, 0).mesh("gen", {2, 2}, 0);
  colocated.tensor("w", {40, 40}, "train", {S(0)}, "gen", {R, S(1)});
  plans.push_back(colocated.plan());
  return plans;
}

// The baselines price a step exactly as the cost model prices a step of
// an unfused plan, in which every remote slice is a message: for a single
// tensor, PointToPoint is that plan.
TEST(Baselines, PointToPointIsTheCostModelsPriceOfTheDecomposition) {
  CostModel model;
  for (Plan plan : variedRefits()) {
    plan.tensors.resize(1);
    plan.groups.resize(1);
    plan.groups[0].members = {0};
    PlanCost direct = costBaseline(plan, Baseline::PointToPoint, model);
    decompose(plan);
    PlanCost expected = model.cost(plan);
    EXPECT_EQ(direct.wireBytes, expected.wireBytes);
    EXPECT_EQ(direct.localCopyBytes, expected.localCopyBytes);
    EXPECT_EQ(direct.messages, expected.messages);
    EXPECT_EQ(direct.steps, expected.steps);
    EXPECT_EQ(direct.sendBytes, expected.sendBytes);
    EXPECT_EQ(direct.receiveBytes, expected.receiveBytes);
    EXPECT_EQ(direct.messagesSent, expected.messagesSent);
    EXPECT_DOUBLE_EQ(direct.predictedSeconds, expected.predictedSeconds);
    EXPECT_DOUBLE_EQ(direct.lowerBoundSeconds, expected.lowerBoundSeconds);
  }
}

/// Whether some slice forwards bytes that its sender received: a relay.
bool relays(const Plan &plan) {
  return std::any_of(
      plan.groups.begin(), plan.groups.end(), [](const TransferGroup &group) {
        return std::any_of(group.slices.begin(), group.slices.end(),
                           [](const Slice &slice) {
                             return slice.origin == Origin::Destination;
                           });
      });
}

// m2n moves no byte twice to one rank, relays included: never more than
// the gather and broadcast, and exactly the minimum. Every figure shares
// the refit's lower bound, and a plan's slices and messages do not change
// a baseline.
TEST(Baselines, CompiledPlanAgainstTheBaselines) {
  CostModel model;
  bool relayed = false;
  for (const Plan &plan : variedRefits()) {
    Plan compiled = compile(plan, model);
    ASSERT_EQ(joined(verifyPlan(compiled)), "");
    relayed |= relays(compiled);
    PlanCost m2n = model.cost(compiled);
    PlanCost gather = costBaseline(plan, Baseline::GatherBroadcast, model);
    EXPECT_LE(m2n.wireBytes, gather.wireBytes);
    EXPECT_EQ(m2n.wireBytes, minimumWireBytes(plan));
    for (Baseline baseline : kBaselines) {
      PlanCost cost = costBaseline(plan, baseline, model);
      EXPECT_GE(cost.wireBytes, minimumWireBytes(plan));
      EXPECT_DOUBLE_EQ(cost.lowerBoundSeconds, m2n.lowerBoundSeconds);
      PlanCost ofCompiled = costBaseline(compiled, baseline, model);
      EXPECT_EQ(ofCompiled.wireBytes, cost.wireBytes);
      EXPECT_EQ(ofCompiled.sendBytes, cost.sendBytes);
      EXPECT_DOUBLE_EQ(ofCompiled.predictedSeconds, cost.predictedSeconds);
    }
  }
  EXPECT_TRUE(relayed);
}

TEST(Baselines, Names) {
  EXPECT_EQ(baselineName(Baseline::GatherBroadcast), "gather_broadcast");
  EXPECT_EQ(baselineName(Baseline::PointToPoint), "point_to_point");
  EXPECT_EQ(baselineName(Baseline::PaddedAllToAll), "padded_all_to_all");
}

} // namespace
