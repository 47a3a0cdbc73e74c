//===- CostModelTest.cpp - Tests of the topology and the cost model -------===//

#include "m2n/Plan/CostModel.h"

#include "HandBuiltPlans.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

using namespace m2n;
using namespace m2n::plan;
using namespace m2n::plan::testing;

namespace {

/// The message of parseTopology's error on `text`, or "" when it parses.
std::string topologyError(llvm::StringRef text) {
  llvm::Expected<Topology> topology = parseTopology(text, "topo.json");
  if (topology)
    return "";
  return llvm::toString(topology.takeError());
}

const char *const kExpectedKeys = "(expected \"latency_us\", \"step_us\", "
                                  "\"intra_node_gbps\", \"inter_node_gbps\" "
                                  "or \"ranks_per_node\")";

TEST(Topology, Defaults) {
  Topology topology;
  EXPECT_EQ(topology.latencySeconds, 10e-6);
  EXPECT_EQ(topology.stepSeconds, 20e-6);
  EXPECT_EQ(topology.intraNodeBandwidth, 370e9);
  EXPECT_EQ(topology.interNodeBandwidth, 46e9);
  EXPECT_EQ(topology.ranksPerNode, 8);

  llvm::Expected<Topology> empty = parseTopology("{}", "topo.json");
  ASSERT_TRUE(static_cast<bool>(empty));
  EXPECT_EQ(empty->latencySeconds, 10e-6);
  EXPECT_EQ(empty->intraNodeBandwidth, 370e9);
  EXPECT_EQ(empty->interNodeBandwidth, 46e9);
  EXPECT_EQ(empty->ranksPerNode, 8);
}

TEST(Topology, ParsesEveryKey) {
  llvm::Expected<Topology> topology =
      parseTopology(R"({"latency_us": 2.5, "step_us": 12,
                        "intra_node_gbps": 900, "inter_node_gbps": 50,
                        "ranks_per_node": 4})",
                    "topo.json");
  ASSERT_TRUE(static_cast<bool>(topology));
  EXPECT_DOUBLE_EQ(topology->latencySeconds, 2.5e-6);
  EXPECT_DOUBLE_EQ(topology->stepSeconds, 12e-6);
  EXPECT_DOUBLE_EQ(topology->intraNodeBandwidth, 900e9);
  EXPECT_DOUBLE_EQ(topology->interNodeBandwidth, 50e9);
  EXPECT_EQ(topology->ranksPerNode, 4);
}

TEST(Topology, KeepsDefaultsOfMissingKeys) {
  llvm::Expected<Topology> topology =
      parseTopology(R"({"ranks_per_node": 4.0})", "topo.json");
  ASSERT_TRUE(static_cast<bool>(topology));
  EXPECT_EQ(topology->ranksPerNode, 4);
  EXPECT_EQ(topology->latencySeconds, 10e-6);
  EXPECT_EQ(topology->interNodeBandwidth, 46e9);

  llvm::Expected<Topology> ownNodes =
      parseTopology(R"({"ranks_per_node": 0})", "topo.json");
  ASSERT_TRUE(static_cast<bool>(ownNodes));
  EXPECT_EQ(ownNodes->ranksPerNode, 0);
}

TEST(Topology, RejectsMalformedJSON) {
  std::string error = topologyError("{\n  \"latency_us\": ,\n}");
  EXPECT_EQ(error.rfind("topo.json:2:17: error: malformed JSON: ", 0), 0u)
      << error;
  error = topologyError("");
  EXPECT_EQ(error.rfind("topo.json:1:1: error: malformed JSON: ", 0), 0u)
      << error;
}

TEST(Topology, RejectsNonObjects) {
  EXPECT_EQ(topologyError("[1]"),
            "topo.json: error: expected an object, got an array");
  EXPECT_EQ(topologyError("46"),
            "topo.json: error: expected an object, got a number");
}

TEST(Topology, RejectsUnknownKeys) {
  EXPECT_EQ(topologyError(R"({"latency": 10})"),
            std::string("topo.json: error: latency: unknown key ") +
                kExpectedKeys);
  // The first unknown key in alphabetical order, whatever the hash order.
  EXPECT_EQ(topologyError(R"({"zeta": 1, "latency_us": 1, "alpha": 2})"),
            std::string("topo.json: error: alpha: unknown key ") +
                kExpectedKeys);
}

TEST(Topology, RejectsNonNumbers) {
  EXPECT_EQ(topologyError(R"({"latency_us": "10"})"),
            "topo.json: error: latency_us: expected a number, got a string");
  EXPECT_EQ(topologyError(R"({"intra_node_gbps": null})"),
            "topo.json: error: intra_node_gbps: expected a number, got null");
  EXPECT_EQ(topologyError(R"({"inter_node_gbps": [46]})"),
            "topo.json: error: inter_node_gbps: expected a number, got an "
            "array");
}

