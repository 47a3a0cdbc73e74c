//===- BaselinesBench.cpp - m2n against what refits do today --------------===//
//
// For DeepSeek-V3's refit (its preset), m2n's compiled plan and each baseline of
// m2n/Plan/Baselines.h (gather and broadcast, per-tensor point-to-point,
// padded all-to-all), all priced by the same cost model with the default
// H200 topology, side by side as counters. The time measured is that of
// compiling (m2n) or of pricing (a baseline); the counters are the point.
//
//===----------------------------------------------------------------------===//

#include "CompiledPlan.h"
#include "DeepSeekRefit.h"

#include "m2n/Plan/Baselines.h"
#include "m2n/Plan/CostModel.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>

using namespace m2n;
using plan::Baseline;
using plan::PlanCost;

namespace {

/// The refit of a benchmark's arguments: training ranks, serving
/// data-parallel attention replicas, serving tensor parallelism.
spec::RefitSpec refitSpec(const benchmark::State &state) {
  return bench::deepseekV3Refit(state.range(0), state.range(1), state.range(2));
}

std::optional<PlanCost> compileAndCost(const spec::RefitSpec &spec) {
  mlir::FailureOr<plan::Plan> compiled = bench::compilePlan(spec);
  if (mlir::failed(compiled))
    return std::nullopt;
  return plan::CostModel().cost(*compiled);
}

/// m2n's cost of each refit, compiled at most once per process: every
/// baseline of the refit reports against it.
std::optional<PlanCost> &m2nCost(const benchmark::State &state) {
  static std::map<std::array<int64_t, 3>, std::optional<PlanCost>> costs;
  std::array<int64_t, 3> key = {state.range(0), state.range(1), state.range(2)};
  auto it = costs.find(key);
  if (it == costs.end())
    it = costs.emplace(key, compileAndCost(refitSpec(state))).first;
  return it->second;
}

double ratio(double value, double over) { return over > 0 ? value / over : 0; }

/// The figures of `cost` for the refit of `refit`, and against m2n's.
void report(benchmark::State &state, const plan::Plan &refit,
            const PlanCost &cost, const PlanCost &m2n) {
  std::vector<int64_t> ranks = refit.ranks();
  int64_t maxSend = 0, totalSend = 0, maxMessages = 0;
  for (int64_t rank : ranks) {
    maxSend = std::max(maxSend, cost.sendBytes[rank]);
    totalSend += cost.sendBytes[rank];
    maxMessages = std::max(maxMessages, cost.messagesSent[rank]);
  }
  double rankCount = static_cast<double>(ranks.size());
  state.counters["wire_GB"] = cost.wireBytes / 1e9;
  state.counters["wire_over_min"] =
      ratio(cost.wireBytes, plan::minimumWireBytes(refit));
  state.counters["wire_over_m2n"] = ratio(cost.wireBytes, m2n.wireBytes);
  state.counters["messages"] = cost.messages;
  state.counters["msgs_per_rank"] = cost.messages / rankCount;
  state.counters["max_msgs_per_rank"] = maxMessages;
  state.counters["steps"] = cost.steps;
  state.counters["busiest_over_avg_send"] =
      ratio(maxSend * rankCount, totalSend);
  state.counters["predicted_s"] = cost.predictedSeconds;
  state.counters["lower_bound_s"] = cost.lowerBoundSeconds;
  state.counters["predicted_over_bound"] =
      ratio(cost.predictedSeconds, cost.lowerBoundSeconds);
  state.counters["predicted_over_m2n"] =
      ratio(cost.predictedSeconds, m2n.predictedSeconds);
}

void BM_M2N(benchmark::State &state) {
  spec::RefitSpec spec = refitSpec(state);
  std::optional<PlanCost> &cost = m2nCost(state);
  for (auto _ : state)
    cost = compileAndCost(spec);
  if (!cost) {
    state.SkipWithError("compilation failed");
    return;
  }
  report(state, plan::planFromSpec(spec), *cost, *cost);
}

void BM_Baseline(benchmark::State &state, Baseline baseline) {
  plan::Plan refit = plan::planFromSpec(refitSpec(state));
  const std::optional<PlanCost> &m2n = m2nCost(state);
  if (!m2n) {
    state.SkipWithError("compilation failed");
    return;
  }
  PlanCost cost;
  for (auto _ : state)
    cost = plan::costBaseline(refit, baseline, plan::CostModel());
  report(state, refit, cost, *m2n);
}

void refits(benchmark::internal::Benchmark *benchmark) {
  benchmark->Args({256, 16, 8})
      ->Args({64, 4, 8})
      ->Unit(benchmark::kMillisecond)
      ->MeasureProcessCPUTime()
      ->UseRealTime();
}

} // namespace

BENCHMARK(BM_M2N)->Apply(refits);
BENCHMARK_CAPTURE(BM_Baseline, gather_broadcast, Baseline::GatherBroadcast)
    ->Apply(refits);
BENCHMARK_CAPTURE(BM_Baseline, point_to_point, Baseline::PointToPoint)
    ->Apply(refits);
BENCHMARK_CAPTURE(BM_Baseline, padded_all_to_all, Baseline::PaddedAllToAll)
    ->Apply(refits);

BENCHMARK_MAIN();
