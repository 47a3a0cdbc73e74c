//===- m2n-opt.cpp - The m2n optimizer driver -----------------------------===//
//
// Parses m2n IR, runs passes over it and prints the result, as mlir-opt does,
// with the m2n dialect, every m2n pass, the m2n pipelines, and MLIR's
// generic transforms (canonicalize, cse, symbol-dce, ...) registered.
//
//===----------------------------------------------------------------------===//

#include "m2n/Dialect/M2N/IR/M2NDialect.h"
#include "m2n/Dialect/M2N/Transforms/Pipelines.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  m2n::registerPassesAndPipelines();
  mlir::DialectRegistry registry;
  registry.insert<m2n::M2NDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "m2n optimizer driver\n", registry));
}
