//===- json.cpp - A small strict JSON reader for file headers -------------===//

#include "json.h"

#include "plan_internal.h"

#include <cstdio>
#include <set>

namespace m2n::json {

const Value *Value::find(std::string_view key) const {
  for (const Member &member : members)
    if (member.key == key)
      return &member.value;
  return nullptr;
}

const char *kindName(Value::Kind kind) {
  switch (kind) {
  case Value::Object:
    return "an object";
  case Value::Array:
    return "an array";
  case Value::String:
    return "a string";
  case Value::Integer:
    return "an integer";
  }
  return "a value";
}

size_t invalidUtf8(std::string_view text) {
  const auto *bytes = reinterpret_cast<const uint8_t *>(text.data());
  size_t size = text.size();
  for (size_t i = 0; i < size;) {
    uint8_t lead = bytes[i];
    if (lead < 0x80) {
      ++i;
      continue;
    }
    // The sequence length and the range its second byte must lie in, which
    // excludes overlong forms, surrogates and code points past U+10FFFF.
    size_t length = 0;
    uint8_t low = 0x80, high = 0xbf;
    if (lead >= 0xc2 && lead <= 0xdf) {
      length = 2;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      length = 3;
      if (lead == 0xe0)
        low = 0xa0;
      else if (lead == 0xed)
        high = 0x9f;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      length = 4;
      if (lead == 0xf0)
        low = 0x90;
      else if (lead == 0xf4)
        high = 0x8f;
    } else {
      return i;
    }
    if (size - i < length || bytes[i + 1] < low || bytes[i + 1] > high)
      return i;
    for (size_t k = 2; k < length; ++k)
      if (bytes[i + k] < 0x80 || bytes[i + k] > 0xbf)
        return i;
    i += length;
  }
  return size;
}

namespace {

void appendUtf8(std::string &out, uint32_t codePoint) {
  if (codePoint < 0x80) {
    out += static_cast<char>(codePoint);
  } else if (codePoint < 0x800) {
    out += static_cast<char>(0xc0 | codePoint >> 6);
    out += static_cast<char>(0x80 | (codePoint & 0x3f));
  } else if (codePoint < 0x10000) {
    out += static_cast<char>(0xe0 | codePoint >> 12);
    out += static_cast<char>(0x80 | (codePoint >> 6 & 0x3f));
    out += static_cast<char>(0x80 | (codePoint & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | codePoint >> 18);
    out += static_cast<char>(0x80 | (codePoint >> 12 & 0x3f));
    out += static_cast<char>(0x80 | (codePoint >> 6 & 0x3f));
    out += static_cast<char>(0x80 | (codePoint & 0x3f));
  }
}

class Parser {
public:
  Parser(std::string_view text, uint64_t base) : text_(text), base_(base) {}

  bool parseDocument(Value *out);
  const std::string &error() const { return error_; }

private:
  bool fail(size_t at, const std::string &what) {
    error_ = concat("at byte ", base_ + at, ": ", what);
    return false;
  }
  // The byte at `at` as messages name it.
  std::string describe(size_t at) const;
  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return atEnd() ? '\0' : text_[pos_]; }
  void skipWhitespace();
  bool expect(char c, const char *what);
  bool parseValue(Value *out, int depth);
  bool parseObject(Value *out, int depth);
  bool parseArray(Value *out, int depth);
  bool parseString(std::string *out);
  bool parseEscape(std::string *out);
  bool parseHex4(uint32_t *out);
  bool parseInteger(Value *out);

  std::string_view text_;
  uint64_t base_;
  size_t pos_ = 0;
  std::string error_;
};

std::string Parser::describe(size_t at) const {
  if (at >= text_.size())
    return "the end of the text";
  auto byte = static_cast<uint8_t>(text_[at]);
  if (byte >= 0x20 && byte < 0x7f)
    return concat("'", std::string(1, static_cast<char>(byte)), "'");
  char hex[8];
  std::snprintf(hex, sizeof(hex), "0x%02x", byte);
  return concat("byte ", hex);
}

void Parser::skipWhitespace() {
  while (!atEnd() &&
         (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r'))
    ++pos_;
}

bool Parser::expect(char c, const char *what) {
  if (peek() != c || atEnd())
    return fail(pos_, concat("expected ", what, ", found ", describe(pos_)));
  ++pos_;
  return true;
}

bool Parser::parseDocument(Value *out) {
  size_t bad = invalidUtf8(text_);
  if (bad != text_.size())
    return fail(bad, "invalid UTF-8");
  skipWhitespace();
  if (!parseValue(out, 0))
    return false;
  skipWhitespace();
  if (!atEnd())
    return fail(pos_,
                concat("expected the end of the text, found ", describe(pos_)));
  return true;
}

bool Parser::parseValue(Value *out, int depth) {
  out->offset = base_ + pos_;
  char c = peek();
  if (atEnd())
    return fail(pos_, "expected a value, found the end of the text");
  if (c == '{')
    return parseObject(out, depth + 1);
  if (c == '[')
    return parseArray(out, depth + 1);
  if (c == '"') {
    out->kind = Value::String;
    return parseString(&out->string);
  }
  if (c == '-' || (c >= '0' && c <= '9'))
    return parseInteger(out);
  if (c == 't' || c == 'f' || c == 'n')
    return fail(pos_, "true, false and null are not supported here");
  return fail(pos_, concat("expected a value, found ", describe(pos_)));
}

bool Parser::parseObject(Value *out, int depth) {
  if (depth > kMaxDepth)
    return fail(pos_, concat("nested deeper than ", kMaxDepth, " levels"));
  out->kind = Value::Object;
  ++pos_;
  skipWhitespace();
  if (peek() == '}' && !atEnd()) {
    ++pos_;
    return true;
  }
  std::set<std::string> keys;
  for (;;) {
    skipWhitespace();
    size_t keyAt = pos_;
    if (peek() != '"' || atEnd())
      return fail(pos_,
                  concat("expected a string key, found ", describe(pos_)));
    std::string key;
    if (!parseString(&key))
      return false;
    if (!keys.insert(key).second)
      return fail(keyAt, concat("duplicate key ", quoteName(key)));
    skipWhitespace();
    if (!expect(':', "':' after the key"))
      return false;
    skipWhitespace();
    Value value;
    if (!parseValue(&value, depth))
      return false;
    out->members.push_back({std::move(key), base_ + keyAt, std::move(value)});
    skipWhitespace();
    if (peek() == '}' && !atEnd()) {
      ++pos_;
      return true;
    }
    if (!expect(',', "',' or '}' in an object"))
      return false;
  }
}

bool Parser::parseArray(Value *out, int depth) {
  if (depth > kMaxDepth)
    return fail(pos_, concat("nested deeper than ", kMaxDepth, " levels"));
  out->kind = Value::Array;
  ++pos_;
  skipWhitespace();
  if (peek() == ']' && !atEnd()) {
    ++pos_;
    return true;
  }
  for (;;) {
    skipWhitespace();
    Value element;
    if (!parseValue(&element, depth))
      return false;
    out->elements.push_back(std::move(element));
    skipWhitespace();
    if (peek() == ']' && !atEnd()) {
      ++pos_;
      return true;
    }
    if (!expect(',', "',' or ']' in an array"))
      return false;
  }
}

bool Parser::parseString(std::string *out) {
  size_t start = pos_;
  ++pos_;
  for (;;) {
    if (atEnd())
      return fail(start, "unterminated string");
    auto byte = static_cast<uint8_t>(text_[pos_]);
    if (byte == '"') {
      ++pos_;
      return true;
    }
    if (byte < 0x20)
      return fail(pos_, concat("unescaped control character ", describe(pos_),
                               " in a string"));
    if (byte == '\\') {
      if (!parseEscape(out))
        return false;
      continue;
    }
    *out += static_cast<char>(byte);
    ++pos_;
  }
}

bool Parser::parseEscape(std::string *out) {
  size_t at = pos_;
  ++pos_;
  char c = peek();
  ++pos_;
  switch (c) {
  case '"':
  case '\\':
  case '/':
    *out += c;
    return true;
  case 'b':
    *out += '\b';
    return true;
  case 'f':
    *out += '\f';
    return true;
  case 'n':
    *out += '\n';
    return true;
  case 'r':
    *out += '\r';
    return true;
  case 't':
    *out += '\t';
    return true;
  case 'u':
    break;
  default:
    return fail(
        at, concat("invalid escape: ", describe(at + 1), " after a backslash"));
  }
  uint32_t codePoint = 0;
  if (!parseHex4(&codePoint))
    return false;
  if (codePoint >= 0xdc00 && codePoint <= 0xdfff)
    return fail(at, "unpaired low surrogate in a \\u escape");
  if (codePoint >= 0xd800 && codePoint <= 0xdbff) {
    uint32_t low = 0;
    if (text_.substr(pos_, 2) != "\\u")
      return fail(at, "unpaired high surrogate in a \\u escape");
    pos_ += 2;
    if (!parseHex4(&low))
      return false;
    if (low < 0xdc00 || low > 0xdfff)
      return fail(at, "unpaired high surrogate in a \\u escape");
    codePoint = 0x10000 + ((codePoint - 0xd800) << 10) + (low - 0xdc00);
  }
  appendUtf8(*out, codePoint);
  return true;
}

bool Parser::parseHex4(uint32_t *out) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i, ++pos_) {
    char c = peek();
    uint32_t digit;
    if (!atEnd() && c >= '0' && c <= '9')
      digit = c - '0';
    else if (!atEnd() && c >= 'a' && c <= 'f')
      digit = c - 'a' + 10;
    else if (!atEnd() && c >= 'A' && c <= 'F')
      digit = c - 'A' + 10;
    else
      return fail(pos_, concat("expected a hex digit in a \\u escape, found ",
                               describe(pos_)));
    value = value << 4 | digit;
  }
  *out = value;
  return true;
}

bool Parser::parseInteger(Value *out) {
  size_t start = pos_;
  if (peek() == '-')
    return fail(start, "negative numbers are not allowed here");
  out->kind = Value::Integer;
  if (peek() == '0' && pos_ + 1 < text_.size() && text_[pos_ + 1] >= '0' &&
      text_[pos_ + 1] <= '9')
    return fail(start, "leading zeros are not allowed in a number");
  uint64_t value = 0;
  while (!atEnd() && peek() >= '0' && peek() <= '9') {
    uint64_t digit = static_cast<uint64_t>(peek() - '0');
    if (value > (UINT64_MAX - digit) / 10)
      return fail(start, "integer does not fit 64 bits");
    value = value * 10 + digit;
    ++pos_;
  }
  if (peek() == '.' || peek() == 'e' || peek() == 'E')
    return fail(start, "only integers are allowed here");
  out->integer = value;
  return true;
}

} // namespace

std::string parse(std::string_view text, uint64_t base, Value *out) {
  Parser parser(text, base);
  *out = Value();
  if (!parser.parseDocument(out))
    return parser.error();
  return {};
}

void appendString(std::string &out, std::string_view text) {
  out += '"';
  for (char c : text) {
    auto byte = static_cast<uint8_t>(c);
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (byte < 0x20) {
        char escape[8];
        std::snprintf(escape, sizeof(escape), "\\u%04x", byte);
        out += escape;
      } else {
        out += c;
      }
    }
  }
  out += '"';
}

} // namespace m2n::json
