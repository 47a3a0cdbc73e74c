//===- CompiledPlan.cpp - m2n's plan of a spec, for benchmarks ------------===//

#include "CompiledPlan.h"

#include "m2n/Dialect/M2N/IR/M2NDialect.h"
#include "m2n/Dialect/M2N/IR/M2NOps.h"
#include "m2n/Dialect/M2N/Transforms/Pipelines.h"
#include "m2n/Dialect/M2N/Transforms/PlanIR.h"
#include "m2n/Target/ImportSpec.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <cstdlib>

using namespace m2n;

mlir::FailureOr<plan::Plan> bench::compilePlan(const spec::RefitSpec &spec) {
  mlir::MLIRContext context;
  context.loadDialect<M2NDialect>();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      importRefitSpec(spec, "bench", &context);
  // As `m2n compile` runs it: the IR verified once, after the pipeline.
  mlir::PassManager pm(&context);
  pm.enableVerifier(false);
  buildCompilePipeline(pm, CompilePipelineOptions());
  if (std::getenv("M2N_TIMING"))
    pm.enableTiming();
  if (mlir::failed(pm.run(*module)) || mlir::failed(mlir::verify(*module)))
    return mlir::failure();
  return readPlan(*module->getOps<RefitOp>().begin());
}
