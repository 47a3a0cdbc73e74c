//===- M2NAttrs.h - m2n attributes ------------------------------*- C++ -*-===//

#ifndef M2N_DIALECT_M2N_IR_M2NATTRS_H
#define M2N_DIALECT_M2N_IR_M2NATTRS_H

#include "m2n/Layout/Layout.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"

#define GET_ATTRDEF_CLASSES
#include "m2n/Dialect/M2N/IR/M2NAttrs.h.inc"

#endif // M2N_DIALECT_M2N_IR_M2NATTRS_H
