//===- CompileRefit.h - A refit's IR to its plan file -----------*- C++ -*-===//
//
// The whole compile that `m2n compile` runs, for it and for the benchmarks
// that measure it: the m2n-compile pipeline, the plan verified, the IR
// verified, the plan exported as bytecode.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_COMPILER_COMPILEREFIT_H
#define M2N_COMPILER_COMPILEREFIT_H

#include "m2n/Dialect/M2N/Transforms/Pipelines.h"
#include "m2n/Plan/CostModel.h"
#include "m2n/Plan/Plan.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace m2n {

/// What a compile gives: the plan, the cost model's figures for it, and the
/// plan file's bytes.
struct CompiledRefit {
  plan::Plan plan;
  plan::PlanCost cost;
  std::vector<uint8_t> bytes;
};

/// Where a caller that shows progress or measures time hooks in.
struct CompileHooks {
  /// Called with the pass manager, holding the pipeline, before anything
  /// else is added to it and before it runs: to add instrumentation.
  std::function<void(mlir::PassManager &)> configure;
  /// Called once the pipeline has run, as the export begins.
  std::function<void()> exporting;
};

/// Compiles the one `m2n.refit` of `module`, as imported from a spec, into
/// a plan file. The pipeline runs without its last pass, m2n-verify: the
/// plan is checked by the same function, and the IR verified, on threads of
/// their own while the plan is exported on a thread per core; all of them
/// only read the plan and the IR. A plan that fails the check is reported
/// as m2n-verify reports it, and no bytes come back. Diagnostics go to the
/// module's context.
mlir::FailureOr<CompiledRefit>
compileRefit(mlir::ModuleOp module, const CompilePipelineOptions &options,
             const CompileHooks &hooks = {});

} // namespace m2n

#endif // M2N_COMPILER_COMPILEREFIT_H
