//===- Models.cpp - Refit specs of real model sizes for benchmarks --------===//
//
// Shapes follow DeepSeek-V3's public configuration: hidden 7168, 61 layers,
// the first 3 dense (intermediate 18432), then MoE with 256 routed experts of
// intermediate 2048 and one shared expert; MLA attention with q_lora_rank
// 1536, kv_lora_rank 512, 128 heads of 128 + 64 (rope) dims; vocab 129280.
//
//===----------------------------------------------------------------------===//

#include "Models.h"

#include <string>

using namespace m2n;
using namespace m2n::spec;

namespace {

constexpr int64_t kHidden = 7168;
constexpr int64_t kLayers = 61;
constexpr int64_t kDenseLayers = 3;
constexpr int64_t kDenseIntermediate = 18432;
constexpr int64_t kExperts = 256;
constexpr int64_t kExpertIntermediate = 2048;
constexpr int64_t kVocab = 129280;
constexpr int64_t kHeads = 128;
constexpr int64_t kQLoraRank = 1536;
constexpr int64_t kKvLoraRank = 512;
constexpr int64_t kRopeDim = 64;
constexpr int64_t kHeadDim = 128;

const Placement R = Placement::replicate();
Placement S(int64_t dim) { return Placement::shard(dim); }

/// How the serving side lays out a weight.
enum class Serve { Replicated, Column, Row, Experts };

struct Builder {
  RefitSpec spec;

  void add(std::string name, std::vector<int64_t> shape, Serve serve) {
    TensorSpec &tensor = spec.tensors.emplace_back();
    tensor.name = std::move(name);
    tensor.dtype = DType::BF16;
    tensor.shape = std::move(shape);
    // Training: FSDP shards dim 0 over all ranks, which also gives each rank
    // its own experts of a stacked expert tensor.
    tensor.src = {"train", {S(0)}};
    switch (serve) {
    case Serve::Replicated:
      tensor.dst = {"gen", {R, R}};
      break;
    case Serve::Column:
      tensor.dst = {"gen", {R, S(0)}};
      break;
    case Serve::Row:
      tensor.dst = {"gen", {R, S(1)}};
      break;
    case Serve::Experts:
      tensor.dst = {"gen", {S(0), S(0)}};
      break;
    }
  }

  void attention(const std::string &prefix) {
    add(prefix + "input_layernorm.weight", {kHidden}, Serve::Replicated);
    add(prefix + "self_attn.q_a_proj.weight", {kQLoraRank, kHidden},
        Serve::Replicated);
    add(prefix + "self_attn.q_a_layernorm.weight", {kQLoraRank},
        Serve::Replicated);
    add(prefix + "self_attn.q_b_proj.weight",
        {kHeads * (kHeadDim + kRopeDim), kQLoraRank}, Serve::Column);
    add(prefix + "self_attn.kv_a_proj_with_mqa.weight",
        {kKvLoraRank + kRopeDim, kHidden}, Serve::Replicated);
    add(prefix + "self_attn.kv_a_layernorm.weight", {kKvLoraRank},
        Serve::Replicated);
    add(prefix + "self_attn.kv_b_proj.weight",
        {kHeads * (kHeadDim + kHeadDim), kKvLoraRank}, Serve::Column);
    add(prefix + "self_attn.o_proj.weight", {kHidden, kHeads * kHeadDim},
        Serve::Row);
    add(prefix + "post_attention_layernorm.weight", {kHidden},
        Serve::Replicated);
  }

  void mlp(const std::string &prefix, int64_t intermediate) {
    add(prefix + "gate_proj.weight", {intermediate, kHidden}, Serve::Column);
    add(prefix + "up_proj.weight", {intermediate, kHidden}, Serve::Column);
    add(prefix + "down_proj.weight", {kHidden, intermediate}, Serve::Row);
  }

  void experts(const std::string &prefix) {
    add(prefix + "mlp.gate.weight", {kExperts, kHidden}, Serve::Replicated);
    add(prefix + "mlp.experts.gate_proj",
        {kExperts, kExpertIntermediate, kHidden}, Serve::Experts);
    add(prefix + "mlp.experts.up_proj",
        {kExperts, kExpertIntermediate, kHidden}, Serve::Experts);
    add(prefix + "mlp.experts.down_proj",
        {kExperts, kHidden, kExpertIntermediate}, Serve::Experts);
    mlp(prefix + "mlp.shared_experts.", kExpertIntermediate);
  }
};

} // namespace

RefitSpec bench::deepseekV3Refit(int64_t trainRanks, int64_t genDp,
                                 int64_t genTp) {
  Builder builder;
  RefitSpec &spec = builder.spec;
  spec.name = "deepseek_v3";
  spec.meshes.push_back({"train", {trainRanks}, {"fsdp"}, {}});
  spec.meshes.push_back({"gen", {genDp, genTp}, {"dp", "tp"}, {}});
  for (int64_t r = 0; r < trainRanks; ++r)
    spec.meshes[0].ranks.push_back(r);
  for (int64_t r = 0; r < genDp * genTp; ++r)
    spec.meshes[1].ranks.push_back(trainRanks + r);

  builder.add("model.embed_tokens.weight", {kVocab, kHidden}, Serve::Column);
  for (int64_t layer = 0; layer < kLayers; ++layer) {
    std::string prefix = "model.layers." + std::to_string(layer) + ".";
    builder.attention(prefix);
    if (layer < kDenseLayers)
      builder.mlp(prefix + "mlp.", kDenseIntermediate);
    else
      builder.experts(prefix);
  }
  builder.add("model.norm.weight", {kHidden}, Serve::Replicated);
  builder.add("lm_head.weight", {kVocab, kHidden}, Serve::Column);
  return spec;
}
