//===- Models.h - Model architectures of public checkpoints -----*- C++ -*-===//
//
// The tensors of real models, so that a refit spec can be generated instead
// of written by hand. Each preset holds the values of the model's public
// HuggingFace config.json that decide its tensors, and modelTensors lists
// every tensor as the checkpoint names it, with its shape and the role that
// decides how tensor parallelism splits it. Routed experts are the one
// departure from the checkpoint: one tensor per projection and layer,
// stacked as [experts, out, in], because that is how training and serving
// engines hold them and how expert parallelism splits them.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_PRESETS_MODELS_H
#define M2N_PRESETS_MODELS_H

#include "m2n/Spec/DType.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace m2n::presets {

/// How tensor parallelism splits a tensor, Megatron-style; the layouts
/// derive every other axis's placement from it too.
enum class Role {
  /// Whole on every tensor-parallel rank: norms, routers and their biases,
  /// MLA's down-projections (q_a_proj, kv_a_proj_with_mqa).
  Replicated,
  /// An [out, in] weight split along out (dim 0): q_proj, gate_proj,
  /// up_proj, MLA's q_b_proj and kv_b_proj; the embedding and lm_head split
  /// along the vocabulary, which is their dim 0 too.
  Column,
  /// k_proj and v_proj: Column while tensor parallelism divides the
  /// key-value heads; beyond that, serving engines give every rank whole
  /// heads, shared by several ranks, which a DTensor layout cannot express.
  KeyValue,
  /// An [out, in] weight split along in (dim 1): o_proj, down_proj.
  Row,
  /// Stacked routed experts [experts, out, in], split along out (dim 1):
  /// gate_proj and up_proj.
  ExpertColumn,
  /// Stacked routed experts split along in (dim 2): down_proj.
  ExpertRow,
};

inline bool isExpert(Role role) {
  return role == Role::ExpertColumn || role == Role::ExpertRow;
}

/// One tensor of a model.
struct ModelTensor {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  Role role;
  /// The decoder layer that holds the tensor, which decides its pipeline
  /// stage: -1 for the embedding, before every layer, and the number of
  /// layers for the final norm and lm_head, after every layer.
  int64_t layer;
};

/// The config.json values of a model that decide its tensors. Attention is
/// grouped-query (Llama, Qwen3) unless kvLoraRank is set (MLA: DeepSeek-V3,
/// Kimi-K2); the MLP is dense unless numExperts is set.
struct ModelConfig {
  /// The name `m2n spec --model` takes, as "deepseek-v3".
  std::string name;
  /// The HuggingFace repository whose config.json the values come from.
  std::string source;

  int64_t vocabSize = 0;
  int64_t hiddenSize = 0;
  int64_t numLayers = 0;
  /// The dense MLP's width, in the layers that have one.
  int64_t intermediateSize = 0;
  int64_t numHeads = 0;
  int64_t numKvHeads = 0;
  int64_t headDim = 0;
  bool tieWordEmbeddings = false;
  /// Qwen3's per-head RMSNorm of queries and keys (q_norm, k_norm).
  bool qkNorm = false;

  // Multi-head latent attention.
  int64_t qLoraRank = 0;
  int64_t kvLoraRank = 0;
  int64_t qkNopeHeadDim = 0;
  int64_t qkRopeHeadDim = 0;
  int64_t vHeadDim = 0;

  // Mixture of experts.
  int64_t numExperts = 0;
  int64_t moeIntermediateSize = 0;
  int64_t numSharedExperts = 0;
  /// DeepSeek's first_k_dense_replace: the first layers keep a dense MLP.
  int64_t firstDenseLayers = 0;
  /// The router's e_score_correction_bias of DeepSeek's aux-loss-free
  /// balancing.
  bool scoreCorrectionBias = false;

  bool isMla() const { return kvLoraRank > 0; }
  bool isMoe() const { return numExperts > 0; }
  bool isMoeLayer(int64_t layer) const {
    return isMoe() && layer >= firstDenseLayers;
  }
};

/// Every preset, in the order `m2n spec --list` prints them.
llvm::ArrayRef<ModelConfig> allModels();

/// The preset called `name`, ignoring case; null if there is none.
const ModelConfig *findModel(llvm::StringRef name);

/// Every tensor of `model` in checkpoint order (the embedding, each layer's
/// attention then MLP, the final norm, lm_head unless tied), of dtype
/// `dtype` except e_score_correction_bias, which the checkpoints and the
/// models keep in F32 whatever the weights are.
std::vector<ModelTensor> modelTensors(const ModelConfig &model, DType dtype);

/// The number of parameters: the elements of every tensor.
int64_t parameterCount(llvm::ArrayRef<ModelTensor> tensors);

} // namespace m2n::presets

#endif // M2N_PRESETS_MODELS_H
