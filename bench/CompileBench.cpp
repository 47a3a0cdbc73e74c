//===- CompileBench.cpp - Compile time and plan quality at scale ----------===//
//
// Compiles DeepSeek-V3's refit (its preset: 1025 tensors, 1.3 TB in BF16)
// through the whole m2n-compile pipeline and reports, besides the time,
// the plan's quality as counters: wire bytes against the minimum, the
// busiest rank against the average, messages, and the predicted time
// against the lower bound.
//
//===----------------------------------------------------------------------===//

#include "DeepSeekRefit.h"

#include "m2n/Dialect/M2N/IR/M2NDialect.h"
#include "m2n/Dialect/M2N/IR/M2NOps.h"
#include "m2n/Dialect/M2N/Transforms/Pipelines.h"
#include "m2n/Dialect/M2N/Transforms/PlanIR.h"
#include "m2n/Plan/CostModel.h"
#include "m2n/Target/ImportSpec.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <numeric>

using namespace m2n;

namespace {

/// Imports and compiles `spec`; returns the compiled module.
mlir::OwningOpRef<mlir::ModuleOp> compile(const spec::RefitSpec &spec,
                                          mlir::MLIRContext &context) {
  mlir::OwningOpRef<mlir::ModuleOp> module =
      importRefitSpec(spec, "bench", &context);
  // As `m2n compile` runs it: the IR verified once, after the pipeline.
  mlir::PassManager pm(&context);
  pm.enableVerifier(false);
  buildCompilePipeline(pm, CompilePipelineOptions());
  if (getenv("M2N_TIMING"))
    pm.enableTiming();
  if (mlir::failed(pm.run(*module)) || mlir::failed(mlir::verify(*module)))
    return nullptr;
  return module;
}

void reportQuality(benchmark::State &state, mlir::ModuleOp module) {
  RefitOp refit = *module.getOps<RefitOp>().begin();
  mlir::FailureOr<plan::Plan> plan = readPlan(refit);
  if (mlir::failed(plan)) {
    state.SkipWithError("cannot read the compiled plan");
    return;
  }
  plan::PlanCost cost = plan::CostModel().cost(*plan);
  std::vector<int64_t> ranks = plan->ranks();
  int64_t maxSend = 0, totalSend = 0, maxMessages = 0;
  for (int64_t rank : ranks) {
    maxSend = std::max(maxSend, cost.sendBytes[rank]);
    totalSend += cost.sendBytes[rank];
    maxMessages = std::max(maxMessages, cost.messagesSent[rank]);
  }
  state.counters["tensors"] = plan->tensors.size();
  state.counters["groups"] = plan->groups.size();
  state.counters["wire_GB"] = cost.wireBytes / 1e9;
  state.counters["messages"] = cost.messages;
  state.counters["max_msgs_per_rank"] = maxMessages;
  state.counters["steps"] = cost.steps;
  state.counters["busiest_over_avg_send"] =
      totalSend ? double(maxSend) * ranks.size() / totalSend : 0;
  state.counters["predicted_s"] = cost.predictedSeconds;
  state.counters["lower_bound_s"] = cost.lowerBoundSeconds;
  state.counters["predicted_over_bound"] =
      cost.lowerBoundSeconds > 0
          ? cost.predictedSeconds / cost.lowerBoundSeconds
          : 0;
}

void BM_CompileDeepSeekV3(benchmark::State &state) {
  spec::RefitSpec spec =
      bench::deepseekV3Refit(state.range(0), state.range(1), state.range(2));
  mlir::MLIRContext context;
  context.loadDialect<M2NDialect>();
  mlir::OwningOpRef<mlir::ModuleOp> module;
  for (auto _ : state) {
    module = compile(spec, context);
    if (!module) {
      state.SkipWithError("compilation failed");
      return;
    }
  }
  reportQuality(state, *module);
}

} // namespace

// Training ranks, serving data-parallel replicas, serving tensor parallelism.
BENCHMARK(BM_CompileDeepSeekV3)
    ->Args({256, 16, 8})
    ->Args({64, 4, 8})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

BENCHMARK_MAIN();
