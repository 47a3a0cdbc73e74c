//===- Coalesce.cpp - Merging adjacent slices -----------------------------===//

#include "m2n/Dialect/M2N/Transforms/Passes.h"

#include "m2n/Dialect/M2N/Transforms/PlanIR.h"
#include "m2n/Plan/Coalesce.h"

namespace m2n {
#define GEN_PASS_DEF_COALESCEPASS
#include "m2n/Dialect/M2N/Transforms/Passes.h.inc"

namespace {
struct CoalescePass : impl::CoalescePassBase<CoalescePass> {
  void runOnOperation() override {
    auto result = transformPlans(
        getOperation(),
        [&](RefitOp refit, plan::Plan &plan) -> mlir::LogicalResult {
          if (mlir::failed(checkNotFused(refit, plan, "m2n-coalesce")))
            return mlir::failure();
          plan::CoalesceStats stats =
              plan::coalesce(plan, groupPool(&getContext()));
          slicesBefore += stats.slicesBefore;
          slicesAfter += stats.slicesAfter;
          return mlir::success();
        });
    if (mlir::failed(result))
      return signalPassFailure();
  }
};
} // namespace
} // namespace m2n
