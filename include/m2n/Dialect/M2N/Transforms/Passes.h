//===- Passes.h - m2n compiler passes ---------------------------*- C++ -*-===//

#ifndef M2N_DIALECT_M2N_TRANSFORMS_PASSES_H
#define M2N_DIALECT_M2N_TRANSFORMS_PASSES_H

#include "m2n/Dialect/M2N/IR/M2NDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <string>

namespace m2n {

#define GEN_PASS_DECL
#include "m2n/Dialect/M2N/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "m2n/Dialect/M2N/Transforms/Passes.h.inc"

} // namespace m2n

#endif // M2N_DIALECT_M2N_TRANSFORMS_PASSES_H
