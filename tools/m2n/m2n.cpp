//===- m2n.cpp - The m2n driver -------------------------------------------===//
//
//   m2n compile SPEC.json -o PLAN.m2n [--bucket-bytes N] [--staging-bytes N]
//                                     [--topology FILE] [--no-relay]
//                                     [--no-exchange]
//                                     [--emit-ir FILE]
//                                     [--progress | --no-progress]
//   m2n inspect PLAN.m2n [--json | --disassemble [--rank R] | --steps]
//                        [--svg FILE] [--html FILE] [--topology FILE]
//   m2n run PLAN.m2n --backend sim --src DIR --dst DIR
//                    [--progress | --no-progress]
//   mpirun -np W m2n run PLAN.m2n --backend mpi --src DIR --dst DIR
//   m2n run PLAN.m2n --backend cuda-local --src DIR --dst DIR
//   mpirun -np W m2n run PLAN.m2n --backend nccl --src DIR --dst DIR
//   m2n spec --model NAME --train AXES --gen AXES [-o SPEC.json]
//            [--colocate] [--dtype DTYPE]
//   m2n spec --list
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "m2n/plan_format.h"
#include "m2n/status.h"
#include "m2n/transport.h"

#include "m2n/Dialect/M2N/Transforms/Pipelines.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

using namespace llvm;

