//===- RelayTest.cpp - Tests of forwarding among destination ranks --------===//

#include "m2n/Plan/Relay.h"

#include "m2n/Plan/Fuse.h"
#include "m2n/Plan/Schedule.h"

#include "HandBuiltPlans.h"

#include "llvm/ADT/DenseMap.h"

#include "gtest/gtest.h"

#include <numeric>
#include <map>
#include <set>

using namespace m2n;
using namespace m2n::plan;
using namespace m2n::plan::testing;

namespace {

constexpr int64_t kMiB = 1 << 20;

/// What Plan.h requires of slices, relays included: slices sorted; each
/// source slice within its sender's source box; the slices each receiver
/// gets tile its destination box; each forward sends, from its destination
/// box, bytes that all reached its sender in earlier rounds. Returns the
/// first problem, or "".
std::string checkSlices(const Plan &plan) {
  for (const TransferGroup &group : plan.groups) {
    if (!std::is_sorted(group.slices.begin(), group.slices.end(), sliceLess))
      return "slices not sorted";
    std::map<int64_t, std::vector<const Slice *>> received;
    for (const Slice &s : group.slices) {
      received[s.receiver].push_back(&s);
      if (s.origin == Origin::Source &&
          !contains(sourceBox(plan, group, s.sender), s.box))
        return "source slice outside its sender's box: " + s.box.str();
    }
    for (const Slice &s : group.slices) {
      if (s.origin != Origin::Destination)
        continue;
      if (s.round < 1 ||
          !contains(destinationBox(plan, group, s.sender), s.box))
        return "bad forward " + s.box.str();
      // What reaches a rank never overlaps, so the earlier arrivals cover
      // the forward when their overlaps with it add up to it.
      int64_t arrived = 0;
      for (const Slice *in : received[s.sender])
        if (in->round < s.round)
          arrived += intersect(in->box, s.box).volume();
      if (arrived != s.box.volume())
        return "rank " + std::to_string(s.sender) + " forwards " + s.box.str() +
               " before receiving it";
    }
    const Mesh &dst = plan.meshes[group.dst.mesh];
    for (int64_t rank : dst.ranks) {
      int64_t volume = 0;
      const std::vector<const Slice *> &in = received[rank];
      for (size_t i = 0; i < in.size(); ++i) {
        volume += in[i]->box.volume();
        for (size_t j = 0; j < i; ++j)
          if (!intersect(in[i]->box, in[j]->box).empty())
            return "rank " + std::to_string(rank) + " receives " +
                   in[i]->box.str() + " twice";
      }
      if (volume != destinationBox(plan, group, rank).volume())
        return "rank " + std::to_string(rank) + " misses bytes";
    }
  }
  return "";
}

/// Checks that every forward travels in a later step than the messages that
/// brought its bytes to the sender. Returns the first problem, or "".
std::string checkForwardSteps(const Plan &plan) {
  // (group, slice, member) -> step.
  std::map<std::tuple<int32_t, int32_t, int32_t>, int64_t> stepOf;
  for (const Message &m : plan.messages)
    for (const MessagePart &p : m.parts)
      for (int32_t member = p.memberBegin; member < p.memberEnd; ++member)
        stepOf[{p.group, p.slice, member}] = m.step;
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const std::vector<Slice> &slices = plan.groups[g].slices;
    for (size_t s = 0; s < slices.size(); ++s) {
      if (slices[s].origin != Origin::Destination)
        continue;
      for (int32_t m = 0;
           m < static_cast<int32_t>(plan.groups[g].members.size()); ++m) {
        bool before = true;
        for (size_t t = 0; t < slices.size(); ++t)
          // Local copies come before every step.
          if (slices[t].receiver == slices[s].sender &&
              !slices[t].isLocalCopy() &&
              intersects(slices[t].box, slices[s].box))
            before &= stepOf.at({g, t, m}) < stepOf.at({g, s, m});
        if (!before)
          return "forward " + slices[s].box.str() + " comes too early";
      }
    }
  }
  return "";
}

/// The plan's cost after fusion with the default bucket and scheduling by
/// `model` in a 1 GiB staging budget.
PlanCost scheduledCost(Plan plan, const CostModel &model) {
  fuse(plan, FuseOptions{model.defaultBucketBytes()});
  ScheduleOptions options;
  options.model = &model;
  llvm::Expected<ScheduleStats> stats = schedule(plan, options);
  EXPECT_TRUE(static_cast<bool>(stats));
  if (!stats)
    llvm::consumeError(stats.takeError());
  EXPECT_EQ(checkForwardSteps(plan), "");
  return model.cost(plan);
}

/// Bytes sent from source shards, by rank.
/// The default model's time for `plan` fused with its default bucket,
/// unscheduled (a step per round).
double fusedSeconds(const Plan &plan) {
  CostModel model;
  return model.predictedSeconds(
      fusedMessages(plan, FuseOptions{model.defaultBucketBytes()}));
}

