//===- PresetRefit.cpp - The refits the benchmarks measure ----------------===//

#include "PresetRefit.h"

#include "m2n/Presets/RefitPreset.h"

#include "llvm/Support/ErrorHandling.h"

using namespace m2n;
using namespace m2n::presets;

namespace {

template <typename T> T orAbort(llvm::Expected<T> value) {
  if (!value)
    llvm::report_fatal_error(value.takeError());
  return std::move(*value);
}

} // namespace

spec::RefitSpec bench::presetRefit(llvm::StringRef modelName,
                                   llvm::StringRef train, llvm::StringRef gen) {
  const ModelConfig *model = findModel(modelName);
  if (!model)
    llvm::report_fatal_error(llvm::Twine("no model preset ") + modelName);
  return orAbort(buildRefitSpec(
      *model, orAbort(parseParallelism(train, Side::Train, *model)),
      orAbort(parseParallelism(gen, Side::Gen, *model)), RefitOptions()));
}
