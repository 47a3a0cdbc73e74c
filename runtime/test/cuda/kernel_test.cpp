//===- kernel_test.cpp - The pack kernel on odd sizes and alignments ------===//

#include "device_world.h"

#include "cuda/pack_kernels.h"

#include <cstring>
#include <random>

namespace m2n::cuda {
namespace {

// A contiguous piece a walk moves.
struct Segment {
  int64_t from;
  int64_t to;
  uint64_t bytes;
  bool operator==(const Segment &other) const {
    return from == other.from && to == other.to && bytes == other.bytes;
  }
};

// What a walk moves, in walk order, with runs that continue each other on
// both sides joined: equal for walks that move the same bytes the same way.
std::vector<Segment> segments(const Walk &walk) {
  std::vector<Segment> out;
  uint64_t runs = 1;
  for (uint32_t l = 0; l < walk.levels; ++l)
    runs *= walk.count[l];
  for (uint64_t run = 0; run < runs; ++run) {
    uint64_t rest = run;
    int64_t from = walk.fromOffset, to = walk.toOffset;
    for (uint32_t l = walk.levels; l-- > 0;) {
      int64_t index = rest % walk.count[l];
      rest /= walk.count[l];
      from += index * walk.fromStride[l];
      to += index * walk.toStride[l];
    }
    if (!out.empty() && out.back().from + int64_t(out.back().bytes) == from &&
        out.back().to + int64_t(out.back().bytes) == to)
      out.back().bytes += walk.runBytes;
    else
      out.push_back({from, to, walk.runBytes});
  }
  return out;
}

Walk walkOf(uint64_t runBytes, std::vector<int64_t> count,
            std::vector<int64_t> fromStride, std::vector<int64_t> toStride,
            uint64_t fromOffset = 0, uint64_t toOffset = 0) {
  Walk walk;
  walk.runBytes = runBytes;
  walk.fromOffset = fromOffset;
  walk.toOffset = toOffset;
  walk.levels = static_cast<uint32_t>(count.size());
  for (uint32_t l = 0; l < walk.levels; ++l) {
    walk.count[l] = count[l];
    walk.fromStride[l] = fromStride[l];
    walk.toStride[l] = toStride[l];
  }
  return walk;
}

TEST(SimplifyWalk, DenseLevelsBecomeOneRun) {
  Walk walk = simplifyWalk(walkOf(8, {3, 4}, {32, 8}, {32, 8}));
  EXPECT_EQ(walk.levels, 0u);
  EXPECT_EQ(walk.runBytes, 96u);
  EXPECT_EQ(walk.runs, 1u);
}

TEST(SimplifyWalk, KeepsStridedLevelsAndDropsSingleOnes) {
  // Columns of a row-major matrix: nothing merges but the level of 1.
  Walk walk = simplifyWalk(walkOf(6, {1, 4}, {999, 12}, {5, 6}));
  EXPECT_EQ(walk.levels, 1u);
  EXPECT_EQ(walk.count[0], 4);
  EXPECT_EQ(walk.fromStride[0], 12);
  EXPECT_EQ(walk.runs, 4u);
}

TEST(SimplifyWalk, MergesNestedLevels) {
  // Two levels that nest densely on both sides (4 x 3 runs, strides 48/16
  // and 30/10) walk as one of 12.
  Walk walk = simplifyWalk(walkOf(4, {4, 3}, {48, 16}, {30, 10}));
  EXPECT_EQ(walk.levels, 1u);
  EXPECT_EQ(walk.count[0], 12);
  EXPECT_EQ(walk.fromStride[0], 16);
  EXPECT_EQ(walk.toStride[0], 10);
}

// Random walks of odd run lengths, offsets and strides (some negative),
// each writing its own region of `to`; reads may overlap.
struct RandomBatch {
  std::vector<Walk> walks;
  uint64_t fromBytes = 0;
  uint64_t toBytes = 0;
};

// Places a walk's side at `*cursor` with gaps and, per level, a random
// sign; returns the side's offset.
uint64_t placeSide(std::mt19937_64 &rng, const Walk &walk, int64_t *strides,
                   uint64_t *cursor) {
  int64_t extent = static_cast<int64_t>(walk.runBytes);
  for (uint32_t l = walk.levels; l-- > 0;) {
    int64_t stride = extent + static_cast<int64_t>(rng() % 9);
    extent = stride * (walk.count[l] - 1) + extent;
    strides[l] = stride;
  }
  uint64_t base = *cursor + rng() % 16;
  uint64_t offset = base;
  for (uint32_t l = 0; l < walk.levels; ++l)
    if (rng() % 4 == 0) {
      offset += strides[l] * (walk.count[l] - 1);
      strides[l] = -strides[l];
    }
  *cursor = base + extent + rng() % 32;
  return offset;
}

RandomBatch randomBatch(uint64_t seed, int walks) {
  static const uint64_t kRunBytes[] = {1,   2,    3,    5,    7,    8,   15,
                                       16,  17,   31,   64,   100,  511, 512,
                                       513, 1000, 4096, 8195, 20000};
  std::mt19937_64 rng(seed);
  RandomBatch batch;
  for (int i = 0; i < walks; ++i) {
    Walk walk;
    walk.from = 0;
    walk.to = 1;
    walk.runBytes = kRunBytes[rng() % std::size(kRunBytes)];
    walk.levels = static_cast<uint32_t>(rng() % 4);
    for (uint32_t l = 0; l < walk.levels; ++l)
      walk.count[l] = 1 + static_cast<int64_t>(rng() % 5);
    walk.fromOffset = placeSide(rng, walk, walk.fromStride, &batch.fromBytes);
    walk.toOffset = placeSide(rng, walk, walk.toStride, &batch.toBytes);
    batch.walks.push_back(walk);
  }
  // One long walk, many tiles long, from 3 bytes past alignment.
  Walk walk = walkOf(65536 + 16, {3, 5}, {0, 0}, {0, 0});
  walk.from = 0;
  walk.to = 1;
  walk.fromOffset = placeSide(rng, walk, walk.fromStride, &batch.fromBytes);
  walk.toOffset = placeSide(rng, walk, walk.toStride, &batch.toBytes);
  batch.walks.push_back(walk);
  return batch;
}

// splitmix64, eight bytes a step: quick even in unoptimised builds.
std::vector<uint8_t> randomBytes(uint64_t seed, uint64_t size) {
  std::vector<uint8_t> bytes(size);
  uint64_t state = seed;
  for (uint64_t at = 0; at < size; at += 8) {
    uint64_t x = (state += 0x9e3779b97f4a7c15ull);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    std::memcpy(bytes.data() + at, &x, std::min<uint64_t>(8, size - at));
  }
  return bytes;
}

// What `to` holds after the walks, byte by byte.
std::vector<uint8_t> reference(const RandomBatch &batch,
                               const std::vector<uint8_t> &from,
                               std::vector<uint8_t> to) {
  for (const Walk &walk : batch.walks)
    for (const Segment &segment : segments(walk))
      std::memcpy(to.data() + segment.to, from.data() + segment.from,
                  segment.bytes);
  return to;
}

TEST(SimplifyWalk, MovesTheSameBytes) {
  RandomBatch batch = randomBatch(7, 200);
  for (const Walk &walk : batch.walks)
    EXPECT_EQ(segments(simplifyWalk(walk)), segments(walk));
}

TEST(RunsTable, WalksStartAlignedAndTilesCoverThem) {
  RandomBatch batch = randomBatch(3, 50);
  RunsTableBuilder table;
  uint32_t index = table.addBatch(batch.walks, 132);
  RunsBatch runs = table.batch(index, table.image().data());
  ASSERT_EQ(runs.records, batch.walks.size());
  uint64_t moved = 0;
  for (uint32_t r = 0; r < runs.records; ++r) {
    EXPECT_EQ(runs.begins[r] % 16, 0u);
    EXPECT_GE(runs.begins[r + 1] - runs.begins[r],
              runs.walks[r].runs * runs.walks[r].runBytes);
    moved += runs.walks[r].runs * runs.walks[r].runBytes;
  }
  EXPECT_EQ(moved, runs.bytes);
  EXPECT_GE(runs.tiles << runs.tileShift, runs.begins[runs.records]);
  EXPECT_TRUE(table.batch(table.addBatch({}, 132), nullptr).empty());
}

// With `offset` bytes between the buffers' alignment and their bases.
void runOnHost(uint64_t seed, uint64_t offset) {
  RandomBatch batch = randomBatch(seed, 300);
  std::vector<uint8_t> from = randomBytes(seed + 1, batch.fromBytes + offset);
  std::vector<uint8_t> to = randomBytes(seed + 2, batch.toBytes + offset);
  std::vector<uint8_t> want(to.begin() + offset, to.end());
  want = reference(
      batch, std::vector<uint8_t>(from.begin() + offset, from.end()), want);
  RunsTableBuilder table;
  uint32_t index = table.addBatch(batch.walks, 1);
  uint8_t *bases[] = {from.data() + offset, to.data() + offset};
  emulateRuns(table.batch(index, table.image().data()), bases);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), to.begin() + offset));
}