std::map<int64_t, int64_t> sourceBytesBySender(const Plan &plan) {
  std::map<int64_t, int64_t> bytes;
  for (const TransferGroup &group : plan.groups)
    for (const Slice &s : group.slices)
      if (!s.isLocalCopy() && s.origin == Origin::Source)
        bytes[s.sender] +=
            sliceBytes(group, s) * static_cast<int64_t>(group.members.size());
  return bytes;
}

/// For each receiver of group 0, the ranks it receives from.
std::map<int64_t, std::set<int64_t>> sendersOf(const Plan &plan) {
  std::map<int64_t, std::set<int64_t>> senders;
  for (const Slice &s : plan.groups[0].slices)
    if (!s.isLocalCopy())
      senders[s.receiver].insert(s.sender);
  return senders;
}

/// One `bytes`-sized BF16 tensor [rows, 4096] on rank `source`, replicated
/// on `receivers`, sent directly from the source to each.
Plan broadcast(int64_t source, std::vector<int64_t> receivers, int64_t bytes,
               int32_t members = 1) {
  int64_t count = static_cast<int64_t>(receivers.size());
  Plan plan =
      planWithMeshes(mesh({1}, {source}), mesh({count}, std::move(receivers)));
  int32_t g =
      addGroup(plan, {bytes / (2 * 4096), 4096}, DType::BF16,
               {Placement::replicate()}, {Placement::replicate()}, members);
  addDirectSlices(plan, g);
  return plan;
}

TEST(Relay, OneSourceToSixteenReplicasSendsTheRegionOnce) {
  // Rank 0 on node 0 holds 256 MiB that ranks 8..23 (nodes 1 and 2) all
  // need: directly, the source's NIC carries it 16 times.
  Plan direct = broadcast(0, rankRange(8, 16), 256 * kMiB);
  CostModel model;
  Plan plan = direct;
  RelayStats stats = relay(plan, model, RelayOptions());
  EXPECT_EQ(checkSlices(plan), "");
  EXPECT_EQ(stats.relayedRegions, 1);
  EXPECT_EQ(stats.sourceSendsSaved, 15);
  EXPECT_LT(fusedSeconds(plan), fusedSeconds(direct) / 8);

  // An exchange: parts of the region, each sent once from the source to its
  // owner; the owner passes it within its node and to one entry of the
  // other node, which passes it within that node.
  EXPECT_EQ(stats.rounds, 3);
  EXPECT_EQ(sourceBytesBySender(plan),
            (std::map<int64_t, int64_t>{{0, 256 * kMiB}}));
  // Every receiver gets parts from several others.
  for (const auto &[receiver, from] : sendersOf(plan))
    EXPECT_GE(from.size(), 4u) << receiver;
  int64_t crossing = 0;
  for (const Slice &s : plan.groups[0].slices)
    if (s.origin == Origin::Destination && !model.sameNode(s.sender, s.receiver))
      crossing += s.box.volume() * 2;
  // Each part crosses to the other node once.
  EXPECT_EQ(crossing, 256 * kMiB);

  PlanCost before = scheduledCost(direct, model);
  PlanCost after = scheduledCost(plan, model);
  EXPECT_EQ(before.sendBytes[0], 16 * 256 * kMiB);
  EXPECT_EQ(after.sendBytes[0], 256 * kMiB);
  // The bound: 256 MiB over the source's 46 GB/s NIC, 5.8 ms, plus a
  // message's latency and a step.
  EXPECT_DOUBLE_EQ(after.lowerBoundSeconds, 30e-6 + 256 * kMiB / 46e9);
  EXPECT_DOUBLE_EQ(before.lowerBoundSeconds, after.lowerBoundSeconds);
  EXPECT_GT(before.predictedSeconds, 15 * before.lowerBoundSeconds);
  // One region alone pipelines only as finely as its parts, and each part
  // pays a latency: within 1.3x, where the direct plan takes 16x.
  EXPECT_LT(after.predictedSeconds, 1.3 * after.lowerBoundSeconds);
}

TEST(Relay, NoRelayWhenTheReceiversAreBusiest) {
  // Ranks 0 and 1 both hold the 64 MiB tensor; each sends it to one of
  // ranks 2 and 3, which must also send 128 MiB of their own to rank 4.
  // Forwarding would only load the busiest senders more.
  Plan plan = planWithMeshes(mesh({2}, {0, 1}), mesh({2}, {2, 3}));
  addGroup(plan, {8192, 4096}, DType::BF16, {Placement::replicate()},
           {Placement::replicate()});
  plan.groups[0].slices = {slice(0, 2, box({0, 0}, {8192, 4096})),
                           slice(1, 3, box({0, 0}, {8192, 4096}))};
  plan.meshes.push_back(mesh({2}, {2, 3}));
  plan.meshes.push_back(mesh({1}, {4}));
  plan.meshNames = {"a", "b", "c", "d"};
  int32_t own = addGroup(plan, {16384, 4096}, DType::BF16,
                         {Placement::shard(0)}, {Placement::replicate()}, 1,
                         "u");
  plan.groups[own].src.mesh = 2;
  plan.groups[own].dst.mesh = 3;
  plan.groups[own].slices = {slice(2, 4, box({0, 0}, {8192, 4096})),
                             slice(3, 4, box({8192, 0}, {8192, 4096}))};
  Plan original = plan;
  RelayStats stats = relay(plan, CostModel(), RelayOptions());
  EXPECT_EQ(stats.relayedRegions, 0);
  EXPECT_EQ(stats.rounds, 1);
  EXPECT_EQ(plan.groups[0].slices, original.groups[0].slices);
}

