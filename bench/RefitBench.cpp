//===- RefitBench.cpp - Compile time, plan size and quality per preset ----===//
//
// For each model preset and a usual pair of training and serving layouts,
// one benchmark compiles the refit as `m2n compile` does (import, the
// m2n-compile pipeline, then export to plan bytes while the plan and the IR
// are verified on a second thread) and
// reports, side by side in the same row, the plan's figures and those of
// what refits do today, all priced by the same cost model (default H200
// topology):
//
//   pipeline_s, export_s  the compile's two parts (the row's time is both);
//                         export_s includes the verification beside it
//   plan_MB               the plan file's size
//   messages, max_msgs_per_rank, steps
//   wire_over_min         wire bytes over the fewest any plan moves
//   busiest_over_avg_send the busiest sender's bytes over the average's
//   predicted_ms, lower_bound_ms, predicted_over_bound
//   <baseline>_over_m2n   a baseline's predicted time over m2n's, for
//                         gather_bcast (gather and broadcast every full
//                         tensor), p2p (per-tensor point-to-point, no
//                         fusion, balance or relays) and padded (a
//                         per-pair exchange padded to the largest pair)
//   <baseline>_wire_over_min
//
// M2N_TIMING=1 in the environment also prints the pipeline's per-pass times.
//
//===----------------------------------------------------------------------===//

#include "CompiledPlan.h"
#include "PresetRefit.h"

#include "m2n/Plan/Baselines.h"
#include "m2n/Plan/CostModel.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>

using namespace m2n;

namespace {

/// A refit the suite measures: a preset and its two sides.
struct Case {
  const char *model;
  const char *train;
  const char *gen;
};

/// Each preset with layouts its users run: FSDP, TP x FSDP and pipeline
/// stages for training; TP x DP replicas, or experts spread by EP, for
/// serving. Up to Kimi-K2 on 256 training and 128 serving ranks.
constexpr Case kCases[] = {
    {"llama-3-8b", "fsdp16", "dp4,tp4"},
    {"llama-3-70b", "tp8,fsdp8", "dp4,tp8"},
    {"llama-3-70b", "pp4,tp8,fsdp4", "dp8,tp8"},
    {"qwen3-32b", "fsdp32", "dp4,tp8"},
    {"qwen3-235b-a22b", "ep8,fsdp16", "dp4,ep32"},
    {"qwen3-235b-a22b", "pp4,ep8,fsdp4", "ep64"},
    {"deepseek-v3", "fsdp256", "ep16,tp8"},
    {"deepseek-v3", "pp4,ep64", "dp8,tp8"},
    {"kimi-k2", "fsdp256", "ep16,tp8"},
    {"kimi-k2", "pp4,ep64", "ep128"},
};

double ratio(double value, double over) { return over > 0 ? value / over : 0; }

void reportPlan(benchmark::State &state, const bench::Compiled &compiled,
                int64_t minimumWire) {
  const plan::PlanCost &cost = compiled.refit.cost;
  std::vector<int64_t> ranks = compiled.refit.plan.ranks();
  int64_t maxSend = 0, totalSend = 0, maxMessages = 0;
  for (int64_t rank : ranks) {
    maxSend = std::max(maxSend, cost.sendBytes[rank]);
    totalSend += cost.sendBytes[rank];
    maxMessages = std::max(maxMessages, cost.messagesSent[rank]);
  }
  state.counters["pipeline_s"] = compiled.pipelineSeconds;
  state.counters["export_s"] = compiled.exportSeconds;
  state.counters["plan_MB"] = compiled.refit.bytes.size() / 1e6;
  state.counters["tensors"] = compiled.refit.plan.tensors.size();
  state.counters["ranks"] = ranks.size();
  state.counters["messages"] = cost.messages;
  state.counters["max_msgs_per_rank"] = maxMessages;
  state.counters["steps"] = cost.steps;
  state.counters["wire_GB"] = cost.wireBytes / 1e9;
  state.counters["wire_over_min"] = ratio(cost.wireBytes, minimumWire);
  state.counters["busiest_over_avg_send"] =
      ratio(double(maxSend) * ranks.size(), totalSend);
  state.counters["predicted_ms"] = cost.predictedSeconds * 1e3;
  state.counters["lower_bound_ms"] = cost.lowerBoundSeconds * 1e3;
  state.counters["predicted_over_bound"] =
      ratio(cost.predictedSeconds, cost.lowerBoundSeconds);
}

void reportBaselines(benchmark::State &state, const plan::Plan &refit,
                     const plan::PlanCost &m2n, int64_t minimumWire) {
  const std::pair<const char *, plan::Baseline> baselines[] = {
      {"gather_bcast", plan::Baseline::GatherBroadcast},
      {"p2p", plan::Baseline::PointToPoint},
      {"padded", plan::Baseline::PaddedAllToAll},
  };
  for (const auto &[name, baseline] : baselines) {
    plan::PlanCost cost =
        plan::costBaseline(refit, baseline, plan::CostModel());
    std::string prefix = name;
    state.counters[prefix + "_over_m2n"] =
        ratio(cost.predictedSeconds, m2n.predictedSeconds);
    state.counters[prefix + "_wire_over_min"] =
        ratio(cost.wireBytes, minimumWire);
  }
}

void BM_Refit(benchmark::State &state, const Case &refitCase) {
  spec::RefitSpec spec =
      bench::presetRefit(refitCase.model, refitCase.train, refitCase.gen);
  mlir::FailureOr<bench::Compiled> compiled = mlir::failure();
  for (auto _ : state) {
    compiled = bench::compileSpec(spec);
    if (mlir::failed(compiled)) {
      state.SkipWithError("compilation failed");
      return;
    }
  }
  plan::Plan refit = plan::planFromSpec(spec);
  int64_t minimumWire = plan::minimumWireBytes(refit);
  reportPlan(state, *compiled, minimumWire);
  reportBaselines(state, refit, compiled->refit.cost, minimumWire);
}

} // namespace

int main(int argc, char **argv) {
  for (const Case &refitCase : kCases) {
    std::string name = std::string(refitCase.model) + "/" + refitCase.train +
                       "->" + refitCase.gen;
    benchmark::RegisterBenchmark(name.c_str(), BM_Refit, refitCase)
        ->Unit(benchmark::kMillisecond)
        ->MeasureProcessCPUTime()
        ->UseRealTime();
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
