//===- plan_format.cpp - What writer and loader share: hash, dtypes -------===//

#include "m2n/plan.h"
#include "m2n/plan_writer.h"

#include <cstddef>
#include <cstring>
#include <string>

namespace m2n {

// FNV-1a over 8-byte little-endian words rather than bytes: a plan is tens
// of megabytes, and a multiply per byte would cost more than writing it.
uint64_t planContentHash(const uint8_t *data, size_t size) {
  constexpr size_t kFieldWord =
      offsetof(m2n_plan_header_t, content_hash) / sizeof(uint64_t);
  constexpr uint64_t kPrime = 0x100000001b3ull;
  uint64_t hash = 0xcbf29ce484222325ull;
  size_t words = size / 8;
  for (size_t word = 0; word < words; ++word) {
    uint64_t value;
    std::memcpy(&value, data + word * 8, 8);
    hash = (hash ^ (word == kFieldWord ? 0 : value)) * kPrime;
  }
  if (size % 8 != 0) {
    uint64_t value = 0;
    std::memcpy(&value, data + words * 8, size % 8);
    hash = (hash ^ (words == kFieldWord ? 0 : value)) * kPrime;
  }
  return hash;
}

} // namespace m2n

namespace {

struct DTypeInfo {
  const char *name;
  int64_t size;
};

// Indexed by m2n_dtype_t.
constexpr DTypeInfo kDTypes[M2N_DTYPE_COUNT] = {
    {"BF16", 2},    {"F16", 2}, {"F32", 4}, {"F64", 8}, {"F8_E4M3", 1},
    {"F8_E5M2", 1}, {"I8", 1},  {"U8", 1},  {"I16", 2}, {"U16", 2},
    {"I32", 4},     {"U32", 4}, {"I64", 8}, {"U64", 8}, {"BOOL", 1},
};

bool isDType(m2n_dtype_t dtype) {
  return static_cast<unsigned>(dtype) < M2N_DTYPE_COUNT;
}

} // namespace

extern "C" {

const char *m2n_dtype_name(m2n_dtype_t dtype) {
  return isDType(dtype) ? kDTypes[dtype].name : "UNKNOWN";
}

int64_t m2n_dtype_size(m2n_dtype_t dtype) {
  return isDType(dtype) ? kDTypes[dtype].size : 0;
}

m2n_status_t m2n_dtype_from_name(const char *name, m2n_dtype_t *out) {
  if (!name || !out)
    return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT,
                             "m2n_dtype_from_name: null argument");
  for (int i = 0; i < M2N_DTYPE_COUNT; ++i) {
    if (std::strcmp(name, kDTypes[i].name) == 0) {
      *out = static_cast<m2n_dtype_t>(i);
      return nullptr;
    }
  }
  std::string message = "unknown dtype \"" + std::string(name) + "\"";
  return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT, message.c_str());
}

} // extern "C"
