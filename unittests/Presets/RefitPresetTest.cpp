//===- RefitPresetTest.cpp - Tests of parallelisms and generated specs ----===//

#include "m2n/Presets/RefitPreset.h"
#include "m2n/Presets/Parallelism.h"

#include "gtest/gtest.h"

using namespace m2n;
using namespace m2n::presets;
using namespace m2n::spec;

namespace {

/// The error that parsing `text` for `side` gives, or "" when it parses.
std::string parseError(llvm::StringRef text, Side side) {
  llvm::Expected<Parallelism> parsed = parseParallelism(text, side);
  return parsed ? "" : llvm::toString(parsed.takeError());
}

/// The error that `text` gives for `model` on `side`, or "".
std::string modelError(llvm::StringRef model, llvm::StringRef text, Side side) {
  llvm::Expected<Parallelism> parsed =
      parseParallelism(text, side, *findModel(model));
  return parsed ? "" : llvm::toString(parsed.takeError());
}

TEST(Parallelism, AxesKeepTheirOrder) {
  llvm::Expected<Parallelism> parsed =
      parseParallelism("pp4, tp8,fsdp8", Side::Train);
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  ASSERT_EQ(parsed->axes.size(), 3u);
  EXPECT_EQ(parsed->axes[0].axis, Axis::PP);
  EXPECT_EQ(parsed->axes[1].axis, Axis::TP);
  EXPECT_EQ(parsed->axes[2].axis, Axis::FSDP);
  EXPECT_EQ(parsed->worldSize(), 256);
  EXPECT_EQ(parsed->size(Axis::TP), 8);
  EXPECT_EQ(parsed->size(Axis::EP), 1);
  EXPECT_FALSE(parsed->has(Axis::DP));
  EXPECT_EQ(parsed->expertGroupSize(), 1);
}

TEST(Parallelism, AxisNamesIgnoreCase) {
  llvm::Expected<Parallelism> parsed =
      parseParallelism("Fsdp16,TP2", Side::Train);
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  ASSERT_EQ(parsed->axes.size(), 2u);
  EXPECT_EQ(parsed->axes[0].axis, Axis::FSDP);
  EXPECT_EQ(parsed->axes[1].axis, Axis::TP);
  EXPECT_EQ(parsed->worldSize(), 32);
  // The same axis in two cases is still one axis twice.
  EXPECT_EQ(parseError("TP2,tp2", Side::Train), "tp appears twice");
  EXPECT_EQ(parseError("dp2,FSDP4", Side::Gen),
            "fsdp is a training axis; generation takes pp, dp, ep or tp");
}

TEST(Parallelism, ExpertGroupSpansTensorParallelism) {
  llvm::Expected<Parallelism> parsed = parseParallelism("ep16,tp8", Side::Gen);
  ASSERT_TRUE(bool(parsed));
  EXPECT_EQ(parsed->expertGroupSize(), 128);
}

TEST(Parallelism, SyntaxErrors) {
  EXPECT_EQ(parseError("", Side::Train),
            "expected parallel axes, as in tp8,fsdp32");
  EXPECT_EQ(parseError("tp8,,fsdp8", Side::Train),
            "an empty axis between commas");
  EXPECT_EQ(parseError("tp8,", Side::Train), "an empty axis between commas");
  EXPECT_EQ(parseError("xp8", Side::Train),
            "unknown axis \"xp\" (expected pp, dp, fsdp, ep or tp)");
  EXPECT_EQ(parseError("8tp", Side::Train),
            "unknown axis \"8tp\" (expected pp, dp, fsdp, ep or tp)");
  EXPECT_EQ(parseError("dp2,fsdp4", Side::Gen),
            "fsdp is a training axis; generation takes pp, dp, ep or tp");
  EXPECT_EQ(parseError("tp0", Side::Train),
            "axis \"tp0\" needs a positive size, as in tp8");
  EXPECT_EQ(parseError("tp", Side::Train),
            "axis \"tp\" needs a positive size, as in tp8");
  EXPECT_EQ(parseError("tp-2", Side::Train),
            "axis \"tp-2\" needs a positive size, as in tp8");
  EXPECT_EQ(parseError("tp8x", Side::Train),
            "axis \"tp8x\" needs a positive size, as in tp8");
  EXPECT_EQ(parseError("tp2,fsdp4,tp2", Side::Train), "tp appears twice");
  EXPECT_EQ(parseError("dp4096,tp8192", Side::Train),
            "more than 16777216 ranks");
  EXPECT_EQ(parseError("dp99999999999999999999", Side::Train),
            "axis \"dp99999999999999999999\" needs a positive size, as in "
            "dp8");
}

TEST(Parallelism, ModelErrors) {
  EXPECT_EQ(modelError("llama-3-8b", "tp64", Side::Gen),
            "tp64 must divide the 32 attention heads of llama-3-8b");
  EXPECT_EQ(modelError("llama-3-8b", "tp16", Side::Train),
            "tp16 must divide the 8 key-value heads of llama-3-8b when "
            "training");
  EXPECT_EQ(modelError("llama-3-8b", "tp16", Side::Gen), "");
  EXPECT_EQ(modelError("llama-3-8b", "ep8", Side::Train),
            "ep needs a mixture-of-experts model; llama-3-8b has no routed "
            "experts");
  EXPECT_EQ(modelError("deepseek-v3", "ep48", Side::Gen),
            "ep48 must divide the 256 routed experts of deepseek-v3");
  EXPECT_EQ(modelError("qwen3-235b-a22b", "ep16,tp16", Side::Gen),
            "the expert-parallel group, ep16 x tp16 = 256 ranks, must divide "
            "the 128 routed experts of qwen3-235b-a22b");
  EXPECT_EQ(modelError("qwen3-235b-a22b", "ep16,tp8", Side::Gen), "");
  EXPECT_EQ(modelError("deepseek-v3", "pp62", Side::Train),
            "pp62 leaves pipeline stages without layers: deepseek-v3 has 61");
  EXPECT_EQ(modelError("deepseek-v3", "pp61", Side::Train), "");
}

/// A generated spec, read back through the spec parser so that every
/// placement is validated.
struct Generated {
  RefitSpec spec;