TEST(Topology, RejectsNonPositiveNumbers) {
  EXPECT_EQ(topologyError(R"({"latency_us": 0})"),
            "topo.json: error: latency_us: expected a finite positive number, "
            "got 0");
  EXPECT_EQ(topologyError(R"({"intra_node_gbps": -370})"),
            "topo.json: error: intra_node_gbps: expected a finite positive "
            "number, got -370");
  // Finite in JSON, infinite in bytes per second.
  EXPECT_EQ(topologyError(R"({"inter_node_gbps": 1e300})"),
            "topo.json: error: inter_node_gbps: expected a finite positive "
            "number, got 1e+300");
  // A step may cost nothing of its own, but not less.
  EXPECT_EQ(topologyError(R"({"step_us": 0})"), "");
  EXPECT_EQ(topologyError(R"({"step_us": -1})"),
            "topo.json: error: step_us: expected a finite non-negative "
            "number, got -1");
}

TEST(Topology, RejectsBadRanksPerNode) {
  EXPECT_EQ(topologyError(R"({"ranks_per_node": 2.5})"),
            "topo.json: error: ranks_per_node: expected an integer, got 2.5");
  EXPECT_EQ(topologyError(R"({"ranks_per_node": "8"})"),
            "topo.json: error: ranks_per_node: expected an integer, got a "
            "string");
  EXPECT_EQ(topologyError(R"({"ranks_per_node": -1})"),
            "topo.json: error: ranks_per_node: expected a non-negative "
            "integer, got -1");
}

TEST(Topology, ReadsFiles) {
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("topology", "json", path));
  llvm::FileRemover remover(path);
  {
    std::error_code error;
    llvm::raw_fd_ostream os(path, error);
    ASSERT_FALSE(error);
    os << R"({"inter_node_gbps": 25})";
  }
  llvm::Expected<Topology> topology = readTopology(path);
  ASSERT_TRUE(static_cast<bool>(topology));
  EXPECT_DOUBLE_EQ(topology->interNodeBandwidth, 25e9);

  llvm::SmallString<128> missing = path;
  missing += ".missing";
  llvm::Expected<Topology> none = readTopology(missing);
  ASSERT_FALSE(static_cast<bool>(none));
  std::string error = llvm::toString(none.takeError());
  EXPECT_EQ(error.rfind((missing + ": error: cannot read the file: ").str(), 0),
            0u)
      << error;
}

TEST(CostModel, Links) {
  CostModel model;
  EXPECT_TRUE(model.sameNode(0, 7));
  EXPECT_FALSE(model.sameNode(7, 8));
  EXPECT_TRUE(model.sameNode(8, 15));
  EXPECT_EQ(model.bandwidth(0, 7), 370e9);
  EXPECT_EQ(model.bandwidth(0, 8), 46e9);
  EXPECT_DOUBLE_EQ(model.messageSeconds(3, 12, 46000), 10e-6 + 1e-6);
  EXPECT_DOUBLE_EQ(model.messageSeconds(3, 4, 370000), 10e-6 + 1e-6);

  Topology own;
  own.ranksPerNode = 0;
  CostModel separate(own);
  EXPECT_TRUE(separate.sameNode(5, 5));
  EXPECT_FALSE(separate.sameNode(0, 1));
  EXPECT_EQ(separate.bandwidth(0, 1), 46e9);
}

TEST(CostModel, NodesOfEverySize) {
  // A power of two is found by a shift and any other size by a division:
  // both must agree with rank / ranksPerNode on every rank.
  for (int64_t perNode : {1, 2, 4, 6, 7, 8, 12, 16, 72}) {
    Topology topology;
    topology.ranksPerNode = perNode;
    CostModel model(topology);
    for (int64_t rank = 0; rank < 300; ++rank)
      ASSERT_EQ(model.node(rank), rank / perNode)
          << "rank " << rank << ", " << perNode << " per node";
    EXPECT_TRUE(model.sameNode(perNode - 1, 0));
    EXPECT_FALSE(model.sameNode(perNode, perNode - 1));
  }
}

