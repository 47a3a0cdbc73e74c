//===- Parallelism.h - How one side of a refit parallelizes -----*- C++ -*-===//
//
// A side of a refit is written as its parallel axes, outermost first:
// "pp4,tp8,fsdp8" is 256 ranks, rank 64·pp + 8·tp + fsdp. Pipeline
// parallelism makes one mesh per stage; the other axes are the axes of each
// stage's mesh, in the order written. docs/presets.md gives each axis's
// placements.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_PRESETS_PARALLELISM_H
#define M2N_PRESETS_PARALLELISM_H

#include "m2n/Presets/Models.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace m2n::presets {

enum class Axis {
  /// Pipeline parallel: layers split across stages, one mesh per stage.
  PP,
  /// Data parallel: every tensor replicated.
  DP,
  /// Fully sharded data parallel (FSDP2 / ZeRO-3): dim 0 sharded.
  FSDP,
  /// Expert parallel: stacked routed experts sharded by expert.
  EP,
  /// Tensor parallel, Megatron-style column and row parallelism.
  TP,
};

/// "pp", "dp", "fsdp", "ep" or "tp".
llvm::StringRef axisName(Axis axis);

/// Training accepts every axis; generation every one but fsdp, since
/// serving engines hold whole (or tensor-parallel) weights.
enum class Side { Train, Gen };

struct AxisSize {
  Axis axis;
  int64_t size;
};

struct Parallelism {
  /// The axes as written, outermost first; each at most once.
  std::vector<AxisSize> axes;

  bool has(Axis axis) const;
  /// The axis's size, 1 when absent.
  int64_t size(Axis axis) const;
  /// The number of ranks: the product of the sizes.
  int64_t worldSize() const;
  /// How many ways the expert dimension of stacked routed experts is split
  /// by expert parallelism: ep, times tp when both are present, since
  /// experts are then not tensor-parallel but spread over tp ranks too.
  int64_t expertGroupSize() const;
};

/// Parses "pp4,tp8,fsdp8": comma-separated axes, each a name and a positive
/// size, each axis at most once, at most kMaxMeshSize ranks in all. The
/// error says what is wrong without repeating `text`, for the caller to
/// prefix with the flag and the text.
llvm::Expected<Parallelism> parseParallelism(llvm::StringRef text, Side side);

/// Checks that `parallelism` fits `model`: tp splits the attention heads
/// (and, when training, the key-value heads) evenly, expert parallelism is
/// used only on a mixture of experts and splits its experts evenly, and
/// every pipeline stage gets at least one layer. The error is worded as
/// parseParallelism's.
llvm::Error checkParallelism(const ModelConfig &model,
                             const Parallelism &parallelism, Side side);

/// parseParallelism, then checkParallelism.
llvm::Expected<Parallelism> parseParallelism(llvm::StringRef text, Side side,
                                             const ModelConfig &model);

} // namespace m2n::presets

#endif // M2N_PRESETS_PARALLELISM_H
