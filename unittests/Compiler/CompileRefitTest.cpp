//===- CompileRefitTest.cpp - The whole compile, as m2n compile runs it ---===//

#include "m2n/Compiler/CompileRefit.h"

#include "m2n/Dialect/M2N/IR/M2NDialect.h"
#include "m2n/Dialect/M2N/IR/M2NOps.h"
#include "m2n/Dialect/M2N/Transforms/PlanIR.h"
#include "m2n/Plan/Verify.h"
#include "m2n/Presets/RefitPreset.h"
#include "m2n/Target/ExportPlan.h"
#include "m2n/Target/ImportSpec.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace m2n;

namespace {

spec::RefitSpec presetSpec(llvm::StringRef model, llvm::StringRef train,
                           llvm::StringRef gen) {
  const presets::ModelConfig *config = presets::findModel(model);
  EXPECT_NE(config, nullptr) << model.str();
  llvm::Expected<presets::Parallelism> trainSide =
      presets::parseParallelism(train, presets::Side::Train, *config);
  llvm::Expected<presets::Parallelism> genSide =
      presets::parseParallelism(gen, presets::Side::Gen, *config);
  EXPECT_TRUE(static_cast<bool>(trainSide) && static_cast<bool>(genSide));
  llvm::Expected<spec::RefitSpec> spec = presets::buildRefitSpec(
      *config, *trainSide, *genSide, presets::RefitOptions());
  EXPECT_TRUE(static_cast<bool>(spec));
  return std::move(*spec);
}

struct Case {
  const char *model, *train, *gen;
};

// Enough ranks that the export's chunks of ranks are several ranks wide,
// and replicas, so that the plan relays.
constexpr Case kCases[] = {
    {"qwen3-0.6b", "fsdp8", "dp2,tp4"},
    {"qwen3-0.6b", "pp2,tp2,fsdp2", "dp4,tp2"},
    {"llama-3-8b", "fsdp16", "dp4,tp4"},
    {"qwen3-0.6b", "fsdp40", "dp5,tp8"},
};

class CompileRefitTest : public ::testing::TestWithParam<Case> {
protected:
  CompileRefitTest() { context.loadDialect<M2NDialect>(); }

  mlir::OwningOpRef<mlir::ModuleOp> import() {
    return importRefitSpec(
        presetSpec(GetParam().model, GetParam().train, GetParam().gen),
        "test", &context);
  }

  mlir::MLIRContext context;
};

TEST_P(CompileRefitTest, VerifiedPlanAndItsBytes) {
  mlir::OwningOpRef<mlir::ModuleOp> module = import();
  bool exported = false;
  CompileHooks hooks;
  hooks.exporting = [&] { exported = true; };
  mlir::FailureOr<CompiledRefit> compiled =
      compileRefit(*module, CompilePipelineOptions(), hooks);
  ASSERT_TRUE(mlir::succeeded(compiled));
  EXPECT_TRUE(exported);
  EXPECT_EQ(plan::verifyPlan(compiled->plan), std::vector<std::string>());
  EXPECT_GT(compiled->plan.messages.size(), 0u);
  // Whatever the number of threads, the export gives the same bytes.
  for (unsigned threads : {1u, 2u, 3u, 16u, 64u})
    EXPECT_EQ(exportPlan(compiled->plan, compiled->cost, threads),
              compiled->bytes)
        << threads << " threads";
  // The plan handed over is the one the IR holds.
  RefitOp refit = *module->getOps<RefitOp>().begin();
  mlir::FailureOr<plan::Plan> read = readPlan(refit);
  ASSERT_TRUE(mlir::succeeded(read));
  EXPECT_EQ(exportPlan(*read, compiled->cost), compiled->bytes);
}

TEST_P(CompileRefitTest, SameBytesAsThePipelineWithItsVerifier) {
  mlir::OwningOpRef<mlir::ModuleOp> module = import();
  mlir::FailureOr<CompiledRefit> compiled =
      compileRefit(*module, CompilePipelineOptions());
  ASSERT_TRUE(mlir::succeeded(compiled));

  mlir::OwningOpRef<mlir::ModuleOp> other = import();
  mlir::PassManager pm(&context);
  buildCompilePipeline(pm, CompilePipelineOptions());
  ASSERT_TRUE(mlir::succeeded(pm.run(*other)));
  mlir::FailureOr<plan::Plan> plan =
      readPlan(*other->getOps<RefitOp>().begin());
  ASSERT_TRUE(mlir::succeeded(plan));
  EXPECT_EQ(exportPlan(*plan, plan::CostModel().cost(*plan)),
            compiled->bytes);
}

INSTANTIATE_TEST_SUITE_P(Presets, CompileRefitTest,
                         ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return "case" + std::to_string(info.index);
                         });

