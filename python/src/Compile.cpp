//===- Compile.cpp - The compiler as the Python module calls it -----------===//

#include "Compile.h"

#include "m2n/Compiler/CompileRefit.h"
#include "m2n/Spec/DType.h"
#include "m2n/Spec/RefitSpec.h"
#include "m2n/Target/ImportSpec.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace m2n::python {

CompileResult compileSpec(const std::string &specText,
                          const std::string &specName,
                          const CompilePipelineOptions &options) {
  CompileResult result;
  if (options.stagingBytes <= 0 || options.bucketBytes < 0) {
    result.error = "staging_bytes must be positive and bucket_bytes "
                   "non-negative";
    return result;
  }
  llvm::Expected<spec::RefitSpec> spec =
      spec::parseRefitSpec(specText, specName);
  if (!spec) {
    result.error = llvm::toString(spec.takeError());
    return result;
  }
  mlir::MLIRContext context;
  // Every diagnostic goes into the exception's message, as `m2n compile`
  // prints them, none to stderr.
  llvm::raw_string_ostream errors(result.error);
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context, errors);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      importRefitSpec(*spec, specName, &context);
  mlir::FailureOr<CompiledRefit> compiled = compileRefit(*module, options);
  if (mlir::failed(compiled)) {
    // The handler ends each diagnostic with a newline; a message does not.
    while (!result.error.empty() && result.error.back() == '\n')
      result.error.pop_back();
    if (result.error.empty())
      result.error = "the compile failed";
    return result;
  }
  result.error.clear();
  result.plan = std::move(compiled->bytes);
  return result;
}

std::string canonicalSpec(const std::string &specText,
                          const std::string &specName, std::string &error) {
  llvm::Expected<spec::RefitSpec> spec =
      spec::parseRefitSpec(specText, specName);
  if (!spec) {
    error = llvm::toString(spec.takeError());
    return "";
  }
  return spec::writeRefitSpec(*spec);
}

std::string canonicalPlacement(const std::string &text) {
  std::optional<Placement> placement = spec::parsePlacement(text);
  return placement ? placement->str() : "";
}

std::string canonicalDType(const std::string &name) {
  std::optional<DType> dtype = parseDType(name);
  return dtype ? dtypeName(*dtype).str() : "";
}

} // namespace m2n::python
