//===- Commands.h - The subcommands of the m2n driver -----------*- C++ -*-===//

#ifndef M2N_TOOLS_M2N_COMMANDS_H
#define M2N_TOOLS_M2N_COMMANDS_H

#include "Progress.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace m2n::driver {

struct CompileOptions {
  std::string specPath;
  std::string outputPath;
  /// 0 lets the cost model choose.
  int64_t bucketBytes = 0;
  int64_t stagingBytes = int64_t(1) << 30;
  std::string topologyPath;
  bool relay = true;
  bool exchange = true;
  /// Also write the compiled IR here, when not empty.
  std::string irPath;
  ProgressMode progress = ProgressMode::Auto;
};

struct InspectOptions {
  std::string planPath;
  bool json = false;
  bool disassemble = false;
  /// The rank to disassemble, or -1 for all.
  int rank = -1;
  /// Also print, per step, the busiest rank against the even share, priced
  /// by the topology in this file (empty: the default, as compile's), as
  /// the HTML page's table of the steps is.
  bool steps = false;
  std::string topologyPath;
  /// Also draw the traffic here, when not empty: a standalone SVG picture,
  /// and an HTML page with the picture and a table of the steps.
  std::string svgPath;
  std::string htmlPath;
};

struct RunOptions {
  std::string planPath;
  /// "sim" (every rank in this process) or "mpi" (this process is one).
  std::string backend = "sim";
  std::string srcDir;
  std::string dstDir;
  ProgressMode progress = ProgressMode::Auto;
  /// How long a rank waits on its peers, at start and in every step.
  double timeoutSeconds = 60;
  /// Load the plan with M2N_PLAN_LOAD_TRUSTED.
  bool trustPlan = false;
};

struct SpecOptions {
  /// List the model presets instead.
  bool list = false;
  std::string model;
  /// The parallelism of each side, as "pp4,ep16".
  std::string train;
  std::string gen;
  /// Where the spec goes; empty or "-" for stdout.
  std::string outputPath;
  bool colocate = false;
  std::string dtype = "BF16";
};

/// Each returns the process's exit status; errors go to stderr.
int compile(const CompileOptions &options);
int inspect(const InspectOptions &options);
int run(const RunOptions &options);
int generateSpec(const SpecOptions &options);

struct FileContents {
  llvm::StringRef path;
  llvm::StringRef bytes;
};

/// Writes each file through a temporary file beside it, and renames the
/// temporary files over the paths only once all are complete, so that a
/// failure to write any leaves every path as it was. The paths must differ.
/// A path that is "-" or names one of `inputs` (the same file, through a
/// link too) is refused before anything is written. Prints the error and
/// returns false on failure.
bool writeFilesAtomically(llvm::ArrayRef<FileContents> files,
                          llvm::ArrayRef<llvm::StringRef> inputs = {});

} // namespace m2n::driver

#endif // M2N_TOOLS_M2N_COMMANDS_H