TEST(Relay, NoRelayForSmallRegions) {
  // 4 KiB to 16 replicas: sixteen latencies of a chain cost more than the
  // sixteen direct sends.
  Plan plan = broadcast(0, rankRange(8, 16), 4096);
  Plan original = plan;
  RelayStats stats = relay(plan, CostModel(), RelayOptions());
  EXPECT_EQ(stats.relayedRegions, 0);
  EXPECT_EQ(plan.groups[0].slices, original.groups[0].slices);
}

TEST(Relay, BusySenderOnAFastLinkRelays) {
  // Rank 0 alone sends 64 MiB to ranks 1 and 2 on its node: relayed, it
  // sends the region once, half to each, and they swap halves.
  Plan direct = broadcast(0, {1, 2}, 64 * kMiB);
  Plan plan = direct;
  RelayStats stats = relay(plan, CostModel(), RelayOptions());
  EXPECT_EQ(checkSlices(plan), "");
  EXPECT_EQ(stats.relayedRegions, 1);
  EXPECT_EQ(sourceBytesBySender(plan),
            (std::map<int64_t, int64_t>{{0, 64 * kMiB}}));
  std::map<int64_t, std::set<int64_t>> senders = sendersOf(plan);
  EXPECT_EQ(senders[1], (std::set<int64_t>{0, 2}));
  EXPECT_EQ(senders[2], (std::set<int64_t>{0, 1}));
  EXPECT_LT(fusedSeconds(plan), fusedSeconds(direct));

  // Along chains only, 0 -> 1 -> 2.
  Plan chain = direct;
  RelayOptions chains;
  chains.exchange = false;
  relay(chain, CostModel(), chains);
  EXPECT_EQ(checkSlices(chain), "");
  senders = sendersOf(chain);
  EXPECT_EQ(senders[1], std::set<int64_t>{0});
  EXPECT_EQ(senders[2], std::set<int64_t>{1});
}

/// Options that relay along chains and trees only.
RelayOptions chainsOnly() {
  RelayOptions options;
  options.exchange = false;
  return options;
}

TEST(Relay, ChainPipelinesChunksOfTheAskedSize) {
  // 64 MiB in chunks of 16 MiB (2048 rows each) along a chain of four
  // receivers, each on a node of its own: chunk c reaches the i-th
  // receiver in round c + i.
  Plan plan = broadcast(0, {8, 16, 24, 32}, 64 * kMiB);
  RelayOptions options = chainsOnly();
  options.chunkBytes = 16 * kMiB;
  RelayStats stats = relay(plan, CostModel(), options);
  EXPECT_EQ(checkSlices(plan), "");
  EXPECT_EQ(stats.rounds, 7);
  std::vector<Slice> expected;
  std::vector<int64_t> chain = {0, 8, 16, 24, 32};
  for (int32_t c = 0; c < 4; ++c)
    for (int32_t i = 0; i < 4; ++i)
      expected.push_back(slice(chain[i], chain[i + 1],
                               box({2048 * c, 0}, {2048, 4096}), c + i,
                               i == 0 ? Origin::Source : Origin::Destination));
  std::sort(expected.begin(), expected.end(), sliceLess);
  EXPECT_EQ(plan.groups[0].slices, expected);
}

TEST(Relay, FansOutWithinANode) {
  // The receivers share node 1; the source is on node 0. Only the first hop
  // crosses nodes, so the first receiver feeds the other three over NVLink
  // in the round after each chunk reaches it.
  Plan plan = broadcast(0, {8, 9, 10, 11}, 64 * kMiB);
  RelayOptions options = chainsOnly();
  options.chunkBytes = 16 * kMiB;
  RelayStats stats = relay(plan, CostModel(), options);
  EXPECT_EQ(checkSlices(plan), "");
  EXPECT_EQ(stats.rounds, 5);
  std::map<int64_t, std::set<int64_t>> senders = sendersOf(plan);
  EXPECT_EQ(senders[8], std::set<int64_t>{0});
  for (int64_t rank : {9, 10, 11})
    EXPECT_EQ(senders[rank], std::set<int64_t>{8});
  for (const Slice &s : plan.groups[0].slices)
    EXPECT_EQ(s.round, s.box.offsets[0] / 2048 + (s.sender == 8 ? 1 : 0));
}

