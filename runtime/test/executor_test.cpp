//===- executor_test.cpp - Executing plans on the sim transport -----------===//

#include "sim_test_util.h"

#include "wrapped_transports.h"
#include "plan_internal.h"
#include "plan_test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

extern "C" int m2n_executor_c_copy(const void *plan, size_t size);

namespace m2n::test {
namespace {

using ::testing::HasSubstr;

void expectAllOk(const std::vector<Outcome> &outcomes) {
  for (size_t rank = 0; rank < outcomes.size(); ++rank)
    EXPECT_TRUE(outcomes[rank].ok())
        << "rank " << rank << ": " << outcomes[rank].message;
}

// Every rank fails with ABORTED and a message containing `text`.
void expectAllAborted(const std::vector<Outcome> &outcomes,
                      const std::string &text) {
  for (size_t rank = 0; rank < outcomes.size(); ++rank) {
    EXPECT_EQ(outcomes[rank].code, M2N_STATUS_ABORTED) << "rank " << rank;
    EXPECT_THAT(outcomes[rank].message, HasSubstr(text)) << "rank " << rank;
  }
}

// Each plan runs both ways a sim world can carry messages: pulled straight
// from the sender's buffers (as the sim transport does), and through both
// ranks' staging buffers (as over MPI).
class Execution : public ::testing::TestWithParam<Path> {};

INSTANTIATE_TEST_SUITE_P(Paths, Execution,
                         ::testing::Values(Path::Pulled, Path::Staged),
                         pathTestName);

TEST_P(Execution, ForwardsLikeARelay) {
  SimRefit refit(relayPlan(), GetParam());
  expectAllOk(refit.run());
  EXPECT_EQ(refit.checkDestinations(), "");
}

TEST_P(Execution, CopiesLocallyAndPacks) {
  SimRefit refit(copyAndPackPlan(), GetParam());
  expectAllOk(refit.run());
  EXPECT_EQ(refit.checkDestinations(), "");
}

TEST_P(Execution, ReusesStagingAcrossSteps) {
  SimRefit refit(multiStepPlan(), GetParam());
  expectAllOk(refit.run());
  EXPECT_EQ(refit.checkDestinations(), "");
}

TEST_P(Execution, WalksManyLevels) {
  SimRefit refit(stridedPlan(), GetParam());
  expectAllOk(refit.run());
  EXPECT_EQ(refit.checkDestinations(), "");
}

TEST_P(Execution, RunsThePlanWithEveryOpcode) {
  // Five ranks, rank 4 without work: it still takes part in the agreement.
  SimRefit refit(samplePlan(), GetParam());
  expectAllOk(refit.run());
  EXPECT_EQ(refit.checkDestinations(), "");
}

TEST_P(Execution, RunsAgainWithNewContents) {
  SimRefit refit(relayPlan(), GetParam());
  expectAllOk(refit.run(3));
  EXPECT_EQ(refit.checkDestinations(), "");
  for (const m2n_executor_stats_t &stats : refit.stats())
    EXPECT_EQ(stats.runs, 3u);
}

TEST_P(Execution, CountsWhatItMoves) {
  SimRefit refit(samplePlan(), GetParam());
  expectAllOk(refit.run());
  // Pulled messages skip staging: nothing is packed or unpacked.
  const uint64_t staged = GetParam() == Path::Staged ? 48 : 0;
  const m2n_executor_stats_t &rank0 = refit.stats()[0];
  EXPECT_EQ(rank0.bytes_sent, 72u);
  EXPECT_EQ(rank0.bytes_received, 0u);
  EXPECT_EQ(rank0.bytes_packed, staged);
  EXPECT_EQ(rank0.messages_sent, 4u);
  EXPECT_EQ(rank0.steps, 1u);
  EXPECT_EQ(rank0.runs, 1u);
  EXPECT_GT(rank0.seconds, 0.0);
  EXPECT_LE(rank0.agree_seconds, rank0.seconds);
  const m2n_executor_stats_t &rank1 = refit.stats()[1];
  EXPECT_EQ(rank1.bytes_copied, 24u);
  const m2n_executor_stats_t &rank2 = refit.stats()[2];
  EXPECT_EQ(rank2.bytes_received, 60u);
  EXPECT_EQ(rank2.bytes_unpacked, staged);
  EXPECT_EQ(rank2.messages_received, 3u);
  EXPECT_EQ(rank2.steps, 2u);
  const m2n_executor_stats_t &rank4 = refit.stats()[4];
  EXPECT_EQ(rank4.bytes_sent + rank4.bytes_received + rank4.steps, 0u);
  EXPECT_EQ(rank4.runs, 1u);
}

TEST(Executor, ReportsEachStepItBegins) {
  // Rank 2 has work in step 1 only; the others in steps 0, 1 and 2.
  SimRefit refit(multiStepPlan());
  std::vector<std::vector<uint64_t>> begun(3);
  refit.onExecutor([&](int rank, m2n_executor_t executor) {
    auto record = [](void *steps, uint64_t step) {
      static_cast<std::vector<uint64_t> *>(steps)->push_back(step);
    };
    EXPECT_EQ(m2n_executor_set_step_callback(executor, record, &begun[rank]),
              nullptr);
  });
  expectAllOk(refit.run(2));
  EXPECT_THAT(begun[0], ::testing::ElementsAre(0, 1, 2, 0, 1, 2));
  EXPECT_THAT(begun[1], ::testing::ElementsAre(0, 1, 2, 0, 1, 2));
  EXPECT_THAT(begun[2], ::testing::ElementsAre(1, 1));
}

TEST(Executor, StopsReportingStepsWhenTheCallbackIsCleared) {
  SimRefit refit(multiStepPlan());
  int calls = 0;
  refit.onExecutor([&](int, m2n_executor_t executor) {
    auto count = [](void *calls, uint64_t) { ++*static_cast<int *>(calls); };
    m2n_status_free(m2n_executor_set_step_callback(executor, count, &calls));
    EXPECT_EQ(m2n_executor_set_step_callback(executor, nullptr, nullptr),
              nullptr);
  });
  expectAllOk(refit.run());
  EXPECT_EQ(calls, 0);
  Outcome null = outcome(m2n_executor_set_step_callback(nullptr, nullptr,
                                                        nullptr));
  EXPECT_EQ(null.code, M2N_STATUS_INVALID_ARGUMENT);
}

TEST(Executor, WorksFromC) {
  PlanWriter writer;
  writer.setWorldSize(1);
  uint32_t t = writer.addTensor("t", M2N_DTYPE_F32, {2, 3});
  PlanRuns whole;
  whole.fromBinding = writer.addBinding(0, t, M2N_ROLE_SOURCE, {0, 0}, {2, 3});
  whole.toBinding =
      writer.addBinding(0, t, M2N_ROLE_DESTINATION, {0, 0}, {2, 3});
  whole.runBytes = 24;
  writer.copy(0, whole);
  std::vector<uint8_t> plan = writer.finish();
  EXPECT_EQ(m2n_executor_c_copy(plan.data(), plan.size()), 0);
}

//===----------------------------------------------------------------------===//
// Binding
//===----------------------------------------------------------------------===//

// One rank's executor over a plan, for bind's own checks.
class Bound : public ::testing::Test {
protected:
  void SetUp() override {
    plan_ = loadPlan(relayPlan());
    ASSERT_EQ(m2n_sim_world_create(4, &world_), nullptr);
    ASSERT_EQ(m2n_sim_world_transport(world_, 2, &transport_), nullptr);
    ASSERT_EQ(m2n_executor_create(plan_, transport_, nullptr, &executor_),
              nullptr);
  }
  void TearDown() override {
    m2n_executor_destroy(executor_);
    m2n_transport_destroy(transport_);
    m2n_sim_world_destroy(world_);
    m2n_plan_destroy(plan_);
  }
  Outcome bind(const char *name, m2n_role_t role, m2n_dtype_t dtype,
               std::vector<int64_t> shape, void *data = nullptr) {
    return outcome(
        m2n_executor_bind(executor_, name, role, data ? data : buffer_, dtype,
                          static_cast<uint32_t>(shape.size()), shape.data()));
  }

