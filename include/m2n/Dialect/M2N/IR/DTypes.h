//===- DTypes.h - Element types of m2n tensors ------------------*- C++ -*-===//
//
// m2n tensors carry builtin MLIR element types; refit specs and checkpoint
// files name them by safetensors dtype. These convert between the two.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_DIALECT_M2N_IR_DTYPES_H
#define M2N_DIALECT_M2N_IR_DTYPES_H

#include "m2n/Spec/DType.h"
#include "mlir/IR/Types.h"

#include <optional>

namespace m2n {

/// The element type of `dtype`: BF16 is bf16, F8_E4M3 is f8E4M3FN, I8 is the
/// signless i8, U8 is ui8, BOOL is i1, and so on.
mlir::Type getElementType(mlir::MLIRContext *context, DType dtype);

/// The dtype of `type`, or nullopt for a type that m2n does not move.
std::optional<DType> getDType(mlir::Type type);

} // namespace m2n

#endif // M2N_DIALECT_M2N_IR_DTYPES_H
