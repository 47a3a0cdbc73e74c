//===- nccl_test.cpp - The NCCL transport on one GPU ----------------------===//
//
// NCCL allows one rank per GPU, so one GPU gives a communicator of one
// rank: a plan of one rank (local copies) through the executor, and the
// transport's exchange through NCCL's sends and receives to itself.
//
//===----------------------------------------------------------------------===//

#include "device_world.h"
#include "refit_cases.h"

#include "cuda/cuda_device.h"
#include "cuda/nccl_transport.h"

#include <numeric>

namespace m2n::test {
namespace {

#define M2N_REQUIRE_NCCL()                                                     \
  do {                                                                         \
    int version_ = 0;                                                          \
    m2n_status_t status_ = m2n_cuda_nccl_load(&version_);                      \
    if (status_) {                                                             \
      std::string message_ = m2n_status_message(status_);                      \
      m2n_status_free(status_);                                                \
      GTEST_SKIP() << message_;                                                \
    }                                                                          \
  } while (0)

struct Plan {
  m2n_plan_t plan = nullptr;
  ~Plan() { m2n_plan_destroy(plan); }
};

/// A communicator of one rank on the current device.
::testing::AssertionResult oneRankTransport(m2n_transport_t *out) {
  uint8_t id[M2N_CUDA_NCCL_UNIQUE_ID_BYTES];
  if (auto ok = isOk(m2n_cuda_nccl_get_unique_id(id, sizeof(id))); !ok)
    return ok;
  return isOk(m2n_cuda_transport_create_nccl_unique_id(id, 1, 0, out));
}

struct Transport {
  m2n_transport_t transport = nullptr;
  ~Transport() { m2n_transport_destroy(transport); }
};

TEST(Nccl, LoadsAndReportsItsVersion) {
  int version = 0;
  m2n_status_t status = m2n_cuda_nccl_load(&version);
  if (status) {
    std::string message = m2n_status_message(status);
    EXPECT_EQ(m2n_status_code(status), M2N_STATUS_UNAVAILABLE) << message;
    m2n_status_free(status);
    GTEST_SKIP() << message;
  }
  EXPECT_GE(version, 21400) << "NCCL 2.14 or newer";
}

// Two tensors a single rank holds before and after: the refit is local
// copies, run by the executor over NCCL (the agreement included), then
// synchronously, then captured into a graph.
TEST(Nccl, OneRankRefit) {
  M2N_REQUIRE_GPU();
  M2N_REQUIRE_NCCL();
  RefitSpec spec;
  spec.name = "one-rank";
  spec.tensors.push_back({"w",
                          M2N_DTYPE_BF16,
                          {64, 40},
                          layout({64, 40}, {1}, {kReplicate}, 0),
                          layout({64, 40}, {1}, {kReplicate}, 0)});
  spec.tensors.push_back({"b",
                          M2N_DTYPE_F32,
                          {33},
                          layout({33}, {1}, {0}, 0),
                          layout({33}, {1}, {0}, 0)});
  Plan plan;
  ASSERT_TRUE(loadPlan(planRefit(spec), &plan.plan));
  {
    m2n_transport_t transport = nullptr;
    ASSERT_TRUE(oneRankTransport(&transport));
    DeviceWorld world(plan.plan, {transport});
    ASSERT_TRUE(world.setUp(M2N_CUDA_DEVICE_SYNCHRONIZE));
    ASSERT_TRUE(world.run());
    EXPECT_EQ(cudaStreamQuery(world.stream(0)), cudaSuccess);
    EXPECT_TRUE(world.check());
  }
  m2n_transport_t transport = nullptr;
  ASSERT_TRUE(oneRankTransport(&transport));
  DeviceWorld world(plan.plan, {transport});
  ASSERT_TRUE(world.setUp());
  ASSERT_TRUE(world.run());
  EXPECT_TRUE(world.check());

  // Later runs neither agree nor wait: they may be captured.
  ASSERT_TRUE(world.resetDestinations());
  cudaGraph_t graph = nullptr;
  ASSERT_TRUE(M2N_CUDA_OK(cudaStreamBeginCapture(
      world.stream(0), cudaStreamCaptureModeThreadLocal)));
  ::testing::AssertionResult ran = world.run();
  ASSERT_TRUE(M2N_CUDA_OK(cudaStreamEndCapture(world.stream(0), &graph)));
  ASSERT_TRUE(ran);
  cudaGraphExec_t exec = nullptr;
  ASSERT_TRUE(M2N_CUDA_OK(cudaGraphInstantiate(&exec, graph, 0)));
  ASSERT_TRUE(world.resetDestinations());
  ASSERT_TRUE(M2N_CUDA_OK(cudaGraphLaunch(exec, world.stream(0))));
  EXPECT_TRUE(world.check());
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

TEST(Nccl, CommunicatorMustMatchThePlan) {
  M2N_REQUIRE_GPU();
  M2N_REQUIRE_NCCL();
  RefitSpec spec;
  spec.name = "two-ranks";
  spec.world = 2;
  spec.tensors.push_back({"w",
                          M2N_DTYPE_F32,
                          {8},
                          layout({8}, {1}, {kReplicate}, 0),
                          layout({8}, {1}, {kReplicate}, 1)});
  Plan plan;
  ASSERT_TRUE(loadPlan(planRefit(spec), &plan.plan));
  Transport transport;
  ASSERT_TRUE(oneRankTransport(&transport.transport));
  m2n_device_t device = nullptr;
  ASSERT_TRUE(isOk(m2n_cuda_device_create(-1, nullptr, 0, &device)));
  m2n_executor_t executor = nullptr;
  m2n_status_t status =
      m2n_executor_create(plan.plan, transport.transport, device, &executor);
  EXPECT_EQ(m2n_status_code(status), M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(m2n_status_message(status))
                .find("is a plan for 2 ranks, but the transport's group has 1"),
            std::string::npos)
      << m2n_status_message(status);
  m2n_status_free(status);
  EXPECT_EQ(executor, nullptr);
  m2n_device_destroy(device);
}

// Host memory cannot go over NCCL: refused at creation, naming both.
TEST(Nccl, CarriesCudaMemoryOnly) {
  M2N_REQUIRE_GPU();
  M2N_REQUIRE_NCCL();
  RefitSpec spec;
  spec.name = "one-rank";
  spec.tensors.push_back({"w",
                          M2N_DTYPE_F32,
                          {8},
                          layout({8}, {1}, {kReplicate}, 0),
                          layout({8}, {1}, {kReplicate}, 0)});
  Plan plan;
  ASSERT_TRUE(loadPlan(planRefit(spec), &plan.plan));
  Transport transport;
  ASSERT_TRUE(oneRankTransport(&transport.transport));
  m2n_executor_t executor = nullptr;
  m2n_status_t status =
      m2n_executor_create(plan.plan, transport.transport, nullptr, &executor);
  EXPECT_EQ(m2n_status_code(status), M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(m2n_status_message(status),
               "m2n_executor_create: the nccl transport moves CUDA memory "
               "only, not host memory");
  m2n_status_free(status);
}

// Sends and receives to itself, split into 1 MiB chunks, in one group;
// then the same exchange captured into a graph and replayed.
TEST(Nccl, SelfExchangeInChunksAndGraphs) {
  M2N_REQUIRE_GPU();
  M2N_REQUIRE_NCCL();
  Transport transport;
  ASSERT_TRUE(oneRankTransport(&transport.transport));
  auto &nccl = static_cast<cuda::NcclTransport &>(*transport.transport->impl);
  nccl.setChunkBytes(uint64_t(1) << 20);
  const uint64_t bytes = (uint64_t(3) << 20) + 5;
  std::vector<uint8_t> data(bytes);
  std::iota(data.begin(), data.end(), uint8_t(7));
  uint8_t *from = nullptr, *to = nullptr;
  ASSERT_TRUE(M2N_CUDA_OK(cudaMalloc(&from, bytes)));
  ASSERT_TRUE(M2N_CUDA_OK(cudaMalloc(&to, bytes)));
  ASSERT_TRUE(M2N_CUDA_OK(
      cudaMemcpy(from, data.data(), bytes, cudaMemcpyHostToDevice)));
  cudaStream_t stream = nullptr;
  ASSERT_TRUE(
      M2N_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)));
  std::vector<TransferOp> transfers = {{TransferOp::Send, 0, from, bytes},
                                       {TransferOp::Receive, 0, to, bytes}};
  std::unique_ptr<DeviceImpl> device;
  ASSERT_TRUE(isOk(cuda::createCudaDevice(0, stream, false, &device)));
  auto received = [&]() -> ::testing::AssertionResult {
    std::vector<uint8_t> got(bytes);
    if (auto ok = M2N_CUDA_OK(cudaStreamSynchronize(stream)); !ok)
      return ok;
    if (auto ok = M2N_CUDA_OK(
            cudaMemcpy(got.data(), to, bytes, cudaMemcpyDeviceToHost));
        !ok)
      return ok;
    if (got != data)
      return ::testing::AssertionFailure() << "received bytes differ";
    return ::testing::AssertionSuccess();
  };
  ASSERT_TRUE(isOk(nccl.exchange(0, transfers, *device)));
  EXPECT_TRUE(received());

  ASSERT_TRUE(M2N_CUDA_OK(cudaMemset(to, 0, bytes)));
  cudaGraph_t graph = nullptr;
  ASSERT_TRUE(M2N_CUDA_OK(
      cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal)));
  ::testing::AssertionResult captured =
      isOk(nccl.exchange(0, transfers, *device));
  ASSERT_TRUE(M2N_CUDA_OK(cudaStreamEndCapture(stream, &graph)));
  ASSERT_TRUE(captured);
  cudaGraphExec_t exec = nullptr;
  ASSERT_TRUE(M2N_CUDA_OK(cudaGraphInstantiate(&exec, graph, 0)));
  ASSERT_TRUE(M2N_CUDA_OK(cudaGraphLaunch(exec, stream)));
  EXPECT_TRUE(received());
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  cudaFree(from);
  cudaFree(to);
}

} // namespace
} // namespace m2n::test
