//===- RankIndexTest.cpp - Finding ranks in a mesh's list -----------------===//

#include "m2n/Plan/Plan.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cstdint>
#include <vector>

using namespace m2n::plan;

namespace {

/// Checks that every rank of `ranks` is found at its position and that the
/// ranks around them are not.
void expectFinds(const std::vector<int64_t> &ranks) {
  RankIndex index(ranks);
  for (size_t i = 0; i < ranks.size(); ++i)
    EXPECT_EQ(index.find(ranks[i]), static_cast<int64_t>(i)) << ranks[i];
  for (int64_t rank : ranks)
    for (int64_t near : {rank - 1, rank + 1})
      if (std::find(ranks.begin(), ranks.end(), near) == ranks.end()) {
        EXPECT_EQ(index.find(near), -1) << near;
      }
}

TEST(RankIndex, DenseRanksInAnyOrder) { expectFinds({12, 9, 10, 15, 8}); }

TEST(RankIndex, SparseRanks) {
  // Too far apart for a table: a binary search finds them.
  expectFinds({1000000, 3, 500, 1 << 30});
}

TEST(RankIndex, Empty) {
  RankIndex index({});
  EXPECT_EQ(index.find(0), -1);
  EXPECT_EQ(index.find(-5), -1);
}

TEST(RankIndex, NegativeQueries) {
  RankIndex index({0, 1, 2});
  EXPECT_EQ(index.find(-1), -1);
  EXPECT_EQ(index.find(INT64_MIN), -1);
}

} // namespace
