//===- M2NDialect.h - The m2n dialect ---------------------------*- C++ -*-===//

#ifndef M2N_DIALECT_M2N_IR_M2NDIALECT_H
#define M2N_DIALECT_M2N_IR_M2NDIALECT_H

#include "mlir/IR/Dialect.h"

#include "m2n/Dialect/M2N/IR/M2NOpsDialect.h.inc"

#endif // M2N_DIALECT_M2N_IR_M2NDIALECT_H
