//===- DeepSeekRefit.h - The refit the benchmarks measure -------*- C++ -*-===//

#ifndef M2N_BENCH_DEEPSEEKREFIT_H
#define M2N_BENCH_DEEPSEEKREFIT_H

#include "m2n/Spec/RefitSpec.h"

#include <cstdint>

namespace m2n::bench {

/// DeepSeek-V3's refit from its preset, as `m2n spec --model deepseek-v3
/// --train fsdp<trainRanks> --gen ep<replicas>,tp<tp>` writes it: training
/// FSDP shards every tensor on dim 0, which gives each rank whole experts;
/// serving runs `replicas` data-parallel attention groups of `tp`
/// tensor-parallel ranks, with the routed experts spread over all of them.
/// The benchmarks' arguments are constants, so a size the preset rejects is
/// a bug: it aborts, saying why.
spec::RefitSpec deepseekV3Refit(int64_t trainRanks, int64_t replicas,
                                int64_t tp);

} // namespace m2n::bench

#endif // M2N_BENCH_DEEPSEEKREFIT_H
