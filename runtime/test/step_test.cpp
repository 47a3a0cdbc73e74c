//===- step_test.cpp - Bring your own transport, end to end ---------------===//
//
// Every rank of a plan in one process, each over an external transport:
// the test is the caller's communication library (step_driver.h), moving
// each handed-out exchange with a plain loop of memcpy; then every
// destination byte is compared with its expected contents.
//
//===----------------------------------------------------------------------===//

#include "executor_test_util.h"
#include "plan_test_util.h"
#include "sim_test_util.h"
#include "step_driver.h"

#include "m2n/executor.h"
#include "m2n/transport.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <utility>

namespace m2n::test {
namespace {

class StepWorld {
public:
  explicit StepWorld(const std::vector<uint8_t> &plan) {
    plan_ = loadPlan(plan);
    m2n_plan_info_t info;
    m2n_status_free(m2n_plan_get_info(plan_, &info));
    size_ = info.world_size;
    for (uint32_t r = 0; r < size_; ++r) {
      m2n_transport_t transport = nullptr;
      m2n_executor_t executor = nullptr;
      EXPECT_TRUE(outcome(m2n_transport_create_external(
                              static_cast<int>(r), static_cast<int>(size_),
                              &transport))
                      .ok());
      EXPECT_TRUE(
          outcome(m2n_executor_create(plan_, transport, nullptr, &executor))
              .ok());
      transports_.push_back(transport);
      executors_.push_back(executor);
      buffers_.push_back(std::make_unique<RankBuffers>(plan_, r));
    }
  }
  ~StepWorld() {
    for (m2n_executor_t executor : executors_)
      m2n_executor_destroy(executor);
    for (m2n_transport_t transport : transports_)
      m2n_transport_destroy(transport);
    m2n_plan_destroy(plan_);
  }

  uint32_t size() const { return size_; }
  m2n_executor_t executor(uint32_t rank) const { return executors_[rank]; }
  m2n_transport_t transport(uint32_t rank) const { return transports_[rank]; }
  RankBuffers &buffers(uint32_t rank) { return *buffers_[rank]; }

  void bindAll() {
    for (uint32_t r = 0; r < size_; ++r)
      EXPECT_EQ(buffers_[r]->bindAll(executors_[r]), "");
  }

  /// One whole run of every rank, its messages moved with memcpy.
  std::vector<Outcome> run() {
    std::string problem;
    std::vector<Outcome> outcomes =
        StepDriver(executors_, [](void *to, const void *from, uint64_t bytes) {
          std::memcpy(to, from, bytes);
        }).run(&problem);
    EXPECT_EQ(problem, "");
    return outcomes;
  }