TEST(Relay, TreeWhenAChainIsTooDeep) {
  // 32 receivers over four nodes cannot form a chain within 8 rounds.
  Plan plan = broadcast(0, rankRange(8, 32), 64 * kMiB);
  RelayOptions options = chainsOnly();
  options.maxRounds = 8;
  RelayStats stats = relay(plan, CostModel(), options);
  EXPECT_EQ(checkSlices(plan), "");
  EXPECT_EQ(stats.relayedRegions, 1);
  EXPECT_LE(stats.rounds, 8);
  EXPECT_EQ(sourceBytesBySender(plan),
            (std::map<int64_t, int64_t>{{0, 64 * kMiB}}));
  // Some receiver feeds several others.
  std::map<int64_t, int64_t> children;
  for (const auto &[receiver, from] : sendersOf(plan)) {
    ASSERT_EQ(from.size(), 1u);
    ++children[*from.begin()];
  }
  int64_t most = 0;
  for (const auto &[sender, count] : children)
    most = std::max(most, count);
  EXPECT_GT(most, 1);
  EXPECT_EQ(children[0], 1);

  // Far from the bound with so few rounds to pipeline in, but far better
  // than 32 sends from the source.
  PlanCost cost = scheduledCost(plan, CostModel());
  PlanCost direct =
      scheduledCost(broadcast(0, rankRange(8, 32), 64 * kMiB), CostModel());
  EXPECT_LT(cost.predictedSeconds, direct.predictedSeconds / 6);
}

TEST(Relay, ExchangeAmongThirtyTwoReceivers) {
  // The same 32 receivers with exchanges allowed: every part leaves the
  // source once and crosses to each other node once.
  Plan plan = broadcast(0, rankRange(8, 32), 64 * kMiB);
  RelayStats stats = relay(plan, CostModel(), RelayOptions());
  EXPECT_EQ(checkSlices(plan), "");
  EXPECT_EQ(stats.rounds, 3);
  EXPECT_EQ(sourceBytesBySender(plan),
            (std::map<int64_t, int64_t>{{0, 64 * kMiB}}));
  // A single 64 MiB region in parts of 5.4 MiB: the last part's hops come
  // after the source's 1.5 ms, which bounds the plan; it is still far from
  // the 32 sends of the direct plan.
  PlanCost cost = scheduledCost(plan, CostModel());
  PlanCost direct =
      scheduledCost(broadcast(0, rankRange(8, 32), 64 * kMiB), CostModel());
  EXPECT_LT(cost.predictedSeconds, 2 * cost.lowerBoundSeconds);
  EXPECT_LT(cost.predictedSeconds, direct.predictedSeconds / 12);
}

TEST(Relay, ExchangeOnAFlatTopologyIsTwoHops) {
  // Every rank on a node of its own: owners pass their part straight to
  // every other receiver, with no entries.
  Topology flat;
  flat.ranksPerNode = 0;
  CostModel model(flat);
  Plan plan = broadcast(0, rankRange(1, 8), 64 * kMiB);
  RelayStats stats = relay(plan, model, RelayOptions());
  EXPECT_EQ(checkSlices(plan), "");
  EXPECT_EQ(stats.rounds, 2);
  for (const auto &[receiver, from] : sendersOf(plan))
    EXPECT_EQ(from.size(), 8u) << receiver;
  PlanCost cost = scheduledCost(plan, model);
  PlanCost direct = scheduledCost(broadcast(0, rankRange(1, 8), 64 * kMiB), model);
  EXPECT_LT(cost.predictedSeconds, direct.predictedSeconds / 2.5);
}

/// A BF16 tensor [rows, 1024] split by rows over `sources` ranks from rank 0
/// on, replicated on `receivers` ranks from rank `firstReceiver` on, sent
/// directly from each source to each receiver.
Plan shardedToReplicas(int64_t sources, int64_t firstReceiver,
                       int64_t receivers, int64_t rows) {
  Plan plan = planWithMeshes(mesh({sources}, rankRange(0, sources)),
                             mesh({receivers}, rankRange(firstReceiver,
                                                         receivers)));
  addGroup(plan, {rows, 1024}, DType::BF16, {Placement::shard(0)},
           {Placement::replicate()});
  addDirectSlices(plan, 0);
  return plan;
}

/// A BF16 tensor of `shape` (`members` of it) split by rows over
/// `trainers` ranks from rank 0 on, served by the replicas along axis 0 of
/// `serving`, each split along dimension `dim` over axis 1, relayed by
/// `model`.
Plan relayedToReplicas(const CostModel &model, int64_t trainers, Mesh serving,
                       std::vector<int64_t> shape, int64_t dim,
                       int32_t members) {
  Plan plan = planWithMeshes(mesh({trainers}, rankRange(0, trainers)),
                             std::move(serving));
  addGroup(plan, std::move(shape), DType::BF16, {Placement::shard(0)},
           {Placement::replicate(), Placement::shard(dim)}, members);
  addDirectSlices(plan, 0);
  relay(plan, model, RelayOptions());
  return plan;
}

/// Slices of group 0 that forward bytes among destination ranks.
size_t forwards(const Plan &plan) {
  return llvm::count_if(plan.groups[0].slices, [](const Slice &s) {
    return s.origin == Origin::Destination;
  });
}

