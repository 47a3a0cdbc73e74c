//===- walk_test.cpp - Running, slicing and fusing strided walks ----------===//

#include "walk.h"

#include "executor_test_util.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <utility>
#include <vector>

namespace m2n::test {
namespace {

/// Where a walk reads and writes each byte it moves, in its order,
/// enumerated from the format's definition (not by the walker).
std::vector<std::pair<int64_t, int64_t>> bytesOf(const Walk &walk) {
  std::vector<std::pair<int64_t, int64_t>> bytes;
  size_t levels = walk.levels.size();
  std::vector<int64_t> index(levels, 0);
  for (;;) {
    int64_t from = walk.fromOffset, to = walk.toOffset;
    for (size_t k = 0; k < levels; ++k) {
      from += index[k] * walk.levels[k].fromStride;
      to += index[k] * walk.levels[k].toStride;
    }
    for (uint64_t b = 0; b < walk.runBytes; ++b)
      bytes.emplace_back(from + int64_t(b), to + int64_t(b));
    size_t k = levels;
    while (k > 0 && ++index[k - 1] == walk.levels[k - 1].count)
      index[--k] = 0;
    if (k == 0)
      return bytes;
  }
}

Walk walk(uint64_t runBytes, std::vector<WalkLevel> levels,
          int64_t fromOffset = 0, int64_t toOffset = 0) {
  Walk result;
  result.runBytes = runBytes;
  result.levels = std::move(levels);
  result.fromOffset = fromOffset;
  result.toOffset = toOffset;
  return result;
}

/// A walk of `levels` random levels (counts 1..4, signed strides), starting
/// where no byte it touches is negative.
Walk randomWalk(std::mt19937 &random, size_t levels) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(random);
  };
  Walk result = walk(static_cast<uint64_t>(pick(1, 5)), {});
  int64_t fromLow = 0, toLow = 0;
  for (size_t k = 0; k < levels; ++k) {
    WalkLevel level{pick(1, 4), pick(-40, 40), pick(-40, 40)};
    fromLow += std::min<int64_t>(0, (level.count - 1) * level.fromStride);
    toLow += std::min<int64_t>(0, (level.count - 1) * level.toStride);
    result.levels.push_back(level);
  }
  result.fromOffset = -fromLow;
  result.toOffset = -toLow;
  return result;
}

TEST(Walk, RunsEveryByteWhereTheFormatSays) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 200; ++trial) {
    // Distinct bytes of the source show where each lands; strides that
    // revisit a destination byte write it last in the walk's order, as
    // the enumeration does.
    Walk w = randomWalk(random, trial % 5);
    std::vector<std::pair<int64_t, int64_t>> bytes = bytesOf(w);
    int64_t fromEnd = 0, toEnd = 0;
    for (const auto &[from, to] : bytes) {
      fromEnd = std::max(fromEnd, from + 1);
      toEnd = std::max(toEnd, to + 1);
    }
    std::vector<uint8_t> source(fromEnd), expected(toEnd, 0xee),
        actual(toEnd, 0xee);
    std::iota(source.begin(), source.end(), uint8_t(1));
    for (const auto &[from, to] : bytes)
      expected[to] = source[from];
    runWalk(w, source.data(), actual.data());
    ASSERT_EQ(actual, expected) << "trial " << trial;
  }
}

TEST(SliceWalk, MovesExactlyTheRangeInOrder) {
  std::mt19937 random(11);
  for (int trial = 0; trial < 300; ++trial) {
    Walk w = randomWalk(random, trial % 6);
    std::vector<std::pair<int64_t, int64_t>> all = bytesOf(w);
    uint64_t begin =
        std::uniform_int_distribution<uint64_t>(0, all.size() - 1)(random);
    uint64_t length =
        std::uniform_int_distribution<uint64_t>(1, all.size() - begin)(random);
    std::vector<Walk> pieces = sliceWalk(w, begin, length);
    EXPECT_LE(pieces.size(), 2 * w.levels.size() + 1);
    std::vector<std::pair<int64_t, int64_t>> sliced;
    for (const Walk &piece : pieces) {
      EXPECT_LE(piece.levels.size(), w.levels.size());
      std::vector<std::pair<int64_t, int64_t>> bytes = bytesOf(piece);
      sliced.insert(sliced.end(), bytes.begin(), bytes.end());
    }
    std::vector<std::pair<int64_t, int64_t>> expected(
        all.begin() + long(begin), all.begin() + long(begin + length));
    ASSERT_EQ(sliced, expected)
        << "trial " << trial << " bytes [" << begin << ", +" << length << ")";
  }
}

TEST(SliceWalk, KeepsAWholeWalkWhole) {
  Walk w = walk(8, {{3, 100, 8}, {2, 30, 24}});
  std::vector<Walk> pieces = sliceWalk(w, 0, w.bytes());
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(bytesOf(pieces[0]), bytesOf(w));
  EXPECT_EQ(pieces[0].levels.size(), 2u);
}

// Byte i goes from where `reader` reads its byte i to where `writer`
// writes its byte i.
std::vector<std::pair<int64_t, int64_t>> composed(const Walk &reader,
                                                  const Walk &writer) {
  std::vector<std::pair<int64_t, int64_t>> reads = bytesOf(reader),
                                           writes = bytesOf(writer), bytes;
  for (size_t i = 0; i < reads.size(); ++i)
    bytes.emplace_back(reads[i].first, writes[i].second);
  return bytes;
}

