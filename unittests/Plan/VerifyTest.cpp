//===- VerifyTest.cpp - Tests of verifyPlan and runReference --------------===//
//
// Sound plans pass both checkers; each hand-broken plan is caught, and the
// test asserts what the problem says.
//
//===----------------------------------------------------------------------===//

#include "m2n/Plan/Verify.h"
#include "m2n/Plan/Balance.h"
#include "m2n/Plan/Coalesce.h"
#include "m2n/Plan/Decompose.h"
#include "m2n/Plan/Reference.h"

#include "PlanTestUtil.h"

#include <functional>
#include <limits>
#include <map>

using namespace m2n;
using namespace m2n::plan;
using namespace m2n::plan::test;

namespace {

/// Two tensors of one group, [4, 4] F32 from rows on ranks 0 and 1 to
/// columns on ranks 2 and 3. Slices, in order:
///   0: [0:2, 0:2] 0 -> 2    1: [2:2, 0:2] 1 -> 2
///   2: [0:2, 2:2] 0 -> 3    3: [2:2, 2:2] 1 -> 3
/// Fused by hand, one message per slice: 0 -> 2, 0 -> 3, 1 -> 2, 1 -> 3,
/// each of 2 members * 4 elements * 4 bytes.
Plan rowsToColumns(std::vector<std::string> tensors = {"w", "w2"}) {
  Refit refit;
  refit.mesh("a", {2}, 0).mesh("b", {2}, 2);
  for (std::string &name : tensors)
    refit.tensor(name, {4, 4}, "a", {S(0)}, "b", {S(1)});
  Plan plan = refit.plan();
  decompose(plan);
  fuseByHand(plan);
  return plan;
}

/// One tensor [6] from rank 0 to ranks 1, 2, 3, relayed along a chain:
/// 0 -> 1 in round 0, 1 -> 2 in round 1, 2 -> 3 in round 2.
Plan chain() {
  Plan plan = Refit()
                  .mesh("a", {1}, 0)
                  .mesh("b", {3}, 1)
                  .tensor("x", {6}, "a", {R}, "b", {R})
                  .plan();
  plan.groups[0].slices = {slice(0, 1, box({0}, {6})),
                           slice(1, 2, box({0}, {6}), Origin::Destination, 1),
                           slice(2, 3, box({0}, {6}), Origin::Destination, 2)};
  fuseByHand(plan);
  return plan;
}

std::vector<std::string> problemsOf(const Plan &plan) {
  return verifyPlan(plan, 100);
}

#define EXPECT_PROBLEM(plan, text)                                             \
  do {                                                                         \
    std::vector<std::string> found = problemsOf(plan);                         \
    EXPECT_TRUE(mentions(found, text)) << "wanted: " << (text) << "\ngot:\n"   \
                                       << joined(found);                       \
  } while (false)

//===----------------------------------------------------------------------===//
// Sound plans
//===----------------------------------------------------------------------===//

TEST(VerifyTest, SoundPlansPass) {
  for (const Plan &plan : {rowsToColumns(), chain()}) {
    std::vector<std::string> problems = problemsOf(plan);
    EXPECT_TRUE(problems.empty()) << joined(problems);
    EXPECT_EQ(runReference(plan), "");
  }
}

TEST(VerifyTest, UnfusedPlansNeedNoMessages) {
  Plan plan = rowsToColumns();
  plan.messages.clear();
  plan.numSteps = 0;
  EXPECT_TRUE(problemsOf(plan).empty());
}

TEST(VerifyTest, LimitsTheProblems) {
  Plan plan = rowsToColumns();
  for (Message &message : plan.messages)
    message.bytes = 1;
  EXPECT_EQ(verifyPlan(plan, 2).size(), 2u);
  EXPECT_TRUE(verifyPlan(plan, 0).empty());
  EXPECT_EQ(verifyPlan(plan, 100).size(), 4u);
}

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

TEST(VerifyTest, BrokenStructure) {
  Plan plan = rowsToColumns();
  plan.groups[0].src.mesh = 9;
  EXPECT_PROBLEM(plan, "group 0: source mesh 9 does not exist");

  plan = rowsToColumns();
  plan.groups[0].dst.placements = {S(2)};
  EXPECT_PROBLEM(plan, "group 0: destination placements: placement 0 shards "
                       "dimension 2 but the tensor has rank 2");

  plan = rowsToColumns();
  plan.groups[0].members.push_back(5);
  EXPECT_PROBLEM(plan, "group 0: member 5 is not a tensor");

  plan = rowsToColumns();
  std::swap(plan.groups[0].members[0], plan.groups[0].members[1]);
  EXPECT_PROBLEM(plan, "group 0: members are not ascending");

  plan = rowsToColumns();
  plan.tensors[1].group = 3;
  EXPECT_PROBLEM(plan, "tensor 'w2': group 3 does not exist");

  plan = rowsToColumns();
  plan.meshes[1].ranks = {2, 2};
  EXPECT_PROBLEM(plan, "mesh 'b': rank 2 appears twice");
}

TEST(VerifyTest, SurvivesMalformedPlans) {
  // Plans read from bad IR may hold anything; each must be reported, not
  // crash verifyPlan or the passes.
  const int64_t huge = std::numeric_limits<int64_t>::max();
  std::vector<std::function<void(Plan &)>> breakages = {
      [](Plan &plan) { plan.groups[0].slices[0].box = box({0}, {1}); },
      [&](Plan &plan) {
        plan.groups[0].slices[0].box = box({huge, 0}, {2, 2});
      },
      [&](Plan &plan) {
        plan.groups[0].slices[0].box = box({0, 0}, {huge, 2});
      },
      [](Plan &plan) {
        plan.groups[0].slices[0].box = box({0, 0}, {-1, 2});
      },
      [](Plan &plan) { plan.groups[0].slices[0].round = -3; },
      [](Plan &plan) {
        plan.groups[0].shape = {4, -4};
      },
      [](Plan &plan) { plan.groups[0].dst.mesh = -1; },
      [](Plan &plan) { plan.groups[0].src.placements.clear(); },
      [](Plan &plan) {
        plan.groups[0].members = {0, 7, -1};
      },
      [](Plan &plan) { plan.meshes[0].shape = {0}; },
      [](Plan &plan) { plan.meshes[0].ranks.pop_back(); },
      [](Plan &plan) {
        plan.meshNames.clear();
        plan.meshes[1].ranks = {-2, 3};
      },
      [](Plan &plan) { plan.tensors[0].group = -1; },
      [&](Plan &plan) {
        plan.messages[0].bytes = huge;
        plan.messages[1].bytes = huge;
      },
      [](Plan &plan) { plan.messages[0].bytes = -5; },
      [](Plan &plan) { plan.messages[0].parts[0].memberBegin = -1; },
      [](Plan &plan) { plan.messages[0].parts[0].slice = -1; },
      [](Plan &plan) {
        plan.numSteps = -1;
        plan.messages[0].step = -1;
      },
      [](Plan &plan) { plan.stagingBudget = -1; },
  };
  for (size_t i = 0; i < breakages.size(); ++i) {
    Plan plan = rowsToColumns();
    breakages[i](plan);
    EXPECT_FALSE(problemsOf(plan).empty()) << "breakage " << i;
    // The reference executor ignores rounds and runs any step numbers, so
    // it need not fail, only survive.
    runReference(plan);
    Plan passes = plan;
    BalanceOptions options;
    options.minSplitBytes = 0;
    balance(passes, options);
    coalesce(passes);
    decompose(passes);
    verifyPlan(passes);
  }
}

//===----------------------------------------------------------------------===//
// Slices and tiling
//===----------------------------------------------------------------------===//

TEST(VerifyTest, MissingSlice) {
  Plan plan = rowsToColumns();
  plan.groups[0].slices.erase(plan.groups[0].slices.begin());
  plan.messages.clear();
  plan.numSteps = 0;
  EXPECT_PROBLEM(plan, "tensor 'w': rank 2 receives 4 of the 8 elements of "
                       "its destination box [0:4, 0:2]");
}

TEST(VerifyTest, DuplicatedSlice) {
  Plan plan = rowsToColumns();
  std::vector<Slice> &slices = plan.groups[0].slices;
  slices.insert(slices.begin() + 1, slices[0]);
  plan.messages.clear();
  plan.numSteps = 0;
  EXPECT_PROBLEM(plan, "tensor 'w': rank 2 receives [0:2, 0:2] twice: in "
                       "slice [0:2, 0:2] from rank 0 to rank 2 (round 0) and "
                       "in slice [0:2, 0:2] from rank 0 to rank 2 (round 0)");
}

TEST(VerifyTest, PartlyOverlappingSlices) {
  Plan plan = rowsToColumns();
  plan.groups[0].slices[0].box = box({0, 0}, {3, 2});
  plan.groups[0].slices[0].sender = 0;
  plan.messages.clear();
  plan.numSteps = 0;
  // Rank 0 does not hold row 2, and rank 2 gets [2:1, 0:2] twice.
  EXPECT_PROBLEM(plan, "tensor 'w': slice [0:3, 0:2] from rank 0 to rank 2 "
                       "(round 0): rank 0 does not hold it in the source "
                       "layout (it holds [0:2, 0:4])");
  plan.groups[0].src.placements = {R};
  EXPECT_PROBLEM(plan, "tensor 'w': rank 2 receives [2:1, 0:2] twice");
}

TEST(VerifyTest, SenderWithoutTheData) {
  Plan plan = rowsToColumns();
  plan.groups[0].slices[0].sender = 1;
  EXPECT_PROBLEM(plan, "tensor 'w': slice [0:2, 0:2] from rank 1 to rank 2 "
                       "(round 0): rank 1 does not hold it in the source "
                       "layout (it holds [2:2, 0:4])");

  plan = rowsToColumns();
  plan.groups[0].slices[0].sender = 7;
  EXPECT_PROBLEM(plan, "rank 7 is not on the source mesh 'a'");
}

TEST(VerifyTest, SliceOutsideItsBoxes) {
  Plan plan = rowsToColumns();
  plan.groups[0].slices[1].box = box({3, 0}, {2, 2});
  EXPECT_PROBLEM(plan, "tensor 'w': slice [3:2, 0:2] from rank 1 to rank 2 "
                       "(round 0): lies outside the tensor [0:4, 0:4]");

  plan = rowsToColumns();
  plan.groups[0].slices[1].box = box({2}, {2});
  EXPECT_PROBLEM(plan, "has a box of the wrong rank for a tensor of rank 2");

  plan = rowsToColumns();
  plan.groups[0].slices[3].receiver = 2;
  EXPECT_PROBLEM(plan, "slice [2:2, 2:2] from rank 1 to rank 2 (round 0): "
                       "lies outside rank 2's destination box [0:4, 0:2]");

  plan = rowsToColumns();
  plan.groups[0].slices[3].receiver = 0;
  EXPECT_PROBLEM(plan, "rank 0 is not on the destination mesh 'b'");
}

TEST(VerifyTest, UnsortedSlices) {
  Plan plan = rowsToColumns();
  plan.messages.clear();
  plan.numSteps = 0;
  std::swap(plan.groups[0].slices[0], plan.groups[0].slices[2]);
  EXPECT_PROBLEM(plan, "tensor 'w': slices are not sorted by (round, "
                       "receiver, sender, offsets): slice 1 [2:2, 0:2] comes "
                       "after slice 0 [0:2, 2:2]");
}

TEST(VerifyTest, LocalCopyOfDataTheRankLacks) {
  Plan plan =
      Refit().mesh("m", {2}, 0).tensor("w", {4}, "m", {S(0)}, "m", {R}).plan();
  decompose(plan);
  EXPECT_TRUE(problemsOf(plan).empty());
  // Rank 0's own rows [0:2] come by local copy; claim [2:2] does too.
  std::vector<Slice> &slices = plan.groups[0].slices;
  ASSERT_EQ(slices[1], slice(1, 0, box({2}, {2})));
  slices[1].sender = 0;
  sortSlices(slices);
  EXPECT_PROBLEM(plan, "tensor 'w': local copy [2:2] on rank 0: rank 0 does "
                       "not hold it in the source layout (it holds [0:2])");
}

//===----------------------------------------------------------------------===//
// Relays
//===----------------------------------------------------------------------===//

TEST(VerifyTest, RelayBeforeTheDataArrived) {
  Plan plan = chain();
  plan.messages.clear();
  plan.numSteps = 0;
  plan.groups[0].slices[2].round = 1;
  sortSlices(plan.groups[0].slices);
  EXPECT_PROBLEM(plan, "tensor 'x': relay [0:6] from rank 2 to rank 3 (round "
                       "1): forwards [0:6], which reaches rank 2 only in "
                       "round 1");

  plan = chain();
  plan.messages.clear();
  plan.numSteps = 0;
  plan.groups[0].slices[1].round = 0;
  sortSlices(plan.groups[0].slices);
  EXPECT_PROBLEM(plan, "relay [0:6] from rank 1 to rank 2 (round 0): "
                       "forwards in round 0, before any bytes arrive");
}

TEST(VerifyTest, RelayInTheStepOfItsData) {
  // Rounds are sound, but the schedule puts the relay 1 -> 2 in the step
  // in which its bytes reach rank 1.
  Plan plan = chain();
  ASSERT_EQ(plan.messages.size(), 3u);
  plan.messages[1].step = 0;
  plan.messages[2].step = 1;
  plan.numSteps = 2;
  EXPECT_PROBLEM(plan, "message 1 (step 0, rank 1 -> rank 2): forwards [0:6] "
                       "of tensor 'x', which reaches rank 1 only in step 0 "
                       "(message 0 (step 0, rank 0 -> rank 1))");
  EXPECT_EQ(runReference(plan),
            "message 1: tensor 'x': rank 1 forwards element [0] before it "
            "arrived");
}

TEST(VerifyTest, RelayOfDataTheSenderDoesNotReceive) {
  Plan plan = chain();
  plan.groups[0].slices[2].sender = 0;
  plan.messages[2].sender = 0;
  EXPECT_PROBLEM(plan, "relay [0:6] from rank 0 to rank 3 (round 2): rank 0 "
                       "does not hold it in the destination layout (it holds "
                       "nothing)");
}

TEST(VerifyTest, RelayToItself) {
  Plan plan = chain();
  plan.messages.clear();
  plan.numSteps = 0;
  plan.groups[0].slices.push_back(
      slice(3, 3, box({0}, {1}), Origin::Destination, 3));
  EXPECT_PROBLEM(plan, "relay [0:1] from rank 3 to rank 3 (round 3): "
                       "forwards to its own sender");
}

//===----------------------------------------------------------------------===//
// Messages
//===----------------------------------------------------------------------===//

TEST(VerifyTest, MessageBytes) {
  Plan plan = rowsToColumns();
  plan.messages[0].bytes += 1;
  EXPECT_PROBLEM(plan, "message 0 (step 0, rank 0 -> rank 2): has 33 bytes "
                       "but its parts hold 32");
  EXPECT_EQ(runReference(plan),
            "message 0: the message has 33 bytes but its parts pack 32");
}

TEST(VerifyTest, SliceInNoMessage) {
  Plan plan = rowsToColumns();
  plan.messages.erase(plan.messages.begin() + 1);
  EXPECT_PROBLEM(plan, "tensor 'w': slice [0:2, 2:2] from rank 0 to rank 3 "
                       "(round 0): tensor 'w' travels in no message");
  EXPECT_EQ(runReference(plan),
            "tensor 'w': rank 3, element [0, 2] was never written");

  // Only the second member is missing.
  plan = rowsToColumns();
  plan.messages[1].parts[0].memberEnd = 1;
  plan.messages[1].bytes = 16;
  EXPECT_PROBLEM(plan, "(round 0): tensor 'w2' travels in no message");
  EXPECT_EQ(runReference(plan),
            "tensor 'w2': rank 3, element [0, 2] was never written");
}

TEST(VerifyTest, SliceInTwoMessages) {
  Plan plan = rowsToColumns();
  plan.messages.insert(plan.messages.begin() + 1, plan.messages[0]);
  EXPECT_PROBLEM(plan, "tensor 'w': slice [0:2, 0:2] from rank 0 to rank 2 "
                       "(round 0): tensor 'w' travels in two messages (0 and "
                       "1)");
  EXPECT_EQ(runReference(plan),
            "message 1: tensor 'w': rank 2 receives element [0, 0] twice");
}

TEST(VerifyTest, MessageBetweenOtherRanks) {
  Plan plan = rowsToColumns();
  plan.messages[0].receiver = 3;
  EXPECT_PROBLEM(plan, "message 0 (step 0, rank 0 -> rank 3): part 0 carries "
                       "the tensor 'w': slice [0:2, 0:2] from rank 0 to rank "
                       "2 (round 0) between other ranks");
}

TEST(VerifyTest, MalformedMessages) {
  Plan plan = rowsToColumns();
  plan.messages[0].parts[0].slice = 9;
  EXPECT_PROBLEM(plan, "message 0 (step 0, rank 0 -> rank 2): part 0 names "
                       "slice 9 of tensor 'w', which has 4 slices");

  plan = rowsToColumns();
  plan.messages[0].parts[0].memberEnd = 3;
  EXPECT_PROBLEM(plan, "part 0 names members [0, 3) of tensor 'w', which "
                       "has 2");

  plan = rowsToColumns();
  plan.messages[0].parts[0].group = 1;
  EXPECT_PROBLEM(plan, "part 0 names group 1, which does not exist");

  plan = rowsToColumns();
  plan.messages.push_back(Message{0, 1, 3, {}, 0, false});
  EXPECT_PROBLEM(plan, "message 4 (step 0, rank 1 -> rank 3): has no parts");

  plan = rowsToColumns();
  plan.messages[0].receiver = 0;
  EXPECT_PROBLEM(plan, "message 0 (step 0, rank 0 -> rank 0): is sent from "
                       "a rank to itself");
}

TEST(VerifyTest, LocalCopyInAMessage) {
  Plan plan =
      Refit().mesh("m", {2}, 0).tensor("w", {4}, "m", {S(0)}, "m", {R}).plan();
  decompose(plan);
  fuseByHand(plan);
  EXPECT_TRUE(problemsOf(plan).empty()) << joined(problemsOf(plan));
  EXPECT_EQ(runReference(plan), "");
  plan.messages.push_back(
      Message{0, 1, 1, {MessagePart{0, 0, 0, 1}}, 8, false});
  EXPECT_PROBLEM(plan, "message 2 (step 0, rank 1 -> rank 1): part 0 carries "
                       "the tensor 'w': local copy [0:2] on rank 0");
}

TEST(VerifyTest, ZeroCopy) {
  Plan plan = rowsToColumns({"w"});
  // [0:2, 0:2] is half of each row of rank 0's rows [0:2, 0:4].
  plan.messages[0].zeroCopy = true;
  EXPECT_PROBLEM(plan, "message 0 (step 0, rank 0 -> rank 2): is zero-copy "
                       "but [0:2, 0:2] is 2 runs in the buffers [0:2, 0:4] of "
                       "rank 0 and [0:4, 0:2] of rank 2");

  plan = rowsToColumns();
  plan.messages[0].zeroCopy = true;
  EXPECT_PROBLEM(plan, "message 0 (step 0, rank 0 -> rank 2): is zero-copy "
                       "but carries more than one part or member");

  // Rows to rows: every slice is contiguous on both sides.
  plan = Refit()
             .mesh("a", {2}, 0)
             .mesh("b", {4}, 2)
             .tensor("w", {8, 3}, "a", {S(0)}, "b", {S(0)})
             .plan();
  decompose(plan);
  fuseByHand(plan);
  for (Message &message : plan.messages)
    message.zeroCopy = true;
  EXPECT_TRUE(problemsOf(plan).empty()) << joined(problemsOf(plan));
  EXPECT_EQ(runReference(plan), "");
}

//===----------------------------------------------------------------------===//
// Schedule
//===----------------------------------------------------------------------===//

TEST(VerifyTest, StagingOverBudget) {
  Plan plan = rowsToColumns();
  // Each rank sends or receives two 32-byte messages in step 0.
  plan.stagingBudget = 64;
  EXPECT_TRUE(problemsOf(plan).empty());
  plan.stagingBudget = 63;
  EXPECT_PROBLEM(plan, "rank 0 stages 64 bytes in step 0, over the budget of "
                       "63");
  EXPECT_PROBLEM(plan, "rank 3 stages 64 bytes in step 0, over the budget of "
                       "63");
  // Spread over two steps, 0 -> 2 and 1 -> 3 first, each rank stages 32
  // bytes a step.
  plan.messages[1].step = 1;
  plan.messages[2].step = 1;
  std::stable_sort(plan.messages.begin(), plan.messages.end(),
                   [](const Message &a, const Message &b) {
                     return std::tie(a.step, a.sender, a.receiver) <
                            std::tie(b.step, b.sender, b.receiver);
                   });
  plan.numSteps = 2;
  plan.stagingBudget = 32;
  EXPECT_TRUE(problemsOf(plan).empty()) << joined(problemsOf(plan));
  // Zero-copy messages stage nothing.
  plan.stagingBudget = 0;
  for (Message &message : plan.messages)
    message.zeroCopy = true;
  EXPECT_FALSE(mentions(problemsOf(plan), "stages"));
}

TEST(VerifyTest, UnsortedMessages) {
  Plan plan = rowsToColumns();
  std::swap(plan.messages[1], plan.messages[2]);
  EXPECT_PROBLEM(plan, "messages are not sorted by (step, sender, receiver): "
                       "message 2 (step 0, rank 0 -> rank 3) comes after "
                       "message 1 (step 0, rank 1 -> rank 2)");
}

TEST(VerifyTest, StepOutOfRange) {
  Plan plan = rowsToColumns();
  plan.messages[3].step = 1;
  EXPECT_PROBLEM(plan, "message 3 (step 1, rank 1 -> rank 3): step is "
                       "outside [0, 1)");
}

//===----------------------------------------------------------------------===//
// runReference on hand-fused plans
//===----------------------------------------------------------------------===//

/// Fuses by hand across groups: one message per (round, sender, receiver),
/// with a part per slice and member range, the members split in two when a
/// group has several, so that parts of one tensor's slice travel in one
/// message but apart.
void fuseAcrossGroups(Plan &plan) {
  std::map<std::tuple<int64_t, int64_t, int64_t>, Message> byPair;
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const TransferGroup &group = plan.groups[g];
    int32_t members = static_cast<int32_t>(group.members.size());
    int32_t half = (members + 1) / 2;
    for (size_t i = 0; i < group.slices.size(); ++i) {
      const Slice &slice = group.slices[i];
      if (slice.isLocalCopy())
        continue;
      Message &message = byPair[{slice.round, slice.sender, slice.receiver}];
      message.step = slice.round;
      message.sender = slice.sender;
      message.receiver = slice.receiver;
      for (auto [begin, end] : {std::pair(0, half), std::pair(half, members)}) {
        if (begin == end)
          continue;
        message.parts.push_back(MessagePart{
            static_cast<int32_t>(g), static_cast<int32_t>(i), begin, end});
        message.bytes += sliceBytes(group, slice) * (end - begin);
      }
    }
  }
  plan.messages.clear();
  int64_t steps = 1;
  for (auto &[key, message] : byPair) {
    steps = std::max(steps, message.step + 1);
    plan.messages.push_back(std::move(message));
  }
  plan.numSteps = steps;
  plan.stagingBudget = int64_t(1) << 40;
}

