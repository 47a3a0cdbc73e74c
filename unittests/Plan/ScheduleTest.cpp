//===- ScheduleTest.cpp - Tests of ordering messages into steps -----------===//

#include "m2n/Plan/Schedule.h"

#include "m2n/Plan/Fuse.h"

#include "HandBuiltPlans.h"

#include "gtest/gtest.h"

using namespace m2n;
using namespace m2n::plan;
using namespace m2n::plan::testing;

namespace {

/// A plan of one group "w" of [1000] U8 whose slices are the given
/// (sender, receiver, bytes, round, zero-copy) transfers, each carried by a
/// message of its own; every rank 0..9 is on both meshes.
struct Transfer {
  int64_t sender, receiver, bytes;
  int32_t round = 0;
  bool zeroCopy = false;
};

Plan planOf(const std::vector<Transfer> &transfers) {
  Plan plan = planWithMeshes(mesh({10}, rankRange(0, 10)),
                             mesh({10}, rankRange(0, 10)));
  addGroup(plan, {1000}, DType::U8, {Placement::replicate()},
           {Placement::replicate()}, 1, "w");
  int64_t offset = 0;
  for (const Transfer &t : transfers) {
    plan.groups[0].slices.push_back(
        slice(t.sender, t.receiver, box({offset}, {t.bytes}), t.round));
    Message message;
    message.step = t.round;
    message.sender = t.sender;
    message.receiver = t.receiver;
    message.parts = {{0, static_cast<int32_t>(plan.messages.size()), 0, 1}};
    message.bytes = t.bytes;
    message.zeroCopy = t.zeroCopy;
    plan.messages.push_back(std::move(message));
    offset += t.bytes;
  }
  return plan;
}

/// The step of the message carrying slice `s`.
int64_t stepOf(const Plan &plan, int32_t s) {
  for (const Message &m : plan.messages)
    if (m.parts.front().slice == s)
      return m.step;
  return -1;
}

ScheduleStats scheduleOrFail(Plan &plan, int64_t budget) {
  llvm::Expected<ScheduleStats> stats = schedule(plan, ScheduleOptions{budget});
  if (!stats) {
    ADD_FAILURE() << llvm::toString(stats.takeError());
    return ScheduleStats();
  }
  return *stats;
}

bool isSorted(const Plan &plan) {
  return std::is_sorted(plan.messages.begin(), plan.messages.end(),
                        [](const Message &a, const Message &b) {
                          return std::tie(a.step, a.sender, a.receiver) <
                                 std::tie(b.step, b.sender, b.receiver);
                        });
}

TEST(Schedule, EverythingFitsInOneStep) {
  Plan plan = planOf({{2, 1, 40}, {0, 1, 40}, {0, 3, 20}});
  ScheduleStats stats = scheduleOrFail(plan, 100);
  EXPECT_EQ(stats.steps, 1);
  EXPECT_EQ(plan.numSteps, 1);
  EXPECT_EQ(plan.stagingBudget, 100);
  // Rank 1 unpacks 80 bytes.
  EXPECT_EQ(stats.stagingPeak, 80);
  ASSERT_EQ(plan.messages.size(), 3u);
  EXPECT_EQ(plan.messages[0].parts.front().slice, 1);
  EXPECT_EQ(plan.messages[1].parts.front().slice, 2);
  EXPECT_EQ(plan.messages[2].parts.front().slice, 0);
  EXPECT_TRUE(isSorted(plan));
}

TEST(Schedule, SendersBudgetOpensSteps) {
  Plan plan = planOf({{0, 1, 40}, {0, 2, 40}, {0, 3, 40}});
  ScheduleStats stats = scheduleOrFail(plan, 100);
  EXPECT_EQ(stats.steps, 2);
  EXPECT_EQ(stats.stagingPeak, 80);
  EXPECT_EQ(stepOf(plan, 0), 0);
  EXPECT_EQ(stepOf(plan, 1), 0);
  EXPECT_EQ(stepOf(plan, 2), 1);
}

TEST(Schedule, ReceiversBudgetOpensSteps) {
  Plan plan = planOf({{1, 3, 60}, {2, 3, 60}});
  ScheduleStats stats = scheduleOrFail(plan, 100);
  EXPECT_EQ(stats.steps, 2);
  EXPECT_EQ(stepOf(plan, 0), 0);
  EXPECT_EQ(stepOf(plan, 1), 1);
}

TEST(Schedule, LargestFirstIntoTheEarliestStep) {
  // 70 goes first into step 0, 50 does not fit beside it and opens step 1,
  // and 20 still fits in step 0.
  Plan plan = planOf({{0, 2, 20}, {0, 1, 70}, {0, 3, 50}});
  ScheduleStats stats = scheduleOrFail(plan, 100);
  EXPECT_EQ(stats.steps, 2);
  EXPECT_EQ(stats.stagingPeak, 90);
  EXPECT_EQ(stepOf(plan, 0), 0);
  EXPECT_EQ(stepOf(plan, 1), 0);
  EXPECT_EQ(stepOf(plan, 2), 1);
  EXPECT_TRUE(isSorted(plan));
}

TEST(Schedule, ZeroCopyTakesNoStaging) {
  Plan plan = planOf({{0, 1, 500, 0, true}, {0, 1, 90}, {1, 0, 300, 0, true}});
  ScheduleStats stats = scheduleOrFail(plan, 100);
  EXPECT_EQ(stats.steps, 1);
  EXPECT_EQ(stats.stagingPeak, 90);
}

TEST(Schedule, RoundsRunInOrder) {
  // Round 0 needs two steps on rank 0; round 1's forward comes after both,
  // and round 3 follows round 1 with no idle step for the empty round 2.
  Plan plan = planOf({{0, 1, 60}, {0, 2, 60}, {1, 2, 10, 1}, {2, 4, 10, 3}});
  plan.groups[0].slices[2].origin = Origin::Destination;
  plan.groups[0].slices[3].origin = Origin::Destination;
  ScheduleStats stats = scheduleOrFail(plan, 100);
  EXPECT_EQ(stats.steps, 4);
  EXPECT_EQ(plan.numSteps, 4);
  EXPECT_EQ(stepOf(plan, 0), 0);
  EXPECT_EQ(stepOf(plan, 1), 1);
  EXPECT_EQ(stepOf(plan, 2), 2);
  EXPECT_EQ(stepOf(plan, 3), 3);
}

TEST(Schedule, RoundsComeFromSlicesNotSteps) {
  // A message's round is its slices': a stale step does not move it.
  Plan plan = planOf({{0, 1, 10, 1}, {0, 2, 10}});
  plan.messages[0].step = 0;
  plan.messages[1].step = 5;
  scheduleOrFail(plan, 100);
  EXPECT_EQ(stepOf(plan, 0), 1);
  EXPECT_EQ(stepOf(plan, 1), 0);
}

/// The balanced schedule: with a cost model, each rank's seconds.
ScheduleStats balanceOrFail(Plan &plan, int64_t budget,
                            const CostModel &model) {
  ScheduleOptions options{budget};
  options.model = &model;
  llvm::Expected<ScheduleStats> stats = schedule(plan, options);
  if (!stats) {
    ADD_FAILURE() << llvm::toString(stats.takeError());
    return ScheduleStats();
  }
  return *stats;
}

TEST(Schedule, BalancedStepsSpreadZeroCopyMessages) {
  // Rank 0's packed messages need two steps of the budget; rank 2's
  // zero-copy ones need no staging, so first fit puts both in step 0, whose
  // time is then both of them. Balanced, each step holds one of each.
  Plan plan = planOf(
      {{0, 1, 60}, {0, 1, 60}, {2, 3, 60, 0, true}, {2, 3, 60, 0, true}});
  Plan firstFit = plan;
  scheduleOrFail(firstFit, 100);
  EXPECT_EQ(stepOf(firstFit, 2), 0);
  EXPECT_EQ(stepOf(firstFit, 3), 0);

  CostModel model;
  ScheduleStats stats = balanceOrFail(plan, 100, model);
  EXPECT_EQ(stats.steps, 2);
  EXPECT_EQ(stats.stagingPeak, 60);
  EXPECT_NE(stepOf(plan, 0), stepOf(plan, 1));
  EXPECT_NE(stepOf(plan, 2), stepOf(plan, 3));
  EXPECT_TRUE(isSorted(plan));
  // Each step now takes one message's time, not two.
  EXPECT_LT(model.cost(plan).predictedSeconds,
            model.cost(firstFit).predictedSeconds);
  EXPECT_DOUBLE_EQ(model.cost(plan).predictedSeconds,
                   2 * (model.messageSeconds(0, 1, 60) +
                        model.getTopology().stepSeconds));
}

TEST(Schedule, StepsFillEvenlyWhenEveryRankSendsAndReceives) {
  // Every rank sends to two others, packed messages that the budget spreads
  // over steps and zero-copy ones that take no staging: on colocated sides
  // every rank both sends and receives. The steps should each take about
  // an even share of every rank's work, not pile zero-copy messages on a
  // few ranks' steps.
  std::vector<Transfer> transfers;
  for (int64_t rank = 0; rank < 10; ++rank)
    for (int64_t to : {(rank + 1) % 10, (rank + 3) % 10}) {
      for (int i = 0; i < 4; ++i)
        transfers.push_back({rank, to, 3 << 20});
      for (int i = 0; i < 2; ++i)
        transfers.push_back({rank, to, 10 << 20, 0, true});
    }
  Plan plan = planOf(transfers);
  Topology flat;
  flat.ranksPerNode = 0;
  CostModel model(flat);
  balanceOrFail(plan, 8 << 20, model);
  PlanCost cost = model.cost(plan);
  // Each rank sends and receives 64 MiB, 24 of them staged: three steps of
  // the budget at the least.
  double work = model.messageSeconds(0, 1, 3 << 20) * 8 +
                model.messageSeconds(0, 1, 10 << 20) * 4;
  EXPECT_LT(cost.predictedSeconds,
            1.1 * (work + 3 * model.getTopology().stepSeconds));
}

/// Makes slice `s` of `plan` forward what its sender received as slice
/// `from`: the same box, read from the destination shard.
void forwardOf(Plan &plan, int32_t s, int32_t from) {
  Slice &forward = plan.groups[0].slices[s];
  forward.origin = Origin::Destination;
  forward.box = plan.groups[0].slices[from].box;
}

TEST(Schedule, ForwardsWaitOnlyForWhatTheyForward) {
  // Rank 0 sends rank 1 a box that rank 1 forwards to rank 5 in round 1;
  // rank 3 sends rank 4 four messages that need four steps of the budget.
  // The forward goes after its own input, not after all of round 0: rounds
  // overlap.
  Plan plan = planOf({{0, 1, 50},
                      {3, 4, 90},
                      {3, 4, 90},
                      {3, 4, 90},
                      {3, 4, 90},
                      {1, 5, 50, 1}});
  forwardOf(plan, 5, 0);
  CostModel model;
  ScheduleStats stats = balanceOrFail(plan, 100, model);
  EXPECT_LE(stats.stagingPeak, 100);
  EXPECT_GT(stepOf(plan, 5), stepOf(plan, 0));
  int64_t lastOfRound0 = 0;
  for (int32_t s = 0; s < 5; ++s)
    lastOfRound0 = std::max(lastOfRound0, stepOf(plan, s));
  EXPECT_LT(stepOf(plan, 5), lastOfRound0);
  EXPECT_EQ(stats.steps, plan.numSteps);
  EXPECT_TRUE(isSorted(plan));
}

TEST(Schedule, ChainsOfForwardsGoStepByStep) {
  // A box travels 0 -> 1 -> 2 -> 3 -> 4: each hop in a later step than the
  // one before.
  Plan plan = planOf({{0, 1, 40}, {1, 2, 40, 1}, {2, 3, 40, 2}, {3, 4, 40, 3}});
  for (int32_t s = 1; s < 4; ++s)
    forwardOf(plan, s, 0);
  CostModel model;
  balanceOrFail(plan, 100, model);
  for (int32_t s = 1; s < 4; ++s)
    EXPECT_GT(stepOf(plan, s), stepOf(plan, s - 1)) << s;
}

TEST(Schedule, RejectsForwardsOfWhatArrivesInTheSameRound) {
  // Rank 1 forwards in round 1 a box that reaches it only in round 1.
  Plan plan = planOf({{0, 1, 40, 1}, {1, 2, 40, 1}, {0, 3, 40}});
  forwardOf(plan, 1, 0);
  ScheduleOptions options{100};
  CostModel model;
  options.model = &model;
  llvm::Expected<ScheduleStats> stats = schedule(plan, options);
  ASSERT_FALSE(static_cast<bool>(stats));
  EXPECT_NE(llvm::toString(stats.takeError())
                .find("forwards bytes that reach its sender only in round 1"),
            std::string::npos);
}

TEST(Schedule, EqualMessagesOrderByTheirParts) {
  Plan plan = planOf({{0, 1, 10}, {0, 1, 10}, {0, 1, 10}});
  std::swap(plan.messages[0], plan.messages[2]);
  scheduleOrFail(plan, 100);
  ASSERT_EQ(plan.messages.size(), 3u);
  for (int32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(plan.messages[i].step, 0);
    EXPECT_EQ(plan.messages[i].parts.front().slice, i);
  }
}

TEST(Schedule, RejectsAMessageLargerThanTheBudget) {
  Plan plan = planOf({{0, 1, 10}, {3, 4, 200}});
  llvm::Expected<ScheduleStats> stats = schedule(plan, ScheduleOptions{100});
  ASSERT_FALSE(static_cast<bool>(stats));
  EXPECT_EQ(llvm::toString(stats.takeError()),
            "message from rank 3 to rank 4 (tensor \"w0\") of 200 bytes needs "
            "more staging than the budget of 100 bytes per rank");
}

TEST(Schedule, RejectsMessagesOfMissingSlices) {
  Plan plan = planOf({{0, 1, 10}});
  plan.messages[0].parts[0].slice = 7;
  llvm::Expected<ScheduleStats> stats = schedule(plan, ScheduleOptions{100});
  ASSERT_FALSE(static_cast<bool>(stats));
  EXPECT_EQ(llvm::toString(stats.takeError()),
            "message from rank 0 to rank 1 carries slice 7 of group 0, which "
            "does not exist");
}

TEST(Schedule, EmptyPlan) {
  Plan plan;
  ScheduleStats stats = scheduleOrFail(plan, 100);
  EXPECT_EQ(stats.steps, 0);
  EXPECT_EQ(plan.numSteps, 0);
}

TEST(Schedule, FusedPlanWithinBudget) {
  // Ranks 0 and 1 hold halves of the columns of eight [64, 64] F32 tensors
  // that ranks 2 and 3 replicate: each pair moves 8 * 8 KiB, in 16 KiB
  // messages. A 16 KiB budget lets each rank send or receive one message
  // per step.
  Plan plan = planWithMeshes(mesh({2}, {0, 1}), mesh({2}, {2, 3}));
  addGroup(plan, {64, 64}, DType::F32, {Placement::shard(1)},
           {Placement::replicate()}, 8);
  addDirectSlices(plan, 0);
  fuse(plan, FuseOptions{16384});
  ASSERT_EQ(plan.messages.size(), 16u);
  ScheduleStats stats = scheduleOrFail(plan, 16384);
  EXPECT_EQ(stats.stagingPeak, 16384);
  // Ranks 2 and 3 each receive 8 messages, one per step.
  EXPECT_EQ(stats.steps, 8);
  EXPECT_TRUE(isSorted(plan));
}

} // namespace
