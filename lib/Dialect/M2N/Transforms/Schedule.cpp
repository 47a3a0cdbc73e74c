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

/// The schedule of `refit`'s plan known from an earlier pass, given to the
/// plan, or a new one.
llvm::Expected<plan::ScheduleStats> scheduleOrTake(
    plan::Plan &plan, const plan::ScheduleOptions &options,
    llvm::DenseMap<mlir::Operation *, plan::ScheduledMessages> &known,
    RefitOp refit) {
  auto it = known.find(refit);
  if (it == known.end())
    return plan::schedule(plan, options);
  plan::ScheduleStats stats = it->second.stats;
  std::move(it->second).applyTo(plan);
  return stats;
}

struct SchedulePass : impl::SchedulePassBase<SchedulePass> {
  using SchedulePassBase::SchedulePassBase;

  void runOnOperation() override {
    mlir::FailureOr<plan::CostModel> model =
        loadCostModel(getOperation(), topology);
    if (mlir::failed(model))
      return signalPassFailure();
    plan::ScheduleOptions options;
    options.stagingBudget = stagingBytes;
    options.model = &*model;
    options.pool = groupPool(&getContext());
    // What m2n-fuse scheduled on the way to choosing the messages, in the
    // same budget and topology, is the schedule this pass would make.
    PlanCache &cache = getAnalysis<PlanCache>();
    llvm::DenseMap<mlir::Operation *, plan::ScheduledMessages> known;
    for (RefitOp refit : getOperation().getOps<RefitOp>())
      if (std::optional<plan::ScheduledMessages> schedule =
              cache.takeSchedule(refit, stagingBytes, topology))
        known.try_emplace(refit, std::move(*schedule));
    auto result = transformPlans(
        getOperation(), cache,
        [&](RefitOp refit, plan::Plan &plan) -> mlir::LogicalResult {
          llvm::Expected<plan::ScheduleStats> stats = scheduleOrTake(
              plan, options, known, refit);
          if (!stats)
            return emitRefitError(refit)
                   << "cannot schedule refit @" << refit.getSymName() << ": "
                   << llvm::toString(stats.takeError());
          numSteps += stats->steps;
          stagingPeak.updateMax(stats->stagingPeak);
          if (report)
            emitReport(refit, model->cost(plan));
          return mlir::success();
        });
    if (mlir::failed(result))
      return signalPassFailure();
    markAnalysesPreserved<PlanCache>();
  }
};
} // namespace
} // namespace m2n
