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
  m2n_device_t device = nullptr;
  std::string message;
  EXPECT_EQ(codeOf(m2n_cuda_device_create(-1, nullptr, 0, &device), &message),
            M2N_STATUS_UNAVAILABLE)
      << message;
  EXPECT_NE(message.find("CUDA"), std::string::npos) << message;
  EXPECT_EQ(device, nullptr);
}

TEST(CudaExecutor, RejectsBadArguments) {
  std::string message;
  m2n_device_t device = nullptr;
  EXPECT_EQ(codeOf(m2n_cuda_device_create(-1, nullptr, 0, nullptr), &message),
            M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(codeOf(m2n_cuda_device_create(-1, nullptr, 2, &device), &message),
            M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(message.find("unknown flags 2"), std::string::npos) << message;
  EXPECT_EQ(device, nullptr);
  m2n_device_destroy(nullptr);
}

// Rank 1 of the small plan on the GPU, over an external transport: binding
// needs no peer.
class BoundExecutor : public ::testing::Test {
protected:
  void SetUp() override {
    M2N_REQUIRE_GPU();
    ASSERT_TRUE(loadPlan(planRefit(smallSpec()), &plan_.plan));
    m2n_device_t device = nullptr;
    ASSERT_TRUE(isOk(m2n_cuda_device_create(-1, nullptr, 0, &device)));
    ASSERT_TRUE(isOk(m2n_transport_create_external(1, 3, &transport_)));
    ::testing::AssertionResult created =
        isOk(m2n_executor_create(plan_.plan, transport_, device, &exec_));
    m2n_device_destroy(device);
    ASSERT_TRUE(created);
    ASSERT_TRUE(M2N_CUDA_OK(cudaMalloc(&buffer_, 4 * 3 * sizeof(float))));
  }
  void TearDown() override {
    m2n_executor_destroy(exec_);
    m2n_transport_destroy(transport_);
    cudaFree(buffer_);
  }
  m2n_status_code_t bind(const char *name, m2n_role_t role, void *pointer,
                         m2n_dtype_t dtype, std::vector<int64_t> shape) {
    return codeOf(m2n_executor_bind(exec_, name, role, pointer, dtype,
                                    static_cast<uint32_t>(shape.size()),
                                    shape.data()),
                  &message_);
  }

  Plan plan_;
  m2n_transport_t transport_ = nullptr;
  m2n_executor_t exec_ = nullptr;
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
  EXPECT_EQ(message_, "tensor \"w\" destination on rank 1: the buffer is not "
                      "device memory, expected memory of CUDA device 0");
  EXPECT_EQ(bind("w", dst, buffer_, M2N_DTYPE_F32, {4, 3}), M2N_STATUS_OK)
      << message_;
}

TEST_F(BoundExecutor, ExternalTransportRunsStepByStep) {
  ASSERT_EQ(bind("w", M2N_ROLE_DESTINATION, buffer_, M2N_DTYPE_F32, {4, 3}),
            M2N_STATUS_OK);
  EXPECT_EQ(codeOf(m2n_executor_run(exec_), &message_),
            M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(message_.find("m2n_executor_step_next"), std::string::npos)
      << message_;
  // The agreement's records are in device memory too.
  m2n_exchange_t exchange;
  ASSERT_TRUE(isOk(m2n_executor_step_next(exec_, &exchange)));
  EXPECT_EQ(exchange.step, M2N_STEP_AGREEMENT);
  ASSERT_EQ(exchange.send_count, 2u);
  cudaPointerAttributes attributes = {};
  ASSERT_TRUE(M2N_CUDA_OK(
      cudaPointerGetAttributes(&attributes, exchange.sends[0].data)));
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
}

} // namespace
} // namespace m2n::test
