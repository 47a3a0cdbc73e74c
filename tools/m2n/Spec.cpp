//===- Spec.cpp - m2n spec: a refit spec generated from a preset ----------===//

#include "Commands.h"

#include "m2n/Presets/Models.h"
#include "m2n/Presets/Parallelism.h"
#include "m2n/Presets/RefitPreset.h"
#include "m2n/Spec/RefitSpec.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

using namespace m2n::presets;

namespace m2n::driver {
namespace {

/// Reports a bad flag as "error: FLAG VALUE: WHAT"; returns the exit status.
int flagError(llvm::StringRef flag, llvm::StringRef value,
              const llvm::Twine &what) {
  llvm::errs() << "error: " << flag << " " << value << ": " << what << "\n";
  return 1;
}

int flagError(llvm::StringRef flag, llvm::StringRef value, llvm::Error error) {
  return flagError(flag, value, llvm::toString(std::move(error)));
}

void listModels(llvm::raw_ostream &os) {
  os << llvm::formatv("{0,-16} {1,6} {2,8} {3,11} {4,8}  {5}\n", "model",
                      "layers", "experts", "parameters", "tensors", "config");
  for (const ModelConfig &model : allModels()) {
    std::vector<ModelTensor> tensors = modelTensors(model, DType::BF16);
    std::string experts =
        model.isMoe() ? std::to_string(model.numExperts) : "-";
    std::string parameters =
        llvm::formatv("{0:F2}B", parameterCount(tensors) / 1e9).str();
    os << llvm::formatv("{0,-16} {1,6} {2,8} {3,11} {4,8}  {5}\n", model.name,
                        model.numLayers, experts, parameters, tensors.size(),
                        model.source);
  }
}

std::string knownModels() {
  std::string names;
  for (const ModelConfig &model : allModels())
    names += (names.empty() ? "" : ", ") + model.name;
  return names;
}

} // namespace

int generateSpec(const SpecOptions &options) {
  if (options.list) {
    listModels(llvm::outs());
    return 0;
  }
  if (options.model.empty() || options.train.empty() || options.gen.empty()) {
    llvm::errs() << "error: m2n spec needs --model, --train and --gen, or "
                    "--list\n";
    return 1;
  }
  const ModelConfig *model = findModel(options.model);
  if (!model)
    return flagError("--model", options.model,
                     "unknown model (known: " + knownModels() + ")");
  std::optional<DType> dtype = parseDType(options.dtype);
  if (!dtype)
    return flagError("--dtype", options.dtype,
                     "unknown dtype (expected a safetensors name such as "
                     "BF16, a torch name such as bfloat16 or a short name "
                     "such as bf16)");
  llvm::Expected<Parallelism> train =
      parseParallelism(options.train, Side::Train, *model);
  if (!train)
    return flagError("--train", options.train, train.takeError());
  llvm::Expected<Parallelism> gen =
      parseParallelism(options.gen, Side::Gen, *model);
  if (!gen)
    return flagError("--gen", options.gen, gen.takeError());

  RefitOptions refitOptions;
  refitOptions.dtype = *dtype;
  refitOptions.colocate = options.colocate;
  llvm::Expected<spec::RefitSpec> spec =
      buildRefitSpec(*model, *train, *gen, refitOptions);
  if (!spec) {
    llvm::errs() << "error: --colocate: " << llvm::toString(spec.takeError())
                 << "\n";
    return 1;
  }
  std::string text = spec::writeRefitSpec(*spec);
  if (options.outputPath.empty() || options.outputPath == "-") {
    llvm::outs() << text;
    return 0;
  }
  return writeFilesAtomically({{options.outputPath, text}}) ? 0 : 1;
}

} // namespace m2n::driver
