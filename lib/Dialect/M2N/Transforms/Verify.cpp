//===- Verify.cpp - Checking a plan ---------------------------------------===//

#include "m2n/Dialect/M2N/Transforms/Passes.h"

#include "m2n/Dialect/M2N/Transforms/PlanIR.h"
#include "m2n/Plan/Decompose.h"
#include "m2n/Plan/Verify.h"

namespace m2n {
#define GEN_PASS_DEF_VERIFYPASS
#include "m2n/Dialect/M2N/Transforms/Passes.h.inc"

namespace {
struct VerifyPass : impl::VerifyPassBase<VerifyPass> {
  void runOnOperation() override {
    markAllAnalysesPreserved();
    for (RefitOp refit : getOperation().getOps<RefitOp>()) {
      mlir::FailureOr<plan::Plan> plan = readPlan(refit);
      if (mlir::failed(plan))
        return signalPassFailure();
      // Fan-out slices are checked as the slices they stand for: verifying
      // changes nothing in IR.
      if (plan::hasFanOuts(*plan) && mlir::failed(expandFanOuts(refit, *plan)))
        return signalPassFailure();
      std::vector<std::string> problems = plan::verifyPlan(*plan);
      if (problems.empty())
        continue;
      emitUnsoundPlan(refit, problems);
      signalPassFailure();
    }
  }
};
} // namespace
} // namespace m2n
