//===- Assert.h - m2n's own assertions --------------------------*- C++ -*-===//
//
// m2n is built with NDEBUG wherever the system's LLVM and MLIR are release
// builds (their headers change classes by it), and NDEBUG turns assert()
// off. M2N_ASSERT is assert() unless M2N_ENABLE_ASSERTIONS is defined, as
// the fuzz build defines it: then it checks whatever NDEBUG says, so that a
// fuzzer sees every invariant of m2n's that an input breaks.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_SUPPORT_ASSERT_H
#define M2N_SUPPORT_ASSERT_H

#include <cassert>

#ifdef M2N_ENABLE_ASSERTIONS
#include <cstdio>
#include <cstdlib>

namespace m2n {
/// Reports a broken invariant and aborts, as assert() does.
[[noreturn]] inline void assertionFailed(const char *condition,
                                         const char *message, const char *file,
                                         int line) {
  std::fprintf(stderr, "%s:%d: m2n assertion `%s' failed: %s\n", file, line,
               condition, message);
  std::abort();
}
} // namespace m2n

#define M2N_ASSERT(condition, message)                                         \
  ((condition) ? static_cast<void>(0)                                          \
               : ::m2n::assertionFailed(#condition, message, __FILE__,         \
                                        __LINE__))
#else
#define M2N_ASSERT(condition, message) assert((condition) && message)
#endif

#endif // M2N_SUPPORT_ASSERT_H
