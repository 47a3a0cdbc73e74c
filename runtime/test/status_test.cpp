//===- status_test.cpp - Tests of the runtime's status API ----------------===//

#include "m2n/status.h"

#include <gtest/gtest.h>

#include <string>

extern "C" int m2n_status_c_roundtrip(void);

namespace {

TEST(Status, OkIsNull) {
  m2n_status_t status = m2n_status_create(M2N_STATUS_OK, "ignored");
  EXPECT_EQ(status, nullptr);
  EXPECT_EQ(m2n_status_code(status), M2N_STATUS_OK);
  EXPECT_STREQ(m2n_status_message(status), "");
  m2n_status_free(status);
}

TEST(Status, CarriesCodeAndCopiesMessage) {
  std::string text = "plan.m2n: truncated at byte 96";
  m2n_status_t status = m2n_status_create(M2N_STATUS_DATA_LOSS, text.c_str());
  text.assign(text.size(), 'x');
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(m2n_status_code(status), M2N_STATUS_DATA_LOSS);
  EXPECT_STREQ(m2n_status_message(status), "plan.m2n: truncated at byte 96");
  m2n_status_free(status);
}

TEST(Status, NullMessageIsEmpty) {
  m2n_status_t status = m2n_status_create(M2N_STATUS_INTERNAL, nullptr);
  EXPECT_STREQ(m2n_status_message(status), "");
  m2n_status_free(status);
}

TEST(Status, CodeNames) {
  EXPECT_STREQ(m2n_status_code_name(M2N_STATUS_OK), "OK");
  EXPECT_STREQ(m2n_status_code_name(M2N_STATUS_INVALID_ARGUMENT),
               "INVALID_ARGUMENT");
  EXPECT_STREQ(m2n_status_code_name(M2N_STATUS_ABORTED), "ABORTED");
  // 15 is the largest value the enum can hold (C++ makes storing a larger
  // one undefined, which UBSan reports).
  EXPECT_STREQ(m2n_status_code_name(static_cast<m2n_status_code_t>(15)),
               "UNKNOWN");
}

TEST(Status, UsableFromC) { EXPECT_TRUE(m2n_status_c_roundtrip()); }

TEST(Version, MatchesProject) {
  int major = -1, minor = -1, patch = -1;
  m2n_version(&major, &minor, &patch);
  EXPECT_EQ(major, 0);
  EXPECT_EQ(minor, 1);
  EXPECT_EQ(patch, 0);
  m2n_version(nullptr, nullptr, nullptr);
}

} // namespace
