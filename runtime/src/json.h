//===- json.h - A small strict JSON reader for file headers -----*- C++ -*-===//
//
// Enough JSON for safetensors headers: objects, arrays, strings with every
// escape, and non-negative integers. Everything else (fractions, negative
// numbers, true, false, null) is rejected, as are duplicate keys, invalid
// UTF-8 and nesting deeper than kMaxDepth. Errors give the byte offset of
// the fault, counted from a base the caller chooses (its position in the
// file).
//
//===----------------------------------------------------------------------===//

#ifndef M2N_JSON_H
#define M2N_JSON_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace m2n::json {

constexpr int kMaxDepth = 32;

struct Member;

struct Value {
  enum Kind { Object, Array, String, Integer };
  Kind kind = Object;
  uint64_t offset = 0;             // of its first byte
  std::string string;              // String
  uint64_t integer = 0;            // Integer
  std::vector<Member> members;     // Object, in order
  std::vector<Value> elements;     // Array

  /// The member named `key` of an object, or nullptr.
  const Value *find(std::string_view key) const;
};

struct Member {
  std::string key;
  uint64_t keyOffset = 0;          // of the key's opening quote
  Value value;
};

/// "an object", "an array", ...: for messages.
const char *kindName(Value::Kind kind);

/// Parses `text`, which must be one value and nothing but whitespace after
/// it. Returns "" on success, else "at byte N: what is wrong", N counted
/// from `base`.
std::string parse(std::string_view text, uint64_t base, Value *out);

/// Appends `text` as a JSON string, quotes included; `text` must be UTF-8.
void appendString(std::string &out, std::string_view text);

/// The offset within `text` of the first byte that is not valid UTF-8, or
/// text.size() when all of it is.
size_t invalidUtf8(std::string_view text);

} // namespace m2n::json

#endif // M2N_JSON_H
