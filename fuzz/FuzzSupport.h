//===- FuzzSupport.h - What the compiler's fuzzers share ---------*- C++
//-*-===//
//
// The spec and IR fuzzers both end in a compile: a refit small enough to
// compile in milliseconds goes through compileRefit as `m2n compile` runs
// it, and what it exports must load in the runtime, proof included. Any
// failure on the way must come with an error diagnostic.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_FUZZ_FUZZSUPPORT_H
#define M2N_FUZZ_FUZZSUPPORT_H

#include "m2n/Spec/RefitSpec.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace m2n::fuzz {

/// Stops the fuzzer with a crash it reports, in any build.
inline void check(bool condition) {
  if (!condition)
    __builtin_trap();
}

/// A context with the m2n dialect loaded and one thread, whose diagnostics
/// are counted instead of printed: printing would cost more than the work.
class FuzzContext {
public:
  FuzzContext();
  mlir::MLIRContext &get() { return context; }
  /// Errors reported since the context was made.
  size_t errors() const { return errorCount; }

private:
  mlir::MLIRContext context;
  size_t errorCount = 0;
};

/// Whether `spec` is small enough to compile in milliseconds: few ranks,
/// low rank ids, few tensors and few bytes.
bool isSmallRefit(const spec::RefitSpec &spec);

/// Compiles the one refit of `module` with options picked by `seed`, and
/// loads what it exports in the runtime. A failed compile must have
/// reported an error to `context`; a plan that compiled must load.
void compileAndLoad(FuzzContext &context, mlir::ModuleOp module, uint64_t seed);

/// Checks that `bytes`, a plan the compiler verified, loads in the runtime
/// with its proof: the two verifiers must agree.
void checkLoads(const std::vector<uint8_t> &bytes);

/// A hash of the input, to pick options by: the same input always runs
/// the same way.
uint64_t hashInput(const uint8_t *data, size_t size);

} // namespace m2n::fuzz

#endif // M2N_FUZZ_FUZZSUPPORT_H
