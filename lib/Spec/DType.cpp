//===- DType.cpp - Element types of refitted tensors ----------------------===//

#include "m2n/Spec/DType.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/ErrorHandling.h"

using namespace m2n;

static constexpr DType kAllDTypes[] = {
    DType::BF16,    DType::F16, DType::F32, DType::F64, DType::F8_E4M3,
    DType::F8_E5M2, DType::I8,  DType::U8,  DType::I16, DType::U16,
    DType::I32,     DType::U32, DType::I64, DType::U64, DType::BOOL,
};

llvm::ArrayRef<DType> m2n::allDTypes() { return kAllDTypes; }

llvm::StringRef m2n::dtypeName(DType type) {
  switch (type) {
  case DType::BF16:
    return "BF16";
  case DType::F16:
    return "F16";
  case DType::F32:
    return "F32";
  case DType::F64:
    return "F64";
  case DType::F8_E4M3:
    return "F8_E4M3";
  case DType::F8_E5M2:
    return "F8_E5M2";
  case DType::I8:
    return "I8";
  case DType::U8:
    return "U8";
  case DType::I16:
    return "I16";
  case DType::U16:
    return "U16";
  case DType::I32:
    return "I32";
  case DType::U32:
    return "U32";
  case DType::I64:
    return "I64";
  case DType::U64:
    return "U64";
  case DType::BOOL:
    return "BOOL";
  }
  llvm_unreachable("unknown dtype");
}

/// torch's names, without the "torch." prefix. float8_e4m3fn is the only e4m3
/// variant safetensors' F8_E4M3 stands for; the fnuz variants differ in bits.
static std::optional<DType> parseTorchDType(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<DType>>(name)
      .Case("bfloat16", DType::BF16)
      .Cases({"float16", "half"}, DType::F16)
      .Cases({"float32", "float"}, DType::F32)
      .Cases({"float64", "double"}, DType::F64)
      .Case("float8_e4m3fn", DType::F8_E4M3)
      .Case("float8_e5m2", DType::F8_E5M2)
      .Case("int8", DType::I8)
      .Case("uint8", DType::U8)
      .Cases({"int16", "short"}, DType::I16)
      .Case("uint16", DType::U16)
      .Cases({"int32", "int"}, DType::I32)
      .Case("uint32", DType::U32)
      .Cases({"int64", "long"}, DType::I64)
      .Case("uint64", DType::U64)
      .Case("bool", DType::BOOL)
      .Default(std::nullopt);
}

std::optional<DType> m2n::parseDType(llvm::StringRef name) {
  if (name.consume_front("torch."))
    return parseTorchDType(name);
  for (DType type : kAllDTypes)
    if (dtypeName(type) == name)
      return type;
  return parseTorchDType(name);
}
