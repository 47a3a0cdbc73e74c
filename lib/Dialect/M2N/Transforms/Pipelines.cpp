//===- Pipelines.cpp - Named pass pipelines of m2n ------------------------===//

#include "m2n/Dialect/M2N/Transforms/Pipelines.h"

#include "m2n/Dialect/M2N/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"

namespace m2n {

void buildCompilePipeline(mlir::OpPassManager &pm,
                          const CompilePipelineOptions &options) {
  pm.addPass(createDecomposePass());
  BalancePassOptions balance;
  balance.split = options.balanceSplit;
  pm.addPass(createBalancePass(balance));
  if (options.relay) {
    RelayPassOptions relay;
    relay.topology = options.topology;
    relay.exchange = options.relayExchange;
    pm.addPass(createRelayPass(relay));
  }
  pm.addPass(createCoalescePass());
  FusePassOptions fuse;
  fuse.bucketBytes = options.bucketBytes;
  fuse.stagingBytes = options.stagingBytes;
  fuse.topology = options.topology;
  pm.addPass(createFusePass(fuse));
  SchedulePassOptions schedule;
  schedule.stagingBytes = options.stagingBytes;
  schedule.topology = options.topology;
  schedule.report = options.report;
  pm.addPass(createSchedulePass(schedule));
  if (options.verify)
    pm.addPass(createVerifyPass());
}

void registerPassesAndPipelines() {
  registerM2NPasses();
  mlir::PassPipelineRegistration<CompilePipelineOptions>(
      "m2n-compile",
      "Compile reshards into a balanced, fused, scheduled and verified plan",
      buildCompilePipeline);
}

} // namespace m2n
