//===- BalanceTest.cpp - Tests of choosing senders among replicas ---------===//

#include "m2n/Plan/Balance.h"
#include "m2n/Plan/Decompose.h"
#include "m2n/Plan/Verify.h"

#include "PlanTestUtil.h"

#include <map>

using namespace m2n;
using namespace m2n::plan;
using namespace m2n::plan::test;

namespace {

using Slices = std::vector<Slice>;

/// Bytes each rank sends, over all groups and members.
std::map<int64_t, int64_t> sendLoads(const Plan &plan) {
  std::map<int64_t, int64_t> loads;
  for (const TransferGroup &group : plan.groups)
    for (const Slice &slice : group.slices)
      if (!slice.isLocalCopy())
        loads[slice.sender] += sliceBytes(group, slice) *
                               static_cast<int64_t>(group.members.size());
  return loads;
}

BalanceStats balanceChecked(Plan &plan, const BalanceOptions &options) {
  BalanceStats stats = balance(plan, options);
  std::vector<std::string> problems = verifyPlan(plan);
  EXPECT_TRUE(problems.empty()) << joined(problems);
  EXPECT_LE(stats.idealMaxSendBytes, stats.maxSendBytesAfter);
  EXPECT_LE(stats.maxSendBytesAfter, stats.maxSendBytesBefore);
  return stats;
}

BalanceOptions splitFrom(int64_t minSplitBytes) {
  BalanceOptions options;
  options.minSplitBytes = minSplitBytes;
  return options;
}

TEST(BalanceTest, ReplicasShareTheSends) {
  // [R, S(0)] on (4, 2): rows [0:32] on ranks 0, 2, 4, 6 and [32:32] on
  // 1, 3, 5, 7. Each destination rank needs 8 rows; decompose lets ranks 0
  // and 1 send everything, balance lets every replica send a quarter.
  Plan plan = Refit()
                  .mesh("train", {4, 2}, 0)
                  .mesh("gen", {8}, 8)
                  .tensor("w", {64, 16}, "train", {R, S(0)}, "gen", {S(0)})
                  .plan();
  decompose(plan);
  BalanceStats stats = balanceChecked(plan, splitFrom(0));
  int64_t quarter = 8 * 16 * 4;
  EXPECT_EQ(stats.maxSendBytesBefore, 4 * quarter);
  EXPECT_EQ(stats.maxSendBytesAfter, quarter);
  EXPECT_EQ(stats.idealMaxSendBytes, quarter);
  EXPECT_EQ(stats.splitRegions, 0);
  EXPECT_EQ(plan.groups[0].slices,
            (Slices{slice(0, 8, box({0, 0}, {8, 16})),
                    slice(2, 9, box({8, 0}, {8, 16})),
                    slice(4, 10, box({16, 0}, {8, 16})),
                    slice(6, 11, box({24, 0}, {8, 16})),
                    slice(1, 12, box({32, 0}, {8, 16})),
                    slice(3, 13, box({40, 0}, {8, 16})),
                    slice(5, 14, box({48, 0}, {8, 16})),
                    slice(7, 15, box({56, 0}, {8, 16}))}));
}

TEST(BalanceTest, Deterministic) {
  Refit refit;
  refit.mesh("train", {3, 2}, 0).mesh("gen", {2, 2}, 6);
  refit.tensor("a", {13, 7}, "train", {R, S(0)}, "gen", {S(1), S(0)});
  refit.tensor("b", {9}, "train", {R, R}, "gen", {S(0), R}, DType::BF16);
  refit.tensor("c", {5, 11}, "train", {S(1), R}, "gen", {R, S(1)});
  Plan first = refit.plan();
  Plan second = refit.plan();
  decompose(first);
  decompose(second);
  balanceChecked(first, splitFrom(16));
  balanceChecked(second, splitFrom(16));
  for (size_t g = 0; g < first.groups.size(); ++g)
    EXPECT_EQ(first.groups[g].slices, second.groups[g].slices);
}

TEST(BalanceTest, SplitsRegionsAmongHolders) {
  // Four replicas, two receivers of 4 rows each: whole regions leave two
  // replicas idle; halves let each replica send 2 rows, the ideal.
  Plan plan = Refit()
                  .mesh("train", {4}, 0)
                  .mesh("gen", {2}, 4)
                  .tensor("w", {8, 4}, "train", {R}, "gen", {S(0)})
                  .plan();
  decompose(plan);
  BalanceStats stats = balanceChecked(plan, splitFrom(0));
  EXPECT_EQ(stats.splitRegions, 2);
  EXPECT_EQ(stats.maxSendBytesBefore, 8 * 4 * 4);
  EXPECT_EQ(stats.maxSendBytesAfter, 2 * 4 * 4);
  EXPECT_EQ(stats.idealMaxSendBytes, 2 * 4 * 4);
  EXPECT_EQ(plan.groups[0].slices, (Slices{slice(0, 4, box({0, 0}, {2, 4})),
                                           slice(1, 4, box({2, 0}, {2, 4})),
                                           slice(2, 5, box({4, 0}, {2, 4})),
                                           slice(3, 5, box({6, 0}, {2, 4}))}));
}

TEST(BalanceTest, SplitsAlongTheLargestDimension) {
  Plan plan = Refit()
                  .mesh("train", {3}, 0)
                  .mesh("gen", {1}, 3)
                  .tensor("w", {2, 9}, "train", {R}, "gen", {R})
                  .plan();
  decompose(plan);
  BalanceStats stats = balanceChecked(plan, splitFrom(0));
  EXPECT_EQ(stats.splitRegions, 1);
  EXPECT_EQ(plan.groups[0].slices, (Slices{slice(0, 3, box({0, 0}, {2, 3})),
                                           slice(1, 3, box({0, 3}, {2, 3})),
                                           slice(2, 3, box({0, 6}, {2, 3}))}));
}

TEST(BalanceTest, NoSplitWhenDisabledOrSmall) {
  Refit refit;
  refit.mesh("train", {4}, 0).mesh("gen", {2}, 4);
  refit.tensor("w", {8, 4}, "train", {R}, "gen", {S(0)});
  for (BalanceOptions options : {splitFrom(65), splitFrom(0)}) {
    if (options.minSplitBytes == 0)
      options.split = false;
    Plan plan = refit.plan();
    decompose(plan);
    BalanceStats stats = balanceChecked(plan, options);
    EXPECT_EQ(stats.splitRegions, 0);
    // Each 64-byte region goes whole to its own replica, which is the best
    // that whole regions allow.
    EXPECT_EQ(stats.maxSendBytesAfter, 64);
    EXPECT_EQ(stats.idealMaxSendBytes, 64);
    EXPECT_EQ(plan.groups[0].slices,
              (Slices{slice(0, 4, box({0, 0}, {4, 4})),
                      slice(1, 5, box({4, 0}, {4, 4}))}));
  }
}

TEST(BalanceTest, DefaultKeepsSmallRegionsWhole) {
  Plan plan = Refit()
                  .mesh("train", {4}, 0)
                  .mesh("gen", {2}, 4)
                  .tensor("w", {8, 4}, "train", {R}, "gen", {S(0)})
                  .plan();
  decompose(plan);
  BalanceStats stats = balanceChecked(plan, BalanceOptions());
  EXPECT_EQ(stats.splitRegions, 0);
}

TEST(BalanceTest, WeighsGroupsByMembers) {
  // Group 0 has one member, held by ranks 0 and 1; group 1 has three, held
  // by rank 0 alone. Counting members, group 1 is the larger region and
  // goes first, so rank 1 takes group 0; counting slices alone, group 0
  // would have gone first to rank 0.
  Plan plan = Refit()
                  .mesh("a", {2}, 0)
                  .mesh("c", {1}, 0)
                  .mesh("gen", {1}, 9)
                  .tensor("v", {4}, "a", {R}, "gen", {R})
                  .tensor("x", {4}, "c", {R}, "gen", {R})
                  .tensor("y", {4}, "c", {R}, "gen", {R})
                  .tensor("z", {4}, "c", {R}, "gen", {R})
                  .plan();
  decompose(plan);
  BalanceStats stats = balanceChecked(plan, splitFrom(1 << 20));
  EXPECT_EQ(plan.groups[0].slices, (Slices{slice(1, 9, box({0}, {4}))}));
  EXPECT_EQ(plan.groups[1].slices, (Slices{slice(0, 9, box({0}, {4}))}));
  EXPECT_EQ(stats.maxSendBytesBefore, 4 * 16);
  EXPECT_EQ(stats.maxSendBytesAfter, 3 * 16);
  EXPECT_EQ(stats.idealMaxSendBytes, 3 * 16);
  EXPECT_EQ(sendLoads(plan), (std::map<int64_t, int64_t>{{0, 48}, {1, 16}}));
}

TEST(BalanceTest, SplitsOnlyWhatTheBusiestNeeds) {
  // Uneven: 7 rows per receiver over 4 replicas. The total is 14 rows, so
  // the bound is 3.5 rows and some replica must send 4; the greedy splits
  // the first region 3, 3, 1 and the second 4, 3 onto the idlest replicas.
  Plan plan = Refit()
                  .mesh("train", {4}, 0)
                  .mesh("gen", {2}, 4)
                  .tensor("w", {14, 1}, "train", {R}, "gen", {S(0)})
                  .plan();
  decompose(plan);
  BalanceStats stats = balanceChecked(plan, splitFrom(0));
  EXPECT_EQ(stats.idealMaxSendBytes, 14);
  EXPECT_EQ(stats.maxSendBytesAfter, 4 * 4);
  for (const auto &[rank, bytes] : sendLoads(plan))
    EXPECT_LE(bytes, 4 * 4) << "rank " << rank;
}

TEST(BalanceTest, ScalarsAreNeverSplit) {
  Plan plan = Refit()
                  .mesh("train", {4}, 0)
                  .mesh("gen", {2}, 4)
                  .tensor("scale", {}, "train", {R}, "gen", {R}, DType::F64)
                  .plan();
  decompose(plan);
  BalanceStats stats = balanceChecked(plan, splitFrom(0));
  EXPECT_EQ(stats.splitRegions, 0);
  EXPECT_EQ(plan.groups[0].slices,
            (Slices{slice(0, 4, box({}, {})), slice(1, 5, box({}, {}))}));
  EXPECT_EQ(stats.idealMaxSendBytes, 8);
}

TEST(BalanceTest, LeavesLocalCopiesAndRelaysAlone) {
  Plan plan = Refit()
                  .mesh("m", {2}, 0)
                  .mesh("gen", {3}, 0)
                  .tensor("w", {6}, "m", {R}, "gen", {R})
                  .plan();
  decompose(plan);
  // Rank 2 gets [0:6] from rank 0; make it a relay from rank 1 instead.
  Slices &slices = plan.groups[0].slices;
  ASSERT_EQ(slices.back(), slice(0, 2, box({0}, {6})));
  slices.back() = slice(1, 2, box({0}, {6}), Origin::Destination, 1);
  Slices before = slices;
  BalanceStats stats = balanceChecked(plan, splitFrom(0));
  EXPECT_EQ(slices, before);
  EXPECT_EQ(stats.maxSendBytesBefore, 24);
  EXPECT_EQ(stats.maxSendBytesAfter, 24);
}

} // namespace