TEST(CostModel, DefaultBucketBytes) {
  constexpr int64_t kMiB = 1 << 20;
  // 99 latencies at 46 GB/s: 45.54e6 bytes, 43.4 MiB.
  EXPECT_EQ(CostModel().defaultBucketBytes(), 43 * kMiB);
  Topology fast;
  fast.interNodeBandwidth = 100e9;
  // 99e-5 s at 100 GB/s: 99e6 bytes, 94.4 MiB.
  EXPECT_EQ(CostModel(fast).defaultBucketBytes(), 94 * kMiB);
  Topology lowLatency;
  lowLatency.latencySeconds = 1e-6;
  EXPECT_EQ(CostModel(lowLatency).defaultBucketBytes(), 4 * kMiB);
  Topology highLatency;
  highLatency.latencySeconds = 1e-3;
  EXPECT_EQ(CostModel(highLatency).defaultBucketBytes(), 256 * kMiB);
  // Within a node: 99 latencies at 370 GB/s, 349 MiB, past the cap.
  EXPECT_EQ(CostModel().defaultNodeBucketBytes(), 256 * kMiB);
  Topology slowNode;
  slowNode.intraNodeBandwidth = 92e9;
  // 99e-5 s at 92 GB/s: 91.08e6 bytes, 86.9 MiB.
  EXPECT_EQ(CostModel(slowNode).defaultNodeBucketBytes(), 87 * kMiB);
}

/// Numbers easy to follow by hand: 1 us, 100 GB/s within nodes of 4 ranks,
/// 10 GB/s between them.
Topology roundTopology() {
  Topology topology;
  topology.latencySeconds = 1e-6;
  topology.stepSeconds = 2e-6;
  topology.intraNodeBandwidth = 1e11;
  topology.interNodeBandwidth = 1e10;
  topology.ranksPerNode = 4;
  return topology;
}

/// Two members of [8, 1024] F32 rows split over ranks 0 and 1 (rows 0..3,
/// 4..7; 16 KiB each), replicated on ranks 1 and 4. Slices: 0 -> 1 (rows
/// 0..3), 1 -> 1 (local, rows 4..7), 0 -> 4 (rows 0..3), 1 -> 4 (rows 4..7).
Plan rowsToReplicas() {
  Plan plan = planWithMeshes(mesh({2}, {0, 1}), mesh({2}, {1, 4}));
  int32_t g = addGroup(plan, {8, 1024}, DType::F32, {Placement::shard(0)},
                       {Placement::replicate()}, /*members=*/2);
  addDirectSlices(plan, g);
  return plan;
}

TEST(CostModel, UnfusedPlan) {
  Plan plan = rowsToReplicas();
  const std::vector<Slice> &slices = plan.groups[0].slices;
  ASSERT_EQ(slices.size(), 4u);
  EXPECT_EQ(slices[0], slice(0, 1, box({0, 0}, {4, 1024})));
  EXPECT_EQ(slices[1], slice(1, 1, box({4, 0}, {4, 1024})));
  EXPECT_EQ(slices[2], slice(0, 4, box({0, 0}, {4, 1024})));
  EXPECT_EQ(slices[3], slice(1, 4, box({4, 0}, {4, 1024})));

  PlanCost cost = CostModel(roundTopology()).cost(plan);
  EXPECT_EQ(cost.wireBytes, 3 * 2 * 16384);
  EXPECT_EQ(cost.localCopyBytes, 2 * 16384);
  // One message per remote slice and member.
  EXPECT_EQ(cost.messages, 6);
  EXPECT_EQ(cost.steps, 1);
  EXPECT_EQ(cost.sendBytes, (std::vector<int64_t>{65536, 32768, 0, 0, 0}));
  EXPECT_EQ(cost.receiveBytes, (std::vector<int64_t>{0, 32768, 0, 0, 65536}));
  EXPECT_EQ(cost.messagesSent, (std::vector<int64_t>{4, 2, 0, 0, 0}));
  // Rank 1 packs 32 KiB and unpacks 32 KiB; ranks 0 and 4 move 64 KiB.
  EXPECT_EQ(cost.stagingPeak, 65536);
  // Rank 4 receives four messages over the inter-node link in one step:
  // 4 * (1 us + 16384 B / 10 GB/s), plus the step's 2 us.
  EXPECT_DOUBLE_EQ(cost.predictedSeconds, 4 * (1e-6 + 1.6384e-6) + 2e-6);
  // Rank 4 lacks all 64 KiB, held only on another node: 6.5536 us. Rank 0
  // alone holds rows 0..3, which rank 4 on another node needs: 3.2768 us.
  // Both add a message's latency and a step.
  EXPECT_DOUBLE_EQ(cost.lowerBoundSeconds, 3e-6 + 65536 / 1e10);
}

