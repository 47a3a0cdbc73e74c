//===- mpi_test.cpp - The executor over MPI, one process per rank ---------===//
//
// Run by ctest under mpiexec with 3 processes. Every process runs every
// test; the tests are collective, so the ranks go through them in step.
// Transports time out after kTimeout seconds, so that a test failing on one
// rank fails the others rather than hanging them.
//
//===----------------------------------------------------------------------===//

#include "executor_test_util.h"
#include "wrapped_transports.h"
#include "plan_internal.h"
#include "plan_test_util.h"
#include "transport.h"

#include "m2n/transport.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mpi.h>

#include <chrono>
#include <cstddef>

namespace m2n::test {
namespace {

using ::testing::HasSubstr;

constexpr double kTimeout = 30;

int worldRank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int worldSize() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

struct Outcome {
  m2n_status_code_t code = M2N_STATUS_OK;
  std::string message;
  bool ok() const { return code == M2N_STATUS_OK; }
};

Outcome outcome(m2n_status_t status) {
  Outcome result{m2n_status_code(status), m2n_status_message(status)};
  m2n_status_free(status);
  return result;
}

// This rank's transport over MPI_COMM_WORLD, sending messages in pieces of
// at most `pieceBytes`.
m2n_transport_t mpiTransport(uint64_t pieceBytes = uint64_t(1) << 30) {
  std::unique_ptr<TransportImpl> impl;
  m2n_status_t status = createMpiTransport(nullptr, pieceBytes, &impl);
  EXPECT_EQ(status, nullptr) << m2n_status_message(status);
  m2n_status_free(status);
  if (!impl)
    return nullptr;
  impl->setTimeout(kTimeout);
  return new m2n_transport_s{std::move(impl)};
}

// Runs this rank's part of `planBytes` with buffers from RankBuffers;
// `skip` leaves bindings out. Destinations are checked on success.
Outcome
runPlan(const std::vector<uint8_t> &planBytes, m2n_transport_t transport,
        std::function<bool(const std::string &, m2n_role_t)> skip = nullptr) {
  m2n_plan_t plan = nullptr;
  Outcome result =
      outcome(m2n_plan_load_memory(planBytes.data(), planBytes.size(), &plan));
  m2n_executor_t executor = nullptr;
  if (result.ok())
    result = outcome(m2n_executor_create(plan, transport, nullptr, &executor));
  if (result.ok()) {
    RankBuffers buffers(plan, static_cast<uint32_t>(worldRank()));
    buffers.bindAll(executor, skip);
    result = outcome(m2n_executor_run(executor));
    if (result.ok())
      EXPECT_EQ(buffers.checkDestinations(), "");
  }
  m2n_executor_destroy(executor);
  m2n_plan_destroy(plan);
  return result;
}

/// "big" U8 [bytes] whole on rank 0: rank 1 receives it whole, straight
/// into its destination; rank 2 gets its second half through staging.
std::vector<uint8_t> bigPlan(int64_t bytes) {
  PlanWriter writer;
  writer.setWorldSize(3);
  writer.setStepCount(1);
  writer.setStagingBudget(uint64_t(bytes));
  uint32_t big = writer.addTensor("big", M2N_DTYPE_U8, {bytes});
  int64_t half = bytes / 2;
  uint64_t rest = uint64_t(bytes - half);
  uint32_t source = writer.addBinding(0, big, M2N_ROLE_SOURCE, {0}, {bytes});
  uint32_t whole =
      writer.addBinding(1, big, M2N_ROLE_DESTINATION, {0}, {bytes});
  uint32_t second =
      writer.addBinding(2, big, M2N_ROLE_DESTINATION, {half}, {bytes - half});
  writer.step(0, 0);
  writer.sendDirect(0, 1, source, 0, uint64_t(bytes));
  writer.sendDirect(0, 2, source, uint64_t(half), rest);
  writer.setTraffic(0, uint64_t(bytes) + rest, 0);
  writer.step(1, 0);
  writer.recvDirect(1, 0, whole, 0, uint64_t(bytes));
  writer.setTraffic(1, 0, uint64_t(bytes));
  PlanRuns unpack;
  unpack.toBinding = second;
  unpack.runBytes = rest;
  writer.step(2, 0);
  writer.recv(2, 0, 0, rest);
  writer.unpack(2, unpack);
  writer.setStagingBytes(2, rest);
  writer.setTraffic(2, 0, rest);
  return writer.finish();
}

// The tests, in the order they run; every rank runs each.

TEST(Mpi, TransportKnowsItsRank) {
  m2n_transport_t transport = mpiTransport();
  int rank = -1, size = -1;
  ASSERT_EQ(m2n_transport_get_rank(transport, &rank, &size), nullptr);
  EXPECT_EQ(rank, worldRank());
  EXPECT_EQ(size, 3);
  m2n_transport_destroy(transport);
}

TEST(Mpi, CreatesOverACommunicator) {
  MPI_Comm comm = MPI_COMM_WORLD;
  m2n_transport_t transport = nullptr;
  ASSERT_EQ(m2n_transport_create_mpi(&comm, &transport), nullptr);
  EXPECT_TRUE(runPlan(copyAndPackPlan(), transport).ok());
  m2n_transport_destroy(transport);
}

TEST(Mpi, ExecutesEveryKindOfPlan) {
  m2n_transport_t transport = mpiTransport();
  for (const auto &plan : {copyAndPackPlan(), multiStepPlan()}) {
    Outcome result = runPlan(plan, transport);
    EXPECT_TRUE(result.ok()) << result.message;
  }
  m2n_transport_destroy(transport);
}

TEST(Mpi, SplitsMessagesIntoPieces) {
  // Pieces of 5 bytes: every message of these plans is cut, unevenly.
  m2n_transport_t transport = mpiTransport(5);
  for (const auto &plan : {copyAndPackPlan(), multiStepPlan(), bigPlan(77)}) {
    Outcome result = runPlan(plan, transport);
    EXPECT_TRUE(result.ok()) << result.message;
  }
  m2n_transport_destroy(transport);
}

TEST(Mpi, MovesLargeMessages) {
  // Past any eager limit, in pieces of 1.5 MiB.
  m2n_transport_t transport = mpiTransport(uint64_t(3) << 19);
  Outcome result = runPlan(bigPlan(int64_t(4) << 20), transport);
  EXPECT_TRUE(result.ok()) << result.message;
  m2n_transport_destroy(transport);
}

TEST(Mpi, RejectsAPlanForAnotherWorld) {
  m2n_transport_t transport = mpiTransport();
  Outcome result = runPlan(relayPlan(), transport); // 4 ranks
  EXPECT_EQ(result.code, M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(result.message, "m2n_executor_create: <memory> is a plan for 4 "
                            "ranks, but the transport's group has 3");
  m2n_transport_destroy(transport);
}

// Step by step over an external transport, the test moving each exchange
// with its own MPI calls, as an engine's library would: every send and
// receive posted at once, then all waited for (MPI matches messages between
// two ranks in order, as the executor wants). Twice, so that the second
// run agrees again and reuses staging.
Outcome runStepWise(const std::vector<uint8_t> &planBytes) {
  m2n_plan_t plan = nullptr;
  Outcome result =
      outcome(m2n_plan_load_memory(planBytes.data(), planBytes.size(), &plan));
  m2n_transport_t transport = nullptr;
  if (result.ok())
    result = outcome(
        m2n_transport_create_external(worldRank(), worldSize(), &transport));
  m2n_executor_t executor = nullptr;
  if (result.ok())
    result = outcome(m2n_executor_create(plan, transport, nullptr, &executor));
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  for (uint32_t salt = 0; salt < 2 && result.ok(); ++salt) {
    RankBuffers buffers(plan, static_cast<uint32_t>(worldRank()), salt);
    buffers.bindAll(executor);
    m2n_exchange_t x;
    for (;;) {
      result = outcome(m2n_executor_step_next(executor, &x));
      if (!result.ok() || x.done)
        break;
      std::vector<MPI_Request> requests;
      for (uint32_t i = 0; i < x.send_count; ++i)
        MPI_Isend(x.sends[i].data, static_cast<int>(x.sends[i].bytes),
                  MPI_BYTE, static_cast<int>(x.sends[i].peer), 0, comm,
                  &requests.emplace_back());
      for (uint32_t i = 0; i < x.receive_count; ++i)
        MPI_Irecv(x.receives[i].data, static_cast<int>(x.receives[i].bytes),
                  MPI_BYTE, static_cast<int>(x.receives[i].peer), 0, comm,
                  &requests.emplace_back());
      MPI_Waitall(static_cast<int>(requests.size()), requests.data(),
                  MPI_STATUSES_IGNORE);
      result = outcome(m2n_executor_step_complete(
          executor, x.step, x.send_count, x.receive_count));
      if (!result.ok())
        break;
    }
    if (result.ok())
      EXPECT_EQ(buffers.checkDestinations(), "") << "run " << salt;
  }
  MPI_Comm_free(&comm);
  m2n_executor_destroy(executor);
  m2n_transport_destroy(transport);
  m2n_plan_destroy(plan);
  return result;
}

TEST(Mpi, StepWiseOverTheCallersOwnMessages) {
  for (const std::vector<uint8_t> &plan :
       {copyAndPackPlan(), bigPlan(int64_t(1) << 20)}) {
    Outcome result = runStepWise(plan);
    EXPECT_TRUE(result.ok()) << result.message;
  }
}

// Memory that says it is a GPU's; the executor asks the transport about it
// before anything else.
class GpuLookalike final : public DeviceImpl {
public:
  MemoryKind memoryKind() const override { return MemoryKind::Cuda; }
  std::string describe() const override { return "CUDA device 0"; }
  m2n_status_t load(const Program &, uint32_t, uint64_t) override {
    return nullptr;
  }
  uint8_t *staging() const override { return nullptr; }
  std::string checkBuffer(const void *) const override { return ""; }
  m2n_status_t setBuffers(const BufferTable &) override { return nullptr; }
  m2n_status_t copies() override { return nullptr; }
  m2n_status_t packs(size_t) override { return nullptr; }
  m2n_status_t unpacks(size_t) override { return nullptr; }
  m2n_status_t copy(void *, const void *, uint64_t) override { return nullptr; }
  m2n_status_t allocate(uint64_t, uint8_t **) override { return nullptr; }
  m2n_status_t write(uint8_t *, const void *, uint64_t) override {
    return nullptr;
  }
  m2n_status_t read(void *, const uint8_t *, uint64_t) override {
    return nullptr;
  }
};

TEST(Mpi, CarriesHostMemoryOnly) {
  m2n_transport_t transport = mpiTransport();
  m2n_device_s gpu{[](std::unique_ptr<DeviceImpl> *out) {
    *out = std::make_unique<GpuLookalike>();
    return m2n_status_t(nullptr);
  }};
  std::vector<uint8_t> bytes = copyAndPackPlan(); // 3 ranks
  m2n_plan_t plan = nullptr;
  ASSERT_EQ(m2n_plan_load_memory(bytes.data(), bytes.size(), &plan), nullptr);
  m2n_executor_t executor = nullptr;
  Outcome result =
      outcome(m2n_executor_create(plan, transport, &gpu, &executor));
  EXPECT_EQ(result.code, M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(result.message, "m2n_executor_create: the mpi transport moves "
                            "host memory only, not CUDA device 0");
  EXPECT_EQ(executor, nullptr);
  m2n_plan_destroy(plan);
  m2n_transport_destroy(transport);
}

TEST(Mpi, AllFailWhenRanksHoldDifferentPlans) {
  // Ranks 1 and 2 hold variants of rank 0's plan: another staging budget.
  auto variant = [](int rank) {
    PlanBytes plan{copyAndPackPlan()};
    plan.set(offsetof(m2n_plan_header_t, staging_budget), uint64_t(1)
                                                              << (20 + rank));
    plan.rehash();
    return plan;
  };
  m2n_transport_t transport = mpiTransport();
  Outcome result = runPlan(variant(worldRank()).bytes, transport);
  std::string expected;
  for (int rank : {1, 2})
    expected += concat(rank == 1 ? "" : "; ", "rank ", rank,
                       " holds a different plan than rank 0 (hash ",
                       hex64(variant(rank).header().content_hash), " vs ",
                       hex64(variant(0).header().content_hash), ")");
  EXPECT_EQ(result.code, M2N_STATUS_ABORTED);
  EXPECT_EQ(result.message, expected);
  m2n_transport_destroy(transport);
}

TEST(Mpi, AllFailWhenARankIsNotReady) {
  m2n_transport_t transport = mpiTransport();
  auto skip = [](const std::string &, m2n_role_t) { return worldRank() == 1; };
  Outcome result = runPlan(copyAndPackPlan(), transport, skip);
  EXPECT_EQ(result.code, M2N_STATUS_ABORTED);
  EXPECT_EQ(result.message, "rank 1 is not ready: tensor \"x\" destination "
                            "is not bound");
  m2n_transport_destroy(transport);
}

// The last tests: after a rank fails, MPI may hold messages that never
// complete.

TEST(Mpi, OthersFailWhenARankFailsMidway) {
  // Rank 1 fails before it receives 4 MiB from rank 0, which then gives
  // up its send. Rank 2 races the failure: its message may arrive first.
  m2n_transport_t transport = mpiTransport();
  int rank = worldRank();
  if (rank == 1)
    failAtStep(transport, 0);
  std::vector<uint8_t> bytes = bigPlan(int64_t(4) << 20);
  m2n_plan_t plan = nullptr;
  ASSERT_EQ(m2n_plan_load_memory(bytes.data(), bytes.size(), &plan), nullptr);
  m2n_executor_t executor = nullptr;
  ASSERT_EQ(m2n_executor_create(plan, transport, nullptr, &executor), nullptr);
  auto *buffers = new RankBuffers(plan, static_cast<uint32_t>(rank));
  buffers->bindAll(executor);
  Outcome result = outcome(m2n_executor_run(executor));
  if (rank == 1) {
    EXPECT_EQ(result.message, "injected failure");
  } else if (rank == 0 || !result.ok()) {
    EXPECT_EQ(result.code, M2N_STATUS_ABORTED);
    EXPECT_EQ(result.message, "rank 1 failed: injected failure");
  }
  // As the transport's documentation says, MPI may still read the buffers
  // of a failed exchange (sends cannot be cancelled): they are kept.
  if (result.ok()) {
    delete buffers;
    m2n_executor_destroy(executor);
    m2n_plan_destroy(plan);
  }
  m2n_transport_destroy(transport);
}

TEST(Mpi, OthersTimeOutWhenARankNeverComes) {
  m2n_transport_t transport = mpiTransport();
  if (worldRank() != 1) {
    m2n_status_free(m2n_transport_set_timeout(transport, 0.5));
    Outcome result = runPlan(copyAndPackPlan(), transport);
    EXPECT_EQ(result.code, M2N_STATUS_ABORTED);
    EXPECT_THAT(result.message,
                HasSubstr("failed: timed out after 0.5 s in the "
                          "agreement, waiting for rank 1"));
  }
  m2n_transport_destroy(transport);
}

TEST(Mpi, OthersFailAtOnceWhenARankAborts) {
  m2n_transport_t transport = mpiTransport();
  if (worldRank() == 1) {
    ASSERT_EQ(m2n_transport_abort(transport, "out of memory"), nullptr);
  } else {
    auto start = std::chrono::steady_clock::now();
    Outcome result = runPlan(copyAndPackPlan(), transport);
    std::chrono::duration<double> took =
        std::chrono::steady_clock::now() - start;
    EXPECT_EQ(result.code, M2N_STATUS_ABORTED);
    EXPECT_EQ(result.message, "rank 1 failed: out of memory");
    EXPECT_LT(took.count(), kTimeout / 2);
  }
  m2n_transport_destroy(transport);
}

} // namespace
} // namespace m2n::test

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int failed = RUN_ALL_TESTS();
  int anyFailed = 0;
  MPI_Allreduce(&failed, &anyFailed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return anyFailed;
}
