//===- M2NDialect.cpp - The m2n dialect -----------------------------------===//

#include "m2n/Dialect/M2N/IR/M2NDialect.h"

#include "m2n/Dialect/M2N/IR/M2NAttrs.h"
#include "m2n/Dialect/M2N/IR/M2NOps.h"

using namespace mlir;
using namespace m2n;

#include "m2n/Dialect/M2N/IR/M2NOpsDialect.cpp.inc"

void M2NDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "m2n/Dialect/M2N/IR/M2NOps.cpp.inc"
      >();
}
