//===- Compile.cpp - m2n compile: a refit spec to a plan file -------------===//

#include "Commands.h"
#include "Progress.h"

#include "m2n/Dialect/M2N/IR/M2NDialect.h"
#include "m2n/Dialect/M2N/IR/M2NOps.h"
#include "m2n/Compiler/CompileRefit.h"
#include "m2n/Target/ImportSpec.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

namespace m2n::driver {

/// Writes `bytes` to a new file `path`.
static std::error_code writeNewFile(const std::string &path,
                                    llvm::StringRef bytes) {
  std::error_code error;
  llvm::raw_fd_ostream out(path, error, llvm::sys::fs::OF_None);
  if (error)
    return error;
  out << bytes;
  out.close();
  error = out.error();
  // A stream that still holds an error at its end aborts the process.
  out.clear_error();
  return error;
}

/// What keeps `path` from being an output of a command that reads
/// `inputs`, or "".
static std::string outputProblem(llvm::StringRef path,
                                 llvm::ArrayRef<llvm::StringRef> inputs) {
  if (path == "-")
    return "'-' would be a file of that name; this output cannot go to "
           "stdout, name a file";
  for (llvm::StringRef input : inputs) {
    bool same = false;
    // equivalent() fails when either does not exist: then they differ.
    if (!input.empty() && input != "-" &&
        !llvm::sys::fs::equivalent(path, input, same) && same)
      return "'" + path.str() + "' is the input '" + input.str() +
             "'; an output may not overwrite an input";
  }
  return "";
}

bool writeFilesAtomically(llvm::ArrayRef<FileContents> files,
                          llvm::ArrayRef<llvm::StringRef> inputs) {
  for (const FileContents &file : files)
    if (std::string problem = outputProblem(file.path, inputs);
        !problem.empty()) {
      llvm::errs() << "error: " << problem << "\n";
      return false;
    }
  std::vector<std::string> temps;
  auto fail = [&](llvm::StringRef path, std::error_code error) {
    for (const std::string &temp : temps)
      llvm::sys::fs::remove(temp);
    llvm::errs() << "error: cannot write '" << path << "': " << error.message()
                 << "\n";
    return false;
  };
  for (const FileContents &file : files) {
    temps.push_back((file.path + ".tmp" +
                     llvm::Twine(llvm::sys::Process::getProcessId()))
                        .str());
    if (std::error_code error = writeNewFile(temps.back(), file.bytes))
      return fail(file.path, error);
  }
  for (size_t i = 0; i < files.size(); ++i)
    if (std::error_code error = llvm::sys::fs::rename(temps[i], files[i].path))
      return fail(files[i].path, error);
  return true;
}

static void setPipelineOptions(const CompileOptions &options,
                               CompilePipelineOptions &pipeline) {
  pipeline.bucketBytes = options.bucketBytes;
  pipeline.stagingBytes = options.stagingBytes;
  pipeline.topology = options.topologyPath;
  pipeline.relay = options.relay;
  pipeline.relayExchange = options.exchange;
}

namespace {

/// Puts each pass of the pipeline on the progress line as it starts.
class PassProgress : public mlir::PassInstrumentation {
public:
  PassProgress(ProgressLine &line, mlir::PassManager &pm) : line_(line) {
    for (mlir::Pass &pass : pm.getPasses())
      pipeline_.insert(&pass);
  }

  void runBeforePass(mlir::Pass *pass, mlir::Operation *) override {
    // What the compile adds after the pipeline shows as its own phase.
    if (!pipeline_.contains(pass))
      return;
    llvm::StringRef name = pass->getArgument();
    if (name.empty())
      name = pass->getName();
    line_.begin(llvm::formatv("m2n compile: pass {0}/{1} {2}", ++started_,
                              pipeline_.size(), name));
  }

private:
  ProgressLine &line_;
  llvm::SmallPtrSet<mlir::Pass *, 8> pipeline_;
  size_t started_ = 0;
};

} // namespace

/// Ends `progress` at the first diagnostic, so that the diagnostic prints
/// on a clean line and nothing draws over it.
static void endOnDiagnostic(mlir::MLIRContext &context,
                            ProgressLine &progress) {
  // Handlers registered later run first; failure() hands the diagnostic on
  // to the one that prints it.
  context.getDiagEngine().registerHandler([&progress](mlir::Diagnostic &) {
    progress.finish();
    return mlir::failure();
  });
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
  // Declared before the context, whose diagnostic handler refers to it.
  ProgressLine progress(options.progress);
  mlir::MLIRContext context;
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  endOnDiagnostic(context, progress);
  progress.begin("m2n compile: importing the spec");
  mlir::OwningOpRef<mlir::ModuleOp> module =
      importRefitSpec(*spec, options.specPath, &context);
  CompilePipelineOptions pipeline;
  setPipelineOptions(options, pipeline);
  CompileHooks hooks;
  hooks.configure = [&](mlir::PassManager &pm) {
    if (progress.enabled())
      pm.addInstrumentation(std::make_unique<PassProgress>(progress, pm));
  };
  hooks.exporting = [&] {
    progress.begin("m2n compile: verifying and exporting the plan");
  };
  mlir::FailureOr<CompiledRefit> compiled =
      compileRefit(*module, pipeline, hooks);
  if (mlir::failed(compiled))
    return 1;
  const std::vector<uint8_t> &bytes = compiled->bytes;
  std::string ir = options.irPath.empty() ? "" : printed(*module);
  // A failed write prints its error on a clean line.
  progress.finish();
  std::vector<FileContents> files = {
      {options.outputPath,
       llvm::StringRef(reinterpret_cast<const char *>(bytes.data()),
                       bytes.size())}};
  if (!options.irPath.empty())
    files.push_back({options.irPath, ir});
  bool written =
      writeFilesAtomically(files, {options.specPath, options.topologyPath});
  // The process ends next: erasing a real model's tens of thousands of ops
  // one by one would take longer than writing the plan.
  (void)module.release();
  return written ? 0 : 1;
}

} // namespace m2n::driver
