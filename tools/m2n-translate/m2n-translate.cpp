//===- m2n-translate.cpp - Translations into and out of m2n IR ------------===//
//
// An mlir-translate style driver with m2n's translations registered:
// `--import-m2n-spec` reads a JSON refit spec and prints m2n IR;
// `--m2n-to-plan` writes a compiled refit as a plan file.
//
// Output given with `-o FILE` is written to a temporary file beside FILE and
// renamed over it only when the translation succeeds, so a failed run leaves
// an existing FILE as it was. An input that is not a regular file (a FIFO, a
// device) is refused before anything opens it.
//
//===----------------------------------------------------------------------===//

#include "m2n/Target/ExportPlan.h"
#include "m2n/Spec/JsonFile.h"
#include "m2n/Target/ImportSpec.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace {

/// Where `-o` asked the output to go, and the temporary file written instead.
struct AtomicOutput {
  std::string finalPath;
  std::string tempPath;
};

/// The temporary file written in place of `path`.
std::string tempPathFor(llvm::StringRef path) {
  return (path + ".tmp" + llvm::Twine(llvm::sys::Process::getProcessId()))
      .str();
}

/// Points the output option in `args` at a temporary file, when it names a
/// file rather than standard output.
AtomicOutput redirectOutput(std::vector<std::string> &args) {
  AtomicOutput output;
  for (size_t i = 1; i < args.size(); ++i) {
    llvm::StringRef arg = args[i];
    if ((arg == "-o" || arg == "--o") && i + 1 < args.size()) {
      if (args[i + 1] == "-")
        continue;
      output.finalPath = args[i + 1];
      output.tempPath = tempPathFor(output.finalPath);
      args[++i] = output.tempPath;
      continue;
    }
    llvm::StringRef prefix = arg.starts_with("--o=") ? "--o=" : "-o=";
    if (!arg.starts_with(prefix) || arg.drop_front(prefix.size()) == "-")
      continue;
    output.finalPath = arg.drop_front(prefix.size()).str();
    output.tempPath = tempPathFor(output.finalPath);
    args[i] = (prefix + output.tempPath).str();
  }
  return output;
}

/// Refuses the positional arguments (the input; options take their values
/// with `=`, except -o) that name FIFOs or devices: mlirTranslateMain would
/// open them and wait.
bool inputsAreRegular(const std::vector<std::string> &args) {
  for (size_t i = 1; i < args.size(); ++i) {
    llvm::StringRef arg = args[i];
    if (arg == "-o" || arg == "--o") {
      ++i;
      continue;
    }
    if (arg.starts_with("-"))
      continue;
    if (llvm::Error error = m2n::refuseSpecialFile(arg)) {
      llvm::errs() << llvm::toString(std::move(error)) << "\n";
      return false;
    }
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  m2n::registerImportSpecTranslation();
  m2n::registerExportPlanTranslation();

  std::vector<std::string> args(argv, argv + argc);
  if (!inputsAreRegular(args))
    return 1;
  AtomicOutput output = redirectOutput(args);
  std::vector<char *> argPointers;
  for (std::string &arg : args)
    argPointers.push_back(arg.data());

  bool ok = mlir::succeeded(mlir::mlirTranslateMain(
      static_cast<int>(argPointers.size()), argPointers.data(),
      "m2n translation driver\n"));
  if (output.tempPath.empty())
    return ok ? 0 : 1;
  if (!ok) {
    llvm::sys::fs::remove(output.tempPath);
    return 1;
  }
  if (std::error_code error =
          llvm::sys::fs::rename(output.tempPath, output.finalPath)) {
    llvm::errs() << "error: cannot write '" << output.finalPath
                 << "': " << error.message() << "\n";
    llvm::sys::fs::remove(output.tempPath);
    return 1;
  }
  return 0;
}
