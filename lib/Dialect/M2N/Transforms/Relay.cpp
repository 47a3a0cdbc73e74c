//===- Relay.cpp - Forwarding regions among destination ranks -------------===//

#include "m2n/Dialect/M2N/Transforms/Passes.h"

#include "m2n/Dialect/M2N/Transforms/PlanIR.h"
#include "m2n/Plan/Relay.h"

namespace m2n {
#define GEN_PASS_DEF_RELAYPASS
#include "m2n/Dialect/M2N/Transforms/Passes.h.inc"

namespace {
struct RelayPass : impl::RelayPassBase<RelayPass> {
  using RelayPassBase::RelayPassBase;

  void runOnOperation() override {
    mlir::FailureOr<plan::CostModel> model =
        loadCostModel(getOperation(), topology);
    if (mlir::failed(model))
      return signalPassFailure();
    plan::RelayOptions options;
    options.exchange = exchange;
    options.chunkBytes = chunkBytes;
    options.maxRounds = maxRounds;
    options.pool = groupPool(&getContext());
    auto result = transformPlans(
        getOperation(),
        [&](RefitOp refit, plan::Plan &plan) -> mlir::LogicalResult {
          if (mlir::failed(checkNotFused(refit, plan, "m2n-relay")))
            return mlir::failure();
          plan::RelayStats stats = plan::relay(plan, *model, options);
          relayedRegions += stats.relayedRegions;
          sourceSendsSaved += stats.sourceSendsSaved;
          rounds += stats.rounds;
          return mlir::success();
        },
        FanOuts::Keep);
    if (mlir::failed(result))
      return signalPassFailure();
  }
};
} // namespace
} // namespace m2n
