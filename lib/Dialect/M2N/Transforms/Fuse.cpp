//===- Fuse.cpp - Packing slices into messages ----------------------------===//

#include "m2n/Dialect/M2N/Transforms/Passes.h"

#include "m2n/Dialect/M2N/Transforms/PlanIR.h"
#include "m2n/Plan/Fuse.h"

#include <algorithm>

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
    int64_t bucket =
        bucketBytes > 0 ? int64_t(bucketBytes) : model->defaultBucketBytes();
    // A message takes staging on both of its ranks, and a rank may send and
    // receive in one step: half the budget leaves room for one of each.
    options.bucketBytes = std::min<int64_t>(bucket, stagingBytes / 2);
    options.zeroCopyBytes = bucket;
    // Without an explicit bucket, messages within a node are as much larger
    // as its links are faster.
    if (bucketBytes <= 0) {
      options.nodeBucketBytes =
          std::min<int64_t>(model->defaultNodeBucketBytes(), stagingBytes / 2);
      options.ranksPerNode = model->getTopology().ranksPerNode;
    }
    // What the schedule pass will do, to judge the messages by.
    plan::ScheduleOptions schedule;
    schedule.stagingBudget = stagingBytes;
    schedule.model = &*model;
    schedule.pool = groupPool(&getContext());
    auto result =
        transformPlans(getOperation(),
                       [&](RefitOp refit,
                           plan::Plan &plan) -> mlir::LogicalResult {
                         // An explicit bucket is the user's to keep.
                         std::optional<plan::ScheduledMessages> scheduled;
                         plan::FuseStats stats =
                             bucketBytes > 0
                                 ? plan::fuse(plan, options)
                                 : plan::fuseForSchedule(plan, options,
                                                         schedule, &scheduled);
                         // The messages chosen were scheduled on the way:
                         // they go to IR scheduled, and m2n-schedule keeps
                         // them rather than scheduling them again.
                         if (scheduled) {
                           std::move(*scheduled).applyTo(plan);
                           recordScheduleTopology(refit, model->getTopology());
                         }
                         numMessages += stats.messages;
                         numZeroCopy += stats.zeroCopyMessages;
                         numSplitSlices += stats.splitSlices;
                         return mlir::success();
                       });
    if (mlir::failed(result))
      return signalPassFailure();
  }
};
} // namespace
} // namespace m2n
