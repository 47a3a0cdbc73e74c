//===- ImportSpec.h - Refit spec to m2n IR ----------------------*- C++ -*-===//

#ifndef M2N_TARGET_IMPORTSPEC_H
#define M2N_TARGET_IMPORTSPEC_H

#include "m2n/Spec/RefitSpec.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace m2n {

/// Builds a module holding one `m2n.refit` for a validated spec: its meshes
/// in spec order, then per tensor its `m2n.tensor` and `m2n.reshard`.
/// Each op's location names the spec file and the mesh or tensor.
mlir::OwningOpRef<mlir::ModuleOp> importRefitSpec(const spec::RefitSpec &spec,
                                                  llvm::StringRef fileName,
                                                  mlir::MLIRContext *context);

/// Registers `--import-m2n-spec` with mlir-translate style drivers.
void registerImportSpecTranslation();

} // namespace m2n

#endif // M2N_TARGET_IMPORTSPEC_H
