//===- Balance.cpp - Choosing senders among replicas ----------------------===//

#include "m2n/Dialect/M2N/Transforms/Passes.h"

#include "m2n/Dialect/M2N/Transforms/PlanIR.h"
#include "m2n/Plan/Balance.h"

namespace m2n {
#define GEN_PASS_DEF_BALANCEPASS
#include "m2n/Dialect/M2N/Transforms/Passes.h.inc"

namespace {
struct BalancePass : impl::BalancePassBase<BalancePass> {
  using BalancePassBase::BalancePassBase;

  void runOnOperation() override {
    plan::BalanceOptions options;
    options.split = split;
    options.minSplitBytes = minSplitBytes;
    options.pool = groupPool(&getContext());
    auto result = transformPlans(
        getOperation(),
        [&](RefitOp refit, plan::Plan &plan) -> mlir::LogicalResult {
          if (mlir::failed(checkNotFused(refit, plan, "m2n-balance")))
            return mlir::failure();
          plan::BalanceStats stats = plan::balance(plan, options);
          maxSendBefore += stats.maxSendBytesBefore;
          maxSendAfter += stats.maxSendBytesAfter;
          idealMaxSend += stats.idealMaxSendBytes;
          splitRegions += stats.splitRegions;
          return mlir::success();
        },
        FanOuts::Keep);
    if (mlir::failed(result))
      return signalPassFailure();
  }
};
} // namespace
} // namespace m2n
