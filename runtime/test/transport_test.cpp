//===- transport_test.cpp - The sim transport; the transport C API --------===//

#include "sim_test_util.h"

#include "transport.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace m2n::test {
namespace {

using ::testing::HasSubstr;

TEST(SimWorld, RejectsBadArguments) {
  m2n_sim_world_t world = nullptr;
  Outcome result = outcome(m2n_sim_world_create(0, &world));
  EXPECT_EQ(result.code, M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(result.message,
            "m2n_sim_world_create: world size 0 is not at least 1");
  EXPECT_EQ(world, nullptr);
  ASSERT_EQ(m2n_sim_world_create(2, &world), nullptr);
  m2n_transport_t transport = nullptr;
  result = outcome(m2n_sim_world_transport(world, 2, &transport));
  EXPECT_EQ(result.message,
            "m2n_sim_world_transport: no rank 2 in a world of 2");
  EXPECT_EQ(outcome(m2n_sim_world_transport(world, -1, &transport)).code,
            M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(transport, nullptr);
  m2n_sim_world_destroy(world);
}

TEST(SimWorld, GivesEachRankOneTransportAtATime) {
  m2n_sim_world_t world = nullptr;
  ASSERT_EQ(m2n_sim_world_create(2, &world), nullptr);
  m2n_transport_t first = nullptr, second = nullptr;
  ASSERT_EQ(m2n_sim_world_transport(world, 1, &first), nullptr);
  Outcome result = outcome(m2n_sim_world_transport(world, 1, &second));
  EXPECT_EQ(result.code, M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(result.message, "rank 1 of the sim world already has a transport");
  m2n_transport_destroy(first);
  ASSERT_EQ(m2n_sim_world_transport(world, 1, &second), nullptr);
  int rank = -1, size = -1;
  ASSERT_EQ(m2n_transport_get_rank(second, &rank, &size), nullptr);
  EXPECT_EQ(rank, 1);
  EXPECT_EQ(size, 2);
  m2n_transport_destroy(second);
  m2n_sim_world_destroy(world);
}

TEST(Transport, RejectsBadArguments) {
  EXPECT_EQ(outcome(m2n_transport_get_rank(nullptr, nullptr, nullptr)).code,
            M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(outcome(m2n_transport_abort(nullptr, "x")).code,
            M2N_STATUS_INVALID_ARGUMENT);
  m2n_sim_world_t world = nullptr;
  m2n_transport_t transport = nullptr;
  ASSERT_EQ(m2n_sim_world_create(1, &world), nullptr);
  ASSERT_EQ(m2n_sim_world_transport(world, 0, &transport), nullptr);
  EXPECT_EQ(outcome(m2n_transport_set_timeout(transport, -1)).message,
            "m2n_transport_set_timeout: the timeout must be >= 0 seconds");
  EXPECT_EQ(outcome(m2n_transport_set_timeout(transport, std::nan(""))).code,
            M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(m2n_transport_set_timeout(transport, 0), nullptr);
  m2n_transport_destroy(transport);
  m2n_sim_world_destroy(world);
}

TEST(Transport, MpiNeedsMpiInitialized) {
  // This process never initializes MPI; a build without MPI says so too.
  m2n_transport_t transport = nullptr;
  Outcome result = outcome(m2n_transport_create_mpi(nullptr, &transport));
  EXPECT_EQ(result.code, M2N_STATUS_UNAVAILABLE);
  EXPECT_THAT(result.message, HasSubstr("mpi transport: "));
  EXPECT_EQ(transport, nullptr);
}

TEST(AgreementStatus, IsTheSameTextForEveryRank) {
  EXPECT_EQ(agreementStatus({{7, true, ""}, {7, true, ""}}), nullptr);
  Outcome result = outcome(agreementStatus(
      {{7, true, ""}, {8, false, "ignored"}, {7, false, "tensor \"w\" ..."}}));
  EXPECT_EQ(result.code, M2N_STATUS_ABORTED);
  EXPECT_EQ(result.message,
            "rank 1 holds a different plan than rank 0 (hash "
            "0x0000000000000008 vs 0x0000000000000007); rank 2 is not "
            "ready: tensor \"w\" ...");
}

// Ranks that talk through their transports directly.
class SimPair : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(m2n_sim_world_create(2, &world_), nullptr);
    for (int rank = 0; rank < 2; ++rank)
      ASSERT_EQ(m2n_sim_world_transport(world_, rank, &transports_[rank]),
                nullptr);
    // The transports keep the world alive.
    m2n_sim_world_destroy(world_);
  }
  void TearDown() override {
    for (m2n_transport_t transport : transports_)
      m2n_transport_destroy(transport);
  }
  TransportImpl &rank(int rank) { return *transports_[rank]->impl; }
  DeviceImpl &device(int rank) { return *devices_[rank]; }

  std::unique_ptr<DeviceImpl> devices_[2] = {createHostDevice(),
                                         createHostDevice()};
  m2n_sim_world_t world_ = nullptr;
  m2n_transport_t transports_[2] = {};
};

TEST_F(SimPair, MatchesMessagesInOrderWithinAStep) {
  std::vector<uint8_t> a = {1, 2, 3}, b = {4, 5}, first(3), second(2);
  std::vector<Outcome> outcomes(2);
  onEveryRank(2, [&](int r) {
    std::vector<TransferOp> ops;
    if (r == 0)
      ops = {{TransferOp::Send, 1, a.data(), 3},
             {TransferOp::Send, 1, b.data(), 2}};
    else
      ops = {{TransferOp::Receive, 0, first.data(), 3},
             {TransferOp::Receive, 0, second.data(), 2}};
    outcomes[r] = outcome(rank(r).exchange(0, ops, device(r)));
  });
  EXPECT_TRUE(outcomes[0].ok()) << outcomes[0].message;
  EXPECT_TRUE(outcomes[1].ok()) << outcomes[1].message;
  EXPECT_EQ(first, a);
  EXPECT_EQ(second, b);
}

TEST_F(SimPair, ExchangesBothWaysAtOnce) {
  std::vector<uint8_t> mine[2] = {{1, 2}, {3, 4}}, theirs[2] = {{0, 0}, {0, 0}};
  onEveryRank(2, [&](int r) {
    // Both receive first in record order; posting sends first keeps that
    // from deadlocking.
    std::vector<TransferOp> ops = {
        {TransferOp::Receive, uint32_t(1 - r), theirs[r].data(), 2},
        {TransferOp::Send, uint32_t(1 - r), mine[r].data(), 2}};
    EXPECT_EQ(rank(r).exchange(0, ops, device(r)), nullptr);
  });
  EXPECT_EQ(theirs[0], mine[1]);
  EXPECT_EQ(theirs[1], mine[0]);
}

TEST_F(SimPair, AbortsOnMismatchedMessages) {
  std::vector<uint8_t> data(8);
  std::vector<Outcome> outcomes(2);
  onEveryRank(2, [&](int r) {
    std::vector<TransferOp> ops = {
        {r == 0 ? TransferOp::Send : TransferOp::Receive, uint32_t(1 - r),
         data.data(), r == 0 ? 8u : 4u}};
    outcomes[r] = outcome(rank(r).exchange(0, ops, device(r)));
  });
  const char *expected = "rank 1 failed: in step 0 it expects 4 bytes from "
                         "rank 0, which sends 8 bytes in step 0";
  EXPECT_EQ(outcomes[0].message, expected);
  EXPECT_EQ(outcomes[1].message, expected);
  // The world stays failed.
  EXPECT_EQ(outcome(rank(0).agree(1, true, "", device(0))).message, expected);
}

TEST_F(SimPair, AbortsWhenOnlyOneEndPulls) {
  // Both ends of a message must take the same path; a mismatch fails the
  // world rather than leave a pull reading nothing.
  std::vector<uint8_t> data(8);
  std::vector<Walk> walks(1);
  walks[0].runBytes = 8;
  std::vector<Outcome> outcomes(2);
  onEveryRank(2, [&](int r) {
    TransferOp op{r == 0 ? TransferOp::Send : TransferOp::Receive,
                  uint32_t(1 - r), data.data(), 8};
    if (r == 0) {
      op.data = nullptr;
      op.pulled = true;
    }
    outcomes[r] = outcome(rank(r).exchange(3, {op}, device(r)));
  });
  const char *expected = "rank 1 failed: in step 3 it expects the 8 bytes "
                         "from rank 0 through staging, which sends them to "
                         "be pulled";
  EXPECT_EQ(outcomes[0].message, expected);
  EXPECT_EQ(outcomes[1].message, expected);
}

TEST_F(SimPair, AgreesAgainAndAgain) {
  onEveryRank(2, [&](int r) {
    for (int round = 0; round < 100; ++round)
      ASSERT_EQ(rank(r).agree(42, true, "", device(r)), nullptr);
  });
}

} // namespace
} // namespace m2n::test
