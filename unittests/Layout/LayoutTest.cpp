//===- LayoutTest.cpp - Tests of the layout model -------------------------===//
//
// Hand-worked cases of torch DTensor's layout rule, the validation messages,
// and a randomized comparison against an element-wise simulation of the rule
// that is written independently of localBox.
//
//===----------------------------------------------------------------------===//

#include "m2n/Layout/Layout.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace m2n {
// Readable gtest failure messages.
void PrintTo(const Box &box, std::ostream *os) { *os << box.str(); }
void PrintTo(const Placement &placement, std::ostream *os) {
  *os << placement.str();
}
void PrintTo(const Overlap &overlap, std::ostream *os) {
  *os << "{src " << overlap.srcRank << ", dst " << overlap.dstRank << ", "
      << overlap.box.str() << "}";
}
} // namespace m2n

using namespace m2n;

namespace {

using Shape = std::vector<int64_t>;
using Placements = std::vector<Placement>;

const Placement R = Placement::replicate();
Placement S(int64_t dim) { return Placement::shard(dim); }

Box box(Shape offsets, Shape sizes) {
  return Box{std::move(offsets), std::move(sizes)};
}

Overlap overlap(int64_t src, int64_t dst, Box region) {
  return Overlap{src, dst, std::move(region)};
}

//===----------------------------------------------------------------------===//
// Placement, Box, Mesh, chunk
//===----------------------------------------------------------------------===//

TEST(PlacementTest, Str) {
  EXPECT_EQ(R.str(), "R");
  EXPECT_EQ(S(0).str(), "S(0)");
  EXPECT_EQ(S(7).str(), "S(7)");
  EXPECT_TRUE(R.isReplicate());
  EXPECT_FALSE(R.isShard());
  EXPECT_TRUE(S(0).isShard());
  EXPECT_EQ(S(1), S(1));
  EXPECT_NE(S(1), R);
}

TEST(BoxTest, StrAndVolume) {
  EXPECT_EQ(box({0, 3}, {2, 4}).str(), "[0:2, 3:4]");
  EXPECT_EQ(box({5}, {0}).str(), "[5:0]");
  EXPECT_EQ(box({}, {}).str(), "[]");
  EXPECT_EQ(box({0, 0}, {3, 4}).volume(), 12);
  EXPECT_EQ(box({1, 0, 2}, {3, 0, 4}).volume(), 0);
  EXPECT_TRUE(box({1, 0, 2}, {3, 0, 4}).empty());
  // A rank-0 box is a scalar: one element.
  EXPECT_EQ(box({}, {}).volume(), 1);
  EXPECT_FALSE(box({}, {}).empty());
  EXPECT_EQ(box({1, 2}, {3, 4}).rank(), 2);
}

TEST(BoxTest, FullBox) {
  EXPECT_EQ(fullBox({4, 0, 6}), box({0, 0, 0}, {4, 0, 6}));
  EXPECT_EQ(fullBox({}), box({}, {}));
}

TEST(BoxTest, Intersect) {
  EXPECT_EQ(intersect(box({0, 0}, {4, 4}), box({2, 1}, {4, 2})),
            box({2, 1}, {2, 2}));
  EXPECT_EQ(intersect(box({2, 1}, {4, 2}), box({0, 0}, {4, 4})),
            box({2, 1}, {2, 2}));
  // Disjoint along one dim: the result is empty in every dim.
  Box disjoint = intersect(box({0, 0}, {2, 2}), box({3, 0}, {1, 2}));
  EXPECT_TRUE(disjoint.empty());
  EXPECT_EQ(disjoint.sizes, Shape({0, 0}));
  // Touching boxes share no element.
  EXPECT_TRUE(intersect(box({0}, {2}), box({2}, {2})).empty());
  EXPECT_EQ(intersect(box({}, {}), box({}, {})).volume(), 1);
}

TEST(BoxTest, Contains) {
  Box outer = box({1, 1}, {4, 4});
  EXPECT_TRUE(contains(outer, outer));
  EXPECT_TRUE(contains(outer, box({2, 3}, {3, 2})));
  EXPECT_FALSE(contains(outer, box({0, 1}, {2, 2})));
  EXPECT_FALSE(contains(outer, box({4, 4}, {2, 1})));
  EXPECT_FALSE(contains(box({2, 3}, {3, 2}), outer));
  // An empty box lies within any box of its rank.
  EXPECT_TRUE(contains(outer, box({9, 9}, {0, 3})));
  EXPECT_TRUE(contains(box({}, {}), box({}, {})));
}

TEST(MeshTest, CoordsAreRowMajor) {
  Mesh mesh = Mesh::contiguous({2, 3, 4}, 0);
  EXPECT_EQ(mesh.size(), 24);
  EXPECT_EQ(mesh.coords(0), Shape({0, 0, 0}));
  EXPECT_EQ(mesh.coords(1), Shape({0, 0, 1}));
  EXPECT_EQ(mesh.coords(4), Shape({0, 1, 0}));
  EXPECT_EQ(mesh.coords(6), Shape({0, 1, 2}));
  EXPECT_EQ(mesh.coords(12), Shape({1, 0, 0}));
  EXPECT_EQ(mesh.coords(13), Shape({1, 0, 1}));
  EXPECT_EQ(mesh.coords(23), Shape({1, 2, 3}));
}

TEST(MeshTest, Contiguous) {
  Mesh mesh = Mesh::contiguous({2, 3}, 5);
  EXPECT_EQ(mesh.shape, Shape({2, 3}));
  EXPECT_EQ(mesh.ranks, Shape({5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(mesh.size(), 6);
  EXPECT_EQ(checkMesh(mesh.shape, mesh.ranks), "");
}

std::vector<std::pair<int64_t, int64_t>> chunks(int64_t n, int64_t k) {
  std::vector<std::pair<int64_t, int64_t>> result;
  for (int64_t i = 0; i < k; ++i) {
    Chunk piece = chunk(n, k, i);
    result.emplace_back(piece.offset, piece.size);
  }
  return result;
}

using Pieces = std::vector<std::pair<int64_t, int64_t>>;

TEST(ChunkTest, TorchChunkSplits) {
  EXPECT_EQ(chunks(10, 4), Pieces({{0, 3}, {3, 3}, {6, 3}, {9, 1}}));
  EXPECT_EQ(chunks(5, 4), Pieces({{0, 2}, {2, 2}, {4, 1}, {5, 0}}));
  EXPECT_EQ(chunks(8, 4), Pieces({{0, 2}, {2, 2}, {4, 2}, {6, 2}}));
  EXPECT_EQ(chunks(7, 1), Pieces({{0, 7}}));
}

TEST(ChunkTest, EmptyAndTooManyPieces) {
  EXPECT_EQ(chunks(0, 3), Pieces({{0, 0}, {0, 0}, {0, 0}}));
  // k > n: c = 1, the pieces past n are empty and start at n.
  EXPECT_EQ(chunks(2, 5), Pieces({{0, 1}, {1, 1}, {2, 0}, {2, 0}, {2, 0}}));
  // Even with n >= k, torch.chunk may fill fewer than k pieces: 6 over 4
  // uses c = 2, so the last piece is empty.
  EXPECT_EQ(chunks(6, 4), Pieces({{0, 2}, {2, 2}, {4, 2}, {6, 0}}));
}

TEST(ChunkTest, HugeExtentDoesNotOverflow) {
  int64_t n = int64_t(1) << 62;
  int64_t c = n / 3 + 1;
  EXPECT_EQ(chunk(n, 3, 0).size, c);
  EXPECT_EQ(chunk(n, 3, 2).offset, 2 * c);
  EXPECT_EQ(chunk(n, 3, 2).size, n - 2 * c);
  EXPECT_EQ(chunk(n, int64_t(1) << 24, (int64_t(1) << 24) - 1).size, n >> 24);
}

//===----------------------------------------------------------------------===//
// localBox
//===----------------------------------------------------------------------===//

TEST(LocalBoxTest, OneAxisUneven) {
  Mesh mesh = Mesh::contiguous({4}, 0);
  EXPECT_EQ(localBoxes({10, 2}, mesh, {S(0)}),
            std::vector<Box>({box({0, 0}, {3, 2}), box({3, 0}, {3, 2}),
                              box({6, 0}, {3, 2}), box({9, 0}, {1, 2})}));
  EXPECT_EQ(localBoxes({5}, mesh, {S(0)}),
            std::vector<Box>(
                {box({0}, {2}), box({2}, {2}), box({4}, {1}), box({5}, {0})}));
}

TEST(LocalBoxTest, TwoAxesShardOneDim) {
  // Axis 0 splits 10 rows into 5 + 5, axis 1 splits each 5 into 3 + 2.
  Mesh mesh = Mesh::contiguous({2, 2}, 0);
  EXPECT_EQ(localBoxes({10}, mesh, {S(0), S(0)}),
            std::vector<Box>(
                {box({0}, {3}), box({3}, {2}), box({5}, {3}), box({8}, {2})}));
}

TEST(LocalBoxTest, ThreeAxesShardOneDim) {
  // 10 -> 5 | 5 -> 3, 2 | 3, 2 -> 2, 1 | 1, 1 | 2, 1 | 1, 1.
  Mesh mesh = Mesh::contiguous({2, 2, 2}, 0);
  EXPECT_EQ(localBoxes({10}, mesh, {S(0), S(0), S(0)}),
            std::vector<Box>({box({0}, {2}), box({2}, {1}), box({3}, {1}),
                              box({4}, {1}), box({5}, {2}), box({7}, {1}),
                              box({8}, {1}), box({9}, {1})}));
  // 3 rows: axis 0 gives 2 | 1, axis 1 gives 1 | 1 and 1 | 0, axis 2 gives
  // 1 | 0 under each non-empty piece. An empty shard starts where its
  // parent's extent ends.
  EXPECT_EQ(localBoxes({3}, mesh, {S(0), S(0), S(0)}),
            std::vector<Box>({box({0}, {1}), box({1}, {0}), box({1}, {1}),
                              box({2}, {0}), box({2}, {1}), box({3}, {0}),
                              box({3}, {0}), box({3}, {0})}));
}

TEST(LocalBoxTest, ThreeDMeshWithReplicateAndExplicitRanks) {
  // Axis 0 splits rows 4 -> 2 | 2, axis 1 replicates, axis 2 splits the six
  // columns 3 | 3. Ranks are listed in mesh order, not sorted.
  Mesh mesh{{2, 2, 2}, {10, 3, 7, 0, 12, 5, 9, 1}};
  ASSERT_EQ(checkMesh(mesh.shape, mesh.ranks), "");
  Placements placements = {S(0), R, S(1)};
  EXPECT_EQ(localBoxes({4, 6}, mesh, placements),
            std::vector<Box>({box({0, 0}, {2, 3}), box({0, 3}, {2, 3}),
                              box({0, 0}, {2, 3}), box({0, 3}, {2, 3}),
                              box({2, 0}, {2, 3}), box({2, 3}, {2, 3}),
                              box({2, 0}, {2, 3}), box({2, 3}, {2, 3})}));
  EXPECT_EQ(localBox({4, 6}, mesh, placements, 5), box({2, 3}, {2, 3}));

  // Gathering the columns onto two ranks takes, for each, the four source
  // boxes of its columns, in source mesh order (rank 10 before rank 7).
  Mesh dstMesh{{2}, {20, 21}};
  std::vector<Overlap> expected = {overlap(10, 20, box({0, 0}, {2, 3})),
                                   overlap(7, 20, box({0, 0}, {2, 3})),
                                   overlap(12, 20, box({2, 0}, {2, 3})),
                                   overlap(9, 20, box({2, 0}, {2, 3})),
                                   overlap(3, 21, box({0, 3}, {2, 3})),
                                   overlap(0, 21, box({0, 3}, {2, 3})),
                                   overlap(5, 21, box({2, 3}, {2, 3})),
                                   overlap(1, 21, box({2, 3}, {2, 3}))};
  EXPECT_EQ(
      overlaps({4, 6}, Layout{&mesh, placements}, Layout{&dstMesh, {S(1)}}),
      expected);
}

TEST(LocalBoxTest, EmptyTensorDim) {
  Mesh mesh = Mesh::contiguous({2}, 0);
  EXPECT_EQ(localBoxes({0, 3}, mesh, {S(0)}),
            std::vector<Box>({box({0, 0}, {0, 3}), box({0, 0}, {0, 3})}));
  EXPECT_EQ(localBoxes({0, 3}, mesh, {S(1)}),
            std::vector<Box>({box({0, 0}, {0, 2}), box({0, 2}, {0, 1})}));
}

TEST(LocalBoxTest, RankZeroTensor) {
  Mesh mesh = Mesh::contiguous({3}, 0);
  EXPECT_EQ(localBoxes({}, mesh, {R}),
            std::vector<Box>({box({}, {}), box({}, {}), box({}, {})}));
}

//===----------------------------------------------------------------------===//
// overlaps
//===----------------------------------------------------------------------===//

TEST(OverlapsTest, ReplicateToShard) {
  Mesh src = Mesh::contiguous({2}, 0);
  Mesh dst = Mesh::contiguous({2}, 0);
  std::vector<Overlap> expected = {
      overlap(0, 0, box({0, 0}, {2, 2})), overlap(1, 0, box({0, 0}, {2, 2})),
      overlap(0, 1, box({2, 0}, {2, 2})), overlap(1, 1, box({2, 0}, {2, 2}))};
  EXPECT_EQ(overlaps({4, 2}, Layout{&src, {R}}, Layout{&dst, {S(0)}}),
            expected);
}

TEST(OverlapsTest, ShardToReplicate) {
  Mesh src = Mesh::contiguous({2}, 0);
  Mesh dst = Mesh::contiguous({3}, 2);
  std::vector<Overlap> expected = {
      overlap(0, 2, box({0}, {3})), overlap(1, 2, box({3}, {2})),
      overlap(0, 3, box({0}, {3})), overlap(1, 3, box({3}, {2})),
      overlap(0, 4, box({0}, {3})), overlap(1, 4, box({3}, {2}))};
  EXPECT_EQ(overlaps({5}, Layout{&src, {S(0)}}, Layout{&dst, {R}}), expected);
}

TEST(OverlapsTest, ChangeOfShardedDim) {
  // Rows on two ranks to columns on two ranks: one quadrant per pair.
  Mesh mesh = Mesh::contiguous({2}, 0);
  std::vector<Overlap> expected = {
      overlap(0, 0, box({0, 0}, {2, 3})), overlap(1, 0, box({2, 0}, {2, 3})),
      overlap(0, 1, box({0, 3}, {2, 3})), overlap(1, 1, box({2, 3}, {2, 3}))};
  EXPECT_EQ(overlaps({4, 6}, Layout{&mesh, {S(0)}}, Layout{&mesh, {S(1)}}),
            expected);
}

TEST(OverlapsTest, UnevenMToN) {
  // 7 rows: 3, 3, 1 on ranks 0..2 to 4, 3 on ranks 3..4.
  Mesh src = Mesh::contiguous({3}, 0);
  Mesh dst = Mesh::contiguous({2}, 3);
  std::vector<Overlap> expected = {
      overlap(0, 3, box({0, 0}, {3, 5})), overlap(1, 3, box({3, 0}, {1, 5})),
      overlap(1, 4, box({4, 0}, {2, 5})), overlap(2, 4, box({6, 0}, {1, 5}))};
  EXPECT_EQ(overlaps({7, 5}, Layout{&src, {S(0)}}, Layout{&dst, {S(0)}}),
            expected);
}

TEST(OverlapsTest, EmptyBoxesOverlapNothing) {
  // One row over two and three ranks: only the first rank of each holds it.
  Mesh src = Mesh::contiguous({2}, 0);
  Mesh dst = Mesh::contiguous({3}, 0);
  EXPECT_EQ(overlaps({1}, Layout{&src, {S(0)}}, Layout{&dst, {S(0)}}),
            std::vector<Overlap>({overlap(0, 0, box({0}, {1}))}));
  EXPECT_TRUE(
      overlaps({0, 4}, Layout{&src, {R}}, Layout{&dst, {S(1)}}).empty());
}

TEST(OverlapsTest, RankZeroTensor) {
  Mesh src = Mesh::contiguous({2}, 0);
  Mesh dst = Mesh::contiguous({2}, 2);
  std::vector<Overlap> expected = {
      overlap(0, 2, box({}, {})), overlap(1, 2, box({}, {})),
      overlap(0, 3, box({}, {})), overlap(1, 3, box({}, {}))};
  EXPECT_EQ(overlaps({}, Layout{&src, {R}}, Layout{&dst, {R}}), expected);
}

TEST(OverlapsTest, LargeMeshes) {
  // 256 source ranks to 128 destination ranks. Each side's boxes partition
  // the tensor, so the overlaps do too.
  Shape shape = {1000, 1000};
  Mesh src = Mesh::contiguous({16, 16}, 0);
  Mesh dst = Mesh::contiguous({8, 16}, 256);
  std::vector<Overlap> result =
      overlaps(shape, Layout{&src, {S(0), S(1)}}, Layout{&dst, {S(1), S(0)}});
  int64_t total = 0;
  std::set<std::pair<int64_t, int64_t>> pairs;
  for (const Overlap &o : result) {
    total += o.box.volume();
    EXPECT_TRUE(pairs.emplace(o.srcRank, o.dstRank).second);
  }
  EXPECT_EQ(total, 1000 * 1000);

  // With a replicated source axis, every element comes from 16 holders.
  std::vector<Overlap> replicated =
      overlaps(shape, Layout{&src, {S(0), R}}, Layout{&dst, {S(1), S(0)}});
  total = 0;
  for (const Overlap &o : replicated)
    total += o.box.volume();
  EXPECT_EQ(total, 16 * 1000 * 1000);
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

TEST(CheckMeshTest, Valid) {
  EXPECT_EQ(checkMesh({1}, {0}), "");
  EXPECT_EQ(checkMesh({2, 2}, {7, 1, 9, 0}), "");
  EXPECT_EQ(checkMesh(Shape(8, 1), {3}), "");
}

TEST(CheckMeshTest, Rank) {
  EXPECT_EQ(checkMesh({}, {}), "mesh rank must be between 1 and 8, got 0");
  EXPECT_EQ(checkMesh(Shape(9, 1), {0}),
            "mesh rank must be between 1 and 8, got 9");
}

TEST(CheckMeshTest, Dims) {
  EXPECT_EQ(checkMesh({2, 0}, {}), "mesh dimension 1 must be positive, got 0");
  EXPECT_EQ(checkMesh({-3}, {}), "mesh dimension 0 must be positive, got -3");
}

TEST(CheckMeshTest, TooManyRanks) {
  EXPECT_EQ(checkMesh({4096, 4096, 2}, {}),
            "mesh shape [4096, 4096, 2] has more than 16777216 ranks");
  // The product would overflow int64; it is never formed.
  int64_t big = int64_t(1) << 40;
  EXPECT_EQ(checkMesh({big, big}, {}),
            "mesh shape [1099511627776, 1099511627776] has more than 16777216 "
            "ranks");
  // Exactly 2^24 ranks is allowed.
  EXPECT_EQ(checkMesh({4096, 4096}, {}),
            "mesh shape [4096, 4096] needs 16777216 ranks, got 0");
}

TEST(CheckMeshTest, RankCount) {
  EXPECT_EQ(checkMesh({2, 4}, {0, 1, 2, 3, 4, 5, 6}),
            "mesh shape [2, 4] needs 8 ranks, got 7");
  EXPECT_EQ(checkMesh({2}, {0, 1, 2}), "mesh shape [2] needs 2 ranks, got 3");
}

TEST(CheckMeshTest, NegativeRank) {
  EXPECT_EQ(checkMesh({4}, {0, 1, 2, -1}), "rank -1 at index 3 is negative");
}

TEST(CheckMeshTest, DuplicateRank) {
  EXPECT_EQ(checkMesh({6}, {0, 1, 5, 3, 4, 5}),
            "rank 5 appears twice (indices 2 and 5)");
  // Sorted ranks take another path than unsorted ones.
  EXPECT_EQ(checkMesh({4}, {0, 1, 1, 2}),
            "rank 1 appears twice (indices 1 and 2)");
}

TEST(CheckMeshTest, FirstProblemByIndex) {
  // The problem at the lowest index is the one reported: the earliest
  // repeat, named with the first index of its rank...
  EXPECT_EQ(checkMesh({6}, {7, 3, 9, 3, 7, 7}),
            "rank 3 appears twice (indices 1 and 3)");
  // ...unless a negative rank comes before it.
  EXPECT_EQ(checkMesh({4}, {2, -1, 2, -1}), "rank -1 at index 1 is negative");
  EXPECT_EQ(checkMesh({4}, {2, 2, -1, 3}),
            "rank 2 appears twice (indices 0 and 1)");
}

TEST(CheckTensorShapeTest, Valid) {
  EXPECT_EQ(checkTensorShape({}), "");
  EXPECT_EQ(checkTensorShape({0}), "");
  EXPECT_EQ(checkTensorShape(Shape(8, 2)), "");
  // Exactly 2^62 elements, and an empty tensor whose other dims fit.
  EXPECT_EQ(checkTensorShape({int64_t(1) << 31, int64_t(1) << 31}), "");
  EXPECT_EQ(checkTensorShape({int64_t(1) << 62}), "");
  EXPECT_EQ(checkTensorShape({0, int64_t(1) << 31, int64_t(1) << 31}), "");
}

TEST(CheckTensorShapeTest, Rank) {
  EXPECT_EQ(checkTensorShape(Shape(9, 1)),
            "tensor rank must be between 0 and 8, got 9");
}

TEST(CheckTensorShapeTest, NegativeDim) {
  EXPECT_EQ(checkTensorShape({1, 2, -4}), "dimension 2 is negative (-4)");
}

TEST(CheckTensorShapeTest, TooManyElements) {
  EXPECT_EQ(checkTensorShape({int64_t(1) << 31, int64_t(1) << 31, 2}),
            "shape [2147483648, 2147483648, 2] has too many elements: its "
            "nonzero dimensions multiply to more than 2^62");
  EXPECT_EQ(checkTensorShape({std::numeric_limits<int64_t>::max()}),
            "shape [9223372036854775807] has too many elements: its nonzero "
            "dimensions multiply to more than 2^62");
  // Overflowing products are caught, and zero dims do not hide them.
  int64_t big = int64_t(1) << 40;
  EXPECT_NE(checkTensorShape({big, big}), "");
  EXPECT_NE(checkTensorShape({0, big, big}), "");
}

TEST(CheckPlacementsTest, Valid) {
  EXPECT_EQ(checkPlacements({R, S(1), S(1)}, 3, 2), "");
  EXPECT_EQ(checkPlacements({R}, 1, 0), "");
}

TEST(CheckPlacementsTest, Count) {
  EXPECT_EQ(checkPlacements({S(0)}, 2, 2),
            "expected 2 placements, one per mesh axis, got 1");
}

TEST(CheckPlacementsTest, DimOutOfRange) {
  EXPECT_EQ(checkPlacements({R, S(3)}, 2, 2),
            "placement 1 shards dimension 3 but the tensor has rank 2");
  EXPECT_EQ(checkPlacements({S(0)}, 1, 0),
            "placement 0 shards dimension 0 but the tensor has rank 0");
}

TEST(CheckPlacementsTest, InvalidDim) {
  EXPECT_EQ(checkPlacements({Placement{-5}}, 1, 2),
            "placement 0 has invalid dimension -5");
}

//===----------------------------------------------------------------------===//
// Randomized comparison with an element-wise simulation
//===----------------------------------------------------------------------===//

/// A random layout problem: a tensor shape and two layouts of it.
struct Case {
  Shape shape;
  Mesh srcMesh, dstMesh;
  Placements srcPlacements, dstPlacements;
};

/// Deterministic across standard libraries, unlike the distributions.
class Random {
public:
  explicit Random(uint32_t seed) : engine(seed) {}
  /// Uniform in [lo, hi].
  int64_t between(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(engine() % uint64_t(hi - lo + 1));
  }

private:
  std::mt19937 engine;
};

Shape randomTensorShape(Random &random) {
  Shape shape(random.between(0, 3));
  // Mostly small uneven extents, sometimes 0.
  for (int64_t &dim : shape)
    dim = random.between(0, 9) == 0 ? 0 : random.between(1, 7);
  return shape;
}

/// Up to 3 axes and 8 ranks, with distinct ranks drawn from 0..15 in a
/// random order.
Mesh randomMesh(Random &random) {
  Mesh mesh;
  do {
    mesh.shape.assign(random.between(1, 3), 0);
    for (int64_t &dim : mesh.shape)
      dim = random.between(1, 4);
  } while (mesh.size() > 8);
  Shape pool(16);
  for (int64_t i = 0; i < 16; ++i)
    pool[i] = i;
  for (int64_t i = 0; i < mesh.size(); ++i) {
    std::swap(pool[i], pool[random.between(i, 15)]);
    mesh.ranks.push_back(pool[i]);
  }
  return mesh;
}

Placements randomPlacements(Random &random, int64_t meshRank,
                            int64_t tensorRank) {
  Placements placements;
  for (int64_t axis = 0; axis < meshRank; ++axis) {
    bool shard = tensorRank > 0 && random.between(0, 2) != 0;
    placements.push_back(shard ? S(random.between(0, tensorRank - 1)) : R);
  }
  return placements;
}

Case randomCase(Random &random) {
  Case c;
  c.shape = randomTensorShape(random);
  c.srcMesh = randomMesh(random);
  c.dstMesh = randomMesh(random);
  int64_t rank = static_cast<int64_t>(c.shape.size());
  c.srcPlacements = randomPlacements(random, c.srcMesh.shape.size(), rank);
  c.dstPlacements = randomPlacements(random, c.dstMesh.shape.size(), rank);
  return c;
}

/// Row-major decoding of `linear` over `extents`, kept apart from
/// Mesh::coords so that the simulation shares no code with the model.
Shape decode(int64_t linear, const Shape &extents) {
  Shape result(extents.size());
  for (size_t i = extents.size(); i-- > 0;) {
    result[i] = linear % extents[i];
    linear /= extents[i];
  }
  return result;
}

int64_t product(const Shape &extents) {
  int64_t result = 1;
  for (int64_t extent : extents)
    result *= extent;
  return result;
}

/// Whether the rank at `meshCoords` holds the element at `index` by DTensor's
/// rule: walk the mesh axes; a Shard(d) axis of size k cuts the current
/// extent [lo, hi) of dim d into pieces of ceil(n / k) elements, and the
/// element stays on this rank only if its piece is the rank's coordinate.
bool simulateHolds(const Shape &shape, const Shape &meshShape,
                   const Placements &placements, const Shape &meshCoords,
                   const Shape &index) {
  Shape lo(shape.size(), 0);
  Shape hi = shape;
  for (size_t axis = 0; axis < placements.size(); ++axis) {
    if (placements[axis].isReplicate())
      continue;
    int64_t d = placements[axis].dim;
    int64_t k = meshShape[axis];
    int64_t pieceSize = (hi[d] - lo[d] + k - 1) / k;
    int64_t piece = (index[d] - lo[d]) / pieceSize;
    if (piece != meshCoords[axis])
      return false;
    int64_t start = lo[d] + piece * pieceSize;
    hi[d] = std::min(hi[d], start + pieceSize);
    lo[d] = start;
  }
  return true;
}

/// holds[r][e]: whether the rank at mesh index r holds element e (row-major).
std::vector<std::vector<bool>> simulate(const Shape &shape, const Mesh &mesh,
                                        const Placements &placements) {
  int64_t elements = product(shape);
  std::vector<std::vector<bool>> holds(mesh.ranks.size(),
                                       std::vector<bool>(elements));
  for (size_t r = 0; r < mesh.ranks.size(); ++r) {
    Shape meshCoords = decode(r, mesh.shape);
    for (int64_t e = 0; e < elements; ++e)
      holds[r][e] = simulateHolds(shape, mesh.shape, placements, meshCoords,
                                  decode(e, shape));
  }
  return holds;
}

bool boxHolds(const Box &b, const Shape &index) {
  for (size_t d = 0; d < index.size(); ++d)
    if (index[d] < b.offsets[d] || index[d] >= b.offsets[d] + b.sizes[d])
      return false;
  return true;
}

std::string describe(const Case &c) {
  std::string result = "shape " + fullBox(c.shape).str() + " src";
  for (const Placement &p : c.srcPlacements)
    result += " " + p.str();
  result += " dst";
  for (const Placement &p : c.dstPlacements)
    result += " " + p.str();
  return result;
}

/// localBox agrees element by element with the simulation.
void expectBoxesMatch(const Shape &shape, const Mesh &mesh,
                      const Placements &placements,
                      const std::vector<std::vector<bool>> &holds) {
  std::vector<Box> boxes = localBoxes(shape, mesh, placements);
  ASSERT_EQ(boxes.size(), mesh.ranks.size());
  for (size_t r = 0; r < boxes.size(); ++r) {
    EXPECT_TRUE(contains(fullBox(shape), boxes[r])) << boxes[r].str();
    for (size_t e = 0; e < holds[r].size(); ++e)
      EXPECT_EQ(boxHolds(boxes[r], decode(e, shape)), holds[r][e])
          << "mesh index " << r << " element " << e;
  }
}

/// overlaps lists exactly the pairs that share elements in the simulation,
/// in dst-then-src mesh order, each with the shared region.
void expectOverlapsMatch(const Case &c,
                         const std::vector<std::vector<bool>> &srcHolds,
                         const std::vector<std::vector<bool>> &dstHolds) {
  std::vector<Overlap> result =
      overlaps(c.shape, Layout{&c.srcMesh, c.srcPlacements},
               Layout{&c.dstMesh, c.dstPlacements});
  std::vector<Box> srcBoxes = localBoxes(c.shape, c.srcMesh, c.srcPlacements);
  std::vector<Box> dstBoxes = localBoxes(c.shape, c.dstMesh, c.dstPlacements);
  size_t next = 0;
  for (size_t j = 0; j < dstHolds.size(); ++j) {
    for (size_t i = 0; i < srcHolds.size(); ++i) {
      int64_t shared = 0;
      for (size_t e = 0; e < srcHolds[i].size(); ++e)
        shared += srcHolds[i][e] && dstHolds[j][e];
      if (shared == 0)
        continue;
      ASSERT_LT(next, result.size()) << "missing src " << i << " dst " << j;
      const Overlap &o = result[next++];
      EXPECT_EQ(o.srcRank, c.srcMesh.ranks[i]);
      EXPECT_EQ(o.dstRank, c.dstMesh.ranks[j]);
      // Within both boxes and as large as the shared set: exactly it.
      EXPECT_TRUE(contains(srcBoxes[i], o.box)) << o.box.str();
      EXPECT_TRUE(contains(dstBoxes[j], o.box)) << o.box.str();
      EXPECT_EQ(o.box.volume(), shared) << o.box.str();
    }
  }
  EXPECT_EQ(next, result.size()) << "unexpected overlaps";
}

TEST(RandomizedTest, MatchesElementwiseSimulation) {
  Random random(20240611);
  for (int iteration = 0; iteration < 400; ++iteration) {
    Case c = randomCase(random);
    SCOPED_TRACE("case " + std::to_string(iteration) + ": " + describe(c));
    ASSERT_EQ(checkTensorShape(c.shape), "");
    ASSERT_EQ(checkMesh(c.srcMesh.shape, c.srcMesh.ranks), "");
    ASSERT_EQ(checkMesh(c.dstMesh.shape, c.dstMesh.ranks), "");
    ASSERT_EQ(checkPlacements(c.srcPlacements, c.srcMesh.shape.size(),
                              c.shape.size()),
              "");
    ASSERT_EQ(checkPlacements(c.dstPlacements, c.dstMesh.shape.size(),
                              c.shape.size()),
              "");
    std::vector<std::vector<bool>> srcHolds =
        simulate(c.shape, c.srcMesh, c.srcPlacements);
    std::vector<std::vector<bool>> dstHolds =
        simulate(c.shape, c.dstMesh, c.dstPlacements);
    expectBoxesMatch(c.shape, c.srcMesh, c.srcPlacements, srcHolds);
    expectBoxesMatch(c.shape, c.dstMesh, c.dstPlacements, dstHolds);
    expectOverlapsMatch(c, srcHolds, dstHolds);
  }
}

/// The source mesh indices of one replica group: every combination of
/// coordinates on the shard axes, with the replicate axes fixed at `pick`.
std::set<int64_t> replicaGroup(const Mesh &mesh, const Placements &placements,
                               const Shape &pick) {
  std::set<int64_t> group;
  for (int64_t i = 0; i < mesh.size(); ++i) {
    Shape meshCoords = mesh.coords(i);
    bool inGroup = true;
    for (size_t axis = 0; axis < placements.size(); ++axis)
      inGroup &= placements[axis].isShard() || meshCoords[axis] == pick[axis];
    if (inGroup)
      group.insert(mesh.ranks[i]);
  }
  return group;
}

TEST(RandomizedTest, OneReplicaGroupTilesEachDestinationBox) {
  Random random(7);
  for (int iteration = 0; iteration < 300; ++iteration) {
    Case c = randomCase(random);
    SCOPED_TRACE("case " + std::to_string(iteration) + ": " + describe(c));
    Shape pick;
    for (int64_t dim : c.srcMesh.shape)
      pick.push_back(random.between(0, dim - 1));
    std::set<int64_t> group = replicaGroup(c.srcMesh, c.srcPlacements, pick);
    std::vector<Overlap> result =
        overlaps(c.shape, Layout{&c.srcMesh, c.srcPlacements},
                 Layout{&c.dstMesh, c.dstPlacements});
    std::vector<Box> dstBoxes = localBoxes(c.shape, c.dstMesh, c.dstPlacements);
    for (size_t j = 0; j < dstBoxes.size(); ++j) {
      std::vector<Box> pieces;
      for (const Overlap &o : result)
        if (o.dstRank == c.dstMesh.ranks[j] && group.count(o.srcRank))
          pieces.push_back(o.box);
      // Disjoint pieces within the box whose volumes add up to it cover it
      // exactly once.
      int64_t total = 0;
      for (size_t a = 0; a < pieces.size(); ++a) {
        EXPECT_TRUE(contains(dstBoxes[j], pieces[a])) << pieces[a].str();
        total += pieces[a].volume();
        for (size_t b = a + 1; b < pieces.size(); ++b)
          EXPECT_TRUE(intersect(pieces[a], pieces[b]).empty())
              << pieces[a].str() << " " << pieces[b].str();
      }
      EXPECT_EQ(total, dstBoxes[j].volume()) << "dst index " << j;
    }
  }
}

} // namespace
