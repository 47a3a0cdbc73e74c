//===- Compile.cpp - m2n compile: a refit spec to a plan file -------------===//

#include "Commands.h"

#include "m2n/Dialect/M2N/IR/M2NDialect.h"
#include "m2n/Dialect/M2N/IR/M2NOps.h"
#include "m2n/Dialect/M2N/Transforms/Pipelines.h"
#include "m2n/Dialect/M2N/Transforms/PlanIR.h"
#include "m2n/Plan/CostModel.h"
#include "m2n/Target/ExportPlan.h"
#include "m2n/Target/ImportSpec.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

namespace m2n::driver {

bool writeFileAtomically(llvm::StringRef path, llvm::StringRef bytes) {
  std::string temp =
      (path + ".tmp" + llvm::Twine(llvm::sys::Process::getProcessId())).str();
  std::error_code error;
  {
    llvm::raw_fd_ostream out(temp, error, llvm::sys::fs::OF_None);
    if (!error) {
      out << bytes;
      out.close();
      error = out.error();
    }
  }
  if (!error)
    error = llvm::sys::fs::rename(temp, path);
  if (!error)
    return true;
  llvm::sys::fs::remove(temp);
  llvm::errs() << "error: cannot write '" << path << "': " << error.message()
               << "\n";
  return false;
}

static void setPipelineOptions(const CompileOptions &options,
                               CompilePipelineOptions &pipeline) {
  pipeline.bucketBytes = options.bucketBytes;
  pipeline.stagingBytes = options.stagingBytes;
  pipeline.topology = options.topologyPath;
  pipeline.relay = options.relay;
}

/// The compiled IR as text, for --emit-ir.
static std::string printed(mlir::ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return text;
}

int compile(const CompileOptions &options) {
  if (options.stagingBytes <= 0 || options.bucketBytes < 0) {
    llvm::errs() << "error: --staging-bytes must be positive and "
                    "--bucket-bytes non-negative\n";
    return 1;
  }
  llvm::Expected<spec::RefitSpec> spec = spec::readRefitSpec(options.specPath);
  if (!spec) {
    llvm::errs() << llvm::toString(spec.takeError()) << "\n";
    return 1;
  }
  mlir::MLIRContext context;
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      importRefitSpec(*spec, options.specPath, &context);
  mlir::PassManager pm(&context);
  // The IR is verified once, after the pipeline, rather than after every
  // pass: at a real model's scale that is a tenth of the compile time, and
  // the pipeline ends with m2n-verify, which checks the plan itself.
  pm.enableVerifier(false);
  CompilePipelineOptions pipeline;
  setPipelineOptions(options, pipeline);
  buildCompilePipeline(pm, pipeline);
  if (mlir::failed(pm.run(*module)) || mlir::failed(mlir::verify(*module)))
    return 1;

  RefitOp refit = *module->getOps<RefitOp>().begin();
  mlir::FailureOr<plan::Plan> plan = readPlan(refit);
  mlir::FailureOr<plan::CostModel> model =
      loadCostModel(*module, options.topologyPath);
  if (mlir::failed(plan) || mlir::failed(model))
    return 1;
  std::vector<uint8_t> bytes = exportPlan(*plan, model->cost(*plan));
  if (!options.irPath.empty() &&
      !writeFileAtomically(options.irPath, printed(*module)))
    return 1;
  return writeFileAtomically(
             options.outputPath,
             llvm::StringRef(reinterpret_cast<const char *>(bytes.data()),
                             bytes.size()))
             ? 0
             : 1;
}

} // namespace m2n::driver