TEST(Relay, GathersPiecesAmongManyReceiversInRunsThatDouble) {
  // 64 pieces of 8 MiB to 64 flat receivers: sent directly, 64 x 64 slices;
  // gathered, each piece goes to one receiver and then in runs that double
  // over six rounds, six slices per receiver, for as many bytes per link
  // and six more steps.
  Topology flat;
  flat.ranksPerNode = 0;
  CostModel model(flat);
  Plan plan = shardedToReplicas(64, 64, 64, 64 * 4096);
  RelayStats stats = relay(plan, model, RelayOptions());
  EXPECT_EQ(checkSlices(plan), "");
  EXPECT_EQ(stats.relayedRegions, 64);
  EXPECT_EQ(stats.rounds, 7);
  // A run that wraps around the receivers goes as two boxes.
  EXPECT_GE(forwards(plan), 64u * 6);
  EXPECT_LE(forwards(plan), 64u * 6 * 2);
  // Each source sends its piece once.
  for (const auto &[sender, bytes] : sourceBytesBySender(plan))
    EXPECT_EQ(bytes, 4096 * 1024 * 2) << sender;
  PlanCost cost = scheduledCost(plan, model);
  EXPECT_LT(cost.predictedSeconds, 1.10 * cost.lowerBoundSeconds);
}

TEST(Relay, GathersAcrossNodesOnceThenWithinThem) {
  // 128 pieces to 64 receivers on 8 nodes: the eight columns (one rank per
  // node) gather their eighth across the nodes, then each node gathers its
  // columns over NVLink, so every byte enters each node once.
  CostModel model;
  Plan plan = shardedToReplicas(128, 128, 64, 128 * 4096);
  relay(plan, model, RelayOptions());
  EXPECT_EQ(checkSlices(plan), "");
  int64_t tensorBytes = 128 * 4096 * 1024 * 2;
  std::map<int64_t, int64_t> enteringNode;
  for (const Slice &s : plan.groups[0].slices)
    if (!model.sameNode(s.sender, s.receiver))
      enteringNode[s.receiver / 8] += sliceBytes(plan.groups[0], s);
  EXPECT_EQ(enteringNode.size(), 8u);
  for (const auto &[node, bytes] : enteringNode)
    EXPECT_EQ(bytes, tensorBytes) << node;
  PlanCost cost = scheduledCost(plan, model);
  EXPECT_LT(cost.predictedSeconds, 1.15 * cost.lowerBoundSeconds);
}

TEST(Relay, GathersOnUnevenNodesAndUnevenPieces) {
  // 100 receivers from rank 61 on: their nodes hold 3, 8, ..., 8 and 1 of
  // them, so they gather as if each were a node. torch.chunk cuts 400000
  // rows for 61 sources into 60 pieces of 6558 rows and one of 6520.
  Plan plan = shardedToReplicas(61, 61, 100, 400000);
  RelayStats stats = relay(plan, CostModel(), RelayOptions());
  EXPECT_EQ(checkSlices(plan), "");
  EXPECT_EQ(stats.relayedRegions, 61);
  EXPECT_LT(plan.groups[0].slices.size(), 61u + 100 * 2 * 7);
  EXPECT_LT(scheduledCost(plan, CostModel()).predictedSeconds,
            scheduledCost(shardedToReplicas(61, 61, 100, 400000), CostModel())
                .predictedSeconds);
}

TEST(Relay, GathersPiecesOfAGridInMergedBoxes) {
  // A [16384, 16384] tensor over a [8, 8] source mesh, both dimensions
  // split: runs of pieces are not one box, and go as the fewest boxes.
  Plan plan = planWithMeshes(mesh({8, 8}, rankRange(0, 64)),
                             mesh({64}, rankRange(64, 64)));
  addGroup(plan, {16384, 16384}, DType::BF16,
           {Placement::shard(0), Placement::shard(1)},
           {Placement::replicate()});
  addDirectSlices(plan, 0);
  RelayStats stats = relay(plan, CostModel(), RelayOptions());
  EXPECT_EQ(checkSlices(plan), "");
  EXPECT_EQ(stats.relayedRegions, 64);
  EXPECT_LT(plan.groups[0].slices.size(), 64u * 64 / 4);
}

TEST(Relay, FewPiecesAreCutForEveryReceiverToOwnOne) {
  // 32 pieces for 128 receivers: each piece is cut in four.
  Topology flat;
  flat.ranksPerNode = 0;
  Plan plan = shardedToReplicas(32, 32, 128, 32 * 64);
  relay(plan, CostModel(flat), RelayOptions());
  EXPECT_EQ(checkSlices(plan), "");
  std::set<int64_t> owners;
  for (const Slice &s : plan.groups[0].slices)
    if (s.origin == Origin::Source)
      owners.insert(s.receiver);
  EXPECT_EQ(owners.size(), 128u);
}

