//===- Pipelines.h - Named pass pipelines of m2n ----------------*- C++ -*-===//

#ifndef M2N_DIALECT_M2N_TRANSFORMS_PIPELINES_H
#define M2N_DIALECT_M2N_TRANSFORMS_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace m2n {

/// Options of `m2n-compile`, the pipeline from reshards to a verified,
/// scheduled plan.
struct CompilePipelineOptions
    : public mlir::PassPipelineOptions<CompilePipelineOptions> {
  Option<int64_t> bucketBytes{
      *this, "bucket-bytes",
      llvm::cl::desc("The most bytes of a packed message (0: from the cost "
                     "model)"),
      llvm::cl::init(0)};
  Option<int64_t> stagingBytes{
      *this, "staging-bytes",
      llvm::cl::desc("Staging bytes (pack and unpack buffers) per rank"),
      llvm::cl::init(int64_t(1) << 30)};
  Option<std::string> topology{
      *this, "topology",
      llvm::cl::desc("A JSON topology file for the cost model (default: H200 "
                     "nodes)"),
      llvm::cl::init("")};
  Option<bool> relay{*this, "relay",
                     llvm::cl::desc("Relay regions among destination ranks"),
                     llvm::cl::init(true)};
  Option<bool> relayExchange{
      *this, "relay-exchange",
      llvm::cl::desc("Let relays exchange or gather regions among their "
                     "receivers, not only pass them along chains and trees"),
      llvm::cl::init(true)};
  Option<bool> report{
      *this, "report",
      llvm::cl::desc("Report each plan's size and predicted time as a remark"),
      llvm::cl::init(false)};
  Option<bool> balanceSplit{
      *this, "balance-split",
      llvm::cl::desc("Split regions among their holders when that helps"),
      llvm::cl::init(true)};

  /// Whether the pipeline ends with m2n-verify. Not an option of the named
  /// pipeline: only a caller that checks the plan itself turns it off
  /// (compileRefit, which checks it while exporting it).
  bool verify = true;
};

/// decompose, balance, relay, coalesce, fuse, schedule, verify (relay and
/// verify as the options say).
void buildCompilePipeline(mlir::OpPassManager &pm,
                          const CompilePipelineOptions &options);

/// Registers every m2n pass and the named pipelines.
void registerPassesAndPipelines();

} // namespace m2n

#endif // M2N_DIALECT_M2N_TRANSFORMS_PIPELINES_H
