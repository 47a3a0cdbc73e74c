//===- LayoutSweep.cpp - Plan quality over randomly drawn refits ----------===//
//
// Draws refits at random from the model presets, realistic training
// parallelisms (FSDP, TP, PP, DP, EP and their mixes) and serving layouts (1
// to 16 replicas of TP, or EP, on ranks of their own or on the training
// ranks), compiles each as `m2n compile` does under the default H200
// topology and under a flat one (every rank a node of its own, all links at
// the NIC's rate), and prints the distribution of predicted time over the
// lower bound, then the worst cases. A fixed seed makes the draw the same
// on every run; --seed draws another.
//
//   m2n-layout-sweep [--seed N] [--count N] [--only I]
//
//===----------------------------------------------------------------------===//

#include "CompiledPlan.h"

#include "m2n/Presets/RefitPreset.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace m2n;
using namespace m2n::presets;

namespace {

// The sweep's own options, apart from those the linked libraries register,
// which --help leaves out.
llvm::cl::OptionCategory sweepCategory("Sweep options");
llvm::cl::opt<uint64_t> seedOption("seed", llvm::cl::desc("Seed of the draw"),
                                   llvm::cl::init(1),
                                   llvm::cl::cat(sweepCategory));
llvm::cl::opt<unsigned> countOption("count",
                                    llvm::cl::desc("How many refits to draw"),
                                    llvm::cl::init(100),
                                    llvm::cl::cat(sweepCategory));
llvm::cl::opt<int> onlyOption(
    "only", llvm::cl::desc("Compile only the refit of this index (-1: all)"),
    llvm::cl::init(-1), llvm::cl::cat(sweepCategory));

/// The draw: modulo rather than the standard distributions, whose results
/// differ between standard libraries.
class Draw {
public:
  explicit Draw(uint64_t seed) : engine(seed) {}
  int64_t pick(std::initializer_list<int64_t> values) {
    return values.begin()[engine() % values.size()];
  }
  bool chance(unsigned percent) { return engine() % 100 < percent; }

private:
  std::mt19937_64 engine;
};

const char *const kModels[] = {"llama-3-8b",      "llama-3-70b", "qwen3-32b",
                               "qwen3-235b-a22b", "deepseek-v3", "kimi-k2"};

std::string training(Draw &draw, bool moe) {
  switch (draw.pick({0, 1, 2, 3, 4, 5, 6, 7, 8})) {
  case 0:
    return llvm::formatv("fsdp{0}", draw.pick({4, 8, 16, 32, 64, 128}));
  case 1:
    return llvm::formatv("tp{0},fsdp{1}", draw.pick({2, 4, 8}),
                         draw.pick({2, 4, 8, 16}));
  case 2:
    return llvm::formatv("pp{0},tp{1}", draw.pick({2, 4, 8}),
                         draw.pick({4, 8}));
  case 3:
    return llvm::formatv("pp{0},dp{1},tp{2}", draw.pick({2, 4}),
                         draw.pick({2, 4}), draw.pick({4, 8}));
  case 4:
    return llvm::formatv("pp{0},tp{1},fsdp{2}", draw.pick({2, 4}),
                         draw.pick({4, 8}), draw.pick({2, 4}));
  case 5:
    return llvm::formatv("dp{0},tp{1}", draw.pick({2, 4, 8}),
                         draw.pick({2, 4, 8}));
  default:
    if (!moe)
      return llvm::formatv("fsdp{0}", draw.pick({16, 32, 64}));
    switch (draw.pick({0, 1, 2})) {
    case 0:
      return llvm::formatv("ep{0},fsdp{1}", draw.pick({8, 16, 32}),
                           draw.pick({2, 4, 8}));
    case 1:
      return llvm::formatv("pp{0},ep{1}", draw.pick({2, 4, 8}),
                           draw.pick({8, 16, 32}));
    default:
      return llvm::formatv("pp{0},ep{1},fsdp{2}", draw.pick({2, 4}),
                           draw.pick({8, 16}), draw.pick({2, 4}));
    }
  }
}

std::string serving(Draw &draw, bool moe) {
  int64_t replicas = draw.pick({1, 2, 3, 4, 6, 8, 12, 16});
  std::string tp = llvm::formatv("tp{0}", draw.pick({4, 8}));
  if (moe && draw.chance(50)) {
    std::string ep = llvm::formatv("ep{0}", draw.pick({8, 16, 32, 64}));
    if (draw.chance(30))
      return ep + ",tp8";
    replicas = draw.pick({1, 2, 4, 8});
    return replicas == 1 ? ep : llvm::formatv("dp{0},{1}", replicas, ep).str();
  }
  return replicas == 1 ? tp : llvm::formatv("dp{0},{1}", replicas, tp).str();
}

struct Case {
  std::string model, train, gen;
  bool colocate = false;
  spec::RefitSpec spec;