Walk fromRuns(const PlanRuns &runs) {
  Walk result =
      walk(runs.runBytes, {}, int64_t(runs.fromOffset), int64_t(runs.toOffset));
  for (size_t k = 0; k < runs.count.size(); ++k)
    result.levels.push_back(
        {runs.count[k], runs.fromStride[k], runs.toStride[k]});
  return result;
}

TEST(FuseWalks, FusesAPackAndAnUnpackOfTheSameBox) {
  // Every region of a tensor, packed from one shard and unpacked into
  // another, as the compiler writes them: both walks go through the box in
  // row-major order, so they always fuse.
  std::mt19937 random(3);
  for (int trial = 0; trial < 300; ++trial) {
    size_t rank = 1 + trial % 4;
    int64_t element = int64_t(1) << (trial % 3);
    Box tensor{std::vector<int64_t>(rank, 0), {}};
    Box from, to, region;
    auto pick = [&](int64_t lo, int64_t hi) {
      return std::uniform_int_distribution<int64_t>(lo, hi)(random);
    };
    for (size_t d = 0; d < rank; ++d) {
      int64_t extent = pick(1, 6);
      tensor.shape.push_back(extent);
      int64_t lo = pick(0, extent - 1), hi = pick(lo + 1, extent);
      region.offset.push_back(lo);
      region.shape.push_back(hi - lo);
      // Shards that hold the region, each extending past it differently.
      for (Box *shard : {&from, &to}) {
        int64_t start = pick(0, lo), end = pick(hi, extent);
        shard->offset.push_back(start);
        shard->shape.push_back(end - start);
      }
    }
    bool elementRuns = trial % 5 == 0;
    Walk pack = fromRuns(boxRuns(from, region, region, element, elementRuns));
    Walk unpack = fromRuns(boxRuns(region, to, region, element));
    std::optional<Walk> fused = fuseWalks(pack, unpack);
    ASSERT_TRUE(fused) << "trial " << trial;
    EXPECT_EQ(bytesOf(*fused), composed(pack, unpack)) << "trial " << trial;
    EXPECT_GE(fused->runBytes, std::min(pack.runBytes, unpack.runBytes));
  }
}

TEST(FuseWalks, TakesTheFewestRunsBothSidesAllow) {
  // Columns 0:512 of 8 KiB rows, packed into 1 KiB runs, unpacked into a
  // contiguous shard: one walk of 512 runs of 1 KiB.
  Walk pack = walk(1024, {{512, 8192, 1024}});
  Walk unpack = walk(512 * 1024, {}, 0, 4096);
  std::optional<Walk> fused = fuseWalks(pack, unpack);
  ASSERT_TRUE(fused);
  EXPECT_EQ(fused->runBytes, 1024u);
  ASSERT_EQ(fused->levels.size(), 1u);
  EXPECT_EQ(fused->levels[0].count, 512);
  EXPECT_EQ(fused->levels[0].fromStride, 8192);
  EXPECT_EQ(fused->levels[0].toStride, 1024);
  EXPECT_EQ(fused->toOffset, 4096);
  // Contiguous on both sides, however each cuts its runs: one run.
  fused = fuseWalks(walk(6, {{4, 6, 6}}, 10), walk(4, {{6, 4, 4}}, 0, 20));
  ASSERT_TRUE(fused);
  EXPECT_EQ(fused->runBytes, 24u);
  EXPECT_TRUE(fused->levels.empty());
  EXPECT_EQ(fused->fromOffset, 10);
  EXPECT_EQ(fused->toOffset, 20);
}

TEST(FuseWalks, RefusesRunsThatDoNotNest) {
  // Runs of 6 bytes read into runs of 4: no single walk does it.
  EXPECT_FALSE(fuseWalks(walk(6, {{2, 8, 6}}), walk(4, {{3, 4, 5}})));
}

TEST(FuseWalks, MayNeedMoreLevelsThanARecordHas) {
  // Eight levels a side, counts 2, 4, 2, 4, ... on one and 4, 2, 4, 2, ...
  // on the other (innermost first), strides that never join: the fused
  // walk splits every level, 12 of 2.
  Walk reader = walk(1, {}), writer = walk(1, {});
  int64_t readSpan = 1, writeSpan = 1;
  for (int k = 0; k < 8; ++k) {
    int64_t readCount = k % 2 ? 4 : 2, writeCount = k % 2 ? 2 : 4;
    reader.levels.insert(reader.levels.begin(), {readCount, 3 * readSpan, 0});
    writer.levels.insert(writer.levels.begin(), {writeCount, 0, 5 * writeSpan});
    readSpan *= 3 * readCount;
    writeSpan *= 5 * writeCount;
  }
  std::optional<Walk> fused = fuseWalks(reader, writer);
  ASSERT_TRUE(fused);
  EXPECT_EQ(fused->levels.size(), 12u);
  EXPECT_LE(fused->levels.size(), kMaxWalkLevels);
  EXPECT_EQ(bytesOf(*fused), composed(reader, writer));
}

} // namespace
} // namespace m2n::test
