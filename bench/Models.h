//===- Models.h - Refit specs of real model sizes for benchmarks -*- C++ -*-===//

#ifndef M2N_BENCH_MODELS_H
#define M2N_BENCH_MODELS_H

#include "m2n/Spec/RefitSpec.h"

namespace m2n::bench {

/// A DeepSeek-V3 sized refit (61 layers, 3 dense then 58 MoE layers of 256
/// routed experts stacked per projection, MLA attention; about 1100 tensors
/// and 1.3 TB in BF16) from `trainRanks` ranks to `genDp` x `genTp` ranks.
/// Training: every dense weight FSDP-sharded on dim 0, experts
/// expert-parallel. Serving: attention and dense MLPs tensor-parallel
/// (column or row) over tp and replicated over dp, experts spread over all
/// serving ranks.
spec::RefitSpec deepseekV3Refit(int64_t trainRanks, int64_t genDp,
                                int64_t genTp);

} // namespace m2n::bench

#endif // M2N_BENCH_MODELS_H