  std::string str() const {
    return model + " " + train + " -> " + gen + (colocate ? " (colocated)" : "");
  }
};

/// `text` as a parallelism of `side`, or nothing when the presets refuse it
/// for `model`.
std::optional<Parallelism> parsed(const std::string &text, Side side,
                                  const ModelConfig &model) {
  llvm::Expected<Parallelism> result = parseParallelism(text, side, model);
  if (!result) {
    llvm::consumeError(result.takeError());
    return std::nullopt;
  }
  return std::move(*result);
}

/// A refit the presets accept, drawn at random: a quarter of them serve on
/// the training ranks, when a training layout of the serving size is drawn.
Case drawCase(Draw &draw) {
  for (;;) {
    Case result;
    result.model = kModels[draw.pick({0, 1, 2, 3, 4, 5})];
    const ModelConfig *model = findModel(result.model);
    bool moe = model->numExperts > 0;
    result.gen = serving(draw, moe);
    std::optional<Parallelism> gen = parsed(result.gen, Side::Gen, *model);
    if (!gen)
      continue;
    bool colocate = draw.chance(25);
    for (int attempt = 0; attempt < (colocate ? 200 : 1); ++attempt) {
      result.train = training(draw, moe);
      std::optional<Parallelism> train =
          parsed(result.train, Side::Train, *model);
      if (!train)
        continue;
      if (colocate && train->worldSize() != gen->worldSize())
        continue;
      RefitOptions options;
      options.colocate = colocate;
      llvm::Expected<spec::RefitSpec> spec =
          buildRefitSpec(*model, *train, *gen, options);
      if (!spec) {
        llvm::consumeError(spec.takeError());
        continue;
      }
      result.colocate = colocate;
      result.spec = std::move(*spec);
      return result;
    }
  }
}

struct Result {
  size_t index;
  double ratio[2];
  int64_t steps[2];
};

/// A temporary topology file with every rank on a node of its own.
std::string flatTopology() {
  llvm::SmallString<128> path;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("m2n-flat", "json", fd, path))
    llvm::report_fatal_error("cannot create a temporary topology file");
  llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
  out << R"({"ranks_per_node": 0})" << "\n";
  return std::string(path);
}

double quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  size_t i = static_cast<size_t>(q * static_cast<double>(values.size() - 1) + 0.5);
  return values[i];
}

} // namespace

int main(int argc, char **argv) {
  llvm::cl::HideUnrelatedOptions(sweepCategory);
  llvm::cl::ParseCommandLineOptions(argc, argv,
                                    "m2n plan quality over random refits\n");
  Draw draw(seedOption);
  std::vector<Case> cases;
  for (unsigned i = 0; i < countOption; ++i)
    cases.push_back(drawCase(draw));

  std::string flat = flatTopology();
  const char *const topologyNames[] = {"h200", "flat"};
  llvm::outs() << llvm::formatv("m2n-layout-sweep: seed {0}, {1} refits\n",
                                seedOption.getValue(), cases.size());
  llvm::outs() << llvm::formatv("{0,4} {1,7} {2,7} {3,6} {4,6}  refit\n", "#",
                                "h200", "flat", "steps", "steps");
  std::vector<Result> results;
  bool failed = false;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (onlyOption >= 0 && static_cast<size_t>(onlyOption) != i)
      continue;
    Result result{i, {0, 0}, {0, 0}};
    for (int t = 0; t < 2; ++t) {
      CompilePipelineOptions options;
      if (t == 1)
        options.topology = flat;
      mlir::FailureOr<bench::Compiled> compiled =
          bench::compileSpec(cases[i].spec, options);
      if (mlir::failed(compiled)) {
        llvm::errs() << "error: refit " << i << " (" << cases[i].str()
                     << ") did not compile\n";
        failed = true;
        continue;
      }
      const plan::PlanCost &cost = compiled->refit.cost;
      result.ratio[t] = cost.lowerBoundSeconds > 0
                            ? cost.predictedSeconds / cost.lowerBoundSeconds
                            : 1;
      result.steps[t] = cost.steps;
    }
    llvm::outs() << llvm::formatv("{0,4} {1,7:F3} {2,7:F3} {3,6} {4,6}  {5}\n",
                                  i, result.ratio[0], result.ratio[1],
                                  result.steps[0], result.steps[1],
                                  cases[i].str());
    llvm::outs().flush();
    results.push_back(result);
  }
  llvm::sys::fs::remove(flat);
  if (results.empty())
    return failed ? 1 : 0;

  llvm::outs() << "\npredicted / lower bound\n";
  for (int t = 0; t < 2; ++t) {
    std::vector<double> ratios;
    for (const Result &result : results)
      ratios.push_back(result.ratio[t]);
    size_t within = llvm::count_if(ratios, [](double r) { return r <= 1.10; });
    llvm::outs() << llvm::formatv(
        "  {0}: median {1:F3}, p90 {2:F3}, worst {3:F3}, within 1.10: "
        "{4} of {5}\n",
        topologyNames[t], quantile(ratios, 0.5), quantile(ratios, 0.9),
        *std::max_element(ratios.begin(), ratios.end()), within,
        ratios.size());
  }
  std::vector<Result> worst = results;
  std::sort(worst.begin(), worst.end(), [](const Result &a, const Result &b) {
    return std::max(a.ratio[0], a.ratio[1]) > std::max(b.ratio[0], b.ratio[1]);
  });
  llvm::outs() << "worst ten (by the worse of the two topologies):\n";
  for (size_t i = 0; i < std::min<size_t>(10, worst.size()); ++i)
    llvm::outs() << llvm::formatv("  {0,4} {1,7:F3} {2,7:F3}  {3}\n",
                                  worst[i].index, worst[i].ratio[0],
                                  worst[i].ratio[1],
                                  cases[worst[i].index].str());
  return failed ? 1 : 0;
}