TEST(CostModel, FusedAndScheduledPlan) {
  Plan plan = rowsToReplicas();
  Message packed{0, 0, 1, {{0, 0, 0, 2}}, 32768, false};
  Message zeroCopy{0, 0, 4, {{0, 2, 0, 2}}, 32768, true};
  Message later{1, 1, 4, {{0, 3, 0, 2}}, 32768, false};
  plan.messages = {packed, zeroCopy, later};
  plan.numSteps = 3;

  PlanCost cost = CostModel(roundTopology()).cost(plan);
  EXPECT_EQ(cost.wireBytes, 3 * 32768);
  EXPECT_EQ(cost.localCopyBytes, 32768);
  EXPECT_EQ(cost.messages, 3);
  // The plan's step count stands even when its last step is idle.
  EXPECT_EQ(cost.steps, 3);
  EXPECT_EQ(cost.sendBytes, (std::vector<int64_t>{65536, 32768, 0, 0, 0}));
  EXPECT_EQ(cost.receiveBytes, (std::vector<int64_t>{0, 32768, 0, 0, 65536}));
  EXPECT_EQ(cost.messagesSent, (std::vector<int64_t>{2, 1, 0, 0, 0}));
  // Zero-copy messages take no staging.
  EXPECT_EQ(cost.stagingPeak, 32768);
  // Step 0: rank 0 sends 32 KiB within its node and 32 KiB across nodes.
  // Step 1: rank 1 sends 32 KiB across nodes.
  // Each of the three steps costs 2 us of its own.
  double step0 = (1e-6 + 32768 / 1e11) + (1e-6 + 32768 / 1e10);
  double step1 = 1e-6 + 32768 / 1e10;
  EXPECT_DOUBLE_EQ(cost.predictedSeconds, step0 + step1 + 3 * 2e-6);
  EXPECT_DOUBLE_EQ(cost.lowerBoundSeconds, 3e-6 + 65536 / 1e10);
}

TEST(CostModel, LowerBoundUsesTheNearestHolder) {
  // Rank 2 lacks the whole 1 MB tensor, which ranks 0 and 1 of its node
  // both hold: no byte is unavoidable to send for either of them.
  Plan plan = planWithMeshes(mesh({2}, {0, 1}), mesh({1}, {2}));
  addGroup(plan, {250000}, DType::F32, {Placement::replicate()},
           {Placement::replicate()});
  Topology topology = roundTopology();
  EXPECT_DOUBLE_EQ(CostModel(topology).cost(plan).lowerBoundSeconds,
                   3e-6 + 1e6 / 1e11);
  // With every rank on a node of its own, the bytes cross nodes.
  topology.ranksPerNode = 0;
  EXPECT_DOUBLE_EQ(CostModel(topology).cost(plan).lowerBoundSeconds,
                   3e-6 + 1e6 / 1e10);
}

TEST(CostModel, LowerBoundOfUniqueSends) {
  // Rank 0 alone holds the 1 MB tensor; ranks 1..3 (its node) and 4
  // (another node) need it. Rank 4 alone on its node receives the 1 MB over
  // its NIC; ranks 1..3 could receive it over NVLink; rank 0 could send it
  // once to a node-mate, which forwards it, and its node's four NICs could
  // share the megabyte that leaves the node. Each bound adds a message's
  // latency of 1 us and a step's 2 us.
  Plan plan = planWithMeshes(mesh({1}, {0}), mesh({4}, {1, 2, 3, 4}));
  addGroup(plan, {250000}, DType::F32, {Placement::replicate()},
           {Placement::replicate()});
  EXPECT_DOUBLE_EQ(CostModel(roundTopology()).cost(plan).lowerBoundSeconds,
                   3e-6 + 1e6 / 1e10);
  // The members of a group all count.
  plan.groups[0].members = {0, 1, 2};
  plan.tensors.resize(3, TensorInfo{"u", 0});
  EXPECT_DOUBLE_EQ(CostModel(roundTopology()).cost(plan).lowerBoundSeconds,
                   3e-6 + 3e6 / 1e10);
  // When only remote ranks need it, rank 0's own NIC must carry it.
  Plan remote = planWithMeshes(mesh({1}, {0}), mesh({1}, {4}));
  addGroup(remote, {250000}, DType::F32, {Placement::replicate()},
           {Placement::replicate()});
  EXPECT_DOUBLE_EQ(CostModel(roundTopology()).cost(remote).lowerBoundSeconds,
                   3e-6 + 1e6 / 1e10);
}