TEST(Relay, ColocatedSidesExchangeEveryRegion) {
  // Two pipeline stages of tp4 x dp2 on two nodes of eight, refit to four
  // tp4 replicas on the same ranks: each node needs the other stage once,
  // and its two replicas can share it over NVLink. Every rank sends its
  // stage and receives the other, so exchanging one region alone leaves
  // each of its ranks as busy as before; only all of them together halve
  // the busiest rank's time.
  Plan plan = planWithMeshes(mesh({2, 4}, rankRange(0, 8)),
                             mesh({4, 4}, rankRange(0, 16)));
  plan.meshNames.push_back("stage1");
  plan.meshes.push_back(mesh({2, 4}, rankRange(8, 8)));
  std::vector<Placement> tp = {Placement::replicate(), Placement::shard(1)};
  for (int32_t stage = 0; stage < 2; ++stage) {
    int32_t g = addGroup(plan, {128 * 1024, 1024}, DType::BF16, tp, tp, 4,
                         "stage" + std::to_string(stage) + ".");
    plan.groups[g].src.mesh = stage == 0 ? 0 : 2;
  }
  Plan direct = plan;
  for (int32_t g = 0; g < 2; ++g) {
    addDirectSlices(plan, g);
    addDirectSlices(direct, g);
  }
  CostModel model;
  relay(plan, model, RelayOptions());
  EXPECT_EQ(checkSlices(plan), "");
  PlanCost cost = scheduledCost(plan, model);
  PlanCost sent = scheduledCost(direct, model);
  EXPECT_LT(cost.predictedSeconds, 1.1 * cost.lowerBoundSeconds);
  EXPECT_LT(cost.predictedSeconds, 0.6 * sent.predictedSeconds);
}

TEST(Relay, ColocatedSidesGatherWhatEveryRankNeedsWhole) {
  // Thirty-two ranks on four nodes that train and serve: each holds one
  // row-piece of a tensor that every rank needs whole (a replicated norm,
  // or a KV projection under TP8). Each piece's receivers are the other 31,
  // a different set for every piece, which once kept them from gathering:
  // each piece went to 31 ranks, most of them over the NICs (2.0x the
  // bound; Qwen3-235B ep16,fsdp8 -> ep16,tp8 colocated, 1.42x). Gathered,
  // each rank copies its own piece and receives each other piece once, and
  // each node takes the 24 pieces it lacks once (sent directly, eight ranks
  // each take them): every piece's holder owns it in the gather, so no
  // piece leaves its holder to be scattered, nor enters its node again.
  CostModel model;
  Plan plan = planWithMeshes(mesh({8, 4}, rankRange(0, 32)),
                             mesh({8, 4}, rankRange(0, 32)));
  addGroup(plan, {4096, 256}, DType::BF16,
           {Placement::shard(0), Placement::shard(0)},
           {Placement::replicate(), Placement::replicate()}, /*members=*/256);
  addDirectSlices(plan, 0);
  Plan direct = plan;
  RelayStats stats = relay(plan, model, RelayOptions());
  ASSERT_EQ(checkSlices(plan), "");
  EXPECT_EQ(stats.relayedRegions, 32);
  const TransferGroup &group = plan.groups[0];
  int64_t tensor = 4096LL * 256 * 2 * 256, piece = tensor / 32;
  std::vector<int64_t> received(32), enters(4);
  for (const Slice &s : group.slices) {
    int64_t bytes = sliceBytes(group, s) * 256;
    if (s.isLocalCopy()) {
      EXPECT_EQ(bytes, piece) << s.receiver;
      continue;
    }
    received[s.receiver] += bytes;
    if (!model.sameNode(s.sender, s.receiver))
      enters[model.node(s.receiver)] += bytes;
  }
  for (int64_t rank = 0; rank < 32; ++rank)
    EXPECT_EQ(received[rank], tensor - piece) << rank;
  for (int64_t node = 0; node < 4; ++node)
    EXPECT_EQ(enters[node], tensor - 8 * piece) << node;
  PlanCost cost = scheduledCost(plan, model);
  PlanCost sent = scheduledCost(direct, model);
  // 1.08x the bound (the rounds' fill and drain), a third of the direct
  // sends' time.
  EXPECT_LT(cost.predictedSeconds, 1.12 * cost.lowerBoundSeconds);
  EXPECT_LT(cost.predictedSeconds, 0.4 * sent.predictedSeconds);
}

TEST(Relay, FewTrainersFeedManyReplicasThroughAPipeline) {
  // Eight FSDP ranks feed eight TP8 replicas, 64 ranks, all on a flat
  // network: the training side's NICs and each serving rank's are equally
  // loaded (each carries an eighth of the model), so the bound leaves the
  // pipeline of owners no slack: only forwards that each wait on one of
  // the trainers' messages, passed on the step after it arrived, come near
  // it. Whole messages that spanned two trainers' bytes started the
  // forwards late (1.27x the bound, 1.22x since senders start spread over
  // their receivers, 1.11x in chunks); each following the message that
  // brought its bytes, 1.04x whole.
  Topology flat;
  flat.ranksPerNode = 0;
  CostModel model(flat);
  Plan plan = relayedToReplicas(model, 8, mesh({8, 8}, rankRange(8, 64)),
                                {28672, 8192}, 1, /*members=*/240);
  ASSERT_EQ(checkSlices(plan), "");
  FuseOptions bucket{model.defaultBucketBytes()};
  ScheduleOptions options;
  options.model = &model;
  Plan whole = plan;
  fuse(whole, bucket);
  ASSERT_TRUE(static_cast<bool>(schedule(whole, options)));
  fuseForSchedule(plan, bucket, options);
  ASSERT_TRUE(static_cast<bool>(schedule(plan, options)));
  EXPECT_EQ(checkForwardSteps(plan), "");
  PlanCost cost = model.cost(plan);
  EXPECT_LT(cost.predictedSeconds, 1.06 * cost.lowerBoundSeconds);
  EXPECT_LE(cost.predictedSeconds, model.cost(whole).predictedSeconds);
}

