//===- AssertTest.cpp - M2N_ASSERT ----------------------------------------===//
//
// This file alone turns m2n's assertions on, as the fuzz build does for all
// of m2n: it includes nothing else of m2n, so no inline function is built
// two ways.
//
//===----------------------------------------------------------------------===//

#define M2N_ENABLE_ASSERTIONS
#include "m2n/Support/Assert.h"

#include "gtest/gtest.h"

namespace {

int checked(int value) {
  M2N_ASSERT(value >= 0, "values are counts");
  return value;
}

TEST(Assert, OnWhateverNDEBUGSays) {
  // The tests build with NDEBUG as m2n does; the assertion checks anyway.
  EXPECT_EQ(checked(3), 3);
  EXPECT_DEATH(checked(-1), "m2n assertion `value >= 0' failed: values are "
                            "counts");
}

} // namespace
