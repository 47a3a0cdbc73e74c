//===- ModelsTest.cpp - Tests of the model presets ------------------------===//

#include "m2n/Presets/Models.h"

#include "llvm/ADT/StringSet.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace m2n;
using namespace m2n::presets;

namespace {

std::vector<ModelTensor> tensorsOf(llvm::StringRef name,
                                   DType dtype = DType::BF16) {
  const ModelConfig *model = findModel(name);
  EXPECT_NE(model, nullptr) << name.str();
  return model ? modelTensors(*model, dtype) : std::vector<ModelTensor>();
}

const ModelTensor *findTensor(const std::vector<ModelTensor> &tensors,
                              llvm::StringRef name) {
  for (const ModelTensor &tensor : tensors)
    if (tensor.name == name)
      return &tensor;
  return nullptr;
}

using Shape = std::vector<int64_t>;

/// The shape of the tensor called `name`, or {-1} when there is none.
Shape shapeOf(const std::vector<ModelTensor> &tensors, llvm::StringRef name) {
  const ModelTensor *tensor = findTensor(tensors, name);
  return tensor ? tensor->shape : Shape{-1};
}

struct Published {
  const char *model;
  /// The count the preset's config.json gives, worked out by hand.
  int64_t exact;
  /// The figure the model's authors publish, as they round it.
  double published;
  /// Half a unit in the last digit of `published`: the published figure is
  /// the true count rounded, so the count must be this close to it.
  double tolerance;
  size_t tensors;
};

// Published figures: Qwen3's model cards (0.6B, 32.8B, 235B); DeepSeek-V3's
// report (671B without the 14B of the multi-token prediction module, which
// the presets leave out); for Llama 3 (8.03B, 70.6B) and Kimi-K2 (1.03T),
// whose cards round further, the counts HuggingFace shows for their
// checkpoints.
const Published kPublished[] = {
    {"llama-3-8b", 8030261248, 8.03e9, 0.005e9, 291},
    {"llama-3-70b", 70553706496, 70.6e9, 0.05e9, 723},
    {"qwen3-0.6b", 596049920, 0.6e9, 0.05e9, 310},
    {"qwen3-32b", 32762123264, 32.8e9, 0.05e9, 707},
    {"qwen3-235b-a22b", 235093634560, 235e9, 0.5e9, 1131},
    {"deepseek-v3", 671026419200, 671e9, 0.5e9, 1025},
    {"kimi-k2", 1026408232448, 1.03e12, 0.005e12, 1035},
};

TEST(Models, ParameterCountsMatchThePublishedFigures) {
  for (const Published &expected : kPublished) {
    SCOPED_TRACE(expected.model);
    std::vector<ModelTensor> tensors = tensorsOf(expected.model);
    int64_t count = parameterCount(tensors);
    EXPECT_EQ(count, expected.exact);
    EXPECT_LE(std::abs(double(count) - expected.published), expected.tolerance);
    EXPECT_EQ(tensors.size(), expected.tensors);
  }
}

TEST(Models, EveryPresetIsTestedAndFoundIgnoringCase) {
  EXPECT_EQ(allModels().size(), std::size(kPublished));
  for (const ModelConfig &model : allModels())
    EXPECT_EQ(findModel(llvm::StringRef(model.name).upper()), &model);
  EXPECT_EQ(findModel("llama-4"), nullptr);
}

TEST(Models, NamesAreUnique) {
  for (const ModelConfig &model : allModels()) {
    llvm::StringSet<> names;
    for (const ModelTensor &tensor : modelTensors(model, DType::BF16))
      EXPECT_TRUE(names.insert(tensor.name).second)
          << model.name << ": " << tensor.name;
  }
}

TEST(Models, LlamaShapes) {
  std::vector<ModelTensor> tensors = tensorsOf("llama-3-8b");
  EXPECT_EQ(shapeOf(tensors, "model.embed_tokens.weight"),
            (Shape{128256, 4096}));
  EXPECT_EQ(shapeOf(tensors, "model.layers.31.self_attn.k_proj.weight"),
            (Shape{1024, 4096}));
  EXPECT_EQ(shapeOf(tensors, "model.layers.0.mlp.down_proj.weight"),
            (Shape{4096, 14336}));
  EXPECT_EQ(shapeOf(tensors, "lm_head.weight"), (Shape{128256, 4096}));
  EXPECT_EQ(tensors.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(tensors.back().name, "lm_head.weight");
}

TEST(Models, Qwen3HasQueryKeyNormsAndMayTieEmbeddings) {
  std::vector<ModelTensor> dense = tensorsOf("qwen3-32b");
  EXPECT_EQ(shapeOf(dense, "model.layers.0.self_attn.q_proj.weight"),
            (Shape{8192, 5120}));
  EXPECT_EQ(shapeOf(dense, "model.layers.0.self_attn.q_norm.weight"),
            (Shape{128}));
  EXPECT_EQ(shapeOf(dense, "model.layers.63.self_attn.k_norm.weight"),
            (Shape{128}));
  std::vector<ModelTensor> tied = tensorsOf("qwen3-0.6b");
  EXPECT_EQ(findTensor(tied, "lm_head.weight"), nullptr);
  EXPECT_EQ(tied.back().name, "model.norm.weight");
}

TEST(Models, Qwen3MoeHasNoSharedExperts) {
  std::vector<ModelTensor> tensors = tensorsOf("qwen3-235b-a22b");
  EXPECT_EQ(shapeOf(tensors, "model.layers.0.mlp.gate.weight"),
            (Shape{128, 4096}));
  EXPECT_EQ(shapeOf(tensors, "model.layers.93.mlp.experts.up_proj.weight"),
            (Shape{128, 1536, 4096}));
  EXPECT_EQ(shapeOf(tensors, "model.layers.0.self_attn.v_proj.weight"),
            (Shape{512, 4096}));
  for (const ModelTensor &tensor : tensors) {
    EXPECT_EQ(tensor.name.find("shared_experts"), std::string::npos);
    EXPECT_EQ(tensor.name.find("e_score_correction_bias"), std::string::npos);
  }
}

TEST(Models, DeepSeekV3LatentAttentionAndExperts) {
  std::vector<ModelTensor> tensors = tensorsOf("deepseek-v3");
  std::string attention = "model.layers.0.self_attn.";
  EXPECT_EQ(shapeOf(tensors, attention + "q_a_proj.weight"),
            (Shape{1536, 7168}));
  EXPECT_EQ(shapeOf(tensors, attention + "q_a_layernorm.weight"),
            (Shape{1536}));
  EXPECT_EQ(shapeOf(tensors, attention + "q_b_proj.weight"),
            (Shape{24576, 1536}));
  EXPECT_EQ(shapeOf(tensors, attention + "kv_a_proj_with_mqa.weight"),
            (Shape{576, 7168}));
  EXPECT_EQ(shapeOf(tensors, attention + "kv_a_layernorm.weight"),
            (Shape{512}));
  EXPECT_EQ(shapeOf(tensors, attention + "kv_b_proj.weight"),
            (Shape{32768, 512}));
  EXPECT_EQ(shapeOf(tensors, attention + "o_proj.weight"),
            (Shape{7168, 16384}));
  // Layers 0 to 2 are dense; MoE starts at layer 3.
  EXPECT_EQ(shapeOf(tensors, "model.layers.2.mlp.gate_proj.weight"),
            (Shape{18432, 7168}));
  EXPECT_EQ(findTensor(tensors, "model.layers.2.mlp.gate.weight"), nullptr);
  EXPECT_EQ(findTensor(tensors, "model.layers.3.mlp.gate_proj.weight"),
            nullptr);
  std::string moe = "model.layers.3.mlp.";
  EXPECT_EQ(shapeOf(tensors, moe + "gate.weight"), (Shape{256, 7168}));
  EXPECT_EQ(shapeOf(tensors, moe + "experts.gate_proj.weight"),
            (Shape{256, 2048, 7168}));
  EXPECT_EQ(shapeOf(tensors, moe + "experts.down_proj.weight"),
            (Shape{256, 7168, 2048}));
  EXPECT_EQ(shapeOf(tensors, moe + "shared_experts.down_proj.weight"),
            (Shape{7168, 2048}));
  EXPECT_EQ(shapeOf(tensors, moe + "gate.e_score_correction_bias"),
            (Shape{256}));
}

TEST(Models, KimiK2HasOneDenseLayerAnd384Experts) {
  std::vector<ModelTensor> tensors = tensorsOf("kimi-k2");
  EXPECT_EQ(shapeOf(tensors, "model.layers.0.mlp.up_proj.weight"),
            (Shape{18432, 7168}));
  EXPECT_EQ(shapeOf(tensors, "model.layers.1.mlp.experts.up_proj.weight"),
            (Shape{384, 2048, 7168}));
  EXPECT_EQ(shapeOf(tensors, "model.layers.60.self_attn.q_b_proj.weight"),
            (Shape{12288, 1536}));
  EXPECT_EQ(shapeOf(tensors, "model.embed_tokens.weight"),
            (Shape{163840, 7168}));
}

TEST(Models, TheScoreCorrectionBiasStaysF32) {
  for (const ModelTensor &tensor : tensorsOf("deepseek-v3", DType::F16)) {
    bool bias =
        llvm::StringRef(tensor.name).ends_with("e_score_correction_bias");
    EXPECT_EQ(tensor.dtype, bias ? DType::F32 : DType::F16) << tensor.name;
  }
}

TEST(Models, LayersOrderThePipeline) {
  std::vector<ModelTensor> tensors = tensorsOf("llama-3-8b");
  EXPECT_EQ(findTensor(tensors, "model.embed_tokens.weight")->layer, -1);
  EXPECT_EQ(findTensor(tensors, "model.layers.7.mlp.up_proj.weight")->layer, 7);
  EXPECT_EQ(findTensor(tensors, "model.norm.weight")->layer, 32);
  EXPECT_EQ(findTensor(tensors, "lm_head.weight")->layer, 32);
}

TEST(Models, Roles) {
  std::vector<ModelTensor> tensors = tensorsOf("deepseek-v3");
  auto roleOf = [&](llvm::StringRef name) {
    return findTensor(tensors, name)->role;
  };
  EXPECT_EQ(roleOf("model.embed_tokens.weight"), Role::Column);
  EXPECT_EQ(roleOf("model.layers.0.self_attn.q_a_proj.weight"),
            Role::Replicated);
  EXPECT_EQ(roleOf("model.layers.0.self_attn.kv_b_proj.weight"), Role::Column);
  EXPECT_EQ(roleOf("model.layers.0.self_attn.o_proj.weight"), Role::Row);
  EXPECT_EQ(roleOf("model.layers.3.mlp.gate.weight"), Role::Replicated);
  EXPECT_EQ(roleOf("model.layers.3.mlp.experts.up_proj.weight"),
            Role::ExpertColumn);
  EXPECT_EQ(roleOf("model.layers.3.mlp.experts.down_proj.weight"),
            Role::ExpertRow);
  EXPECT_EQ(roleOf("model.layers.3.mlp.shared_experts.down_proj.weight"),
            Role::Row);
  std::vector<ModelTensor> llama = tensorsOf("llama-3-8b");
  EXPECT_EQ(findTensor(llama, "model.layers.0.self_attn.v_proj.weight")->role,
            Role::KeyValue);
}

} // namespace
