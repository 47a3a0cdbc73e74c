//===- Verify.cpp - Checking a plan ---------------------------------------===//

#include "m2n/Dialect/M2N/Transforms/Passes.h"

#include "m2n/Dialect/M2N/Transforms/PlanIR.h"
#include "m2n/Plan/Verify.h"

namespace m2n {
#define GEN_PASS_DEF_VERIFYPASS
#include "m2n/Dialect/M2N/Transforms/Passes.h.inc"

namespace {
struct VerifyPass : impl::VerifyPassBase<VerifyPass> {
  void runOnOperation() override {
    PlanCache &cache = getAnalysis<PlanCache>();
    markAllAnalysesPreserved();
    for (RefitOp refit : getOperation().getOps<RefitOp>()) {
      mlir::FailureOr<plan::Plan *> plan = cache.get(refit);
      if (mlir::failed(plan))
        return signalPassFailure();
      std::vector<std::string> problems = plan::verifyPlan(**plan);
      if (problems.empty())
        continue;
      emitUnsoundPlan(refit, problems);
      signalPassFailure();
    }
  }
};
} // namespace
} // namespace m2n
