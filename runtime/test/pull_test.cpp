//===- pull_test.cpp - Messages pulled straight between ranks' buffers ----===//
//
// In a sim world the executor pulls what messages it can (program.h): the
// receiver copies them from the sender's bindings into its own. Each refit
// here runs both ways, pulled and staged, and must fill every destination
// right either way; the statistics tell which way the messages went, since
// pulled bytes are neither packed nor unpacked.
//
//===----------------------------------------------------------------------===//

#include "refit_builder.h"
#include "sim_test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace m2n::test {
namespace {

using Part = RefitBuilder::Part;

void expectAllOk(const std::vector<Outcome> &outcomes) {
  for (size_t rank = 0; rank < outcomes.size(); ++rank)
    EXPECT_TRUE(outcomes[rank].ok())
        << "rank " << rank << ": " << outcomes[rank].message;
}

/// Bytes that went through staging on every rank together.
uint64_t stagedBytes(const std::vector<m2n_executor_stats_t> &stats) {
  uint64_t bytes = 0;
  for (const m2n_executor_stats_t &rank : stats)
    bytes += rank.bytes_packed + rank.bytes_unpacked;
  return bytes;
}

Box intersect(const Box &a, const Box &b) {
  Box box;
  for (size_t d = 0; d < a.offset.size(); ++d) {
    int64_t begin = std::max(a.offset[d], b.offset[d]);
    int64_t end = std::min(a.offset[d] + a.shape[d], b.offset[d] + b.shape[d]);
    box.offset.push_back(begin);
    box.shape.push_back(std::max<int64_t>(0, end - begin));
  }
  return box;
}

class Pulls : public ::testing::TestWithParam<Path> {
protected:
  bool pulled() const { return GetParam() == Path::Pulled; }
};

INSTANTIATE_TEST_SUITE_P(Paths, Pulls,
                         ::testing::Values(Path::Pulled, Path::Staged),
                         pathTestName);

// Three tensors from two source ranks of uneven rows to three destination
// ranks of uneven columns, strided boxes and empty shards: one message per
// pair of ranks, carrying its part of every tensor.
std::vector<uint8_t> unevenPlan() {
  struct Shard {
    uint32_t rank, tensor;
    Box box;
  };
  RefitBuilder refit(5);
  uint32_t a = refit.tensor("a", M2N_DTYPE_F32, {7, 5});
  uint32_t b = refit.tensor("b", M2N_DTYPE_BF16, {10});
  uint32_t c = refit.tensor("c", M2N_DTYPE_U8, {3, 4, 5});
  std::vector<Shard> sources = {{0, a, {{0, 0}, {3, 5}}},
                                {1, a, {{3, 0}, {4, 5}}},
                                {0, b, {{0}, {6}}},
                                {1, b, {{6}, {4}}},
                                {0, c, {{0, 0, 0}, {3, 4, 5}}}};
  std::vector<Shard> destinations = {{2, a, {{0, 0}, {7, 2}}},
                                     {3, a, {{0, 2}, {7, 3}}},
                                     {4, a, {{7, 0}, {0, 5}}},
                                     {2, b, {{0}, {4}}},
                                     {3, b, {{4}, {6}}},
                                     {4, b, {{0}, {10}}},
                                     {2, c, {{1, 0, 1}, {2, 4, 3}}},
                                     {3, c, {{0, 1, 0}, {3, 2, 5}}},
                                     {4, c, {{0, 0, 0}, {1, 4, 5}}}};
  for (const Shard &shard : sources)
    refit.source(shard.rank, shard.tensor, shard.box);
  for (const Shard &shard : destinations)
    refit.destination(shard.rank, shard.tensor, shard.box);
  for (uint32_t from : {0u, 1u})
    for (uint32_t to : {2u, 3u, 4u}) {
      std::vector<Part> parts;
      for (const Shard &source : sources)
        for (const Shard &destination : destinations)
          if (source.rank == from && destination.rank == to &&
              source.tensor == destination.tensor)
            parts.push_back(
                {source.tensor, intersect(source.box, destination.box)});
      refit.message(0, from, to, parts);
    }
  return refit.finish();
}

TEST_P(Pulls, CarriesSeveralTensorsBetweenUnevenShards) {
  SimRefit refit(unevenPlan(), GetParam());
  expectAllOk(refit.run(2));
  EXPECT_EQ(refit.checkDestinations(), "");
  EXPECT_EQ(stagedBytes(refit.stats()) == 0, pulled());
}

// Forwarding over three steps, packed from the relays' destination
// shards, with a zero-copy hop: rank 0 sends both tensors whole to rank 1,
// which forwards columns and rows of them to rank 2 (and rows of "w",
// zero-copy, to rank 4), which forwards a corner of each to rank 3.
std::vector<uint8_t> chainPlan() {
  RefitBuilder refit(5);
  uint32_t w = refit.tensor("w", M2N_DTYPE_F32, {6, 8});
  uint32_t x = refit.tensor("x", M2N_DTYPE_U8, {4, 6});
  Box wWhole{{0, 0}, {6, 8}}, xWhole{{0, 0}, {4, 6}};
  Box wRight{{0, 2}, {6, 6}}, xLower{{1, 0}, {3, 6}};
  Box wCorner{{0, 4}, {6, 4}}, xCorner{{2, 0}, {2, 3}};
  Box wRows{{2, 0}, {2, 8}};
  refit.source(0, w, wWhole);
  refit.source(0, x, xWhole);
  refit.destination(1, w, wWhole);
  refit.destination(1, x, xWhole);
  refit.destination(2, w, wRight);
  refit.destination(2, x, xLower);
  refit.destination(3, w, wCorner);
  refit.destination(3, x, xCorner);
  refit.destination(4, w, wRows);
  const m2n_role_t relayed = M2N_ROLE_DESTINATION;
  refit.message(0, 0, 1, {{w, wWhole}, {x, xWhole}});
  refit.message(1, 1, 2, {{w, wRight, relayed}, {x, xLower, relayed}});
  refit.directMessage(1, 1, 4, {w, wRows, relayed});
  refit.message(2, 2, 3, {{x, xCorner, relayed}, {w, wCorner, relayed}});
  return refit.finish();
}

TEST_P(Pulls, RelaysAlongAChainOfSteps) {
  SimRefit refit(chainPlan(), GetParam());
  expectAllOk(refit.run(2));
  EXPECT_EQ(refit.checkDestinations(), "");
  EXPECT_EQ(stagedBytes(refit.stats()) == 0, pulled());
}

// "g" F32 [3, 4]: ranks 0, 1 and 3 hold a row each, and every rank ends
// with all of it. Step 0 gathers the rows on rank 2; step 1 has rank 2
// send each rank the rows it lacks, from its destination shard.
std::vector<uint8_t> gatherBroadcastPlan() {
  RefitBuilder refit(4);
  uint32_t g = refit.tensor("g", M2N_DTYPE_F32, {3, 4});
  const uint32_t holders[3] = {0, 1, 3};
  auto row = [](int64_t r) { return Box{{r, 0}, {1, 4}}; };
  for (int64_t r = 0; r < 3; ++r)
    refit.source(holders[r], g, row(r));
  for (uint32_t rank = 0; rank < 4; ++rank)
    refit.destination(rank, g, {{0, 0}, {3, 4}});
  for (int64_t r = 0; r < 3; ++r) {
    refit.copy(holders[r], g, row(r));
    refit.message(0, holders[r], 2, {{g, row(r)}});
  }
  for (int64_t r = 0; r < 3; ++r) {
    std::vector<Part> lacked;
    for (int64_t other = 0; other < 3; ++other)
      if (other != r)
        lacked.push_back({g, row(other), M2N_ROLE_DESTINATION});
    refit.message(1, 2, holders[r], lacked);
  }
  return refit.finish();
}

TEST_P(Pulls, GathersOnARelayAndBroadcastsFromIt) {
  SimRefit refit(gatherBroadcastPlan(), GetParam());
  expectAllOk(refit.run());
  EXPECT_EQ(refit.checkDestinations(), "");
  EXPECT_EQ(stagedBytes(refit.stats()) == 0, pulled());
}

TEST_P(Pulls, AllFailTogetherWhenTheRelayFails) {
  // Rank 2 fails in step 1, where every other rank waits for its
  // message, after all of step 0 was pulled.
  SimRefit refit(gatherBroadcastPlan(), GetParam());
  refit.onTransport([](int rank, m2n_transport_t transport) {
    if (rank == 2)
      failAtStep(transport, 1);
  });
  std::vector<Outcome> outcomes = refit.run();
  for (int rank : {0, 1, 3}) {
    EXPECT_EQ(outcomes[rank].code, M2N_STATUS_ABORTED) << "rank " << rank;
    EXPECT_EQ(outcomes[rank].message, "rank 2 failed: injected failure")
        << "rank " << rank;
  }
  EXPECT_EQ(outcomes[2].code, M2N_STATUS_ABORTED);
  EXPECT_EQ(outcomes[2].message, "injected failure");
  EXPECT_NE(refit.checkDestinations(), "");
}

// Staging that lives from one step to the next keeps a rank's messages
// staged, while the rest are pulled; the rank's buffers must then still
// be right. "v" U8 [2, 8]: rank 0 holds row 0, rank 3 row 1; ranks 1 and
// 2 end up with both.
//   Rank 0 packs row 0 in step 0 and sends it to rank 1, then sends the
//     same staging bytes to rank 2 in step 1 without packing again.
//   Rank 3 packs row 1 once and sends it to ranks 1 and 2.
//   Rank 1 receives both rows in step 0 and unpacks them with one walk.
//   Rank 2 receives row 1 in step 0 but unpacks it in step 1, with row 0.
// Only rank 3's message to rank 1 can be pulled: then rank 3 must still
// pack (for rank 2), and rank 1 unpack only row 0 of its walk.
std::vector<uint8_t> lingeringStagingPlan() {
  PlanWriter writer;
  writer.setWorldSize(4);
  writer.setStepCount(2);
  writer.setStagingBudget(1 << 20);
  uint32_t v = writer.addTensor("v", M2N_DTYPE_U8, {2, 8});
  uint32_t row0 = writer.addBinding(0, v, M2N_ROLE_SOURCE, {0, 0}, {1, 8});
  uint32_t row1 = writer.addBinding(3, v, M2N_ROLE_SOURCE, {1, 0}, {1, 8});
  uint32_t whole1 =
      writer.addBinding(1, v, M2N_ROLE_DESTINATION, {0, 0}, {2, 8});
  uint32_t whole2 =
      writer.addBinding(2, v, M2N_ROLE_DESTINATION, {0, 0}, {2, 8});
  auto pack = [](uint32_t binding) {
    PlanRuns runs;
    runs.fromBinding = binding;
    runs.runBytes = 8;
    return runs;
  };
  auto unpackBoth = [](uint32_t binding) {
    PlanRuns runs;
    runs.toBinding = binding;
    runs.runBytes = 16;
    return runs;
  };
  writer.step(0, 0);
  writer.pack(0, pack(row0));
  writer.send(0, 1, 0, 8);
  writer.step(0, 1);
  writer.send(0, 2, 0, 8);
  writer.step(3, 0);
  writer.pack(3, pack(row1));
  writer.send(3, 1, 0, 8);
  writer.send(3, 2, 0, 8);
  writer.step(1, 0);
  writer.recv(1, 0, 0, 8);
  writer.recv(1, 3, 8, 8);
  writer.unpack(1, unpackBoth(whole1));
  writer.step(2, 0);
  writer.recv(2, 3, 8, 8);
  writer.step(2, 1);
  writer.recv(2, 0, 0, 8);
  writer.unpack(2, unpackBoth(whole2));
  for (uint32_t rank : {0u, 3u})
    writer.setStagingBytes(rank, 8);
  for (uint32_t rank : {1u, 2u})
    writer.setStagingBytes(rank, 16);
  writer.setTraffic(0, 16, 0);
  writer.setTraffic(3, 16, 0);
  writer.setTraffic(1, 0, 16);
  writer.setTraffic(2, 0, 16);
  return writer.finish();
}

TEST_P(Pulls, StagesWhatStagingCarriesAcrossSteps) {
  SimRefit refit(lingeringStagingPlan(), GetParam());
  expectAllOk(refit.run(2));
  EXPECT_EQ(refit.checkDestinations(), "");
  const std::vector<m2n_executor_stats_t> &stats = refit.stats();
  EXPECT_EQ(stats[0].bytes_packed, 8u);
  EXPECT_EQ(stats[3].bytes_packed, 8u);
  EXPECT_EQ(stats[1].bytes_unpacked, pulled() ? 8u : 16u);
  EXPECT_EQ(stats[2].bytes_unpacked, 16u);
}

TEST(Pull, ReadsTheBuffersBoundForEachRun) {
  // The sender binds another buffer between runs: the receiver pulls from
  // the one bound now.
  std::vector<uint8_t> bytes = copyAndPackPlan();
  m2n_plan_t plan = loadPlan(bytes);
  m2n_sim_world_t world = nullptr;
  ASSERT_EQ(m2n_sim_world_create(3, &world), nullptr);
  uint16_t first[24], second[24], kept[12], got[12];
  for (uint16_t i = 0; i < 24; ++i) {
    first[i] = i;
    second[i] = uint16_t(100 + i);
  }
  int64_t whole[2] = {4, 6}, half[2] = {4, 3}, none[2] = {0, 6};
  std::vector<Outcome> outcomes(3 * 2);
  onEveryRank(3, [&](int rank) {
    m2n_transport_t transport = nullptr;
    m2n_executor_t executor = nullptr;
    m2n_status_free(m2n_sim_world_transport(world, rank, &transport));
    m2n_status_free(m2n_executor_create(plan, transport, nullptr, &executor));
    for (int run = 0; run < 2; ++run) {
      if (rank == 0) {
        m2n_status_free(m2n_executor_bind(executor, "x", M2N_ROLE_SOURCE,
                                          run ? second : first, M2N_DTYPE_BF16,
                                          2, whole));
        m2n_status_free(m2n_executor_bind(executor, "x", M2N_ROLE_DESTINATION,
                                          kept, M2N_DTYPE_BF16, 2, half));
      } else {
        m2n_status_free(m2n_executor_bind(
            executor, "x", M2N_ROLE_DESTINATION, rank == 1 ? got : nullptr,
            M2N_DTYPE_BF16, 2, rank == 1 ? half : none));
      }
      outcomes[2 * rank + run] = outcome(m2n_executor_run(executor));
      if (rank == 1 && run == 0)
        EXPECT_EQ(got[0], first[3]);
    }
    m2n_executor_destroy(executor);
    m2n_transport_destroy(transport);
  });
  expectAllOk(outcomes);
  for (int row = 0; row < 4; ++row)
    for (int column = 0; column < 3; ++column)
      EXPECT_EQ(got[row * 3 + column], second[row * 6 + 3 + column]);
  m2n_sim_world_destroy(world);
  m2n_plan_destroy(plan);
}

} // namespace
} // namespace m2n::test