namespace {

cl::SubCommand compileCommand("compile",
                              "Compile a refit spec into a plan file");
cl::SubCommand inspectCommand("inspect", "Summarize a plan file");
cl::SubCommand runCommand("run",
                          "Run a plan over safetensors files, one per rank");
cl::SubCommand specCommand("spec",
                           "Generate the refit spec of a preset model");

//===--- compile ----------------------------------------------------------===//

cl::opt<std::string> specPath(cl::Positional, cl::desc("<spec.json>"),
                              cl::Required, cl::sub(compileCommand));
cl::opt<std::string> outputPath("o", cl::desc("The plan file to write"),
                                cl::value_desc("plan.m2n"), cl::Required,
                                cl::sub(compileCommand));
cl::opt<int64_t> bucketBytes(
    "bucket-bytes",
    cl::desc("The most bytes of a packed message (0: from the cost model)"),
    cl::init(0), cl::sub(compileCommand));
cl::opt<int64_t> stagingBytes(
    "staging-bytes",
    cl::desc("Staging bytes (pack and unpack buffers) per rank"),
    cl::init(int64_t(1) << 30), cl::sub(compileCommand));
cl::opt<std::string> topologyPath(
    "topology", cl::desc("A JSON topology file (default: H200 nodes)"),
    cl::value_desc("file"), cl::sub(compileCommand));
cl::opt<bool> noRelay("no-relay",
                      cl::desc("Do not relay regions among receivers"),
                      cl::sub(compileCommand));
cl::opt<bool> noExchange(
    "no-exchange",
    cl::desc("Relay along chains and trees only, not by exchanges or "
             "gathers among the receivers"),
    cl::sub(compileCommand));
cl::opt<std::string> irPath("emit-ir",
                            cl::desc("Also write the compiled m2n IR here"),
                            cl::value_desc("file"), cl::sub(compileCommand));

//===--- inspect ----------------------------------------------------------===//

cl::opt<std::string> inspectPath(cl::Positional, cl::desc("<plan.m2n>"),
                                 cl::Required, cl::sub(inspectCommand));
cl::opt<bool> json("json", cl::desc("Print the summary as JSON"),
                   cl::sub(inspectCommand));
cl::opt<bool> disassemble("disassemble",
                          cl::desc("Print the instructions as text"),
                          cl::sub(inspectCommand));
cl::opt<bool> inspectSteps(
    "steps",
    cl::desc("Also print, per step, its busiest rank against the even share "
             "and the idle ranks"),
    cl::sub(inspectCommand));
cl::opt<std::string> inspectTopologyPath(
    "topology",
    cl::desc("Price the step tables of --steps and --html by this JSON "
             "topology file (default: H200 nodes, as compile's)"),
    cl::value_desc("file"), cl::sub(inspectCommand));
cl::opt<int> disassembleRank("rank",
                             cl::desc("Disassemble this rank only"),
                             cl::init(-1), cl::sub(inspectCommand));

cl::opt<std::string> svgPath(
    "svg", cl::desc("Also draw the traffic between ranks as an SVG picture"),
    cl::value_desc("file"), cl::sub(inspectCommand));
cl::opt<std::string> htmlPath(
    "html",
    cl::desc("Also write an HTML page: the picture and a table of the steps"),
    cl::value_desc("file"), cl::sub(inspectCommand));

//===--- run --------------------------------------------------------------===//

cl::opt<std::string> runPlanPath(cl::Positional, cl::desc("<plan.m2n>"),
                                 cl::Required, cl::sub(runCommand));
cl::opt<std::string> backend(
    "backend",
    cl::desc("sim: every rank in this process; mpi: one process per rank; "
             "cuda-local: every rank in this process, on one GPU; nccl: one "
             "process per rank under mpirun, rank r on GPU r mod the count"),
    cl::init("sim"), cl::sub(runCommand));
cl::opt<std::string> srcDir(
    "src", cl::desc("Where rank r reads rank{r}.safetensors"),
    cl::value_desc("dir"), cl::Required, cl::sub(runCommand));
cl::opt<std::string> dstDir(
    "dst", cl::desc("Where rank r writes rank{r}.safetensors"),
    cl::value_desc("dir"), cl::Required, cl::sub(runCommand));
cl::opt<double> timeout(
    "timeout",
    cl::desc("Seconds a rank waits on its peers before the job fails "
             "(default 60)"),
    cl::init(M2N_TRANSPORT_DEFAULT_TIMEOUT_S), cl::sub(runCommand));
cl::opt<bool> trustPlan(
    "trust-plan",
    cl::desc("Skip proving at load what the plan computes (for plans this "
             "machine compiled; the structural checks still run)"),
    cl::sub(runCommand));

//===--- compile and run --------------------------------------------------===//

cl::opt<bool> progress(
    "progress",
    cl::desc("Show progress on stderr even when it is not a terminal"),
    cl::sub(compileCommand), cl::sub(runCommand));
cl::opt<bool> noProgress("no-progress",
                         cl::desc("Never show progress on stderr"),
                         cl::sub(compileCommand), cl::sub(runCommand));

/// Progress shows where stderr is a terminal, unless a flag says otherwise.
std::optional<m2n::driver::ProgressMode> progressMode() {
  if (progress && noProgress) {
    errs() << "error: --progress and --no-progress exclude each other\n";
    return std::nullopt;
  }
  if (progress)
    return m2n::driver::ProgressMode::Always;
  if (noProgress)
    return m2n::driver::ProgressMode::Never;
  return m2n::driver::ProgressMode::Auto;
}

//===--- spec -------------------------------------------------------------===//

cl::opt<bool> listModels("list", cl::desc("List the model presets"),
                         cl::sub(specCommand));
cl::opt<std::string> model("model", cl::desc("The model preset (see --list)"),
                           cl::value_desc("name"), cl::sub(specCommand));
cl::opt<std::string>
    train("train", cl::desc("The training parallelism, as pp4,tp8,fsdp8"),
          cl::value_desc("axes"), cl::sub(specCommand));
cl::opt<std::string>
    gen("gen", cl::desc("The generation parallelism, as dp8,tp8"),
        cl::value_desc("axes"), cl::sub(specCommand));
cl::opt<std::string> specOutputPath(
    "o", cl::desc("The spec file to write (default: stdout)"),
    cl::value_desc("spec.json"), cl::sub(specCommand));
cl::opt<bool> colocate("colocate",
                       cl::desc("Generate on the training ranks"),
                       cl::sub(specCommand));
cl::opt<std::string> dtype("dtype",
                           cl::desc("The dtype of the weights (default: BF16)"),
                           cl::init("BF16"), cl::sub(specCommand));

int runCompile() {
  std::optional<m2n::driver::ProgressMode> mode = progressMode();
  if (!mode)
    return 1;
  if (outputPath == irPath) {
    errs() << "error: -o and --emit-ir name the same file\n";
    return 1;
  }
  m2n::driver::CompileOptions options;
  options.progress = *mode;
  options.specPath = specPath;
  options.outputPath = outputPath;
  options.bucketBytes = bucketBytes;
  options.stagingBytes = stagingBytes;
  options.topologyPath = topologyPath;
  options.relay = !noRelay;
  options.exchange = !noExchange;
  options.irPath = irPath;
  return m2n::driver::compile(options);
}

int runInspect() {
  if (json && disassemble) {
    errs() << "error: --json and --disassemble exclude each other\n";
    return 1;
  }
  if (inspectSteps && (json || disassemble)) {
    errs() << "error: --steps adds to the text summary and excludes --json "
              "and --disassemble\n";
    return 1;
  }
  if (!inspectTopologyPath.empty() && !inspectSteps && htmlPath.empty()) {
    errs() << "error: --topology prices the step tables of --steps and "
              "--html and needs one of them\n";
    return 1;
  }
  // The pictures draw the summary; the disassembly, perhaps of one rank, is
  // another view of the plan, and a picture beside it would seem to be of
  // that rank alone.
  if (disassemble && (!svgPath.empty() || !htmlPath.empty())) {
    errs() << "error: --svg and --html draw the summary and exclude "
              "--disassemble\n";
    return 1;
  }
  if (!svgPath.empty() && svgPath == htmlPath) {
    errs() << "error: --svg and --html name the same file\n";
    return 1;
  }
  m2n::driver::InspectOptions options;
  options.planPath = inspectPath;
  options.json = json;
  options.disassemble = disassemble;
  options.rank = disassembleRank;
  options.steps = inspectSteps;
  options.topologyPath = inspectTopologyPath;
  options.svgPath = svgPath;
  options.htmlPath = htmlPath;
  return m2n::driver::inspect(options);
}

int runRun() {
  std::optional<m2n::driver::ProgressMode> mode = progressMode();
  if (!mode)
    return 1;
  m2n::driver::RunOptions options;
  options.progress = *mode;
  options.planPath = runPlanPath;
  options.backend = backend;
  options.srcDir = srcDir;
  options.dstDir = dstDir;
  options.timeoutSeconds = timeout;
  options.trustPlan = trustPlan;
  return m2n::driver::run(options);
}

int runSpec() {
  m2n::driver::SpecOptions options;
  options.list = listModels;
  options.model = model;
  options.train = train;
  options.gen = gen;
  options.outputPath = specOutputPath;
  options.colocate = colocate;
  options.dtype = dtype;
  return m2n::driver::generateSpec(options);
}

/// m2n's version, which is its runtime's, and the version of the plan format
/// it writes; LLVM's version printer would give LLVM's.
void printVersion(raw_ostream &os) {
  int major, minor, patch;
  m2n_version(&major, &minor, &patch);
  os << "m2n " << major << "." << minor << "." << patch << "\n"
     << "plan format " << M2N_PLAN_VERSION_MAJOR << "."
     << M2N_PLAN_VERSION_MINOR << "\n";
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::SetVersionPrinter(printVersion);
  // m2n's options all belong to its subcommands, so the top level holds only
  // the options of the LLVM libraries linked in (targets, passes), which mean
  // nothing to m2n: hidden, but for the generic --help and --version.
  // Subcommands never see those options.
  cl::HideUnrelatedOptions(ArrayRef<const cl::OptionCategory *>());
  cl::ParseCommandLineOptions(
      argc, argv,
      "m2n: generate refit specs; compile, inspect and run refit plans\n");
  if (compileCommand)
    return runCompile();
  if (inspectCommand)
    return runInspect();
  if (runCommand)
    return runRun();
  if (specCommand)
    return runSpec();
  errs() << "error: expected a command: compile, inspect, run or spec (see "
            "--help)\n";
  return 1;
}
