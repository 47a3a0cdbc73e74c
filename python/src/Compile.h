//===- Compile.h - The compiler as the Python module calls it ---*- C++ -*-===//
//
// The compile of a spec's text, with the compiler's diagnostics gathered
// into a message for the exception instead of printed.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_PYTHON_COMPILE_H
#define M2N_PYTHON_COMPILE_H

#include "m2n/Dialect/M2N/Transforms/Pipelines.h"

#include <cstdint>
#include <string>
#include <vector>

namespace m2n::python {

/// A compile's plan file, or, when it failed, what the compiler said.
struct CompileResult {
  std::vector<uint8_t> plan;
  std::string error;
};

/// Compiles the refit spec `specText` (JSON; `specName` names it in
/// messages) as `m2n compile` does, through m2n::compileRefit.
CompileResult compileSpec(const std::string &specText,
                          const std::string &specName,
                          const CompilePipelineOptions &options);

/// The spec in its canonical form (m2n::spec::writeRefitSpec); `error` says
/// why not when it does not parse, and the result is then empty.
std::string canonicalSpec(const std::string &specText,
                          const std::string &specName, std::string &error);

/// The spec's canonical spelling ("R", "S(d)") of placement `text`, or "".
std::string canonicalPlacement(const std::string &text);

/// The safetensors name of the dtype that specs call `name`, or "".
std::string canonicalDType(const std::string &name);

} // namespace m2n::python

#endif // M2N_PYTHON_COMPILE_H