  m2n_plan_t plan_ = nullptr;
  m2n_sim_world_t world_ = nullptr;
  m2n_transport_t transport_ = nullptr;
  m2n_executor_t executor_ = nullptr;
  float buffer_[24] = {};
};

TEST_F(Bound, AcceptsTheShard) {
  EXPECT_TRUE(bind("w", M2N_ROLE_DESTINATION, M2N_DTYPE_F32, {4, 6}).ok());
}

TEST_F(Bound, RejectsAnUnknownTensor) {
  Outcome result = bind("v", M2N_ROLE_DESTINATION, M2N_DTYPE_F32, {4, 6});
  EXPECT_EQ(result.code, M2N_STATUS_NOT_FOUND);
  EXPECT_EQ(result.message, "m2n_executor_bind: the plan has no tensor \"v\"");
}

TEST_F(Bound, RejectsARoleTheRankDoesNotHold) {
  Outcome result = bind("w", M2N_ROLE_SOURCE, M2N_DTYPE_F32, {4, 6});
  EXPECT_EQ(result.code, M2N_STATUS_NOT_FOUND);
  EXPECT_EQ(result.message, "m2n_executor_bind: tensor \"w\": rank 2 holds "
                            "no source shard of it in the plan");
}

TEST_F(Bound, RejectsAnotherDtype) {
  Outcome result = bind("w", M2N_ROLE_DESTINATION, M2N_DTYPE_BF16, {4, 6});
  EXPECT_EQ(result.code, M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(result.message, "tensor \"w\" destination on rank 2: dtype BF16, "
                            "expected F32");
}

TEST_F(Bound, RejectsAnotherShape) {
  Outcome result = bind("w", M2N_ROLE_DESTINATION, M2N_DTYPE_F32, {2, 6});
  EXPECT_EQ(result.code, M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(result.message, "tensor \"w\" destination on rank 2: shape "
                            "[2, 6], expected [4, 6]");
  result = bind("w", M2N_ROLE_DESTINATION, M2N_DTYPE_F32, {4, 6, 1});
  EXPECT_EQ(result.message, "tensor \"w\" destination on rank 2: shape "
                            "[4, 6, 1], expected [4, 6]");
}

TEST_F(Bound, RejectsNullDataForAShardWithBytes) {
  Outcome result = outcome(
      m2n_executor_bind(executor_, "w", M2N_ROLE_DESTINATION, nullptr,
                        M2N_DTYPE_F32, 2, std::vector<int64_t>{4, 6}.data()));
  EXPECT_EQ(result.code, M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(result.message, "tensor \"w\" destination on rank 2: data is "
                            "null, expected a buffer of 96 bytes");
}

TEST_F(Bound, RejectsBadArguments) {
  EXPECT_EQ(bind("w", static_cast<m2n_role_t>(3), M2N_DTYPE_F32, {4, 6}).code,
            M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(outcome(m2n_executor_bind(executor_, "w", M2N_ROLE_DESTINATION,
                                      buffer_, M2N_DTYPE_F32, 2, nullptr))
                .message,
            "m2n_executor_bind: tensor \"w\": shape is null");
  EXPECT_EQ(
      bind("w", M2N_ROLE_DESTINATION, M2N_DTYPE_F32, std::vector<int64_t>(9, 1))
          .code,
      M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(outcome(m2n_executor_bind(nullptr, "w", M2N_ROLE_DESTINATION,
                                      buffer_, M2N_DTYPE_F32, 0, nullptr))
                .code,
            M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(outcome(m2n_executor_run(nullptr)).code,
            M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(outcome(m2n_executor_get_stats(executor_, nullptr)).code,
            M2N_STATUS_INVALID_ARGUMENT);
}

TEST_P(Execution, AcceptsNullForAnEmptyShard) {
  // copyAndPackPlan's rank 2 holds rows 4:4; RankBuffers binds it as NULL.
  SimRefit refit(copyAndPackPlan(), GetParam());
  expectAllOk(refit.run());
}

TEST(Executor, RejectsAWorldOfAnotherSize) {
  m2n_plan_t plan = loadPlan(relayPlan());
  m2n_sim_world_t world = nullptr;
  m2n_transport_t transport = nullptr;
  ASSERT_EQ(m2n_sim_world_create(3, &world), nullptr);
  ASSERT_EQ(m2n_sim_world_transport(world, 0, &transport), nullptr);
  m2n_executor_t executor = nullptr;
  Outcome result =
      outcome(m2n_executor_create(plan, transport, nullptr, &executor));
  EXPECT_EQ(result.code, M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(result.message, "m2n_executor_create: <memory> is a plan for 4 "
                            "ranks, but the transport's group has 3");
  EXPECT_EQ(executor, nullptr);
  m2n_transport_destroy(transport);
  m2n_sim_world_destroy(world);
  m2n_plan_destroy(plan);
}

//===----------------------------------------------------------------------===//
// Failing together
//===----------------------------------------------------------------------===//

TEST(Executor, AllFailWhenABindingIsMissing) {
  SimRefit refit(relayPlan());
  refit.skipBindings(2, [](const std::string &, m2n_role_t) { return true; });
  expectAllAborted(refit.run(), "rank 2 is not ready: tensor \"w\" "
                                "destination is not bound");
  EXPECT_NE(refit.checkDestinations(), "");
}

TEST(Executor, AllFailWithTheReasonABindFailed) {
  SimRefit refit(copyAndPackPlan());
  refit.replaceRank(1, [&](m2n_transport_t transport) {
    m2n_executor_t executor = nullptr;
    m2n_status_free(
        m2n_executor_create(refit.plan(), transport, nullptr, &executor));
    int64_t shape[2] = {4, 3};
    uint16_t data[12];
    m2n_status_free(m2n_executor_bind(executor, "x", M2N_ROLE_DESTINATION, data,
                                      M2N_DTYPE_F16, 2, shape));
    Outcome result = outcome(m2n_executor_run(executor));
    EXPECT_EQ(result.code, M2N_STATUS_ABORTED);
    m2n_executor_destroy(executor);
  });
  std::vector<Outcome> outcomes = refit.run();
  for (int rank : {0, 2}) {
    EXPECT_EQ(outcomes[rank].code, M2N_STATUS_ABORTED);
    EXPECT_EQ(outcomes[rank].message,
              "rank 1 is not ready: tensor \"x\" destination is not bound "
              "(its bind failed: tensor \"x\" destination on rank 1: dtype "
              "F16, expected BF16)");
  }
}

TEST(Executor, NamesEveryRankThatIsNotReady) {
  SimRefit refit(samplePlan());
  auto skipAll = [](const std::string &, m2n_role_t) { return true; };
  refit.skipBindings(1, skipAll);
  refit.skipBindings(
      3, [](const std::string &name, m2n_role_t) { return name == "b"; });
  expectAllAborted(
      refit.run(),
      "rank 1 is not ready: tensor \"w\" source is not bound, nor 2 other "
      "shards; rank 3 is not ready: tensor \"b\" destination is not bound");
}

TEST(Executor, AllFailWhenARankHoldsAnotherPlan) {
  SimRefit refit(relayPlan());
  std::vector<uint8_t> other = relayPlan(/*stagingBudget=*/1 << 21);
  refit.givePlan(3, other);
  std::vector<Outcome> outcomes = refit.run();
  std::string expected =
      "rank 3 holds a different plan than rank 0 (hash " +
      hex64(PlanBytes{other}.header().content_hash) + " vs " +
      hex64(PlanBytes{relayPlan()}.header().content_hash) + ")";
  for (const Outcome &result : outcomes) {
    EXPECT_EQ(result.code, M2N_STATUS_ABORTED);
    EXPECT_EQ(result.message, expected);
  }
}

TEST_P(Execution, OthersFailWhenARankFailsMidway) {
  // Rank 2 fails in step 1, after its step 0. Rank 0, whose part ended
  // when rank 2 received its message in step 0, succeeds; rank 3, which
  // waits for rank 2, fails. Rank 1 races rank 2: it fails if it starts its
  // step 0 after rank 2 has failed.
  SimRefit refit(relayPlan(), GetParam());
  refit.onTransport([](int rank, m2n_transport_t transport) {
    if (rank == 2)
      failAtStep(transport, 1);
  });
  auto start = std::chrono::steady_clock::now();
  std::vector<Outcome> outcomes = refit.run();
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took.count(), 5.0); // told at once, not timed out
  EXPECT_TRUE(outcomes[0].ok()) << outcomes[0].message;
  if (!outcomes[1].ok())
    EXPECT_EQ(outcomes[1].message, "rank 2 failed: injected failure");
  EXPECT_EQ(outcomes[2].message, "injected failure");
  EXPECT_EQ(outcomes[3].code, M2N_STATUS_ABORTED);
  EXPECT_EQ(outcomes[3].message, "rank 2 failed: injected failure");
}

TEST_P(Execution, OthersFailWhenARankAborts) {
  SimRefit refit(relayPlan(), GetParam());
  refit.replaceRank(1, [](m2n_transport_t transport) {
    m2n_status_free(m2n_transport_abort(transport, "out of memory"));
  });
  std::vector<Outcome> outcomes = refit.run();
  for (int rank : {0, 2, 3}) {
    EXPECT_EQ(outcomes[rank].code, M2N_STATUS_ABORTED);
    EXPECT_EQ(outcomes[rank].message, "rank 1 failed: out of memory");
  }
}

TEST(Executor, OthersTimeOutWhenARankNeverComes) {
  SimRefit refit(relayPlan());
  refit.setTimeout(0.2);
  refit.replaceRank(1, [](m2n_transport_t) {});
  std::vector<Outcome> outcomes = refit.run();
  for (int rank : {0, 2, 3}) {
    EXPECT_EQ(outcomes[rank].code, M2N_STATUS_ABORTED);
    EXPECT_THAT(outcomes[rank].message,
                HasSubstr("failed: timed out after 0.2 s in the agreement, "
                          "waiting for rank 1"));
  }
}

TEST_P(Execution, OthersTimeOutWhenARankStopsMidway) {
  // Rank 1 agrees, then never exchanges: rank 0 waits for it in step 0.
  // Rank 2, waiting for rank 0 in step 1, would time out as soon: it
  // waits longer, so that rank 0 is the one to give up.
  SimRefit refit(multiStepPlan(), GetParam());
  refit.setTimeout(0.2);
  refit.onTransport([](int rank, m2n_transport_t transport) {
    if (rank == 2)
      m2n_status_free(m2n_transport_set_timeout(transport, 10));
  });
  refit.replaceRank(1, [&](m2n_transport_t transport) {
    m2n_status_free(transport->impl->agree(
        PlanBytes{multiStepPlan()}.header().content_hash, true, "",
        *createHostDevice()));
  });
  std::vector<Outcome> outcomes = refit.run();
  EXPECT_EQ(outcomes[0].code, M2N_STATUS_ABORTED);
  EXPECT_EQ(outcomes[0].message, "rank 0 failed: timed out after 0.2 s in "
                                 "step 0, waiting for rank 1 to receive");
  EXPECT_EQ(outcomes[2].message, outcomes[0].message);
}

} // namespace
} // namespace m2n::test