  Generated(llvm::StringRef model, llvm::StringRef train, llvm::StringRef gen,
            bool colocate = false) {
    generate(model, train, gen, colocate);
  }

  /// Apart from the constructor, which gtest's ASSERTs cannot return from.
  void generate(llvm::StringRef model, llvm::StringRef train,
                llvm::StringRef gen, bool colocate) {
    const ModelConfig *config = findModel(model);
    ASSERT_NE(config, nullptr);
    llvm::Expected<Parallelism> trainSide =
        parseParallelism(train, Side::Train, *config);
    ASSERT_TRUE(bool(trainSide)) << llvm::toString(trainSide.takeError());
    llvm::Expected<Parallelism> genSide =
        parseParallelism(gen, Side::Gen, *config);
    ASSERT_TRUE(bool(genSide)) << llvm::toString(genSide.takeError());
    RefitOptions options;
    options.colocate = colocate;
    llvm::Expected<RefitSpec> built =
        buildRefitSpec(*config, *trainSide, *genSide, options);
    ASSERT_TRUE(bool(built)) << llvm::toString(built.takeError());
    llvm::Expected<RefitSpec> parsed =
        parseRefitSpec(writeRefitSpec(*built), "generated");
    ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
    spec = std::move(*parsed);
  }

  const TensorSpec &tensor(llvm::StringRef name) const {
    for (const TensorSpec &tensor : spec.tensors)
      if (tensor.name == name)
        return tensor;
    static const TensorSpec missing;
    ADD_FAILURE() << "no tensor " << name.str();
    return missing;
  }

  /// "mesh [p, ...]" for one side of `name`'s layout.
  std::string src(llvm::StringRef name) const { return str(tensor(name).src); }
  std::string dst(llvm::StringRef name) const { return str(tensor(name).dst); }

