//===- JsonFile.h - Reading the JSON files users write ----------*- C++ -*-===//
//
// The refit spec and the topology file are JSON that people write by hand:
// their syntax errors say where, as "<file>:<line>:<column>: error: ...", so
// that editors and terminals can jump to them.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_SPEC_JSONFILE_H
#define M2N_SPEC_JSONFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>

namespace m2n {

/// The deepest nesting of arrays and objects that parseJsonFile reads; a
/// refit spec needs 4 levels and a topology file 1.
constexpr size_t kMaxJsonDepth = 64;

/// `text` as JSON; a syntax error, or nesting deeper than kMaxJsonDepth, is
/// reported at its line and column of `fileName`.
llvm::Expected<llvm::json::Value> parseJsonFile(llvm::StringRef text,
                                                llvm::StringRef fileName);

/// The contents of the regular file at `path`, or of stdin when `path` is
/// "-" (the buffer is then called "<stdin>"); failing that, an error naming
/// it. A FIFO or device is refused without waiting on it.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readTextFile(llvm::StringRef path);

/// An error naming `path` when it names something other than a regular file
/// (a FIFO, a device, a folder), found without opening it; success for "-"
/// (stdin) and for a path that does not exist, which the caller's own open
/// reports. For drivers that open their input themselves (m2n-opt,
/// m2n-translate), where opening a FIFO without a writer would wait forever.
llvm::Error refuseSpecialFile(llvm::StringRef path);

} // namespace m2n

#endif // M2N_SPEC_JSONFILE_H
