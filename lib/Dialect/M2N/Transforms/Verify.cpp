//===- Verify.cpp - Checking a plan ---------------------------------------===//

#include "m2n/Dialect/M2N/Transforms/Passes.h"

#include "m2n/Dialect/M2N/Transforms/PlanIR.h"
#include "m2n/Plan/Decompose.h"
#include "m2n/Plan/Verify.h"

#include <optional>

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
      // Fan-out slices are checked as the slices they stand for, in a copy:
      // verifying changes nothing.
      std::optional<plan::Plan> expanded;
      if (plan::hasFanOuts(**plan)) {
        expanded = **plan;
        if (mlir::failed(expandFanOuts(refit, *expanded)))
          return signalPassFailure();
      }
      std::vector<std::string> problems =
          plan::verifyPlan(expanded ? *expanded : **plan);
      if (problems.empty())
        continue;
      emitUnsoundPlan(refit, problems);
      signalPassFailure();
    }
  }
};
} // namespace
} // namespace m2n
