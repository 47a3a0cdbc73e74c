//===- FuseTest.cpp - Tests of packing slices into messages ---------------===//

#include "m2n/Plan/Fuse.h"
#include "m2n/Plan/CostModel.h"
#include "m2n/Plan/Schedule.h"

#include "HandBuiltPlans.h"

#include "gtest/gtest.h"

#include <map>

using namespace m2n;
using namespace m2n::plan;
using namespace m2n::plan::testing;

namespace {

Message message(int64_t step, int64_t sender, int64_t receiver,
                std::vector<MessagePart> parts, int64_t bytes,
                bool zeroCopy = false) {
  return Message{step, sender, receiver, std::move(parts), bytes, zeroCopy};
}

std::string str(const Message &m) {
  std::string text = "step " + std::to_string(m.step) + " " +
                     std::to_string(m.sender) + "->" +
                     std::to_string(m.receiver) + " " +
                     std::to_string(m.bytes) + (m.zeroCopy ? " zc" : "") + " [";
  for (const MessagePart &p : m.parts)
    text += "(" + std::to_string(p.group) + "," + std::to_string(p.slice) +
            "," + std::to_string(p.memberBegin) + ".." +
            std::to_string(p.memberEnd) + ")";
  return text + "]";
}

void expectMessages(const Plan &plan, const std::vector<Message> &expected) {
  ASSERT_EQ(plan.messages.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_TRUE(plan.messages[i] == expected[i])
        << "message " << i << ": got " << str(plan.messages[i]) << ", expected "
        << str(expected[i]);
}

/// Ranks 0 and 1 each hold half of the columns of [rows, 8] F32 tensors,
/// which ranks 2 and 3 replicate. No remote slice is contiguous in its
/// destination buffer, so nothing goes zero-copy.
Plan columnsToReplicas(int64_t rows, int32_t members) {
  Plan plan = planWithMeshes(mesh({2}, {0, 1}), mesh({2}, {2, 3}));
  int32_t g = addGroup(plan, {rows, 8}, DType::F32, {Placement::shard(1)},
                       {Placement::replicate()}, members);
  addDirectSlices(plan, g);
  return plan;
}

TEST(Fuse, PacksMembersAndGroupsPerPair) {
  Plan plan = columnsToReplicas(4, 3);
  // A second group of one [2, 8] tensor: slices of 32 bytes.
  int32_t g = addGroup(plan, {2, 8}, DType::F32, {Placement::shard(1)},
                       {Placement::replicate()}, 1, "u");
  addDirectSlices(plan, g);
  // Group 0's slices: 0->2, 1->2, 0->3, 1->3, 64 bytes per member.
  FuseStats stats = fuse(plan, FuseOptions{1024});
  EXPECT_EQ(stats.messages, 4);
  EXPECT_EQ(stats.zeroCopyMessages, 0);
  EXPECT_EQ(stats.splitSlices, 0);
  expectMessages(plan, {message(0, 0, 2, {{0, 0, 0, 3}, {1, 0, 0, 1}}, 224),
                        message(0, 0, 3, {{0, 2, 0, 3}, {1, 2, 0, 1}}, 224),
                        message(0, 1, 2, {{0, 1, 0, 3}, {1, 1, 0, 1}}, 224),
                        message(0, 1, 3, {{0, 3, 0, 3}, {1, 3, 0, 1}}, 224)});
}

TEST(Fuse, SplitsMemberRunsAtTheBucket) {
  Plan plan = columnsToReplicas(4, 5);
  // 64 bytes per member; two members fill a 150-byte bucket.
  fuse(plan, FuseOptions{150});
  std::vector<Message> toRank2;
  for (const Message &m : plan.messages)
    if (m.sender == 0 && m.receiver == 2)
      toRank2.push_back(m);
  ASSERT_EQ(toRank2.size(), 3u);
  EXPECT_TRUE(toRank2[0] == message(0, 0, 2, {{0, 0, 0, 2}}, 128));
  EXPECT_TRUE(toRank2[1] == message(0, 0, 2, {{0, 0, 2, 4}}, 128));
  EXPECT_TRUE(toRank2[2] == message(0, 0, 2, {{0, 0, 4, 5}}, 64));
  EXPECT_EQ(plan.messages.size(), 12u);
}

TEST(Fuse, PairsWithinANodeTakeTheNodeBucket) {
  Plan plan = columnsToReplicas(4, 5);
  // Ranks 0-2 share a node, rank 3 is on another: 0->2 and 1->2 take the
  // 400-byte node bucket (all five 64-byte members at once), 0->3 and 1->3
  // the 150-byte bucket (two members at a time).
  FuseOptions options{150};
  options.nodeBucketBytes = 400;
  options.ranksPerNode = 3;
  fuse(plan, options);
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> bytes;
  for (const Message &m : plan.messages)
    bytes[{m.sender, m.receiver}].push_back(m.bytes);
  std::vector<int64_t> whole = {320}, packed = {128, 128, 64};
  EXPECT_EQ(bytes[std::make_pair(int64_t(0), int64_t(2))], whole);
  EXPECT_EQ(bytes[std::make_pair(int64_t(1), int64_t(2))], whole);
  EXPECT_EQ(bytes[std::make_pair(int64_t(0), int64_t(3))], packed);
  EXPECT_EQ(bytes[std::make_pair(int64_t(1), int64_t(3))], packed);

  // Without nodes, every pair takes the bucket.
  Plan flat = columnsToReplicas(4, 5);
  options.ranksPerNode = 0;
  fuse(flat, options);
  EXPECT_EQ(flat.messages.size(), 12u);
}

TEST(Fuse, SplitsSlicesLargerThanABucket) {
  // Slices of [10, 4] F32, 160 bytes; rows of 16 bytes. A 48-byte bucket
  // takes 3 rows: torch.chunk(10, 4) gives 3, 3, 3 and 1 rows.
  Plan plan = columnsToReplicas(10, 1);
  FuseStats stats = fuse(plan, FuseOptions{48});
  EXPECT_EQ(stats.splitSlices, 4);
  EXPECT_EQ(stats.zeroCopyMessages, 0);
  const std::vector<Slice> &slices = plan.groups[0].slices;
  ASSERT_EQ(slices.size(), 16u);
  EXPECT_TRUE(std::is_sorted(slices.begin(), slices.end(), sliceLess));
  EXPECT_EQ(slices[0], slice(0, 2, box({0, 0}, {3, 4})));
  EXPECT_EQ(slices[1], slice(0, 2, box({3, 0}, {3, 4})));
  EXPECT_EQ(slices[2], slice(0, 2, box({6, 0}, {3, 4})));
  EXPECT_EQ(slices[3], slice(0, 2, box({9, 0}, {1, 4})));
  EXPECT_EQ(slices[4], slice(1, 2, box({0, 4}, {3, 4})));
  // Each 48-byte piece fills a message; the 16-byte one goes alone.
  EXPECT_EQ(stats.messages, 16);
  EXPECT_TRUE(plan.messages[0] == message(0, 0, 2, {{0, 0, 0, 1}}, 48));
  EXPECT_TRUE(plan.messages[3] == message(0, 0, 2, {{0, 3, 0, 1}}, 16));
}

TEST(Fuse, SplitsAlongTheNextDimWhenOneRowIsTooLarge) {
  // Rank 1 takes the first half of the last dim of a [1, 2, 32] F32 tensor:
  // a [1, 2, 16] slice, two runs in rank 0's whole-tensor buffer, so it is
  // packed. Its outermost dim longer than 1 is dim 1, whose rows of 64
  // bytes exceed a 40-byte bucket; each row splits in two.
  Plan plan = planWithMeshes(mesh({1}, {0}), mesh({2}, {1, 2}));
  addGroup(plan, {1, 2, 32}, DType::F32, {Placement::replicate()},
           {Placement::shard(2)});
  addDirectSlices(plan, 0);
  FuseStats stats = fuse(plan, FuseOptions{40});
  EXPECT_EQ(stats.splitSlices, 2);
  const std::vector<Slice> &slices = plan.groups[0].slices;
  ASSERT_EQ(slices.size(), 8u);
  EXPECT_EQ(slices[0].box, box({0, 0, 0}, {1, 1, 8}));
  EXPECT_EQ(slices[1].box, box({0, 0, 8}, {1, 1, 8}));
  EXPECT_EQ(slices[2].box, box({0, 1, 0}, {1, 1, 8}));
  EXPECT_EQ(slices[3].box, box({0, 1, 8}, {1, 1, 8}));
  // Each piece is one run on both sides and 32 >= 40 / 2 bytes.
  EXPECT_EQ(stats.zeroCopyMessages, 8);
}

TEST(Fuse, ZeroCopySlicesLargerThanABucketGoInPieces) {
  // The whole [1, 2, 16] F32 tensor is one run on both sides and needs no
  // staging, but in one message it could neither spread over steps nor be
  // forwarded piece by piece: it goes as four zero-copy pieces of 32 bytes.
  Plan plan = planWithMeshes(mesh({1}, {0}), mesh({1}, {1}));
  addGroup(plan, {1, 2, 16}, DType::F32, {Placement::replicate()},
           {Placement::replicate()});
  addDirectSlices(plan, 0);
  FuseStats stats = fuse(plan, FuseOptions{40});
  EXPECT_EQ(stats.splitSlices, 1);
  EXPECT_EQ(stats.zeroCopyMessages, 4);
  expectMessages(plan, {message(0, 0, 1, {{0, 0, 0, 1}}, 32, true),
                        message(0, 0, 1, {{0, 1, 0, 1}}, 32, true),
                        message(0, 0, 1, {{0, 2, 0, 1}}, 32, true),
                        message(0, 0, 1, {{0, 3, 0, 1}}, 32, true)});
}

TEST(Fuse, SplitPiecesSortAmongOtherSlices) {
  // Rank 0 sends rank 1 column 0 of rows 0..3 and the element (1, 1); the
  // column splits into rows 0..1 and 2..3, which sort around (1, 1).
  Plan plan = planWithMeshes(mesh({1}, {0}), mesh({1}, {1}));
  addGroup(plan, {4, 2}, DType::F32, {Placement::replicate()},
           {Placement::replicate()});
  plan.groups[0].slices = {slice(0, 1, box({0, 0}, {4, 1})),
                           slice(0, 1, box({1, 1}, {1, 1}))};
  fuse(plan, FuseOptions{8});
  EXPECT_EQ(plan.groups[0].slices,
            (std::vector<Slice>{slice(0, 1, box({0, 0}, {2, 1})),
                                slice(0, 1, box({1, 1}, {1, 1})),
                                slice(0, 1, box({2, 0}, {2, 1}))}));
}

TEST(Fuse, ZeroCopyNeedsContiguityAndHalfABucket) {
  // Rows of [8, 8] F32 split over ranks 0 and 1 (128 bytes each), gathered
  // on rank 2 (contiguous: whole rows) and split by columns on rank 3 (not
  // contiguous).
  Plan plan = planWithMeshes(mesh({2}, {0, 1}), mesh({1}, {2}));
  plan.meshes.push_back(mesh({2}, {3, 4}));
  plan.meshNames.push_back("cols");
  addGroup(plan, {8, 8}, DType::F32, {Placement::shard(0)},
           {Placement::replicate()}, /*members=*/2);
  addDirectSlices(plan, 0);
  addGroup(plan, {8, 8}, DType::F32, {Placement::shard(0)},
           {Placement::shard(1)}, /*members=*/1, "c");
  plan.groups[1].dst.mesh = 2;
  addDirectSlices(plan, 1);

  FuseStats stats = fuse(plan, FuseOptions{256});
  // Group 0: 128 >= 256 / 2 and contiguous: one message per member.
  // Group 1: [4, 4] boxes, 64 bytes, contiguous in neither buffer.
  EXPECT_EQ(stats.zeroCopyMessages, 4);
  expectMessages(plan, {message(0, 0, 2, {{0, 0, 0, 1}}, 128, true),
                        message(0, 0, 2, {{0, 0, 1, 2}}, 128, true),
                        message(0, 0, 3, {{1, 0, 0, 1}}, 64),
                        message(0, 0, 4, {{1, 2, 0, 1}}, 64),
                        message(0, 1, 2, {{0, 1, 0, 1}}, 128, true),
                        message(0, 1, 2, {{0, 1, 1, 2}}, 128, true),
                        message(0, 1, 3, {{1, 1, 0, 1}}, 64),
                        message(0, 1, 4, {{1, 3, 0, 1}}, 64)});

  // Under half a bucket, contiguous slices are packed.
  fuse(plan, FuseOptions{512});
  EXPECT_TRUE(plan.messages.front() == message(0, 0, 2, {{0, 0, 0, 2}}, 256));
}

TEST(Fuse, ForwardedSlicesReadTheDestinationBuffer) {
  // Rank 1 forwards rows 0..1 of a [4, 4] tensor it received to rank 2;
  // its destination buffer holds the whole tensor, its source buffer only
  // column 0 (the source layout gives each of four ranks a column).
  Plan plan = planWithMeshes(mesh({4}, {1, 0, 5, 6}), mesh({2}, {1, 2}));
  addGroup(plan, {4, 4}, DType::F32, {Placement::shard(1)},
           {Placement::replicate()});
  Slice forward = slice(1, 2, box({0, 0}, {2, 4}), 1, Origin::Destination);
  plan.groups[0].slices = {forward};
  fuse(plan, FuseOptions{64});
  expectMessages(plan, {message(1, 1, 2, {{0, 0, 0, 1}}, 32, true)});
  // Read from the source buffer, the same box would not be contiguous.
  plan.groups[0].slices[0].origin = Origin::Source;
  fuse(plan, FuseOptions{64});
  expectMessages(plan, {message(1, 1, 2, {{0, 0, 0, 1}}, 32)});
}

TEST(Fuse, LocalCopiesStayOutAndRoundsBecomeSteps) {
  Plan plan = planWithMeshes(mesh({1}, {0}), mesh({2}, {0, 1}));
  addGroup(plan, {4, 4}, DType::F32, {Placement::replicate()},
           {Placement::shard(0)});
  plan.groups[0].slices = {slice(0, 0, box({0, 0}, {2, 4})),
                           slice(0, 1, box({2, 0}, {1, 4})),
                           slice(0, 1, box({3, 0}, {1, 4}), 2)};
  plan.numSteps = 7;
  FuseStats stats = fuse(plan, FuseOptions{1024});
  EXPECT_EQ(stats.messages, 2);
  expectMessages(plan, {message(0, 0, 1, {{0, 1, 0, 1}}, 16),
                        message(2, 0, 1, {{0, 2, 0, 1}}, 16)});
  EXPECT_EQ(plan.numSteps, 0);
}

TEST(Fuse, ElementsLargerThanTheBucketGoAlone) {
  // Rank 1 takes column 0 of a [2, 2] F64 tensor: two runs of one 8-byte
  // element in rank 0's buffer, so the slice is packed and splits into
  // its elements.
  Plan plan = planWithMeshes(mesh({1}, {0}), mesh({2}, {1, 2}));
  addGroup(plan, {2, 2}, DType::F64, {Placement::replicate()},
           {Placement::shard(1)});
  addDirectSlices(plan, 0);
  // A bucket below one byte counts as one byte.
  FuseStats stats = fuse(plan, FuseOptions{0});
  EXPECT_EQ(stats.splitSlices, 2);
  expectMessages(plan, {message(0, 0, 1, {{0, 0, 0, 1}}, 8, true),
                        message(0, 0, 1, {{0, 1, 0, 1}}, 8, true),
                        message(0, 0, 2, {{0, 2, 0, 1}}, 8, true),
                        message(0, 0, 2, {{0, 3, 0, 1}}, 8, true)});
}

TEST(Fuse, ChunksCutPairsAndEachForwardTakesOneChunkOfEveryRoot) {
  // Ranks 0 and 1 hold rows 0..1 and 2..3 of four [4, 8] F32 tensors;
  // rank 2 receives both halves and forwards them to rank 3. Each member's
  // half is 64 bytes, each pair's 256 bytes per root.
  Plan plan = planWithMeshes(mesh({2}, {0, 1}), mesh({2}, {2, 3}));
  addGroup(plan, {4, 8}, DType::F32, {Placement::shard(0)},
           {Placement::replicate()}, /*members=*/4);
  Box top = box({0, 0}, {2, 8}), bottom = box({2, 0}, {2, 8});
  plan.groups[0].slices = {slice(0, 2, top), slice(1, 2, bottom),
                           slice(2, 3, top, 1, Origin::Destination),
                           slice(2, 3, bottom, 1, Origin::Destination)};
  // Without chunks, a message per pair; the forward root after root, and
  // closed where the bytes of the next message that brought them begin (a
  // quarter of the bucket is in it), so that each waits on one.
  fuse(plan, FuseOptions{1024});
  expectMessages(plan, {message(0, 0, 2, {{0, 0, 0, 4}}, 256),
                        message(0, 1, 2, {{0, 1, 0, 4}}, 256),
                        message(1, 2, 3, {{0, 2, 0, 4}}, 256),
                        message(1, 2, 3, {{0, 3, 0, 4}}, 256)});
  // With a bucket four times larger, the root's bytes are few, and go on
  // with the next root's in one message.
  fuse(plan, FuseOptions{4096});
  expectMessages(plan,
                 {message(0, 0, 2, {{0, 0, 0, 4}}, 256),
                  message(0, 1, 2, {{0, 1, 0, 4}}, 256),
                  message(1, 2, 3, {{0, 2, 0, 4}, {0, 3, 0, 4}}, 512)});
  // In two chunks: each source pair sends its first two members, then the
  // others, and each forward passes on one chunk of both roots.
  FuseOptions chunked{1024};
  chunked.pairChunks = 2;
  fuse(plan, chunked);
  expectMessages(plan,
                 {message(0, 0, 2, {{0, 0, 0, 2}}, 128),
                  message(0, 0, 2, {{0, 0, 2, 4}}, 128),
                  message(0, 1, 2, {{0, 1, 0, 2}}, 128),
                  message(0, 1, 2, {{0, 1, 2, 4}}, 128),
                  message(1, 2, 3, {{0, 2, 0, 2}, {0, 3, 0, 2}}, 256),
                  message(1, 2, 3, {{0, 2, 2, 4}, {0, 3, 2, 4}}, 256)});
}

TEST(Fuse, ForScheduleTriesTheNodeBucketWithoutForwards) {
  // Four FSDP ranks that serve as TP4 on one node: each passes every other
  // a quarter of its rows, 96 MiB a pair over NVLink, with no forwards. In
  // messages sized for a NIC each pays a latency that is a tenth of its
  // time at the node's bandwidth; the node's bucket sends each pair's
  // bytes in one message.
  CostModel model;
  auto colocated = [] {
    Plan plan =
        planWithMeshes(mesh({4}, rankRange(0, 4)), mesh({4}, rankRange(0, 4)));
    addGroup(plan, {8192, 4096}, DType::BF16, {Placement::shard(0)},
             {Placement::shard(1)}, /*members=*/24);
    addDirectSlices(plan, 0);
    return plan;
  };
  FuseOptions uniform = modelBuckets(model, false);
  FuseOptions nodes = modelBuckets(model, true);
  ScheduleOptions options;
  options.model = &model;
  Plan plan = colocated(), nicSized = colocated();
  fuse(nicSized, uniform);
  ASSERT_TRUE(static_cast<bool>(schedule(nicSized, options)));
  fuseForSchedule(plan, nodes, options);
  ASSERT_TRUE(static_cast<bool>(schedule(plan, options)));
  int64_t largest = 0;
  for (const Message &m : plan.messages)
    largest = std::max(largest, m.bytes);
  EXPECT_GT(largest, uniform.bucketBytes);
  EXPECT_EQ(plan.messages.size(), 12u); // one message per pair
  EXPECT_LT(plan.messages.size(), nicSized.messages.size());
  EXPECT_LT(model.cost(plan).predictedSeconds,
            model.cost(nicSized).predictedSeconds);
}

TEST(Fuse, IsDeterministic) {
  Plan a = columnsToReplicas(10, 3);
  Plan b = a;
  fuse(a, FuseOptions{100});
  fuse(b, FuseOptions{100});
  ASSERT_EQ(a.messages.size(), b.messages.size());
  for (size_t i = 0; i < a.messages.size(); ++i)
    EXPECT_TRUE(a.messages[i] == b.messages[i]);
  EXPECT_EQ(a.groups[0].slices, b.groups[0].slices);
}

} // namespace
