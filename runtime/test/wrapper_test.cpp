//===- wrapper_test.cpp - The C++ layer, resharding files offline ---------===//

#include "m2n/m2n.hpp"

#include "sim_test_util.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace m2n::test {
namespace {

TEST(Wrapper, StatusFreesAndPrints) {
  Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.toString(), "OK");
  Status failed(m2n_status_create(M2N_STATUS_NOT_FOUND, "no such thing"));
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.code(), M2N_STATUS_NOT_FOUND);
  EXPECT_EQ(failed.toString(), "NOT_FOUND: no such thing");
  Plan plan;
  Status missing = Plan::loadFile("/nonexistent/refit.m2n", &plan);
  EXPECT_EQ(missing.code(), M2N_STATUS_NOT_FOUND);
  EXPECT_FALSE(plan);
}

TEST(Wrapper, TransportsKnowTheirRank) {
  SimWorld world;
  ASSERT_TRUE(SimWorld::create(2, &world).ok());
  Transport transport;
  ASSERT_TRUE(world.transport(1, &transport).ok());
  EXPECT_EQ(transport.rank(), 1);
  EXPECT_EQ(transport.worldSize(), 2);
  EXPECT_EQ(transport.setTimeout(-1).code(), M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(transport.setTimeout(5).ok());
  EXPECT_TRUE(transport.abort("done").ok());
  Transport again;
  EXPECT_EQ(world.transport(1, &again).code(), M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_FALSE(again);
  // This process never initializes MPI.
  EXPECT_EQ(Transport::mpi(nullptr, &again).code(), M2N_STATUS_UNAVAILABLE);
}

// Offline resharding: rank 0's checkpoint holds "x" whole; the plan splits
// its columns between ranks 0 and 1; each rank writes what it ends up with.
TEST(Wrapper, ReshardsACheckpoint) {
  std::string dir = ::testing::TempDir();
  std::string prefix = dir + "m2n_wrapper_" + std::to_string(getpid());
  Box whole{{0, 0}, {4, 6}};
  std::vector<uint8_t> x = boxContents(0, {4, 6}, 2, whole);
  m2n_safetensors_tensor_t source = {};
  source.name = "x";
  source.dtype = M2N_DTYPE_BF16;
  source.ndim = 2;
  source.shape[0] = 4;
  source.shape[1] = 6;
  source.data = x.data();
  source.byte_size = x.size();
  ASSERT_TRUE(Safetensors::write(prefix + ".in", {source}).ok());

  std::vector<uint8_t> bytes = copyAndPackPlan();
  Plan plan;
  ASSERT_TRUE(Plan::loadMemory(bytes.data(), bytes.size(), &plan).ok());
  SimWorld world;
  ASSERT_TRUE(SimWorld::create(plan.info().world_size, &world).ok());
  std::vector<std::string> failures(3);
  onEveryRank(3, [&](int rank) {
    auto fail = [&](const Status &status) {
      failures[rank] = status.toString();
    };
    Transport transport;
    Executor executor;
    Status status = world.transport(rank, &transport);
    if (status.ok())
      status = Executor::create(plan, transport, &executor);
    Safetensors input;
    if (status.ok() && rank == 0) {
      m2n_safetensors_tensor_t x;
      status = Safetensors::load(prefix + ".in", &input);
      if (status.ok())
        status = input.find("x", &x);
      // Sources are only read: a read-only mapping will do.
      if (status.ok())
        status = executor.bind("x", M2N_ROLE_SOURCE, const_cast<void *>(x.data),
                               x.dtype, {4, 6});
    }
    std::vector<int64_t> shape =
        rank == 2 ? std::vector<int64_t>{0, 6} : std::vector<int64_t>{4, 3};
    std::vector<uint8_t> out(static_cast<size_t>(shape[0] * shape[1] * 2));
    if (status.ok())
      status = executor.bind("x", M2N_ROLE_DESTINATION,
                             out.empty() ? nullptr : out.data(), M2N_DTYPE_BF16,
                             shape);
    if (status.ok())
      status = executor.run();
    if (status.ok() && executor.stats().runs != 1)
      failures[rank] = "no run counted";
    m2n_safetensors_tensor_t result = {};
    result.name = "x";
    result.dtype = M2N_DTYPE_BF16;
    result.ndim = 2;
    result.shape[0] = shape[0];
    result.shape[1] = shape[1];
    result.data = out.data();
    result.byte_size = out.size();
    if (status.ok())
      status = Safetensors::write(prefix + ".out" + std::to_string(rank),
                                  {result}, {{"rank", "r"}});
    if (!status.ok())
      fail(status);
  });
  for (int rank = 0; rank < 3; ++rank)
    EXPECT_EQ(failures[rank], "") << "rank " << rank;

  const Box boxes[3] = {{{0, 0}, {4, 3}}, {{0, 3}, {4, 3}}, {{4, 0}, {0, 6}}};
  for (int rank = 0; rank < 3; ++rank) {
    std::string path = prefix + ".out" + std::to_string(rank);
    Safetensors output;
    ASSERT_TRUE(Safetensors::load(path, &output).ok());
    ASSERT_EQ(output.size(), 1u);
    m2n_safetensors_tensor_t got = output.tensor(0);
    std::vector<uint8_t> want = boxContents(0, {4, 6}, 2, boxes[rank]);
    const auto *data = static_cast<const uint8_t *>(got.data);
    EXPECT_EQ(std::vector<uint8_t>(data, data + got.byte_size), want)
        << "rank " << rank;
    std::remove(path.c_str());
  }
  std::remove((prefix + ".in").c_str());
}

} // namespace
} // namespace m2n::test
