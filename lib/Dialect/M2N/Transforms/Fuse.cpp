//===- Fuse.cpp - Packing slices into messages ----------------------------===//

#include "m2n/Dialect/M2N/Transforms/Passes.h"

#include "m2n/Dialect/M2N/Transforms/PlanIR.h"
#include "m2n/Plan/Fuse.h"

namespace m2n {
#define GEN_PASS_DEF_FUSEPASS
#include "m2n/Dialect/M2N/Transforms/Passes.h.inc"

namespace {
struct FusePass : impl::FusePassBase<FusePass> {
  using FusePassBase::FusePassBase;

  void runOnOperation() override {
    mlir::FailureOr<plan::CostModel> model =
        loadCostModel(getOperation(), topology);
    if (mlir::failed(model))
      return signalPassFailure();
    plan::FuseOptions options;
    options.bucketBytes =
        bucketBytes > 0 ? int64_t(bucketBytes) : model->defaultBucketBytes();
    auto result = transformPlans(getOperation(), [&](RefitOp,
                                                     plan::Plan &plan) -> mlir::LogicalResult {
      plan::FuseStats stats = plan::fuse(plan, options);
      numMessages += stats.messages;
      numZeroCopy += stats.zeroCopyMessages;
      numSplitSlices += stats.splitSlices;
      return mlir::success();
    });
    if (mlir::failed(result))
      signalPassFailure();
  }
};
} // namespace
} // namespace m2n