TEST(PackKernel, RandomWalksOnHost) {
  for (uint64_t offset : {0, 1, 4, 8})
    runOnHost(11 + offset, offset);
}

::testing::AssertionResult runOnDevice(uint64_t seed, uint64_t offset) {
  RandomBatch batch = randomBatch(seed, 2000);
  std::vector<uint8_t> from = randomBytes(seed + 1, batch.fromBytes);
  std::vector<uint8_t> to = randomBytes(seed + 2, batch.toBytes);
  std::vector<uint8_t> want = reference(batch, from, to);
  RunsTableBuilder table;
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  uint32_t index = table.addBatch(batch.walks, sms);
  uint8_t *memory[3] = {}; // from, to, table
  uint8_t **bases = nullptr;
  uint64_t sizes[3] = {from.size() + offset, to.size() + offset,
                       table.image().size()};
  ::testing::AssertionResult ok = ::testing::AssertionSuccess();
  for (int i = 0; i < 3 && ok; ++i)
    ok = M2N_CUDA_OK(cudaMalloc(&memory[i], sizes[i]));
  if (ok)
    ok = M2N_CUDA_OK(cudaMalloc(&bases, 2 * sizeof(uint8_t *)));
  uint8_t *hostBases[] = {memory[0] + offset, memory[1] + offset};
  std::pair<void *, const void *> uploads[] = {
      {hostBases[0], from.data()},
      {hostBases[1], to.data()},
      {memory[2], table.image().data()},
      {bases, hostBases}};
  uint64_t uploadSizes[] = {from.size(), to.size(), table.image().size(),
                            sizeof(hostBases)};
  for (int i = 0; i < 4 && ok; ++i)
    ok = M2N_CUDA_OK(cudaMemcpy(uploads[i].first, uploads[i].second,
                                uploadSizes[i], cudaMemcpyHostToDevice));
  if (ok)
    ok = M2N_CUDA_OK(
        launchRuns(table.batch(index, memory[2]), bases, sms, nullptr));
  if (ok)
    ok = M2N_CUDA_OK(cudaDeviceSynchronize());
  std::vector<uint8_t> got(to.size());
  if (ok)
    ok = M2N_CUDA_OK(cudaMemcpy(got.data(), hostBases[1], got.size(),
                                cudaMemcpyDeviceToHost));
  for (uint8_t *pointer : memory)
    cudaFree(pointer);
  cudaFree(bases);
  if (ok && got != want) {
    uint64_t at =
        std::mismatch(got.begin(), got.end(), want.begin()).first - got.begin();
    ok = ::testing::AssertionFailure()
         << "first wrong byte " << at << " of " << got.size() << ": got "
         << int(got[at]) << ", want " << int(want[at]);
  }
  return ok;
}

TEST(PackKernel, RandomWalksOnGpu) {
  M2N_REQUIRE_GPU();
  for (uint64_t offset : {0, 1, 2, 8})
    EXPECT_TRUE(runOnDevice(101 + offset, offset)) << "offset " << offset;
}

} // namespace
} // namespace m2n::cuda
