//===- JsonFile.cpp - Reading the JSON files users write ------------------===//

#include "m2n/Spec/JsonFile.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using llvm::StringRef;

llvm::Expected<llvm::json::Value> m2n::parseJsonFile(StringRef text,
                                                     StringRef fileName) {
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
  if (value)
    return value;
  // llvm::json reports "[<line>:<column>, byte=<offset>]: <message>".
  std::string message = llvm::toString(value.takeError());
  StringRef rest = message;
  unsigned line, column;
  size_t end;
  if (rest.consume_front("[") && !rest.consumeInteger(10, line) &&
      rest.consume_front(":") && !rest.consumeInteger(10, column) &&
      (end = rest.find("]: ")) != StringRef::npos) {
    // The column is 0 at the start of a line; editors count from 1.
    return llvm::createStringError(
        llvm::formatv("{0}:{1}:{2}: error: malformed JSON: {3}", fileName, line,
                      std::max(column, 1u), rest.drop_front(end + 3)));
  }
  return llvm::createStringError(fileName +
                                 ": error: malformed JSON: " + message);
}

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
m2n::readTextFile(StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(
        path + ": error: cannot read the file: " + buffer.getError().message());
  return std::move(*buffer);
}
