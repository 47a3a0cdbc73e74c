//===- HumanUnits.h - Sizes, times and counts for a reader ------*- C++ -*-===//
//
// Every figure that m2n's text output rounds for a reader (the summary of
// m2n inspect, the titles and tables of its pictures) is written by these,
// so that a size or a time reads alike everywhere: three significant digits
// in the largest unit that keeps the figure at 1 or more, and exact below
// the first step. Bytes take binary prefixes, because the budgets and
// buffers that plans are given are powers of two (a staging budget of 1 GiB
// reads "1.00 GiB", not "1.07 GB"). Output meant for programs (--json)
// stays exact and does not use these.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_TOOLS_M2N_HUMANUNITS_H
#define M2N_TOOLS_M2N_HUMANUNITS_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace m2n::driver {

/// "167 B", "3.00 KiB", "84.0 KiB", "512 MiB", "1.00 GiB".
std::string humanBytes(uint64_t bytes);

/// "0 ns", "999 ns", "40.0 µs", "1.23 ms", "2.50 s".
std::string humanTime(uint64_t nanoseconds);
/// The same of a time in seconds, rounded to nanoseconds.
std::string humanSeconds(double seconds);

/// "1 message", "2 messages".
std::string counted(uint64_t count, llvm::StringRef noun);

} // namespace m2n::driver

#endif // M2N_TOOLS_M2N_HUMANUNITS_H