  static std::string str(const LayoutSpec &layout) {
    std::string text = layout.mesh + " [";
    for (size_t i = 0; i < layout.placements.size(); ++i)
      text += (i ? ", " : "") + layout.placements[i].str();
    return text + "]";
  }
};

std::vector<int64_t> range(int64_t start, int64_t count) {
  std::vector<int64_t> ranks;
  for (int64_t i = 0; i < count; ++i)
    ranks.push_back(start + i);
  return ranks;
}

TEST(RefitPreset, TensorParallelOverFsdp) {
  Generated g("llama-3-8b", "tp8,fsdp32", "dp2,tp4");
  ASSERT_EQ(g.spec.meshes.size(), 2u);
  EXPECT_EQ(g.spec.meshes[0].name, "train");
  EXPECT_EQ(g.spec.meshes[0].shape, (std::vector<int64_t>{8, 32}));
  EXPECT_EQ(g.spec.meshes[0].axes, (std::vector<std::string>{"tp", "fsdp"}));
  EXPECT_EQ(g.spec.meshes[0].ranks, range(0, 256));
  EXPECT_EQ(g.spec.meshes[1].name, "gen");
  EXPECT_EQ(g.spec.meshes[1].ranks, range(256, 8));
  std::string layer = "model.layers.5.";
  EXPECT_EQ(g.src(layer + "self_attn.q_proj.weight"), "train [S(0), S(0)]");
  EXPECT_EQ(g.src(layer + "self_attn.k_proj.weight"), "train [S(0), S(0)]");
  EXPECT_EQ(g.src(layer + "self_attn.o_proj.weight"), "train [S(1), S(0)]");
  EXPECT_EQ(g.src(layer + "mlp.down_proj.weight"), "train [S(1), S(0)]");
  EXPECT_EQ(g.src(layer + "input_layernorm.weight"), "train [R, S(0)]");
  EXPECT_EQ(g.src("model.embed_tokens.weight"), "train [S(0), S(0)]");
  EXPECT_EQ(g.dst(layer + "mlp.gate_proj.weight"), "gen [R, S(0)]");
  EXPECT_EQ(g.dst(layer + "self_attn.v_proj.weight"), "gen [R, S(0)]");
  EXPECT_EQ(g.dst(layer + "self_attn.o_proj.weight"), "gen [R, S(1)]");
  EXPECT_EQ(g.dst("model.norm.weight"), "gen [R, R]");
  EXPECT_EQ(g.dst("lm_head.weight"), "gen [R, S(0)]");
}

TEST(RefitPreset, KeyValueHeadsBeyondTensorParallelismAreWhole) {
  Generated g("llama-3-70b", "fsdp64", "tp16");
  EXPECT_EQ(g.dst("model.layers.0.self_attn.k_proj.weight"), "gen [R]");
  EXPECT_EQ(g.dst("model.layers.0.self_attn.q_proj.weight"), "gen [S(0)]");
}

TEST(RefitPreset, ExpertParallelInsideFsdp) {
  Generated g("deepseek-v3", "ep8,fsdp32", "ep128");
  std::string moe = "model.layers.3.mlp.";
  EXPECT_EQ(g.src(moe + "experts.gate_proj.weight"), "train [S(0), S(0)]");
  EXPECT_EQ(g.src(moe + "shared_experts.gate_proj.weight"),
            "train [S(0), S(0)]");
  EXPECT_EQ(g.src(moe + "gate.e_score_correction_bias"), "train [S(0), S(0)]");
  EXPECT_EQ(g.dst(moe + "experts.down_proj.weight"), "gen [S(0)]");
  EXPECT_EQ(g.dst(moe + "gate.weight"), "gen [R]");
  EXPECT_EQ(g.dst("model.layers.0.self_attn.kv_b_proj.weight"), "gen [R]");
}

TEST(RefitPreset, FsdpShardsExpertRowsBeyondTheExperts) {
  // 8 x 64 ranks would leave half of them without an expert.
  Generated g("deepseek-v3", "ep8,fsdp64", "dp2,ep64");
  EXPECT_EQ(g.src("model.layers.3.mlp.experts.up_proj.weight"),
            "train [S(0), S(1)]");
  EXPECT_EQ(g.src("model.layers.3.mlp.gate.weight"), "train [S(0), S(0)]");
  EXPECT_EQ(g.dst("model.layers.3.mlp.experts.up_proj.weight"),
            "gen [R, S(0)]");
  EXPECT_EQ(g.dst("model.layers.3.mlp.shared_experts.up_proj.weight"),
            "gen [R, R]");
}

TEST(RefitPreset, ExpertsAreTensorParallelWithoutExpertParallelism) {
  Generated g("deepseek-v3", "tp8,fsdp32", "dp8,tp8");
  std::string moe = "model.layers.3.mlp.experts.";
  EXPECT_EQ(g.src(moe + "gate_proj.weight"), "train [S(1), S(0)]");
  EXPECT_EQ(g.src(moe + "down_proj.weight"), "train [S(2), S(0)]");
  EXPECT_EQ(g.dst(moe + "up_proj.weight"), "gen [R, S(1)]");
  EXPECT_EQ(g.dst(moe + "down_proj.weight"), "gen [R, S(2)]");
  EXPECT_EQ(g.dst("model.layers.0.self_attn.q_a_proj.weight"), "gen [R, R]");
  EXPECT_EQ(g.dst("model.layers.0.self_attn.q_b_proj.weight"), "gen [R, S(0)]");
}

TEST(RefitPreset, ExpertParallelismSpansTensorParallelism) {
  Generated g("deepseek-v3", "fsdp256", "ep16,tp8");
  std::string moe = "model.layers.3.mlp.";
  EXPECT_EQ(g.src(moe + "experts.down_proj.weight"), "train [S(0)]");
  EXPECT_EQ(g.dst(moe + "experts.down_proj.weight"), "gen [S(0), S(0)]");
  EXPECT_EQ(g.dst(moe + "shared_experts.down_proj.weight"), "gen [R, S(1)]");
  EXPECT_EQ(g.dst("model.layers.0.self_attn.o_proj.weight"), "gen [R, S(1)]");
}

TEST(RefitPreset, PipelineStages) {
  Generated g("deepseek-v3", "pp4,ep16", "dp8,tp8");
  ASSERT_EQ(g.spec.meshes.size(), 5u);
  for (int64_t stage = 0; stage < 4; ++stage) {
    const MeshSpec &mesh = g.spec.meshes[stage];
    EXPECT_EQ(mesh.name, "train_pp" + std::to_string(stage));
    EXPECT_EQ(mesh.shape, (std::vector<int64_t>{16}));
    EXPECT_EQ(mesh.axes, (std::vector<std::string>{"ep"}));
    EXPECT_EQ(mesh.ranks, range(16 * stage, 16));
  }
  EXPECT_EQ(g.spec.meshes[4].ranks, range(64, 64));
  // 61 layers: 16, 15, 15 and 15.
  EXPECT_EQ(g.src("model.embed_tokens.weight"), "train_pp0 [R]");
  EXPECT_EQ(g.src("model.layers.15.mlp.experts.up_proj.weight"),
            "train_pp0 [S(0)]");
  EXPECT_EQ(g.src("model.layers.16.mlp.gate.weight"), "train_pp1 [R]");
  EXPECT_EQ(g.src("model.layers.30.input_layernorm.weight"), "train_pp1 [R]");
  EXPECT_EQ(g.src("model.layers.31.input_layernorm.weight"), "train_pp2 [R]");
  EXPECT_EQ(g.src("model.layers.46.input_layernorm.weight"), "train_pp3 [R]");
  EXPECT_EQ(g.src("model.layers.60.input_layernorm.weight"), "train_pp3 [R]");
  EXPECT_EQ(g.src("lm_head.weight"), "train_pp3 [R]");
}

TEST(RefitPreset, PipelineAxisInTheMiddle) {
  Generated g("qwen3-0.6b", "tp2,pp2,dp2", "pp2");
  ASSERT_EQ(g.spec.meshes.size(), 4u);
  EXPECT_EQ(g.spec.meshes[0].ranks, (std::vector<int64_t>{0, 1, 4, 5}));
  EXPECT_EQ(g.spec.meshes[1].ranks, (std::vector<int64_t>{2, 3, 6, 7}));
  EXPECT_EQ(g.spec.meshes[1].axes, (std::vector<std::string>{"tp", "dp"}));
  // A stage of one rank is a one-rank mesh without axis names.
  EXPECT_EQ(g.spec.meshes[3].name, "gen_pp1");
  EXPECT_EQ(g.spec.meshes[3].shape, (std::vector<int64_t>{1}));
  EXPECT_TRUE(g.spec.meshes[3].axes.empty());
  EXPECT_EQ(g.spec.meshes[3].ranks, (std::vector<int64_t>{9}));
  EXPECT_EQ(g.dst("model.norm.weight"), "gen_pp1 [R]");
  EXPECT_EQ(g.src("model.layers.14.mlp.up_proj.weight"), "train_pp1 [S(0), R]");
}

TEST(RefitPreset, Colocated) {
  Generated g("qwen3-32b", "fsdp16", "dp2,tp8", /*colocate=*/true);
  EXPECT_EQ(g.spec.meshes[0].ranks, range(0, 16));
  EXPECT_EQ(g.spec.meshes[1].ranks, range(0, 16));
}

TEST(RefitPreset, ColocatedSidesNeedTheSameRanks) {
  const ModelConfig &model = *findModel("qwen3-32b");
  RefitOptions options;
  options.colocate = true;
  llvm::Expected<RefitSpec> spec =
      buildRefitSpec(model, *parseParallelism("fsdp16", Side::Train),
                     *parseParallelism("tp8", Side::Gen), options);
  ASSERT_FALSE(bool(spec));
  EXPECT_EQ(llvm::toString(spec.takeError()),
            "training takes 16 ranks and generation 8; colocated sides need "
            "the same number");
}

TEST(RefitPreset, EveryModelAndSetupParses) {
  for (const ModelConfig &model : allModels())
    for (const char *train : {"fsdp64", "tp4,fsdp16", "pp4,tp4,fsdp4"})
      for (const char *gen : {"dp8,tp8", "tp8", "dp2,tp4"}) {
        SCOPED_TRACE(model.name + " " + train + " " + gen);
        Generated g(model.name, train, gen);
        EXPECT_EQ(g.spec.tensors.size(),
                  modelTensors(model, DType::BF16).size());
        EXPECT_EQ(g.spec.name, model.name);
      }
}

} // namespace
