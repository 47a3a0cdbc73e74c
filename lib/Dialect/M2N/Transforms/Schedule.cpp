//===- Schedule.cpp - Ordering messages into steps ------------------------===//

#include "m2n/Dialect/M2N/Transforms/Passes.h"

#include "m2n/Dialect/M2N/Transforms/PlanIR.h"
#include "m2n/Plan/Schedule.h"

#include "llvm/Support/FormatVariadic.h"

namespace m2n {
#define GEN_PASS_DEF_SCHEDULEPASS
#include "m2n/Dialect/M2N/Transforms/Passes.h.inc"

namespace {
/// One line a person can read: the plan's size, and its time by the cost
/// model against the lower bound for any plan of the same refit.
void emitReport(RefitOp refit, const plan::PlanCost &cost) {
  double ratio = cost.lowerBoundSeconds > 0
                     ? cost.predictedSeconds / cost.lowerBoundSeconds
                     : 1.0;
  mlir::emitRemark(refit.getLoc())
      << "refit @" << refit.getSymName() << ": " << cost.steps << " steps, "
      << cost.messages << " messages, " << cost.wireBytes << " wire bytes, "
      << cost.localCopyBytes << " local copy bytes, "
      << "staging peak " << cost.stagingPeak << " bytes; predicted "
      << llvm::formatv("{0:F1}", cost.predictedSeconds * 1e6).str()
      << " us, lower bound "
      << llvm::formatv("{0:F1}", cost.lowerBoundSeconds * 1e6).str() << " us ("
      << llvm::formatv("{0:F2}", ratio).str() << "x)";
}

struct SchedulePass : impl::SchedulePassBase<SchedulePass> {
  using SchedulePassBase::SchedulePassBase;

  /// Schedules the plan of `refit`, unless IR holds a schedule made for
  /// this budget and topology (m2n-fuse makes one on the way to choosing
  /// the messages), which is the one this pass would make: that plan is
  /// only read, for the statistics and the report.
  mlir::LogicalResult scheduleRefit(RefitOp refit,
                                    const plan::ScheduleOptions &options,
                                    const plan::CostModel &model) {
    if (isScheduledFor(refit, stagingBytes, model.getTopology())) {
      mlir::FailureOr<plan::Plan> plan = readPlan(refit);
      if (mlir::failed(plan))
        return mlir::failure();
      plan::PlanCost cost = model.cost(*plan);
      numSteps += plan->numSteps;
      stagingPeak.updateMax(cost.stagingPeak);
      if (report)
        emitReport(refit, cost);
      return mlir::success();
    }
    return transformPlan(
        refit, [&](RefitOp refit, plan::Plan &plan) -> mlir::LogicalResult {
          llvm::Expected<plan::ScheduleStats> stats =
              plan::schedule(plan, options);
          if (!stats)
            return emitRefitError(refit)
                   << "cannot schedule refit @" << refit.getSymName() << ": "
                   << llvm::toString(stats.takeError());
          recordScheduleTopology(refit, model.getTopology());
          numSteps += stats->steps;
          stagingPeak.updateMax(stats->stagingPeak);
          if (report)
            emitReport(refit, model.cost(plan));
          return mlir::success();
        });
  }

  void runOnOperation() override {
    mlir::FailureOr<plan::CostModel> model =
        loadCostModel(getOperation(), topology);
    if (mlir::failed(model))
      return signalPassFailure();
    plan::ScheduleOptions options;
    options.stagingBudget = stagingBytes;
    options.model = &*model;
    options.pool = groupPool(&getContext());
    for (RefitOp refit : getOperation().getOps<RefitOp>())
      if (mlir::failed(scheduleRefit(refit, options, *model)))
        return signalPassFailure();
  }
};
} // namespace
} // namespace m2n
