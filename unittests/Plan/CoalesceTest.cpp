//===- CoalesceTest.cpp - Tests of merging slices and strided runs --------===//

#include "m2n/Plan/Coalesce.h"
#include "m2n/Plan/Balance.h"
#include "m2n/Plan/Decompose.h"
#include "m2n/Plan/Verify.h"

#include "PlanTestUtil.h"

using namespace m2n;
using namespace m2n::plan;
using namespace m2n::plan::test;

namespace {

using Slices = std::vector<Slice>;
using Counts = llvm::SmallVector<int64_t, 4>;

/// A plan of one [8, 8] tensor whose slices are `slices`.
Plan planWith(Slices slices) {
  Plan plan = Refit()
                  .mesh("a", {4}, 0)
                  .mesh("b", {4}, 4)
                  .tensor("w", {8, 8}, "a", {R}, "b", {R})
                  .plan();
  sortSlices(slices);
  plan.groups[0].slices = std::move(slices);
  return plan;
}

//===----------------------------------------------------------------------===//
// coalesce
//===----------------------------------------------------------------------===//

TEST(CoalesceTest, MergesAlongOneDimension) {
  Plan plan = planWith({slice(0, 4, box({0, 0}, {2, 8})),
                        slice(0, 4, box({2, 0}, {3, 8})),
                        slice(0, 4, box({5, 0}, {3, 8}))});
  CoalesceStats stats = coalesce(plan);
  EXPECT_EQ(plan.groups[0].slices, (Slices{slice(0, 4, box({0, 0}, {8, 8}))}));
  EXPECT_EQ(stats.slicesBefore, 3);
  EXPECT_EQ(stats.slicesAfter, 1);
}

TEST(CoalesceTest, MergesAGridInTwoPasses) {
  // Rows first make two column strips, which then merge across columns.
  Plan plan = planWith(
      {slice(1, 5, box({0, 0}, {4, 4})), slice(1, 5, box({4, 4}, {4, 4})),
       slice(1, 5, box({0, 4}, {4, 4})), slice(1, 5, box({4, 0}, {4, 4}))});
  coalesce(plan);
  EXPECT_EQ(plan.groups[0].slices, (Slices{slice(1, 5, box({0, 0}, {8, 8}))}));
}

TEST(CoalesceTest, KeepsApartWhatMustStayApart) {
  Slices slices = {
      // Another sender.
      slice(0, 4, box({0, 0}, {1, 8})), slice(1, 4, box({1, 0}, {1, 8})),
      // Another round and origin.
      slice(0, 5, box({0, 0}, {1, 8})),
      slice(0, 5, box({1, 0}, {1, 8}), Origin::Source, 1),
      slice(0, 5, box({2, 0}, {1, 8}), Origin::Destination, 1),
      // Adjacent rows of different widths, and a gap.
      slice(0, 6, box({0, 0}, {1, 8})), slice(0, 6, box({1, 0}, {1, 4})),
      slice(0, 6, box({3, 0}, {1, 8})),
      // Adjacent along two dimensions at once: a corner.
      slice(0, 7, box({0, 0}, {2, 2})), slice(0, 7, box({2, 2}, {2, 2}))};
  Plan plan = planWith(slices);
  Slices before = plan.groups[0].slices;
  CoalesceStats stats = coalesce(plan);
  EXPECT_EQ(plan.groups[0].slices, before);
  EXPECT_EQ(stats.slicesAfter, stats.slicesBefore);
}

TEST(CoalesceTest, ResultStaysSorted) {
  Plan plan = planWith(
      {slice(2, 4, box({4, 0}, {2, 8})), slice(0, 4, box({2, 0}, {2, 8})),
       slice(2, 4, box({6, 0}, {2, 8})), slice(0, 4, box({0, 0}, {2, 8})),
       slice(1, 4, box({0, 0}, {2, 8}), Origin::Source, 1)});
  coalesce(plan);
  EXPECT_EQ(plan.groups[0].slices,
            (Slices{slice(0, 4, box({0, 0}, {4, 8})),
                    slice(2, 4, box({4, 0}, {4, 8})),
                    slice(1, 4, box({0, 0}, {2, 8}), Origin::Source, 1)}));
}

TEST(CoalesceTest, MergesHalvesSentApart) {
  // Decompose never gives one sender two slices of one receiver (a rank
  // holds one box of a layout), but later passes and hand-written plans
  // may: here rank 0 sends the two halves of its replica separately.
  Plan plan = Refit()
                  .mesh("a", {2}, 0)
                  .mesh("b", {1}, 2)
                  .tensor("w", {8, 2}, "a", {R}, "b", {R})
                  .plan();
  plan.groups[0].slices = {slice(0, 2, box({0, 0}, {4, 2})),
                           slice(0, 2, box({4, 0}, {4, 2}))};
  coalesce(plan);
  EXPECT_EQ(plan.groups[0].slices, (Slices{slice(0, 2, box({0, 0}, {8, 2}))}));
  std::vector<std::string> problems = verifyPlan(plan);
  EXPECT_TRUE(problems.empty()) << joined(problems);
}

TEST(CoalesceTest, PipelineStaysSound) {
  Plan plan = Refit()
                  .mesh("a", {3, 2}, 0)
                  .mesh("b", {2}, 4)
                  .tensor("w", {6, 6}, "a", {R, S(1)}, "b", {R})
                  .tensor("v", {7, 3}, "a", {S(1), R}, "b", {S(0)})
                  .plan();
  decompose(plan);
  BalanceOptions options;
  options.minSplitBytes = 0;
  balance(plan, options);
  coalesce(plan);
  std::vector<std::string> problems = verifyPlan(plan);
  EXPECT_TRUE(problems.empty()) << joined(problems);
}

//===----------------------------------------------------------------------===//
// stridedRuns
//===----------------------------------------------------------------------===//

TEST(StridedRunsTest, WholeRowsAreOneRun) {
  StridedRuns runs = stridedRuns(box({2, 0}, {2, 4}), box({0, 0}, {8, 4}), 4);
  EXPECT_TRUE(runs.contiguous());
  EXPECT_EQ(runs.runs(), 1);
  EXPECT_EQ(runs.offset, 2 * 4 * 4);
  EXPECT_EQ(runs.runBytes, 2 * 4 * 4);
}

TEST(StridedRunsTest, AColumnIsOneRunPerRow) {
  StridedRuns runs = stridedRuns(box({0, 1}, {4, 2}), box({0, 0}, {4, 4}), 2);
  EXPECT_FALSE(runs.contiguous());
  EXPECT_EQ(runs.runs(), 4);
  EXPECT_EQ(runs.offset, 2);
  EXPECT_EQ(runs.runBytes, 4);
  EXPECT_EQ(runs.count, (Counts{4}));
  EXPECT_EQ(runs.stride, (Counts{8}));
}

TEST(StridedRunsTest, OffsetsAreRelativeToTheBuffer) {
  // The buffer starts at [4, 2]; the slice at [5, 3] is one row and one
  // column in.
  StridedRuns runs = stridedRuns(box({5, 3}, {2, 2}), box({4, 2}, {4, 4}), 1);
  EXPECT_EQ(runs.offset, 1 * 4 + 1);
  EXPECT_EQ(runs.runBytes, 2);
  EXPECT_EQ(runs.count, (Counts{2}));
  EXPECT_EQ(runs.stride, (Counts{4}));
}

TEST(StridedRunsTest, UnitDimensionsVanish) {
  // One row of a 3-D buffer's middle dimension: 4 runs of 2 elements.
  StridedRuns runs =
      stridedRuns(box({0, 1, 1}, {4, 1, 2}), box({0, 0, 0}, {4, 4, 4}), 1);
  EXPECT_EQ(runs.offset, 4 + 1);
  EXPECT_EQ(runs.runBytes, 2);
  EXPECT_EQ(runs.count, (Counts{4}));
  EXPECT_EQ(runs.stride, (Counts{16}));
  // A single row with whole inner dimensions is contiguous.
  StridedRuns row =
      stridedRuns(box({2, 1, 0}, {1, 1, 4}), box({0, 0, 0}, {4, 4, 4}), 1);
  EXPECT_TRUE(row.contiguous());
  EXPECT_EQ(row.offset, 2 * 16 + 4);
  EXPECT_EQ(row.runBytes, 4);
}

TEST(StridedRunsTest, LevelsMergeWhenTheyStepEvenly) {
  // Dimensions 0 and 1 are whole, dimension 2 is not: one level of 6 rows,
  // not two levels of 2 and 3.
  StridedRuns runs =
      stridedRuns(box({0, 0, 1}, {2, 3, 2}), box({0, 0, 0}, {2, 3, 4}), 2);
  EXPECT_EQ(runs.count, (Counts{6}));
  EXPECT_EQ(runs.stride, (Counts{8}));
  EXPECT_EQ(runs.runBytes, 4);
  EXPECT_EQ(runs.runs(), 6);
  // Dimension 1 partial: two levels.
  StridedRuns partial =
      stridedRuns(box({0, 1, 1}, {2, 2, 2}), box({0, 0, 0}, {2, 3, 4}), 2);
  EXPECT_EQ(partial.count, (Counts{2, 2}));
  EXPECT_EQ(partial.stride, (Counts{24, 8}));
  EXPECT_EQ(partial.runs(), 4);
}

TEST(StridedRunsTest, WholeBufferScalarAndEmpty) {
  StridedRuns whole = stridedRuns(box({0, 0}, {3, 5}), box({0, 0}, {3, 5}), 8);
  EXPECT_TRUE(whole.contiguous());
  EXPECT_EQ(whole.runBytes, 3 * 5 * 8);
  StridedRuns scalar = stridedRuns(box({}, {}), box({}, {}), 2);
  EXPECT_TRUE(scalar.contiguous());
  EXPECT_EQ(scalar.runBytes, 2);
  EXPECT_EQ(scalar.runs(), 1);
  StridedRuns empty = stridedRuns(box({1, 0}, {0, 5}), box({0, 0}, {3, 5}), 8);
  EXPECT_EQ(empty.runs(), 0);
  EXPECT_EQ(empty.runBytes, 0);
}

TEST(StridedRunsTest, PairFoldsOnlyWhereBothFold) {
  // Whole in the sender's buffer, half a row in the receiver's.
  auto [from, to] = stridedRunsPair(box({0, 0}, {2, 4}), box({0, 0}, {2, 4}),
                                    box({0, 0}, {4, 8}), 4);
  EXPECT_TRUE(
      stridedRuns(box({0, 0}, {2, 4}), box({0, 0}, {2, 4}), 4).contiguous());
  EXPECT_EQ(from.runBytes, 16);
  EXPECT_EQ(to.runBytes, 16);
  EXPECT_EQ(from.count, (Counts{2}));
  EXPECT_EQ(to.count, (Counts{2}));
  EXPECT_EQ(from.stride, (Counts{16}));
  EXPECT_EQ(to.stride, (Counts{32}));
  EXPECT_EQ(from.offset, 0);
  EXPECT_EQ(to.offset, 0);
}

TEST(StridedRunsTest, PairMergesLevelsOnlyWhereBothMerge) {
  // In `from` rows and planes step evenly; in `to` they do not.
  Box slice = box({0, 0, 0}, {2, 2, 1});
  auto [from, to] = stridedRunsPair(slice, box({0, 0, 0}, {2, 2, 2}),
                                    box({0, 0, 0}, {2, 3, 2}), 1);
  EXPECT_EQ(from.count, (Counts{2, 2}));
  EXPECT_EQ(from.stride, (Counts{4, 2}));
  EXPECT_EQ(to.count, (Counts{2, 2}));
  EXPECT_EQ(to.stride, (Counts{6, 2}));
  EXPECT_EQ(stridedRuns(slice, box({0, 0, 0}, {2, 2, 2}), 1).count,
            (Counts{4}));
}

} // namespace
