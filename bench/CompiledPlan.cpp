//===- CompiledPlan.cpp - m2n's plan of a spec, for benchmarks ------------===//

#include "CompiledPlan.h"

#include "m2n/Compiler/CompileRefit.h"
#include "m2n/Dialect/M2N/IR/M2NDialect.h"
#include "m2n/Target/ImportSpec.h"

#include "mlir/IR/MLIRContext.h"

#include <chrono>
#include <cstdlib>

using namespace m2n;

mlir::FailureOr<bench::Compiled>
bench::compileSpec(const spec::RefitSpec &spec) {
  return compileSpec(spec, CompilePipelineOptions());
}

mlir::FailureOr<bench::Compiled>
bench::compileSpec(const spec::RefitSpec &spec,
                   const CompilePipelineOptions &options) {
  auto start = std::chrono::steady_clock::now();
  mlir::MLIRContext context;
  context.loadDialect<M2NDialect>();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      importRefitSpec(spec, "bench", &context);
  CompileHooks hooks;
  hooks.configure = [](mlir::PassManager &pm) {
    if (std::getenv("M2N_TIMING"))
      pm.enableTiming();
  };
  std::chrono::steady_clock::time_point exporting;
  hooks.exporting = [&] { exporting = std::chrono::steady_clock::now(); };
  mlir::FailureOr<CompiledRefit> compiled =
      compileRefit(*module, options, hooks);
  if (mlir::failed(compiled))
    return mlir::failure();
  auto end = std::chrono::steady_clock::now();
  auto seconds = [](std::chrono::steady_clock::duration duration) {
    return std::chrono::duration<double>(duration).count();
  };
  return Compiled{std::move(*compiled), seconds(exporting - start),
                  seconds(end - exporting)};
}