TEST(CostModel, LowerBoundSendsReplicatedSourcesOutOnce) {
  // Ranks 0 and 1 (one node) both hold the 1 MB tensor, and 64 ranks of
  // other nodes each need a different sixty-fourth of it: no rank needs
  // much, and neither holder alone holds anything, but the megabyte must
  // leave the two over their NICs, half each at best.
  Plan plan = planWithMeshes(mesh({2}, {0, 1}), mesh({64}, rankRange(8, 64)));
  addGroup(plan, {256000}, DType::F32, {Placement::replicate()},
           {Placement::shard(0)});
  EXPECT_NEAR(CostModel(roundTopology()).cost(plan).lowerBoundSeconds,
              3e-6 + 1.024e6 / 2 / 1e10, 1e-12);
  // Held on two nodes of their own, still half each over a NIC.
  Plan apart = planWithMeshes(mesh({2}, {0, 4}), mesh({64}, rankRange(8, 64)));
  addGroup(apart, {256000}, DType::F32, {Placement::replicate()},
           {Placement::shard(0)});
  EXPECT_NEAR(CostModel(roundTopology()).cost(apart).lowerBoundSeconds,
              3e-6 + 1.024e6 / 2 / 1e10, 1e-12);
}

TEST(CostModel, LowerBoundSharesANodesNics) {
  // Ranks 0 and 1 share a node and both need the 1 MB tensor, which ranks 4
  // and 5 of another node hold. The megabyte must enter the node once: each
  // rank's NIC can take half of it, and NVLink bring it the other half.
  Plan plan = planWithMeshes(mesh({2}, {4, 5}), mesh({2}, {0, 1}));
  addGroup(plan, {250000}, DType::F32, {Placement::replicate()},
           {Placement::replicate()});
  EXPECT_NEAR(CostModel(roundTopology()).cost(plan).lowerBoundSeconds,
              3e-6 + 0.5e6 / 1e10 + 0.5e6 / 1e11, 1e-12);
  // On a flat topology each receives the whole megabyte over its NIC.
  Topology flat = roundTopology();
  flat.ranksPerNode = 0;
  EXPECT_DOUBLE_EQ(CostModel(flat).cost(plan).lowerBoundSeconds,
                   3e-6 + 1e6 / 1e10);
  // Different bytes for each (a sharded destination) cannot be shared.
  Plan sharded = planWithMeshes(mesh({2}, {4, 5}), mesh({2}, {0, 1}));
  addGroup(sharded, {250000}, DType::F32, {Placement::replicate()},
           {Placement::shard(0)});
  EXPECT_DOUBLE_EQ(CostModel(roundTopology()).cost(sharded).lowerBoundSeconds,
                   3e-6 + 0.5e6 / 1e10);
}

TEST(CostModel, LowerBoundLetsTwinsTakeInTheirBytesOnce) {
  // Ranks 0 and 1 both need tensor a (0.5 MB), rank 2 of their node needs
  // b (0.5 MB), and the four ranks of another node hold both. The megabyte
  // enters the node once, but ranks 0 and 1 forward only what they need,
  // and need the same half: between them their NICs take in at most a's
  // 0.5 MB, so rank 2's NIC takes in b, all 50 us of it.
  Plan plan = planWithMeshes(mesh({4}, {4, 5, 6, 7}), mesh({2}, {0, 1}));
  addGroup(plan, {125000}, DType::F32, {Placement::replicate()},
           {Placement::replicate()}, 1, "a");
  plan.meshNames.push_back("dst2");
  plan.meshes.push_back(mesh({1}, {2}));
  int32_t b = addGroup(plan, {125000}, DType::F32, {Placement::replicate()},
                       {Placement::replicate()}, 1, "b");
  plan.groups[b].dst.mesh = 2;
  EXPECT_NEAR(CostModel(roundTopology()).cost(plan).lowerBoundSeconds,
              3e-6 + 0.5e6 / 1e10, 1e-12);
  // Were a and b both rank 2's needs, a third would come through each NIC
  // (ranks 0 and 1 taking in bytes that rank 2 also needs).
  plan.meshes[1] = mesh({3}, {0, 1, 2});
  plan.meshes[2] = mesh({3}, {0, 1, 2});
  EXPECT_NEAR(CostModel(roundTopology()).cost(plan).lowerBoundSeconds,
              3e-6 + 1e6 / 3 / 1e10 + 2e6 / 3 / 1e11, 1e-12);
}

TEST(CostModel, EmptyPlan) {
  PlanCost cost = CostModel().cost(Plan());
  EXPECT_EQ(cost.messages, 0);
  EXPECT_EQ(cost.steps, 0);
  EXPECT_EQ(cost.predictedSeconds, 0);
  EXPECT_EQ(cost.lowerBoundSeconds, 0);
  EXPECT_TRUE(cost.sendBytes.empty());
}

} // namespace
