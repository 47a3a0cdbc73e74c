//===- CompiledPlan.h - m2n's plan of a spec, for benchmarks ----*- C++ -*-===//

#ifndef M2N_BENCH_COMPILEDPLAN_H
#define M2N_BENCH_COMPILEDPLAN_H

#include "m2n/Compiler/CompileRefit.h"
#include "m2n/Spec/RefitSpec.h"

#include "mlir/Support/LogicalResult.h"

namespace m2n::bench {

/// A spec compiled as `m2n compile` compiles it, and the time of its two
/// parts: the import and the pipeline; then the export, with the plan and
/// the IR verified beside it.
struct Compiled {
  CompiledRefit refit;
  double pipelineSeconds = 0;
  double exportSeconds = 0;
};

/// Compiles `spec` with `options`, the default ones unless given. Fails,
/// with the compile's diagnostics on stderr, when it does. With M2N_TIMING
/// in the environment it also prints the time of each pass.
mlir::FailureOr<Compiled> compileSpec(const spec::RefitSpec &spec);
mlir::FailureOr<Compiled> compileSpec(const spec::RefitSpec &spec,
                                      const CompilePipelineOptions &options);

} // namespace m2n::bench

#endif // M2N_BENCH_COMPILEDPLAN_H
