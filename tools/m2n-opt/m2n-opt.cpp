//===- m2n-opt.cpp - The m2n optimizer driver -----------------------------===//
//
// Parses m2n IR, runs passes over it and prints the result, as mlir-opt does,
// with the m2n dialect, every m2n pass, the m2n pipelines, and MLIR's
// generic transforms (canonicalize, cse, symbol-dce, ...) registered. An
// input that is not a regular file (a FIFO, a device) is refused before
// anything opens it.
//
//===----------------------------------------------------------------------===//

#include "m2n/Dialect/M2N/IR/M2NDialect.h"
#include "m2n/Dialect/M2N/Transforms/Pipelines.h"
#include "m2n/Spec/JsonFile.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  m2n::registerPassesAndPipelines();
  mlir::DialectRegistry registry;
  registry.insert<m2n::M2NDialect>();
  auto [input, output] = mlir::registerAndParseCLIOptions(
      argc, argv, "m2n optimizer driver\n", registry);
  if (llvm::Error error = m2n::refuseSpecialFile(input)) {
    llvm::errs() << llvm::toString(std::move(error)) << "\n";
    return 1;
  }
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, input, output, registry));
}