TEST(Relay, TwinsOnANodePassOnInNodeSizedMessages) {
  // Eight FSDP ranks (node 0) and eight TP4 replicas (nodes 1 to 4, two
  // replicas each): every region enters each node once and each receiver
  // passes what it took on to its twin, the same shard of the node's other
  // replica, over the node's links. In messages sized for a NIC those
  // passes pay a latency each; fuseForSchedule also tries them in the
  // node's larger bucket and keeps that where it schedules faster: at 20
  // us a message, 1,536 messages become 1,216, 13.74 ms to 13.49 ms; at the
  // default 10 us the NIC-sized messages schedule faster and stay.

  // The plan fused with the node's bucket, and with the model's bucket
  // for every pair.
  auto fused = [](const CostModel &model) {
    Plan plan = relayedToReplicas(model, 8, mesh({8, 4}, rankRange(8, 32)),
                                  {14336, 4096}, 1, /*members=*/32);
    EXPECT_EQ(checkSlices(plan), "");
    ScheduleOptions options;
    options.model = &model;
    Plan without = plan;
    fuseForSchedule(without, modelBuckets(model, false), options);
    EXPECT_TRUE(static_cast<bool>(schedule(without, options)));
    fuseForSchedule(plan, modelBuckets(model, true), options);
    EXPECT_TRUE(static_cast<bool>(schedule(plan, options)));
    EXPECT_EQ(checkForwardSteps(plan), "");
    return std::make_pair(plan, without);
  };

  Topology slowStarts;
  slowStarts.latencySeconds = 20e-6;
  CostModel model(slowStarts);
  FuseOptions uniform = modelBuckets(model, false);
  FuseOptions nodes = modelBuckets(model, true);
  auto [plan, without] = fused(model);
  int64_t largest = 0;
  for (const Message &m : plan.messages) {
    bool sameNode = model.sameNode(m.sender, m.receiver);
    EXPECT_LE(m.bytes, sameNode ? nodes.nodeBucketBytes : uniform.bucketBytes)
        << m.sender << " -> " << m.receiver;
    if (sameNode)
      largest = std::max(largest, m.bytes);
  }
  double withNodes = model.cost(plan).predictedSeconds;
  double uniformSeconds = model.cost(without).predictedSeconds;
  EXPECT_GT(largest, uniform.bucketBytes);
  EXPECT_LT(withNodes, uniformSeconds);
  EXPECT_LT(plan.messages.size(), without.messages.size());

  CostModel usual;
  auto [kept, nicSized] = fused(usual);
  EXPECT_LE(usual.cost(kept).predictedSeconds,
            usual.cost(nicSized).predictedSeconds);
}

TEST(Relay, ReceiversBesideTheTrainersFeedTheOtherNode) {
  // Four FSDP ranks (0..3) and six TP2 replicas (4..15) on two nodes of
  // eight: ranks 4..7 share node 0 with the trainers and take their
  // regions over the node's links; node 1 needs the whole tensor, which
  // must enter it once, spread over its NICs and sent from all of node 0's,
  // the receivers of node 0 passing on what they took. Exchanged among all
  // receivers alike, node 0's receivers took parts back over their NICs
  // and two of node 1's ranks took most of what entered it (2.0x the bound
  // on Llama-3-8B); with the regions decided once, in order, the first
  // ones loaded the receivers of node 0 and the last the trainers.
  CostModel model;
  Plan plan = relayedToReplicas(model, 4, mesh({6, 2}, rankRange(4, 12)),
                                {14336, 4096}, 0, /*members=*/32);
  ASSERT_EQ(checkSlices(plan), "");
  const TransferGroup &group = plan.groups[0];
  std::vector<int64_t> nicIn(16), nicOut(16);
  for (const Slice &s : group.slices)
    if (!model.sameNode(s.sender, s.receiver)) {
      int64_t bytes = sliceBytes(group, s) * 32;
      nicIn[s.receiver] += bytes;
      nicOut[s.sender] += bytes;
    }
  int64_t tensor = 14336LL * 4096 * 2 * 32;
  for (int64_t rank = 0; rank < 8; ++rank)
    EXPECT_EQ(nicIn[rank], 0) << rank;
  EXPECT_EQ(std::accumulate(nicIn.begin() + 8, nicIn.end(), int64_t{0}),
            tensor);
  for (int64_t rank = 0; rank < 16; ++rank) {
    EXPECT_LE(nicIn[rank], tensor / 8 * 5 / 4) << rank;
    EXPECT_LE(nicOut[rank], tensor / 8 * 3 / 2) << rank;
  }
  for (int64_t rank = 4; rank < 8; ++rank)
    EXPECT_GT(nicOut[rank], 0) << rank;
  // Chains of three hops (trainer, node 0's receiver, node 1's owner, the
  // owner's node) schedule with every forward after its input.
  scheduledCost(plan, model);
}

