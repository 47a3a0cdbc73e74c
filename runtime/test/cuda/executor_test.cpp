//===- executor_test.cpp - The C API's checks -----------------------------===//

#include "device_world.h"
#include "refit_cases.h"

#include <cstdlib>

namespace m2n::test {
namespace {

struct Plan {
  m2n_plan_t plan = nullptr;
  ~Plan() { m2n_plan_destroy(plan); }
};

// "w" F32 [4, 6]: rank 0 holds it whole; ranks 1 and 2 take its column
// halves, [4, 3] each.
RefitSpec smallSpec() {
  RefitSpec spec;
  spec.name = "small";
  spec.world = 3;
  spec.tensors.push_back({"w",
                          M2N_DTYPE_F32,
                          {4, 6},
                          layout({4, 6}, {1}, {kReplicate}, 0),
                          layout({4, 6}, {2}, {1}, 1)});
  return spec;
}

m2n_status_code_t codeOf(m2n_status_t status, std::string *message) {
  m2n_status_code_t code = m2n_status_code(status);
  *message = m2n_status_message(status);
  m2n_status_free(status);
  return code;
}

TEST(CudaExecutor, CreateWithoutADeviceIsUnavailable) {
  std::string why;
  if (cudaDeviceAvailable(&why))
    GTEST_SKIP() << "a CUDA device is present";
  Plan plan;
  ASSERT_TRUE(loadPlan(planRefit(smallSpec()), &plan.plan));
  m2n_cuda_executor_t executor = nullptr;
  std::string message;
  EXPECT_EQ(codeOf(m2n_cuda_executor_create(plan.plan, 0, nullptr, nullptr,
                                            &executor),
                   &message),
            M2N_STATUS_UNAVAILABLE)
      << message;
  EXPECT_NE(message.find("CUDA"), std::string::npos) << message;
  EXPECT_EQ(executor, nullptr);
}

TEST(CudaExecutor, RejectsBadArguments) {
  std::string message;
  m2n_cuda_executor_t executor = nullptr;
  EXPECT_EQ(
      codeOf(m2n_cuda_executor_create(nullptr, 0, nullptr, nullptr, &executor),
             &message),
      M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(codeOf(m2n_cuda_executor_run(nullptr), &message),
            M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(codeOf(m2n_cuda_local_world_run(nullptr, 0), &message),
            M2N_STATUS_INVALID_ARGUMENT);
  m2n_cuda_executor_destroy(nullptr);
  m2n_cuda_transport_destroy(nullptr);
}

class BoundExecutor : public ::testing::Test {
protected:
  void SetUp() override {
    M2N_REQUIRE_GPU();
    ASSERT_TRUE(loadPlan(planRefit(smallSpec()), &plan_.plan));
    ASSERT_TRUE(isOk(
        m2n_cuda_executor_create(plan_.plan, 1, nullptr, nullptr, &exec_)));
    ASSERT_TRUE(M2N_CUDA_OK(cudaMalloc(&buffer_, 4 * 3 * sizeof(float))));
  }
  void TearDown() override {
    m2n_cuda_executor_destroy(exec_);
    cudaFree(buffer_);
  }
  m2n_status_code_t bind(const char *name, m2n_role_t role, void *pointer,
                         m2n_dtype_t dtype, std::vector<int64_t> shape) {
    return codeOf(m2n_cuda_executor_bind(exec_, name, role, pointer, dtype,
                                         static_cast<uint32_t>(shape.size()),
                                         shape.data()),
                  &message_);
  }

  Plan plan_;
  m2n_cuda_executor_t exec_ = nullptr;
  void *buffer_ = nullptr;
  std::string message_;
};

TEST_F(BoundExecutor, ChecksWhatIsBound) {
  const m2n_role_t dst = M2N_ROLE_DESTINATION;
  EXPECT_EQ(bind("nope", dst, buffer_, M2N_DTYPE_F32, {4, 3}),
            M2N_STATUS_NOT_FOUND);
  EXPECT_NE(message_.find("\"nope\""), std::string::npos) << message_;
  EXPECT_EQ(bind("w", M2N_ROLE_SOURCE, buffer_, M2N_DTYPE_F32, {4, 3}),
            M2N_STATUS_NOT_FOUND);
  EXPECT_NE(message_.find("no source shard"), std::string::npos) << message_;
  EXPECT_EQ(bind("w", dst, buffer_, M2N_DTYPE_BF16, {4, 3}),
            M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(message_.find("F32"), std::string::npos) << message_;
  EXPECT_EQ(bind("w", dst, buffer_, M2N_DTYPE_F32, {3, 4}),
            M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(message_.find("[4, 3]"), std::string::npos) << message_;
  EXPECT_EQ(bind("w", dst, buffer_, M2N_DTYPE_F32, {4, 3, 1}),
            M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(bind("w", dst, nullptr, M2N_DTYPE_F32, {4, 3}),
            M2N_STATUS_INVALID_ARGUMENT);
  float host[12];
  EXPECT_EQ(bind("w", dst, host, M2N_DTYPE_F32, {4, 3}),
            M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(message_.find("not device memory"), std::string::npos) << message_;
  EXPECT_EQ(bind("w", dst, buffer_, M2N_DTYPE_F32, {4, 3}), M2N_STATUS_OK)
      << message_;
}

TEST_F(BoundExecutor, RunChecksBindingsAndTransport) {
  // Rank 1 of three, no transport: only the local world can run it.
  EXPECT_EQ(codeOf(m2n_cuda_executor_run(exec_), &message_),
            M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(message_.find("is not bound"), std::string::npos) << message_;
  ASSERT_EQ(bind("w", M2N_ROLE_DESTINATION, buffer_, M2N_DTYPE_F32, {4, 3}),
            M2N_STATUS_OK);
  EXPECT_EQ(codeOf(m2n_cuda_executor_run(exec_), &message_),
            M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(message_.find("m2n_cuda_local_world_run"), std::string::npos)
      << message_;
  // A world of one executor for a plan of three ranks.
  EXPECT_EQ(codeOf(m2n_cuda_local_world_run(&exec_, 1), &message_),
            M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(codeOf(m2n_cuda_executor_set_option(exec_,
                                                M2N_CUDA_OPTION_SYNCHRONIZE, 2),
                   &message_),
            M2N_STATUS_INVALID_ARGUMENT);
}

TEST(CudaExecutor, LocalWorldNeedsEachRankOnce) {
  M2N_REQUIRE_GPU();
  Plan plan;
  ASSERT_TRUE(loadPlan(planRefit(smallSpec()), &plan.plan));
  DeviceWorld world(plan.plan);
  ASSERT_TRUE(world.setUp());
  std::vector<m2n_cuda_executor_t> twice = {
      world.executors()[0], world.executors()[1], world.executors()[1]};
  std::string message;
  EXPECT_EQ(codeOf(m2n_cuda_local_world_run(twice.data(), 3), &message),
            M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(message.find("repeated"), std::string::npos) << message;
  // In any order.
  std::vector<m2n_cuda_executor_t> reversed(world.executors().rbegin(),
                                            world.executors().rend());
  ASSERT_TRUE(isOk(m2n_cuda_local_world_run(reversed.data(), 3)));
  EXPECT_TRUE(world.check());
}

} // namespace
} // namespace m2n::test
