//===- spec_fuzzer.cpp - libFuzzer target for refit specs -----------------===//
//
// Feeds arbitrary bytes to parseRefitSpec, as `m2n compile` reads a spec
// file. A rejected spec must be an error naming the file. A spec that
// parses must write back as JSON that parses to the same spec, and when
// small it is imported and compiled as `m2n compile` does, the plan loaded
// by the runtime after (FuzzSupport.h).
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "m2n/Target/ImportSpec.h"

#include "llvm/ADT/StringRef.h"

#include <string>

namespace {

using namespace m2n;

constexpr llvm::StringLiteral kFileName = "fuzz.json";

/// A parse error is a whole diagnostic: the file, where, and what.
void checkRejection(llvm::Error error) {
  std::string message = llvm::toString(std::move(error));
  fuzz::check(llvm::StringRef(message).starts_with(kFileName) &&
              message.find(": error: ") != std::string::npos);
}

/// The canonical JSON of a spec reads back to a spec that writes the same.
void checkRoundTrip(const spec::RefitSpec &parsed) {
  std::string written = spec::writeRefitSpec(parsed);
  llvm::Expected<spec::RefitSpec> reread =
      spec::parseRefitSpec(written, kFileName);
  fuzz::check(static_cast<bool>(reread));
  fuzz::check(spec::writeRefitSpec(*reread) == written);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<spec::RefitSpec> parsed =
      spec::parseRefitSpec(text, kFileName);
  if (!parsed) {
    checkRejection(parsed.takeError());
    return 0;
  }
  checkRoundTrip(*parsed);
  if (!fuzz::isSmallRefit(*parsed))
    return 0;
  fuzz::FuzzContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      importRefitSpec(*parsed, kFileName, &context.get());
  fuzz::check(static_cast<bool>(module));
  fuzz::compileAndLoad(context, *module, fuzz::hashInput(data, size));
  return 0;
}
