//===- nccl_missing_test.cpp - A clear error when NCCL is not there -------===//
//
// A process of its own: the loader keeps NCCL once it has loaded it, and
// this test must see the bogus M2N_NCCL_LIBRARY before anything loads it.
// It needs no GPU.
//
//===----------------------------------------------------------------------===//

#include "m2n/cuda.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace {

constexpr const char *kBogus = "/nonexistent/m2n-test/libnccl-bogus.so.2";

TEST(NcclMissing, LoadIsUnavailableAndNamesWhatWasTried) {
  ASSERT_EQ(setenv("M2N_NCCL_LIBRARY", kBogus, 1), 0);
  int version = -1;
  m2n_status_t status = m2n_cuda_nccl_load(&version);
  ASSERT_NE(status, nullptr);
  std::string message = m2n_status_message(status);
  EXPECT_EQ(m2n_status_code(status), M2N_STATUS_UNAVAILABLE) << message;
  EXPECT_NE(message.find(kBogus), std::string::npos) << message;
  EXPECT_NE(message.find("M2N_NCCL_LIBRARY"), std::string::npos) << message;
  EXPECT_EQ(version, -1);
  m2n_status_free(status);

  uint8_t id[M2N_CUDA_NCCL_UNIQUE_ID_BYTES] = {};
  m2n_transport_t transport = nullptr;
  status = m2n_cuda_transport_create_nccl_unique_id(id, 1, 0, &transport);
  EXPECT_EQ(m2n_status_code(status), M2N_STATUS_UNAVAILABLE)
      << m2n_status_message(status);
  EXPECT_EQ(transport, nullptr);
  m2n_status_free(status);
}

} // namespace
