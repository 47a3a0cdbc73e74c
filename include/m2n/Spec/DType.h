//===- DType.h - Element types of refitted tensors --------------*- C++ -*-===//
//
// The element types a refit spec may name. The canonical spelling is the one
// safetensors files use; torch's dtype names are accepted as aliases so that
// specs can be written straight from a torch state dict.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_SPEC_DTYPE_H
#define M2N_SPEC_DTYPE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

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

/// Bytes per element.
int64_t dtypeByteSize(DType type);

/// A safetensors name ("BF16") or a torch name with or without its "torch."
/// prefix ("bfloat16", "torch.half"). Names are case-sensitive.
std::optional<DType> parseDType(llvm::StringRef name);

} // namespace m2n

#endif // M2N_SPEC_DTYPE_H