TEST(Relay, EachRegionGetsItsOwnRoot) {
  // Rows split over ranks 0 and 1 (node 0), replicated four times on a
  // [4, 2] mesh of ranks 8..15 (node 1) that splits rows over its second
  // axis: region j goes to ranks 8 + j, 10 + j, 12 + j, 14 + j.
  Plan plan = planWithMeshes(mesh({2}, {0, 1}), mesh({4, 2}, rankRange(8, 8)));
  addGroup(plan, {16384, 4096}, DType::BF16, {Placement::shard(0)},
           {Placement::replicate(), Placement::shard(0)}, /*members=*/2);
  addDirectSlices(plan, 0);
  RelayStats stats = relay(plan, CostModel(), RelayOptions());
  EXPECT_EQ(checkSlices(plan), "");
  EXPECT_EQ(stats.relayedRegions, 2);
  EXPECT_EQ(stats.sourceSendsSaved, 6);
  // Each source sends its 64 MiB half, for both members, once.
  EXPECT_EQ(sourceBytesBySender(plan),
            (std::map<int64_t, int64_t>{{0, 128 * kMiB}, {1, 128 * kMiB}}));
  for (const auto &[receiver, from] : sendersOf(plan))
    for (int64_t sender : from)
      EXPECT_TRUE(sender < 2 ? sender == (receiver - 8) % 2
                             : (sender - receiver) % 2 == 0)
          << sender << " -> " << receiver;
}

TEST(Relay, RegionsSplitAmongHoldersLeaveEachHolderOnce) {
  // Ranks 0 and 1 both hold the tensor and share each receiver's region, as
  // balance() may split it; relayed, the region's parts come from both, and
  // each byte leaves the source side once.
  Plan plan = planWithMeshes(mesh({2}, {0, 1}), mesh({8}, rankRange(8, 8)));
  addGroup(plan, {8192, 4096}, DType::BF16, {Placement::replicate()},
           {Placement::replicate()});
  for (int64_t receiver = 8; receiver < 16; ++receiver) {
    plan.groups[0].slices.push_back(
        slice(0, receiver, box({0, 0}, {4096, 4096})));
    plan.groups[0].slices.push_back(
        slice(1, receiver, box({4096, 0}, {4096, 4096})));
  }
  RelayStats stats = relay(plan, CostModel(), RelayOptions());
  EXPECT_EQ(checkSlices(plan), "");
  EXPECT_EQ(stats.relayedRegions, 1);
  EXPECT_EQ(stats.sourceSendsSaved, 7);
  EXPECT_EQ(sourceBytesBySender(plan),
            (std::map<int64_t, int64_t>{{0, 32 * kMiB}, {1, 32 * kMiB}}));
}

TEST(Relay, LocalCopiesStay) {
  // Rank 0 holds the tensor and is one of the replicas: it copies its own
  // and relays to the other three.
  Plan plan = broadcast(0, {0, 8, 16, 24}, 64 * kMiB);
  RelayStats stats = relay(plan, CostModel(), RelayOptions());
  EXPECT_EQ(checkSlices(plan), "");
  EXPECT_EQ(stats.relayedRegions, 1);
  EXPECT_EQ(stats.sourceSendsSaved, 2);
  EXPECT_EQ(plan.groups[0].slices.front(),
            slice(0, 0, box({0, 0}, {8192, 4096})));
}

TEST(Relay, DisabledOrWithoutRoundsLeavesThePlan) {
  Plan plan = broadcast(0, rankRange(8, 16), 64 * kMiB);
  Plan original = plan;
  RelayOptions disabled;
  disabled.enable = false;
  EXPECT_EQ(relay(plan, CostModel(), disabled).relayedRegions, 0);
  EXPECT_EQ(plan.groups[0].slices, original.groups[0].slices);
  RelayOptions oneRound;
  oneRound.maxRounds = 1;
  RelayStats stats = relay(plan, CostModel(), oneRound);
  EXPECT_EQ(stats.relayedRegions, 0);
  EXPECT_EQ(stats.rounds, 1);
  EXPECT_EQ(plan.groups[0].slices, original.groups[0].slices);
}

TEST(Relay, RelayedGroupsAreLeftAlone) {
  Plan plan = broadcast(0, rankRange(8, 16), 64 * kMiB);
  fuse(plan, FuseOptions());
  EXPECT_EQ(relay(plan, CostModel(), RelayOptions()).relayedRegions, 1);
  // The messages of the direct slices are gone with them.
  EXPECT_TRUE(plan.messages.empty());
  Plan once = plan;
  EXPECT_EQ(relay(plan, CostModel(), RelayOptions()).relayedRegions, 0);
  EXPECT_EQ(plan.groups[0].slices, once.groups[0].slices);
}

TEST(Relay, IsDeterministic) {
  Plan a = broadcast(0, rankRange(8, 24), 96 * kMiB, /*members=*/3);
  Plan b = a;
  RelayStats statsA = relay(a, CostModel(), RelayOptions());
  RelayStats statsB = relay(b, CostModel(), RelayOptions());
  EXPECT_EQ(a.groups[0].slices, b.groups[0].slices);
  EXPECT_EQ(statsA.rounds, statsB.rounds);
}

} // namespace
