//===- DeepSeekRefit.cpp - The refit the benchmarks measure ---------------===//

#include "DeepSeekRefit.h"

#include "m2n/Presets/RefitPreset.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"

using namespace m2n;
using namespace m2n::presets;

namespace {

template <typename T> T orAbort(llvm::Expected<T> value) {
  if (!value)
    llvm::report_fatal_error(value.takeError());
  return std::move(*value);
}

} // namespace

spec::RefitSpec bench::deepseekV3Refit(int64_t trainRanks, int64_t replicas,
                                       int64_t tp) {
  const ModelConfig &model = *findModel("deepseek-v3");
  Parallelism train = orAbort(parseParallelism(
      llvm::formatv("fsdp{0}", trainRanks).str(), Side::Train, model));
  Parallelism gen = orAbort(parseParallelism(
      llvm::formatv("ep{0},tp{1}", replicas, tp).str(), Side::Gen, model));
  return orAbort(buildRefitSpec(model, train, gen, RefitOptions()));
}
