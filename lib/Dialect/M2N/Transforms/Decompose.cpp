//===- Decompose.cpp - Reshards into slice transfers ----------------------===//

#include "m2n/Dialect/M2N/Transforms/Passes.h"

#include "m2n/Dialect/M2N/IR/M2NOps.h"
#include "m2n/Dialect/M2N/Transforms/PlanIR.h"
#include "m2n/Plan/Decompose.h"

namespace m2n {
#define GEN_PASS_DEF_DECOMPOSEPASS
#include "m2n/Dialect/M2N/Transforms/Passes.h.inc"

namespace {
struct DecomposePass : impl::DecomposePassBase<DecomposePass> {
  using DecomposePassBase::DecomposePassBase;

  void runOnOperation() override {
    for (RefitOp refit : getOperation().getOps<RefitOp>()) {
      if (refit.getBody().getOps<ReshardOp>().empty())
        continue;
      mlir::FailureOr<spec::RefitSpec> spec = readSpec(refit);
      if (mlir::failed(spec))
        return signalPassFailure();
      plan::Plan plan = plan::planFromSpec(*spec);
      plan::DecomposeOptions options;
      options.fanOut = fanOut;
      options.pool = groupPool(&getContext());
      plan::DecomposeStats stats = plan::decompose(plan, options);
      writeTransfers(refit, plan);
      numGroups += plan.groups.size();
      numRemoteSlices += stats.remoteSlices;
      numLocalCopies += stats.localCopies;
      wireBytes += stats.wireBytes;
      localBytes += stats.localBytes;
    }
  }
};
} // namespace
} // namespace m2n
