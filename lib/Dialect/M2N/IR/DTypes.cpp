//===- DTypes.cpp - Element types of m2n tensors --------------------------===//

#include "m2n/Dialect/M2N/IR/DTypes.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace m2n {

Type getElementType(MLIRContext *context, DType dtype) {
  auto unsignedInt = [&](unsigned width) {
    return IntegerType::get(context, width, IntegerType::Unsigned);
  };
  switch (dtype) {
  case DType::BF16:
    return BFloat16Type::get(context);
  case DType::F16:
    return Float16Type::get(context);
  case DType::F32:
    return Float32Type::get(context);
  case DType::F64:
    return Float64Type::get(context);
  case DType::F8_E4M3:
    return Float8E4M3FNType::get(context);
  case DType::F8_E5M2:
    return Float8E5M2Type::get(context);
  case DType::I8:
    return IntegerType::get(context, 8);
  case DType::U8:
    return unsignedInt(8);
  case DType::I16:
    return IntegerType::get(context, 16);
  case DType::U16:
    return unsignedInt(16);
  case DType::I32:
    return IntegerType::get(context, 32);
  case DType::U32:
    return unsignedInt(32);
  case DType::I64:
    return IntegerType::get(context, 64);
  case DType::U64:
    return unsignedInt(64);
  case DType::BOOL:
    return IntegerType::get(context, 1);
  }
  llvm_unreachable("unknown dtype");
}

/// Signless integers are the signed dtypes; i1 is BOOL.
static std::optional<DType> getIntegerDType(IntegerType type) {
  if (type.isSigned())
    return std::nullopt;
  bool isUnsigned = type.isUnsigned();
  switch (type.getWidth()) {
  case 1:
    return isUnsigned ? std::nullopt : std::optional(DType::BOOL);
  case 8:
    return isUnsigned ? DType::U8 : DType::I8;
  case 16:
    return isUnsigned ? DType::U16 : DType::I16;
  case 32:
    return isUnsigned ? DType::U32 : DType::I32;
  case 64:
    return isUnsigned ? DType::U64 : DType::I64;
  default:
    return std::nullopt;
  }
}

std::optional<DType> getDType(Type type) {
  return llvm::TypeSwitch<Type, std::optional<DType>>(type)
      .Case([](BFloat16Type) { return DType::BF16; })
      .Case([](Float16Type) { return DType::F16; })
      .Case([](Float32Type) { return DType::F32; })
      .Case([](Float64Type) { return DType::F64; })
      .Case([](Float8E4M3FNType) { return DType::F8_E4M3; })
      .Case([](Float8E5M2Type) { return DType::F8_E5M2; })
      .Case([](IntegerType integer) { return getIntegerDType(integer); })
      .Default([](Type) { return std::nullopt; });
}

} // namespace m2n
