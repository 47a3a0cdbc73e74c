//===- HumanUnitsTest.cpp - Sizes and times as a person reads them --------===//

#include "HumanUnits.h"

#include <gtest/gtest.h>

namespace m2n::driver {
namespace {

TEST(HumanUnits, BytesAreExactBelowAKibibyte) {
  EXPECT_EQ(humanBytes(0), "0 B");
  EXPECT_EQ(humanBytes(167), "167 B");
  EXPECT_EQ(humanBytes(1023), "1023 B");
}

TEST(HumanUnits, BytesTakeThreeSignificantDigits) {
  EXPECT_EQ(humanBytes(1024), "1.00 KiB");
  EXPECT_EQ(humanBytes(1536), "1.50 KiB");
  EXPECT_EQ(humanBytes(86016), "84.0 KiB");
  EXPECT_EQ(humanBytes(512ull << 20), "512 MiB");
  EXPECT_EQ(humanBytes(1ull << 30), "1.00 GiB");
  EXPECT_EQ(humanBytes(32124239872ull), "29.9 GiB");
  EXPECT_EQ(humanBytes(~0ull), "16.0 EiB");
}

TEST(HumanUnits, ANearlyFullUnitReadsAsTheNext) {
  // 1023.6 KiB would round to "1024 KiB".
  EXPECT_EQ(humanBytes(1048166), "1.00 MiB");
  EXPECT_EQ(humanBytes(1047552), "1023 KiB");
  // 9.996 and 99.96 would round to four digits at their precision.
  EXPECT_EQ(humanBytes(10236), "10.0 KiB");
  EXPECT_EQ(humanBytes(102359), "100 KiB");
}

TEST(HumanUnits, Times) {
  EXPECT_EQ(humanTime(0), "0 ns");
  EXPECT_EQ(humanTime(999), "999 ns");
  EXPECT_EQ(humanTime(1000), "1.00 µs");
  EXPECT_EQ(humanTime(40000), "40.0 µs");
  EXPECT_EQ(humanTime(999600), "1.00 ms");
  EXPECT_EQ(humanTime(1234567), "1.23 ms");
  EXPECT_EQ(humanTime(2500000000ull), "2.50 s");
  // Seconds are the largest unit.
  EXPECT_EQ(humanTime(12345000000000ull), "12345 s");
}

TEST(HumanUnits, Counted) {
  EXPECT_EQ(counted(0, "step"), "0 steps");
  EXPECT_EQ(counted(1, "step"), "1 step");
  EXPECT_EQ(counted(2, "step"), "2 steps");
}

} // namespace
} // namespace m2n::driver
