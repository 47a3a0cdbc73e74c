//===- CompiledPlan.h - m2n's plan of a spec, for benchmarks ----*- C++ -*-===//

#ifndef M2N_BENCH_COMPILEDPLAN_H
#define M2N_BENCH_COMPILEDPLAN_H

#include "m2n/Plan/Plan.h"
#include "m2n/Spec/RefitSpec.h"

#include "mlir/Support/LogicalResult.h"

namespace m2n::bench {

/// The plan that the default m2n-compile pipeline gives `spec`: decomposed,
/// balanced, relayed, fused, scheduled and verified. Fails, with the
/// pipeline's diagnostics on stderr, when the pipeline does. With M2N_TIMING
/// in the environment it also prints the time of each pass.
mlir::FailureOr<plan::Plan> compilePlan(const spec::RefitSpec &spec);

} // namespace m2n::bench

#endif // M2N_BENCH_COMPILEDPLAN_H
