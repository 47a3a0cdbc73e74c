//===- HumanUnits.cpp - Sizes, times and counts for a reader --------------===//

#include "HumanUnits.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

namespace m2n::driver {
namespace {

/// `value`, a count of `units[0]`, in the largest of `units` (each `step`
/// times the one before) that keeps it at 1 or more: exact in the first unit,
/// else to three significant digits.
std::string scaled(double value, double step,
                   llvm::ArrayRef<const char *> units) {
  size_t unit = 0;
  // A value that three digits would round up to the step (1023.6 KiB as
  // "1024 KiB") reads better in the next unit ("1.00 MiB").
  while (unit + 1 < units.size() && value >= step - 0.5) {
    value /= step;
    ++unit;
  }
  int decimals = unit == 0 ? 0 : value < 9.995 ? 2 : value < 99.95 ? 1 : 0;
  return llvm::formatv("{0} {1}", llvm::format("%.*f", decimals, value),
                       units[unit]);
}

} // namespace

std::string humanBytes(uint64_t bytes) {
  static const char *const units[] = {"B",   "KiB", "MiB", "GiB",
                                      "TiB", "PiB", "EiB"};
  return scaled(double(bytes), 1024, units);
}

std::string humanTime(uint64_t nanoseconds) {
  static const char *const units[] = {"ns", "µs", "ms", "s"};
  return scaled(double(nanoseconds), 1000, units);
}

std::string humanSeconds(double seconds) {
  return humanTime(static_cast<uint64_t>(std::llround(seconds * 1e9)));
}

std::string counted(uint64_t count, llvm::StringRef noun) {
  return llvm::formatv("{0} {1}{2}", count, noun, count == 1 ? "" : "s");
}

} // namespace m2n::driver
