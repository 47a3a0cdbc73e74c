//===- DType.h - Element types of refitted tensors --------------*- C++ -*-===//
//
// The element types a refit spec may name. The canonical spelling is the one
// safetensors files use; torch's dtype names are accepted as aliases so that
// specs can be written straight from a torch state dict, and so are the short
// names of engines' command lines (bf16, fp32), which m2n spec --dtype takes
// through the same parser.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_SPEC_DTYPE_H
#define M2N_SPEC_DTYPE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/ErrorHandling.h"

#include <cstdint>
#include <optional>

namespace m2n {

enum class DType : uint8_t {
  BF16,
  F16,
  F32,
  F64,
  F8_E4M3,
  F8_E5M2,
  I8,
  U8,
  I16,
  U16,
  I32,
  U32,
  I64,
  U64,
  BOOL,
};

/// Every dtype, in declaration order.
llvm::ArrayRef<DType> allDTypes();

/// The safetensors spelling: "BF16", "F8_E4M3", "BOOL", ...
llvm::StringRef dtypeName(DType type);

/// Bytes per element. Inline: the compiler's passes ask per slice.
inline int64_t dtypeByteSize(DType type) {
  switch (type) {
  case DType::F8_E4M3:
  case DType::F8_E5M2:
  case DType::I8:
  case DType::U8:
  case DType::BOOL:
    return 1;
  case DType::BF16:
  case DType::F16:
  case DType::I16:
  case DType::U16:
    return 2;
  case DType::F32:
  case DType::I32:
  case DType::U32:
    return 4;
  case DType::F64:
  case DType::I64:
  case DType::U64:
    return 8;
  }
  llvm_unreachable("unknown dtype");
}

/// A safetensors name ("BF16"), a torch name with or without its "torch."
/// prefix ("bfloat16", "torch.half"), or a short name ("bf16", "fp32"),
/// ignoring case.
std::optional<DType> parseDType(llvm::StringRef name);

} // namespace m2n

#endif // M2N_SPEC_DTYPE_H
