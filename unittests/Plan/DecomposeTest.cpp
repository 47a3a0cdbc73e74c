//===- DecomposeTest.cpp - Tests of the plan model and decompose ----------===//
//
// Hand-worked reshards: each expectation lists the slices that a reader can
// derive from torch.chunk by hand.
//
//===----------------------------------------------------------------------===//

#include "m2n/Plan/Decompose.h"
#include "m2n/Plan/Verify.h"

#include "PlanTestUtil.h"

#include <chrono>
#include <iostream>

using namespace m2n;
using namespace m2n::plan;
using namespace m2n::plan::test;

namespace {

using Slices = std::vector<Slice>;

//===----------------------------------------------------------------------===//
// planFromSpec and the plan's queries
//===----------------------------------------------------------------------===//

TEST(PlanTest, GroupsByShapeDTypeAndLayouts) {
  Plan plan = Refit()
                  .mesh("train", {2}, 0)
                  .mesh("gen", {2}, 2)
                  .tensor("a", {4, 4}, "train", {S(0)}, "gen", {R})
                  .tensor("b", {4, 4}, "train", {S(0)}, "gen", {R}, DType::BF16)
                  .tensor("c", {4, 4}, "train", {S(0)}, "gen", {R})
                  .tensor("d", {4, 4}, "train", {S(1)}, "gen", {R})
                  .tensor("e", {4, 4}, "gen", {S(0)}, "gen", {R})
                  .tensor("f", {4, 4}, "train", {S(0)}, "gen", {R}, DType::BF16)
                  .plan();
  EXPECT_EQ(plan.meshNames, (std::vector<std::string>{"train", "gen"}));
  ASSERT_EQ(plan.meshes.size(), 2u);
  EXPECT_EQ(plan.meshes[1].ranks, (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(plan.groups.size(), 4u);
  EXPECT_EQ(plan.groups[0].members, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(plan.groups[1].members, (std::vector<int32_t>{1, 5}));
  EXPECT_EQ(plan.groups[1].dtype, DType::BF16);
  EXPECT_EQ(plan.groups[1].elementBytes(), 2);
  EXPECT_EQ(plan.groups[2].members, (std::vector<int32_t>{3}));
  EXPECT_EQ(plan.groups[2].src.placements, (Placements{S(1)}));
  EXPECT_EQ(plan.groups[3].members, (std::vector<int32_t>{4}));
  EXPECT_EQ(plan.groups[3].src.mesh, 1);
  EXPECT_EQ(plan.groups[3].dst.mesh, 1);
  ASSERT_EQ(plan.tensors.size(), 6u);
  EXPECT_EQ(plan.tensors[5].name, "f");
  EXPECT_EQ(plan.tensors[5].group, 1);
  EXPECT_TRUE(plan.groups[0].slices.empty());
  EXPECT_TRUE(plan.messages.empty());
}

TEST(PlanTest, RanksAndWorldSize) {
  Plan plan = Refit()
                  .mesh("a", {2, 2}, std::vector<int64_t>{7, 1, 3, 5})
                  .mesh("b", {3}, std::vector<int64_t>{5, 0, 9})
                  .plan();
  EXPECT_EQ(plan.ranks(), (std::vector<int64_t>{0, 1, 3, 5, 7, 9}));
  EXPECT_EQ(plan.worldSize(), 10);
  EXPECT_EQ(Plan().worldSize(), 0);
  EXPECT_TRUE(Plan().ranks().empty());
}

TEST(PlanTest, BoxesAndBytes) {
  Plan plan =
      Refit()
          .mesh("a", {2, 2}, 0)
          .mesh("b", {3}, 4)
          .tensor("w", {5, 6}, "a", {S(0), S(1)}, "b", {S(1)}, DType::F16)
          .plan();
  const TransferGroup &group = plan.groups[0];
  EXPECT_EQ(sourceBox(plan, group, 0), box({0, 0}, {3, 3}));
  EXPECT_EQ(sourceBox(plan, group, 3), box({3, 3}, {2, 3}));
  EXPECT_TRUE(sourceBox(plan, group, 4).empty());
  EXPECT_EQ(destinationBox(plan, group, 5), box({0, 2}, {5, 2}));
  EXPECT_TRUE(destinationBox(plan, group, 0).empty());
  EXPECT_EQ(sliceBytes(group, slice(0, 4, box({1, 1}, {2, 3}))), 12);
}

TEST(PlanTest, RankZeroBoxes) {
  Plan plan = Refit()
                  .mesh("a", {2}, 0)
                  .mesh("b", {1}, 2)
                  .tensor("scale", {}, "a", {R}, "b", {R})
                  .plan();
  const TransferGroup &group = plan.groups[0];
  EXPECT_EQ(sourceBox(plan, group, 1), box({}, {}));
  EXPECT_FALSE(sourceBox(plan, group, 1).empty());
  EXPECT_TRUE(sourceBox(plan, group, 2).empty());
}

TEST(PlanTest, SliceOrder) {
  Slices slices = {slice(3, 1, box({0}, {2}), Origin::Source, 1),
                   slice(2, 1, box({4}, {2})), slice(0, 1, box({2}, {2})),
                   slice(0, 1, box({0}, {2})), slice(0, 0, box({6}, {2}))};
  sortSlices(slices);
  EXPECT_EQ(slices,
            (Slices{slice(0, 0, box({6}, {2})), slice(0, 1, box({0}, {2})),
                    slice(0, 1, box({2}, {2})), slice(2, 1, box({4}, {2})),
                    slice(3, 1, box({0}, {2}), Origin::Source, 1)}));
}

//===----------------------------------------------------------------------===//
// decompose
//===----------------------------------------------------------------------===//

/// Decomposes and checks that the result verifies.
DecomposeStats decomposeChecked(Plan &plan) {
  DecomposeStats stats = decompose(plan);
  std::vector<std::string> problems = verifyPlan(plan);
  EXPECT_TRUE(problems.empty()) << joined(problems);
  return stats;
}

TEST(DecomposeTest, ReplicateToShard) {
  Plan plan = Refit()
                  .mesh("a", {2}, 0)
                  .mesh("b", {4}, 2)
                  .tensor("w", {8, 4}, "a", {R}, "b", {S(0)})
                  .plan();
  DecomposeStats stats = decomposeChecked(plan);
  // One source box, held by ranks 0 and 1; the first holder sends.
  EXPECT_EQ(plan.groups[0].slices, (Slices{slice(0, 2, box({0, 0}, {2, 4})),
                                           slice(0, 3, box({2, 0}, {2, 4})),
                                           slice(0, 4, box({4, 0}, {2, 4})),
                                           slice(0, 5, box({6, 0}, {2, 4}))}));
  EXPECT_EQ(stats.remoteSlices, 4);
  EXPECT_EQ(stats.wireBytes, 8 * 4 * 4);
  EXPECT_EQ(stats.localCopies, 0);
  EXPECT_EQ(stats.localBytes, 0);
}

TEST(DecomposeTest, ShardToReplicate) {
  Plan plan = Refit()
                  .mesh("a", {3}, 0)
                  .mesh("b", {2}, 3)
                  .tensor("w", {6}, "a", {S(0)}, "b", {R}, DType::I64)
                  .plan();
  DecomposeStats stats = decomposeChecked(plan);
  EXPECT_EQ(plan.groups[0].slices,
            (Slices{slice(0, 3, box({0}, {2})), slice(1, 3, box({2}, {2})),
                    slice(2, 3, box({4}, {2})), slice(0, 4, box({0}, {2})),
                    slice(1, 4, box({2}, {2})), slice(2, 4, box({4}, {2}))}));
  EXPECT_EQ(stats.remoteSlices, 6);
  EXPECT_EQ(stats.wireBytes, 2 * 6 * 8);
}

TEST(DecomposeTest, ChangeOfShardedDimOnSharedRanks) {
  // Ranks 0 and 1 are on both meshes and keep what they already hold.
  Plan plan = Refit()
                  .mesh("a", {2}, 0)
                  .mesh("b", {3}, 0)
                  .tensor("w", {4, 6}, "a", {S(0)}, "b", {S(1)})
                  .plan();
  DecomposeStats stats = decomposeChecked(plan);
  EXPECT_EQ(plan.groups[0].slices, (Slices{slice(0, 0, box({0, 0}, {2, 2})),
                                           slice(1, 0, box({2, 0}, {2, 2})),
                                           slice(0, 1, box({0, 2}, {2, 2})),
                                           slice(1, 1, box({2, 2}, {2, 2})),
                                           slice(0, 2, box({0, 4}, {2, 2})),
                                           slice(1, 2, box({2, 4}, {2, 2}))}));
  EXPECT_EQ(stats.localCopies, 2);
  EXPECT_EQ(stats.localBytes, 2 * 4 * 4);
  EXPECT_EQ(stats.remoteSlices, 4);
  EXPECT_EQ(stats.wireBytes, 4 * 4 * 4);
}

TEST(DecomposeTest, NestedUnevenAndEmptyShards) {
  // Source [S(0), S(0)] on (2, 2) cuts 5 into [0:3] and [3:2], then each
  // again: [0:2] [2:1] [3:1] [4:1]. The destination cuts 5 over 4 into
  // [0:2] [2:2] [4:1] and an empty box for rank 13.
  Plan plan = Refit()
                  .mesh("a", {2, 2}, 0)
                  .mesh("b", {4}, 10)
                  .tensor("w", {5}, "a", {S(0), S(0)}, "b", {S(0)})
                  .plan();
  decomposeChecked(plan);
  EXPECT_EQ(plan.groups[0].slices,
            (Slices{slice(0, 10, box({0}, {2})), slice(1, 11, box({2}, {1})),
                    slice(2, 11, box({3}, {1})), slice(3, 12, box({4}, {1}))}));
}

TEST(DecomposeTest, UnevenTwoDimensional) {
  // Source rows over 3: [0:3] [3:3] [6:1]; destination rows over 2: [0:4]
  // [4:3], columns over 2: [0:3] [3:2].
  Plan plan = Refit()
                  .mesh("a", {3}, 0)
                  .mesh("b", {2, 2}, 3)
                  .tensor("w", {7, 5}, "a", {S(0)}, "b", {S(0), S(1)})
                  .plan();
  decomposeChecked(plan);
  EXPECT_EQ(
      plan.groups[0].slices,
      (Slices{
          slice(0, 3, box({0, 0}, {3, 3})), slice(1, 3, box({3, 0}, {1, 3})),
          slice(0, 4, box({0, 3}, {3, 2})), slice(1, 4, box({3, 3}, {1, 2})),
          slice(1, 5, box({4, 0}, {2, 3})), slice(2, 5, box({6, 0}, {1, 3})),
          slice(1, 6, box({4, 3}, {2, 2})), slice(2, 6, box({6, 3}, {1, 2}))}));
}

TEST(DecomposeTest, ThreeDimensionalMesh) {
  // Mesh index a*4 + b*2 + c; rows by a, columns by c, replicated over b:
  // box (a, c) is held by a*4 + c and a*4 + 2 + c.
  Plan plan = Refit()
                  .mesh("a", {2, 2, 2}, 0)
                  .mesh("b", {2}, 8)
                  .tensor("w", {4, 4}, "a", {S(0), R, S(1)}, "b", {S(1)})
                  .plan();
  decomposeChecked(plan);
  EXPECT_EQ(plan.groups[0].slices, (Slices{slice(0, 8, box({0, 0}, {2, 2})),
                                           slice(4, 8, box({2, 0}, {2, 2})),
                                           slice(1, 9, box({0, 2}, {2, 2})),
                                           slice(5, 9, box({2, 2}, {2, 2}))}));
}

TEST(DecomposeTest, ThreeDimensionalTensorAndMeshOrder) {
  // Ranks listed out of order: the holder that sends is the first in mesh
  // order (rank 6), not the smallest rank.
  Plan plan = Refit()
                  .mesh("a", {2}, std::vector<int64_t>{6, 2})
                  .mesh("b", {2}, std::vector<int64_t>{1, 0})
                  .tensor("w", {2, 3, 4}, "a", {R}, "b", {S(2)})
                  .plan();
  decomposeChecked(plan);
  EXPECT_EQ(plan.groups[0].slices,
            (Slices{slice(6, 0, box({0, 0, 2}, {2, 3, 2})),
                    slice(6, 1, box({0, 0, 0}, {2, 3, 2}))}));
}

TEST(DecomposeTest, ColocatedRanksCopyLocally) {
  // The same ranks on both sides: every rank holds the whole tensor in the
  // source, so nothing crosses between ranks.
  Plan plan = Refit()
                  .mesh("m", {2}, 0)
                  .tensor("w", {4, 2}, "m", {R}, "m", {S(0)})
                  .tensor("v", {4, 2}, "m", {S(1)}, "m", {S(1)})
                  .plan();
  DecomposeStats stats = decomposeChecked(plan);
  EXPECT_EQ(plan.groups[0].slices, (Slices{slice(0, 0, box({0, 0}, {2, 2})),
                                           slice(1, 1, box({2, 0}, {2, 2}))}));
  EXPECT_EQ(plan.groups[1].slices, (Slices{slice(0, 0, box({0, 0}, {4, 1})),
                                           slice(1, 1, box({0, 1}, {4, 1}))}));
  EXPECT_EQ(stats.remoteSlices, 0);
  EXPECT_EQ(stats.wireBytes, 0);
  EXPECT_EQ(stats.localCopies, 4);
  EXPECT_EQ(stats.localBytes, 2 * 16 + 2 * 16);
}

TEST(DecomposeTest, PartiallyOverlappingRanks) {
  // Ranks 2 and 3 hold rows [4:2] and [6:2] already; ranks 4 and 5 hold
  // nothing.
  Plan plan = Refit()
                  .mesh("a", {4}, 0)
                  .mesh("b", {4}, 2)
                  .tensor("w", {8}, "a", {S(0)}, "b", {R})
                  .plan();
  DecomposeStats stats = decomposeChecked(plan);
  Slices expected;
  for (int64_t receiver = 2; receiver < 6; ++receiver)
    for (int64_t sender = 0; sender < 4; ++sender)
      expected.push_back(slice(sender, receiver, box({2 * sender}, {2})));
  EXPECT_EQ(plan.groups[0].slices, expected);
  EXPECT_EQ(stats.localCopies, 2);
  EXPECT_EQ(stats.remoteSlices, 14);
}

TEST(DecomposeTest, MembersMultiplyTheStats) {
  Plan plan = Refit()
                  .mesh("a", {2}, 0)
                  .mesh("b", {1}, 0)
                  .tensor("x", {4}, "a", {S(0)}, "b", {R}, DType::BF16)
                  .tensor("y", {4}, "a", {S(0)}, "b", {R}, DType::BF16)
                  .tensor("z", {4}, "a", {S(0)}, "b", {R}, DType::BF16)
                  .plan();
  DecomposeStats stats = decomposeChecked(plan);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(plan.groups[0].slices,
            (Slices{slice(0, 0, box({0}, {2})), slice(1, 0, box({2}, {2}))}));
  EXPECT_EQ(stats.localCopies, 3);
  EXPECT_EQ(stats.localBytes, 3 * 2 * 2);
  EXPECT_EQ(stats.remoteSlices, 3);
  EXPECT_EQ(stats.wireBytes, 3 * 2 * 2);
}

TEST(DecomposeTest, ScalarsAndEmptyTensors) {
  Plan plan = Refit()
                  .mesh("a", {2}, 0)
                  .mesh("b", {2}, 1)
                  .tensor("scale", {}, "a", {R}, "b", {R})
                  .tensor("none", {0, 3}, "a", {S(1)}, "b", {S(0)})
                  .plan();
  DecomposeStats stats = decomposeChecked(plan);
  EXPECT_EQ(plan.groups[0].slices,
            (Slices{slice(1, 1, box({}, {})), slice(0, 2, box({}, {}))}));
  EXPECT_TRUE(plan.groups[1].slices.empty());
  EXPECT_EQ(stats.localCopies, 1);
  EXPECT_EQ(stats.remoteSlices, 1);
}

TEST(DecomposeTest, ReplacesEarlierSlices) {
  Plan plan = Refit()
                  .mesh("a", {1}, 0)
                  .mesh("b", {1}, 1)
                  .tensor("w", {2}, "a", {R}, "b", {R})
                  .plan();
  plan.groups[0].slices.push_back(slice(5, 6, box({0}, {1})));
  decompose(plan);
  EXPECT_EQ(plan.groups[0].slices, (Slices{slice(0, 1, box({0}, {2}))}));
}

TEST(DecomposeTest, FsdpToTensorParallelAtScale) {
  // 256 FSDP ranks to 16 data-parallel replicas of 8 tensor-parallel ranks:
  // each destination box of 896 rows meets 32 source boxes of 28 rows.
  Plan plan = Refit()
                  .mesh("train", {256}, 0)
                  .mesh("gen", {16, 8}, 256)
                  .tensor("w", {7168, 2048}, "train", {S(0)}, "gen", {R, S(0)},
                          DType::BF16)
                  .plan();
  auto start = std::chrono::steady_clock::now();
  DecomposeStats stats = decompose(plan);
  auto stop = std::chrono::steady_clock::now();
  std::cout << "decompose 256 -> 128 ranks of [7168, 2048]: "
            << std::chrono::duration<double, std::milli>(stop - start).count()
            << " ms\n";
  EXPECT_EQ(plan.groups[0].slices.size(), 128u * 32u);
  EXPECT_EQ(stats.remoteSlices, 128 * 32);
  EXPECT_EQ(stats.wireBytes, int64_t(16) * 7168 * 2048 * 2);
  start = std::chrono::steady_clock::now();
  std::vector<std::string> problems = verifyPlan(plan);
  stop = std::chrono::steady_clock::now();
  std::cout << "verify: "
            << std::chrono::duration<double, std::milli>(stop - start).count()
            << " ms\n";
  EXPECT_TRUE(problems.empty()) << joined(problems);
}

TEST(DecomposeTest, ColocatedAtScale) {
  // The destination reuses the first 128 training ranks: a destination
  // rank copies locally exactly when its own 28 rows fall in its box.
  Plan plan = Refit()
                  .mesh("train", {256}, 0)
                  .mesh("gen", {16, 8}, 0)
                  .tensor("w", {7168, 2048}, "train", {S(0)}, "gen", {R, S(0)},
                          DType::BF16)
                  .plan();
  DecomposeStats stats = decomposeChecked(plan);
  int64_t expectedLocal = 0;
  for (int64_t rank = 0; rank < 128; ++rank) {
    int64_t tp = rank % 8;
    expectedLocal += rank >= 32 * tp && rank < 32 * tp + 32;
  }
  EXPECT_EQ(stats.localCopies, expectedLocal);
  EXPECT_EQ(stats.localCopies + stats.remoteSlices, 128 * 32);
}

} // namespace
