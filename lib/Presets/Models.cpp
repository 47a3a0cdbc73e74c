//===- Models.cpp - Model architectures of public checkpoints -------------===//
//
// The values below are those of each model's config.json on HuggingFace
// (the repository is in `source`); docs/presets.md lists them with the
// parameter counts they give.
//
//===----------------------------------------------------------------------===//

#include "m2n/Presets/Models.h"

#include <string>

using namespace m2n;
using namespace m2n::presets;

namespace {

ModelConfig llama3(std::string name, std::string source, int64_t hidden,
                   int64_t layers, int64_t intermediate, int64_t heads) {
  ModelConfig model;
  model.name = std::move(name);
  model.source = std::move(source);
  model.vocabSize = 128256;
  model.hiddenSize = hidden;
  model.numLayers = layers;
  model.intermediateSize = intermediate;
  model.numHeads = heads;
  model.numKvHeads = 8;
  model.headDim = hidden / heads;
  return model;
}

ModelConfig qwen3(std::string name, std::string source, int64_t hidden,
                  int64_t layers, int64_t intermediate, int64_t heads,
                  int64_t kvHeads) {
  ModelConfig model;
  model.name = std::move(name);
  model.source = std::move(source);
  model.vocabSize = 151936;
  model.hiddenSize = hidden;
  model.numLayers = layers;
  model.intermediateSize = intermediate;
  model.numHeads = heads;
  model.numKvHeads = kvHeads;
  model.headDim = 128;
  model.qkNorm = true;
  return model;
}

/// DeepSeek-V3's architecture, which Kimi-K2 reuses with other sizes.
ModelConfig deepseekV3(std::string name, std::string source, int64_t vocab,
                       int64_t heads, int64_t experts, int64_t denseLayers) {
  ModelConfig model;
  model.name = std::move(name);
  model.source = std::move(source);
  model.vocabSize = vocab;
  model.hiddenSize = 7168;
  model.numLayers = 61;
  model.intermediateSize = 18432;
  model.numHeads = heads;
  model.numKvHeads = heads;
  model.qLoraRank = 1536;
  model.kvLoraRank = 512;
  model.qkNopeHeadDim = 128;
  model.qkRopeHeadDim = 64;
  model.vHeadDim = 128;
  model.numExperts = experts;
  model.moeIntermediateSize = 2048;
  model.numSharedExperts = 1;
  model.firstDenseLayers = denseLayers;
  model.scoreCorrectionBias = true;
  return model;
}

std::vector<ModelConfig> buildModels() {
  std::vector<ModelConfig> models;
  models.push_back(
      llama3("llama-3-8b", "meta-llama/Meta-Llama-3-8B", 4096, 32, 14336, 32));
  models.push_back(llama3("llama-3-70b", "meta-llama/Meta-Llama-3-70B", 8192,
                          80, 28672, 64));
  // The one preset with tied embeddings: it has no lm_head.
  ModelConfig small =
      qwen3("qwen3-0.6b", "Qwen/Qwen3-0.6B", 1024, 28, 3072, 16, 8);
  small.tieWordEmbeddings = true;
  models.push_back(small);
  models.push_back(
      qwen3("qwen3-32b", "Qwen/Qwen3-32B", 5120, 64, 25600, 64, 8));
  // Every layer is MoE (decoder_sparse_step 1), without shared experts.
  ModelConfig moe =
      qwen3("qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B", 4096, 94, 12288, 64, 4);
  moe.numExperts = 128;
  moe.moeIntermediateSize = 1536;
  models.push_back(moe);
  models.push_back(deepseekV3("deepseek-v3", "deepseek-ai/DeepSeek-V3", 129280,
                              128, 256, 3));
  models.push_back(
      deepseekV3("kimi-k2", "moonshotai/Kimi-K2-Instruct", 163840, 64, 384, 1));
  return models;
}

/// Lists a model's tensors in checkpoint order.
class TensorLister {
public:
  TensorLister(const ModelConfig &model, DType dtype)
      : model(model), dtype(dtype) {}

  std::vector<ModelTensor> list() {
    int64_t vocab = model.vocabSize, hidden = model.hiddenSize;
    add("model.embed_tokens.weight", {vocab, hidden}, Role::Column, -1);
    for (int64_t layer = 0; layer < model.numLayers; ++layer)
      decoderLayer(layer);
    int64_t after = model.numLayers;
    add("model.norm.weight", {hidden}, Role::Replicated, after);
    if (!model.tieWordEmbeddings)
      add("lm_head.weight", {vocab, hidden}, Role::Column, after);
    return std::move(tensors);
  }

private:
  const ModelConfig &model;
  DType dtype;
  std::vector<ModelTensor> tensors;

  ModelTensor &add(std::string name, std::vector<int64_t> shape, Role role,
                   int64_t layer) {
    tensors.push_back({std::move(name), dtype, std::move(shape), role, layer});
    return tensors.back();
  }