TEST(ReferenceTest, MessagesAcrossGroupsAndMembers) {
  Plan plan = Refit()
                  .mesh("train", {2, 2}, 0)
                  .mesh("gen", {3}, 2)
                  .tensor("a", {5, 7}, "train", {S(0), S(1)}, "gen", {S(1)},
                          DType::BF16)
                  .tensor("b", {9}, "train", {R, S(0)}, "gen", {R}, DType::F64)
                  .tensor("c", {5, 7}, "train", {S(0), S(1)}, "gen", {S(1)},
                          DType::BF16)
                  .tensor("d", {2, 3, 4}, "train", {S(2), S(2)}, "gen", {S(0)},
                          DType::U8)
                  .tensor("e", {}, "train", {R, R}, "gen", {R}, DType::BOOL)
                  .tensor("f", {5, 7}, "train", {S(0), S(1)}, "gen", {S(1)},
                          DType::BF16)
                  .plan();
  decompose(plan);
  fuseAcrossGroups(plan);
  std::vector<std::string> problems = problemsOf(plan);
  EXPECT_TRUE(problems.empty()) << joined(problems);
  EXPECT_EQ(runReference(plan), "");
}

TEST(ReferenceTest, RelayChainsAcrossSteps) {
  Plan plan = chain();
  EXPECT_EQ(runReference(plan), "");
  // Without the first hop nothing reaches ranks 1, 2 and 3.
  plan.messages.erase(plan.messages.begin());
  EXPECT_EQ(runReference(plan),
            "message 0: tensor 'x': rank 1 forwards element [0] before it "
            "arrived");
}

TEST(ReferenceTest, SenderWithoutTheData) {
  Plan plan = rowsToColumns();
  plan.messages[0].sender = 1;
  EXPECT_EQ(runReference(plan),
            "message 0: tensor 'w': rank 1 does not hold [0:2, 0:2] to send");
}

TEST(ReferenceTest, UnplacedLocalCopy) {
  Plan plan =
      Refit().mesh("m", {2}, 0).tensor("w", {4}, "m", {S(0)}, "m", {R}).plan();
  decompose(plan);
  fuseByHand(plan);
  plan.groups[0].slices[0].box = box({2}, {2});
  EXPECT_EQ(runReference(plan), "tensor 'w': rank 0 cannot copy [2:2] locally");
}

} // namespace
