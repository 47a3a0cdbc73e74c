//===- JsonFile.cpp - Reading the JSON files users write ------------------===//

#include "m2n/Spec/JsonFile.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using llvm::StringRef;
using m2n::kMaxJsonDepth;

/// The line and column (both from 1) of byte `offset` of `text`.
static std::pair<size_t, size_t> lineAndColumn(StringRef text, size_t offset) {
  StringRef before = text.take_front(offset);
  size_t lineStart = before.rfind('\n');
  size_t column = lineStart == StringRef::npos ? offset + 1
                                               : offset - lineStart;
  return {before.count('\n') + 1, column};
}

/// The offset of the first bracket that opens a level deeper than
/// kMaxJsonDepth, or npos. llvm::json recurses once per level, so text
/// nested without bound must be turned away before it parses.
static size_t tooDeepAt(StringRef text) {
  size_t depth = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return StringRef::npos;
}

llvm::Expected<llvm::json::Value> m2n::parseJsonFile(StringRef text,
                                                     StringRef fileName) {
  size_t deep = tooDeepAt(text);
  if (deep != StringRef::npos) {
    auto [line, column] = lineAndColumn(text, deep);
    return llvm::createStringError(llvm::formatv(
        "{0}:{1}:{2}: error: malformed JSON: nested deeper than {3} levels",
        fileName, line, column, kMaxJsonDepth));
  }
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

static llvm::Error cannotRead(StringRef path, const llvm::Twine &why) {
  return llvm::createStringError(path + ": error: cannot read the file: " +
                                 why);
}

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
m2n::readTextFile(StringRef path) {
  if (path == "-") {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
        llvm::MemoryBuffer::getSTDIN();
    if (!buffer)
      return cannotRead(path, buffer.getError().message());
    return std::move(*buffer);
  }
  // O_NONBLOCK: opening a FIFO without a writer would wait forever, and a
  // device could; only regular files are read.
  std::string name = path.str();
  int fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return cannotRead(path, std::strerror(errno));
  struct stat info;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return cannotRead(path, "not a regular file");
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getOpenFile(fd, path, info.st_size);
  ::close(fd);
  if (!buffer)
    return cannotRead(path, buffer.getError().message());
  return std::move(*buffer);
}

llvm::Error m2n::refuseSpecialFile(StringRef path) {
  struct stat info;
  if (path == "-" || ::stat(path.str().c_str(), &info) != 0 ||
      S_ISREG(info.st_mode))
    return llvm::Error::success();
  return cannotRead(path, "not a regular file");
}