  void decoderLayer(int64_t layer) {
    std::string prefix = "model.layers." + std::to_string(layer) + ".";
    int64_t hidden = model.hiddenSize;
    add(prefix + "input_layernorm.weight", {hidden}, Role::Replicated, layer);
    if (model.isMla())
      latentAttention(prefix + "self_attn.", layer);
    else
      groupedQueryAttention(prefix + "self_attn.", layer);
    add(prefix + "post_attention_layernorm.weight", {hidden}, Role::Replicated,
        layer);
    if (model.isMoeLayer(layer))
      mixtureOfExperts(prefix + "mlp.", layer);
    else
      mlp(prefix + "mlp.", model.intermediateSize, layer);
  }

  void groupedQueryAttention(const std::string &prefix, int64_t layer) {
    int64_t hidden = model.hiddenSize, headDim = model.headDim;
    int64_t queries = model.numHeads * headDim;
    int64_t keyValues = model.numKvHeads * headDim;
    add(prefix + "q_proj.weight", {queries, hidden}, Role::Column, layer);
    add(prefix + "k_proj.weight", {keyValues, hidden}, Role::KeyValue, layer);
    add(prefix + "v_proj.weight", {keyValues, hidden}, Role::KeyValue, layer);
    add(prefix + "o_proj.weight", {hidden, queries}, Role::Row, layer);
    if (model.qkNorm) {
      add(prefix + "q_norm.weight", {headDim}, Role::Replicated, layer);
      add(prefix + "k_norm.weight", {headDim}, Role::Replicated, layer);
    }
  }

  /// Queries and keys-values each pass through a low-rank latent; only the
  /// up-projections (q_b_proj, kv_b_proj) are per head, so only they and
  /// o_proj are tensor-parallel.
  void latentAttention(const std::string &prefix, int64_t layer) {
    int64_t hidden = model.hiddenSize, heads = model.numHeads;
    int64_t qHeadDim = model.qkNopeHeadDim + model.qkRopeHeadDim;
    add(prefix + "q_a_proj.weight", {model.qLoraRank, hidden}, Role::Replicated,
        layer);
    add(prefix + "q_a_layernorm.weight", {model.qLoraRank}, Role::Replicated,
        layer);
    add(prefix + "q_b_proj.weight", {heads * qHeadDim, model.qLoraRank},
        Role::Column, layer);
    add(prefix + "kv_a_proj_with_mqa.weight",
        {model.kvLoraRank + model.qkRopeHeadDim, hidden}, Role::Replicated,
        layer);
    add(prefix + "kv_a_layernorm.weight", {model.kvLoraRank}, Role::Replicated,
        layer);
    add(prefix + "kv_b_proj.weight",
        {heads * (model.qkNopeHeadDim + model.vHeadDim), model.kvLoraRank},
        Role::Column, layer);
    add(prefix + "o_proj.weight", {hidden, heads * model.vHeadDim}, Role::Row,
        layer);
  }

  void mlp(const std::string &prefix, int64_t intermediate, int64_t layer) {
    int64_t hidden = model.hiddenSize;
    add(prefix + "gate_proj.weight", {intermediate, hidden}, Role::Column,
        layer);
    add(prefix + "up_proj.weight", {intermediate, hidden}, Role::Column, layer);
    add(prefix + "down_proj.weight", {hidden, intermediate}, Role::Row, layer);
  }

  /// The router, the routed experts stacked per projection (named as the
  /// checkpoint names each expert, less the expert's index), and the shared
  /// experts, which the checkpoints hold as one dense MLP.
  void mixtureOfExperts(const std::string &prefix, int64_t layer) {
    int64_t hidden = model.hiddenSize, experts = model.numExperts;
    int64_t width = model.moeIntermediateSize;
    add(prefix + "gate.weight", {experts, hidden}, Role::Replicated, layer);
    if (model.scoreCorrectionBias) {
      ModelTensor &bias = add(prefix + "gate.e_score_correction_bias",
                              {experts}, Role::Replicated, layer);
      bias.dtype = DType::F32;
    }
    add(prefix + "experts.gate_proj.weight", {experts, width, hidden},
        Role::ExpertColumn, layer);
    add(prefix + "experts.up_proj.weight", {experts, width, hidden},
        Role::ExpertColumn, layer);
    add(prefix + "experts.down_proj.weight", {experts, hidden, width},
        Role::ExpertRow, layer);
    if (model.numSharedExperts > 0)
      mlp(prefix + "shared_experts.", width * model.numSharedExperts, layer);
  }
};

} // namespace

llvm::ArrayRef<ModelConfig> presets::allModels() {
  static const std::vector<ModelConfig> models = buildModels();
  return models;
}

const ModelConfig *presets::findModel(llvm::StringRef name) {
  for (const ModelConfig &model : allModels())
    if (name.equals_insensitive(model.name))
      return &model;
  return nullptr;
}

std::vector<ModelTensor> presets::modelTensors(const ModelConfig &model,
                                               DType dtype) {
  return TensorLister(model, dtype).list();
}

int64_t presets::parameterCount(llvm::ArrayRef<ModelTensor> tensors) {
  int64_t count = 0;
  for (const ModelTensor &tensor : tensors) {
    int64_t elements = 1;
    for (int64_t dim : tensor.shape)
      elements *= dim;
    count += elements;
  }
  return count;
}