  std::string checkDestinations() const {
    return checkEveryDestination(buffers_);
  }

private:
  m2n_plan_t plan_ = nullptr;
  uint32_t size_ = 0;
  std::vector<m2n_transport_t> transports_;
  std::vector<m2n_executor_t> executors_;
  std::vector<std::unique_ptr<RankBuffers>> buffers_;
};

void expectAllOk(const std::vector<Outcome> &outcomes) {
  for (size_t r = 0; r < outcomes.size(); ++r)
    EXPECT_TRUE(outcomes[r].ok()) << "rank " << r << ": "
                                  << outcomes[r].message;
}

class StepWise : public ::testing::TestWithParam<
                     std::pair<const char *, std::vector<uint8_t> (*)()>> {};

std::vector<uint8_t> defaultRelayPlan() { return relayPlan(); }

INSTANTIATE_TEST_SUITE_P(
    Plans, StepWise,
    ::testing::Values(std::make_pair("Relay", &defaultRelayPlan),
                      std::make_pair("CopyAndPack", &copyAndPackPlan),
                      std::make_pair("MultiStep", &multiStepPlan),
                      std::make_pair("Strided", &stridedPlan),
                      std::make_pair("EveryOpcode", &samplePlan)),
    [](const auto &info) { return std::string(info.param.first); });

// Twice with other contents: staging and the agreement's records reused.
TEST_P(StepWise, MovesEveryByteAsTheSimWorldDoes) {
  std::vector<uint8_t> plan = GetParam().second();
  StepWorld world(plan);
  world.bindAll();
  for (uint32_t salt = 0; salt < 2; ++salt) {
    for (uint32_t r = 0; r < world.size(); ++r)
      world.buffers(r).refill(salt);
    expectAllOk(world.run());
    EXPECT_EQ(world.checkDestinations(), "") << "run " << salt;
  }
  // The statistics are the sim world's, runs counted.
  SimRefit sim(plan, Path::Staged);
  expectAllOk(sim.run());
  for (uint32_t r = 0; r < world.size(); ++r) {
    m2n_executor_stats_t stats;
    ASSERT_TRUE(
        outcome(m2n_executor_get_stats(world.executor(r), &stats)).ok());
    const m2n_executor_stats_t &want = sim.stats()[r];
    EXPECT_EQ(stats.runs, 2u);
    EXPECT_EQ(stats.steps, want.steps);
    EXPECT_EQ(stats.bytes_sent, want.bytes_sent);
    EXPECT_EQ(stats.bytes_received, want.bytes_received);
    EXPECT_EQ(stats.bytes_packed, want.bytes_packed);
    EXPECT_EQ(stats.bytes_unpacked, want.bytes_unpacked);
    EXPECT_EQ(stats.bytes_copied, want.bytes_copied);
  }
}

TEST(StepWise, TheAgreementComesFirstWithARecordForEachPeer) {
  StepWorld world(relayPlan());
  world.bindAll();
  m2n_exchange_t x;
  ASSERT_TRUE(outcome(m2n_executor_step_next(world.executor(2), &x)).ok());
  EXPECT_EQ(x.step, M2N_STEP_AGREEMENT);
  EXPECT_EQ(x.done, 0);
  ASSERT_EQ(x.send_count, 3u);
  ASSERT_EQ(x.receive_count, 3u);
  uint32_t peers[3] = {0, 1, 3};
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(x.sends[i].peer, peers[i]);
    EXPECT_EQ(x.receives[i].peer, peers[i]);
    EXPECT_EQ(x.sends[i].bytes, uint64_t(M2N_AGREEMENT_RECORD_BYTES));
    EXPECT_EQ(x.receives[i].bytes, uint64_t(M2N_AGREEMENT_RECORD_BYTES));
  }
}

TEST(StepWise, EveryRankFailsTheAgreementAlike) {
  StepWorld world(relayPlan());
  for (uint32_t r : {0u, 1u, 3u})
    EXPECT_EQ(world.buffers(r).bindAll(world.executor(r)), "");
  std::vector<Outcome> outcomes = world.run();
  for (const Outcome &result : outcomes) {
    EXPECT_EQ(result.code, M2N_STATUS_ABORTED);
    EXPECT_EQ(result.message, "rank 2 is not ready: tensor \"w\" destination "
                              "is not bound");
  }
  // Bound now, the next run succeeds.
  EXPECT_EQ(world.buffers(2).bindAll(world.executor(2)), "");
  expectAllOk(world.run());
  EXPECT_EQ(world.checkDestinations(), "");
}

// Rank 2 of the relay plan receives in step 0 and forwards in step 1.
class StepMisuse : public ::testing::Test {
protected:
  void SetUp() override { world_.bindAll(); }
  m2n_executor_t exec() { return world_.executor(2); }
  // Hands out and completes the agreement with every record of rank 2
  // itself, as if all ranks held its plan and were ready.
  void agreeAlone() {
    ASSERT_TRUE(outcome(m2n_executor_step_next(exec(), &x_)).ok());
    ASSERT_EQ(x_.step, M2N_STEP_AGREEMENT);
    for (uint32_t i = 0; i < x_.receive_count; ++i)
      std::memcpy(x_.receives[i].data, x_.sends[0].data,
                  M2N_AGREEMENT_RECORD_BYTES);
    ASSERT_TRUE(outcome(m2n_executor_step_complete(exec(), x_.step,
                                                   x_.send_count,
                                                   x_.receive_count))
                    .ok());
  }

