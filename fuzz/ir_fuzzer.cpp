//===- ir_fuzzer.cpp - libFuzzer target for m2n IR ------------------------===//
//
// Parses arbitrary bytes as m2n IR, as `m2n-opt` and `m2n-translate` read
// it, the verifiers included. IR that the verifiers pass then goes through
// m2n-verify and the export of `m2n-translate --m2n-to-plan`; a plan that
// exports must load in the runtime, proof included. A small refit of
// reshards is compiled as `m2n compile` does (FuzzSupport.h). Whatever is
// refused must be refused with an error diagnostic.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "m2n/Dialect/M2N/IR/M2NOps.h"
#include "m2n/Dialect/M2N/Transforms/Passes.h"
#include "m2n/Dialect/M2N/Transforms/PlanIR.h"
#include "m2n/Target/ExportPlan.h"

#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <string>

namespace {

using namespace m2n;

/// Runs `step`, which must report an error whenever it fails.
template <typename Step>
bool succeedsOrReports(fuzz::FuzzContext &context, Step step) {
  size_t errorsBefore = context.errors();
  bool ok = mlir::succeeded(step());
  fuzz::check(ok || context.errors() > errorsBefore);
  return ok;
}

void verifyPlans(fuzz::FuzzContext &context, mlir::ModuleOp module) {
  succeedsOrReports(context, [&] {
    mlir::PassManager pm(&context.get());
    pm.addPass(createVerifyPass());
    return pm.run(module);
  });
}

void exportPlan(fuzz::FuzzContext &context, mlir::ModuleOp module) {
  mlir::FailureOr<std::vector<uint8_t>> bytes;
  if (succeedsOrReports(context, [&] {
        bytes = exportCompiledModule(module);
        return mlir::failure(mlir::failed(bytes));
      }))
    fuzz::checkLoads(*bytes);
}

/// Whether `module` holds one refit, of reshards only, small enough to
/// compile in milliseconds.
bool isSmallUncompiledRefit(mlir::ModuleOp module) {
  auto refits = module.getOps<RefitOp>();
  if (refits.empty() || std::next(refits.begin()) != refits.end())
    return false;
  RefitOp refit = *refits.begin();
  if (!refit.getBody().getOps<TransfersOp>().empty() ||
      !refit.getBody().getOps<MessageOp>().empty())
    return false;
  mlir::FailureOr<spec::RefitSpec> spec = readSpec(refit);
  return mlir::succeeded(spec) && fuzz::isSmallRefit(*spec);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz::FuzzContext context;
  // The parser reads up to a NUL: the input is copied to end in one.
  std::string text(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module;
  if (!succeedsOrReports(context, [&] {
        module = mlir::parseSourceString<mlir::ModuleOp>(text, &context.get());
        return mlir::failure(!module);
      }))
    return 0;
  verifyPlans(context, *module);
  exportPlan(context, *module);
  if (isSmallUncompiledRefit(*module))
    fuzz::compileAndLoad(context, *module, fuzz::hashInput(data, size));
  return 0;
}
