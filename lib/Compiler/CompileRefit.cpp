//===- CompileRefit.cpp - A refit's IR to its plan file -------------------===//

#include "m2n/Compiler/CompileRefit.h"

#include "m2n/Dialect/M2N/IR/M2NOps.h"
#include "m2n/Dialect/M2N/Transforms/PlanIR.h"
#include "m2n/Plan/Verify.h"
#include "m2n/Target/ExportPlan.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Pass/Pass.h"

#include <algorithm>
#include <string>
#include <thread>

using namespace mlir;

namespace m2n {
namespace {

/// What the checkers find: the IR verifier's verdict and the plan's
/// problems.
struct Verdict {
  bool irValid = false;
  std::vector<std::string> problems;
};

} // namespace

FailureOr<CompiledRefit> compileRefit(ModuleOp module,
                                      const CompilePipelineOptions &options,
                                      const CompileHooks &hooks) {
  auto refits = module.getOps<RefitOp>();
  if (refits.empty() || std::next(refits.begin()) != refits.end())
    return emitError(module.getLoc()) << "expected exactly one 'm2n.refit'";
  RefitOp refit = *refits.begin();

  CompiledRefit result;
  {
    // Scoped, so that the pass manager's timing report, when asked for,
    // covers the pipeline alone.
    PassManager pm(module.getContext());
    // The IR is verified once, below, rather than after every pass: at a
    // real model's scale that is a tenth of the compile time.
    pm.enableVerifier(false);
    CompilePipelineOptions pipeline;
    pipeline.copyOptionValuesFrom(options);
    pipeline.verify = false;
    buildCompilePipeline(pm, pipeline);
    if (hooks.configure)
      hooks.configure(pm);
    if (failed(pm.run(module)))
      return failure();
  }
  FailureOr<plan::Plan> plan = readPlan(refit);
  if (failed(plan))
    return failure();
  result.plan = std::move(*plan);

  // The passes that use the cost model have read the topology already.
  FailureOr<plan::CostModel> model = loadCostModel(module, options.topology);
  if (failed(model))
    return failure();
  if (hooks.exporting)
    hooks.exporting();
  // Two checkers, so that neither outlasts the export by much; the IR's,
  // the lighter, also works out the cost model's figures.
  Verdict verdict;
  std::thread planChecker(
      [&] { verdict.problems = plan::verifyCompiledPlan(result.plan); });
  // The plan is not verified yet: the cost model and the exporter only
  // need what exportBlocker checks to read it safely.
  std::string blocker = exportBlocker(result.plan);
  std::thread irChecker([&] {
    verdict.irValid = succeeded(verify(module));
    if (blocker.empty())
      result.cost = model->cost(result.plan);
  });
  // An exporting thread per core, beside the checkers: the exporters take
  // chunks of ranks in turn, so a core the checkers leave is used too.
  if (blocker.empty())
    result.bytes = exportPlan(
        result.plan,
        [&] {
          irChecker.join();
          return result.cost;
        },
        std::max(1u, std::thread::hardware_concurrency()));
  planChecker.join();
  if (irChecker.joinable())
    irChecker.join();
  if (!verdict.irValid)
    return failure();
  if (!verdict.problems.empty() || !blocker.empty()) {
    emitUnsoundPlan(refit, verdict.problems.empty()
                               ? std::vector<std::string>{blocker}
                               : verdict.problems);
    return failure();
  }
  return result;
}

} // namespace m2n
