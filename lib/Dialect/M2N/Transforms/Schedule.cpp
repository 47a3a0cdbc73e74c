//===- Schedule.cpp - Ordering messages into steps ------------------------===//

#include "m2n/Dialect/M2N/Transforms/Passes.h"

#include "m2n/Dialect/M2N/Transforms/PlanIR.h"
#include "m2n/Plan/Schedule.h"

namespace m2n {
#define GEN_PASS_DEF_SCHEDULEPASS
#include "m2n/Dialect/M2N/Transforms/Passes.h.inc"

namespace {
struct SchedulePass : impl::SchedulePassBase<SchedulePass> {
  using SchedulePassBase::SchedulePassBase;

  void runOnOperation() override {
    mlir::FailureOr<plan::CostModel> model =
        loadCostModel(getOperation(), topology);
    if (mlir::failed(model))
      return signalPassFailure();
    plan::ScheduleOptions options;
    options.stagingBudget = stagingBytes;
    auto result = transformPlans(getOperation(), [&](RefitOp refit,
                                                     plan::Plan &plan) -> mlir::LogicalResult {
      llvm::Expected<plan::ScheduleStats> stats =
          plan::schedule(plan, options);
      if (!stats)
        return refit.emitError() << "cannot schedule refit @"
                                 << refit.getSymName() << ": "
                                 << llvm::toString(stats.takeError());
      numSteps += stats->steps;
      stagingPeak.updateMax(stats->stagingPeak);
      plan::PlanCost cost = model->cost(plan);
      predictedMicros += static_cast<uint64_t>(cost.predictedSeconds * 1e6);
      lowerBoundMicros += static_cast<uint64_t>(cost.lowerBoundSeconds * 1e6);
      return mlir::success();
    });
    if (mlir::failed(result))
      signalPassFailure();
  }
};
} // namespace
} // namespace m2n