TEST(ExportBlockerTest, WhatTheExporterCannotRead) {
  mlir::MLIRContext context;
  context.loadDialect<M2NDialect>();
  mlir::OwningOpRef<mlir::ModuleOp> module = importRefitSpec(
      presetSpec("qwen3-0.6b", "fsdp4", "dp2,tp2"), "test", &context);
  mlir::FailureOr<CompiledRefit> compiled =
      compileRefit(*module, CompilePipelineOptions());
  ASSERT_TRUE(mlir::succeeded(compiled));
  const plan::Plan &good = compiled->plan;
  EXPECT_EQ(exportBlocker(good), "");

  auto blocker = [&](auto edit) {
    plan::Plan bad = good;
    edit(bad);
    return exportBlocker(bad);
  };
  EXPECT_EQ(blocker([](plan::Plan &p) { p.messages[0].receiver = 99; }),
            "a message goes from rank " +
                std::to_string(good.messages[0].sender) +
                " to rank 99, not both on a mesh");
  EXPECT_EQ(blocker([](plan::Plan &p) {
              p.messages[0].parts[0].slice = 1 << 30;
            }),
            "a message carries a slice or members its group lacks");
  EXPECT_EQ(blocker([](plan::Plan &p) {
              p.messages[0].parts[0].memberEnd =
                  p.messages[0].parts[0].memberBegin;
            }),
            "a message carries a slice or members its group lacks");
  EXPECT_EQ(blocker([](plan::Plan &p) {
              p.messages[0].zeroCopy = true;
              p.messages[0].parts.clear();
            }),
            "a zero-copy message carries nothing");
  EXPECT_EQ(blocker([](plan::Plan &p) { p.groups[0].members.clear(); }),
            "group 0 has no members or no meshes");
  EXPECT_EQ(blocker([](plan::Plan &p) { p.tensors[0].group = -1; }),
            "tensor '" + good.tensors[0].name + "' is in no group");
}

TEST(CompileRefitErrorTest, OneRefitOnly) {
  mlir::MLIRContext context;
  context.loadDialect<M2NDialect>();
  std::string message;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &diag) {
    message = diag.str();
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(mlir::UnknownLoc::get(&context));
  EXPECT_TRUE(mlir::failed(compileRefit(*module, CompilePipelineOptions())));
  EXPECT_EQ(message, "expected exactly one 'm2n.refit'");
}

TEST(CompileRefitErrorTest, BadTopologyFile) {
  mlir::MLIRContext context;
  context.loadDialect<M2NDialect>();
  std::vector<std::string> messages;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &diag) {
    messages.push_back(diag.str());
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module = importRefitSpec(
      presetSpec("qwen3-0.6b", "fsdp2", "tp2"), "test", &context);
  CompilePipelineOptions options;
  options.topology = "no-such-topology.json";
  EXPECT_TRUE(mlir::failed(compileRefit(*module, options)));
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_NE(messages[0].find("no-such-topology.json"), std::string::npos)
      << messages[0];
}

TEST(CompileRefitFuseTest, FindsABucketBetweenTheEnds) {
  // 32 trainers into 12 TP8 replicas: at the model's bucket the forwards
  // start late, at the finest one (the busiest rank's bytes over 512)
  // their latencies add up, and a quarter of the bucket beats both. The
  // bucket chosen must beat the model's clearly (as fuse keeps a finer one
  // only then), as it did not when fuse tried the two ends alone.
  mlir::MLIRContext context;
  context.loadDialect<M2NDialect>();
  spec::RefitSpec spec = presetSpec("llama-3-8b", "fsdp32", "dp12,tp8");
  auto compile = [&](int64_t bucketBytes) {
    mlir::OwningOpRef<mlir::ModuleOp> module =
        importRefitSpec(spec, "test", &context);
    CompilePipelineOptions options;
    options.bucketBytes = bucketBytes;
    mlir::FailureOr<CompiledRefit> compiled = compileRefit(*module, options);
    EXPECT_TRUE(mlir::succeeded(compiled));
    return mlir::succeeded(compiled) ? compiled->cost : plan::PlanCost();
  };
  plan::PlanCost chosen = compile(0);
  plan::PlanCost model = compile(plan::CostModel().defaultBucketBytes());
  ASSERT_GT(model.predictedSeconds, 0);
  EXPECT_LT(chosen.predictedSeconds, 0.97 * model.predictedSeconds);
  EXPECT_GT(chosen.messages, model.messages);
}

} // namespace