  StepWorld world_{relayPlan()};
  m2n_exchange_t x_;
};

TEST_F(StepMisuse, AMissingReceiveFailsTheStep) {
  // The agreement, with one of its receives not moved.
  ASSERT_TRUE(outcome(m2n_executor_step_next(exec(), &x_)).ok());
  Outcome result = outcome(m2n_executor_step_complete(exec(), x_.step, 3, 2));
  EXPECT_EQ(result.code, M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(result.message,
            "m2n_executor_step_complete: the agreement of rank 2: 3 of 3 "
            "sends and 2 of 3 receives moved; every message must be moved "
            "before its step completes");
  // That run is over; in the next, a data step.
  agreeAlone();
  ASSERT_TRUE(outcome(m2n_executor_step_next(exec(), &x_)).ok());
  ASSERT_EQ(x_.step, 0u);
  ASSERT_EQ(x_.receive_count, 1u);
  result = outcome(m2n_executor_step_complete(exec(), 0, x_.send_count, 0));
  EXPECT_EQ(result.code, M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(result.message,
            "m2n_executor_step_complete: step 0 of rank 2: 0 of 0 sends and "
            "0 of 1 receives moved; every message must be moved before its "
            "step completes");
}

TEST_F(StepMisuse, StepsCompleteInOrder) {
  agreeAlone();
  ASSERT_TRUE(outcome(m2n_executor_step_next(exec(), &x_)).ok());
  Outcome result = outcome(m2n_executor_step_complete(exec(), 1, 0, 1));
  EXPECT_EQ(result.code, M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(result.message, "m2n_executor_step_complete: step 1 is out of "
                            "order: the open exchange is step 0");
  // The run is over: completing anything now is refused too.
  result = outcome(m2n_executor_step_complete(exec(), 0, 0, 1));
  EXPECT_EQ(result.message,
            "m2n_executor_step_complete: step 0 is not open: no exchange was "
            "handed out (m2n_executor_step_next) since the last was "
            "completed");
}

TEST_F(StepMisuse, AnOpenStepMustCompleteBeforeTheNext) {
  agreeAlone();
  ASSERT_TRUE(outcome(m2n_executor_step_next(exec(), &x_)).ok());
  Outcome result = outcome(m2n_executor_step_next(exec(), &x_));
  EXPECT_EQ(result.code, M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(result.message, "m2n_executor_step_next: step 0 is still open: "
                            "complete it with m2n_executor_step_complete "
                            "before the next");
  // A new run begins with the agreement.
  ASSERT_TRUE(outcome(m2n_executor_step_next(exec(), &x_)).ok());
  EXPECT_EQ(x_.step, M2N_STEP_AGREEMENT);
}

TEST_F(StepMisuse, NoBindingWhileARunIsInProgress) {
  agreeAlone();
  int64_t shape[2] = {4, 6};
  float data[24];
  Outcome result = outcome(m2n_executor_bind(
      exec(), "w", M2N_ROLE_DESTINATION, data, M2N_DTYPE_F32, 2, shape));
  EXPECT_EQ(result.code, M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(result.message.find("a step-wise run is in progress"),
            std::string::npos)
      << result.message;
}

TEST_F(StepMisuse, RunAndStepsDoNotMix) {
  Outcome result = outcome(m2n_executor_run(exec()));
  EXPECT_EQ(result.code, M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(result.message,
            "m2n_executor_run: the executor's transport is external, so the "
            "caller moves the messages: drive it with m2n_executor_step_next "
            "and m2n_executor_step_complete");
}

TEST_F(StepMisuse, AnAbortedTransportFailsTheNextStep) {
  ASSERT_TRUE(
      outcome(m2n_transport_abort(world_.transport(2), "engine stopped")).ok());
  Outcome result = outcome(m2n_executor_step_next(exec(), &x_));
  EXPECT_EQ(result.code, M2N_STATUS_ABORTED);
  EXPECT_EQ(result.message, "rank 2 failed: engine stopped");
}

TEST(StepWise, OnlyAnExternalTransportRunsStepByStep) {
  m2n_plan_t plan = loadPlan(relayPlan());
  m2n_sim_world_t sim = nullptr;
  ASSERT_TRUE(outcome(m2n_sim_world_create(4, &sim)).ok());
  m2n_transport_t transport = nullptr;
  ASSERT_TRUE(outcome(m2n_sim_world_transport(sim, 0, &transport)).ok());
  m2n_sim_world_destroy(sim);
  m2n_executor_t executor = nullptr;
  ASSERT_TRUE(
      outcome(m2n_executor_create(plan, transport, nullptr, &executor)).ok());
  m2n_exchange_t x;
  Outcome result = outcome(m2n_executor_step_next(executor, &x));
  EXPECT_EQ(result.code, M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(result.message,
            "m2n_executor_step_next: the executor's transport is sim, which "
            "moves the messages itself: use m2n_executor_run (only an "
            "external transport's executor runs step by step)");
  m2n_executor_destroy(executor);
  m2n_transport_destroy(transport);

  m2n_transport_t external = nullptr;
  ASSERT_TRUE(outcome(m2n_transport_create_external(0, 3, &external)).ok());
  // A group of another size is refused as over every transport.
  EXPECT_EQ(
      outcome(m2n_executor_create(plan, external, nullptr, &executor)).code,
      M2N_STATUS_INVALID_ARGUMENT);
  m2n_transport_destroy(external);
  EXPECT_EQ(outcome(m2n_transport_create_external(3, 3, &external)).message,
            "m2n_transport_create_external: rank 3 is not in a group of 3 "
            "ranks");
  m2n_plan_destroy(plan);
}

} // namespace
} // namespace m2n::test
