//===- DType.cpp - Element types of refitted tensors ----------------------===//

#include "m2n/Spec/DType.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"

#include <vector>

using namespace m2n;

namespace {

/// A dtype's names: safetensors' (the canonical one), torch's (without the
/// "torch." prefix), and the short name that training and serving engines
/// take on their command lines (Megatron's --bf16, vLLM's fp8_e4m3), where
/// there is one. float8_e4m3fn is the only e4m3 variant safetensors' F8_E4M3
/// stands for; the fnuz variants differ in bits.
struct DTypeNames {
  DType type;
  llvm::StringRef safetensors;
  llvm::StringRef torch[2];
  llvm::StringRef shortName;
};

/// In declaration order, as allDTypes() lists them.
const DTypeNames kNames[] = {
    {DType::BF16, "BF16", {"bfloat16"}, "bf16"},
    {DType::F16, "F16", {"float16", "half"}, "fp16"},
    {DType::F32, "F32", {"float32", "float"}, "fp32"},
    {DType::F64, "F64", {"float64", "double"}, "fp64"},
    {DType::F8_E4M3, "F8_E4M3", {"float8_e4m3fn"}, "fp8_e4m3"},
    {DType::F8_E5M2, "F8_E5M2", {"float8_e5m2"}, "fp8_e5m2"},
    {DType::I8, "I8", {"int8"}, ""},
    {DType::U8, "U8", {"uint8"}, ""},
    {DType::I16, "I16", {"int16", "short"}, ""},
    {DType::U16, "U16", {"uint16"}, ""},
    {DType::I32, "I32", {"int32", "int"}, ""},
    {DType::U32, "U32", {"uint32"}, ""},
    {DType::I64, "I64", {"int64", "long"}, ""},
    {DType::U64, "U64", {"uint64"}, ""},
    {DType::BOOL, "BOOL", {"bool"}, ""},
};

bool hasTorchName(const DTypeNames &names, llvm::StringRef name) {
  return llvm::any_of(names.torch, [&](llvm::StringRef torch) {
    return !torch.empty() && torch.equals_insensitive(name);
  });
}

} // namespace

llvm::ArrayRef<DType> m2n::allDTypes() {
  static const std::vector<DType> types = [] {
    std::vector<DType> all;
    for (const DTypeNames &names : kNames)
      all.push_back(names.type);
    return all;
  }();
  return types;
}

llvm::StringRef m2n::dtypeName(DType type) {
  for (const DTypeNames &names : kNames)
    if (names.type == type)
      return names.safetensors;
  llvm_unreachable("unknown dtype");
}

std::optional<DType> m2n::parseDType(llvm::StringRef name) {
  // The prefix of torch's str(dtype) comes before torch's names only.
  bool torchOnly = name.consume_front_insensitive("torch.");
  for (const DTypeNames &names : kNames) {
    if (hasTorchName(names, name))
      return names.type;
    if (!torchOnly && (names.safetensors.equals_insensitive(name) ||
                       (!names.shortName.empty() &&
                        names.shortName.equals_insensitive(name))))
      return names.type;
  }
  return std::nullopt;
}
