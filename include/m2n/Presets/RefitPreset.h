//===- RefitPreset.h - Refit specs generated from presets -------*- C++ -*-===//
//
// The refit spec of a preset model from a training parallelism to a
// generation parallelism, with every placement as torch DTensor would give
// it: docs/presets.md lists them axis by axis.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_PRESETS_REFITPRESET_H
#define M2N_PRESETS_REFITPRESET_H

#include "m2n/Presets/Models.h"
#include "m2n/Presets/Parallelism.h"
#include "m2n/Spec/RefitSpec.h"

#include "llvm/Support/Error.h"

namespace m2n::presets {

struct RefitOptions {
  /// The dtype of every weight (e_score_correction_bias stays F32).
  DType dtype = DType::BF16;
  /// Generation runs on the training ranks instead of on the ranks after
  /// them.
  bool colocate = false;
};

/// The refit of `model` from `train` to `gen`, which must have passed
/// checkParallelism for it. Training ranks are 0 to T-1; generation ranks
/// follow them, or are the same ranks when colocated, which fails unless
/// both sides have as many ranks.
llvm::Expected<spec::RefitSpec> buildRefitSpec(const ModelConfig &model,
                                               const Parallelism &train,
                                               const Parallelism &gen,
                                               const RefitOptions &options);

} // namespace m2n::presets

#endif // M2N_PRESETS_REFITPRESET_H
