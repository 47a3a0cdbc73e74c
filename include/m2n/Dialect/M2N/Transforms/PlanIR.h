//===- PlanIR.h - Between m2n IR and the transfer plan ----------*- C++ -*-===//
//
// The passes keep a refit's plan in IR: slice tables on `m2n.transfers`,
// the message tables on `m2n.messages`, the schedule on `m2n.refit`. Each
// pass reads the plan, transforms it with the algorithms of m2n/Plan, and
// writes it back. Group g of the plan is the g-th `m2n.transfers` of the refit;
// tensor t is its t-th `m2n.tensor`; mesh m its m-th `m2n.mesh`.
//
// Reading a real model's plan back means hundreds of thousands of slices
// and millions of messages, so a pass leaves the plan it wrote in
// a PlanCache, an analysis of the module, for the next m2n pass to take up.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_DIALECT_M2N_TRANSFORMS_PLANIR_H
#define M2N_DIALECT_M2N_TRANSFORMS_PLANIR_H

#include "m2n/Dialect/M2N/IR/M2NOps.h"
#include "m2n/Plan/CostModel.h"
#include "m2n/Plan/Parallel.h"
#include "m2n/Plan/Plan.h"
#include "m2n/Plan/Schedule.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace m2n {

/// An error at the refit's location. Unlike refit.emitError(), it does not
/// print the op, which for a real model is megabytes of IR.
mlir::InFlightDiagnostic emitRefitError(RefitOp refit);

/// The thread pool that a pass on `context` may share its plan's groups
/// out on (see plan::forEachGroup): none when threading is off.
llvm::ThreadPoolInterface *groupPool(mlir::MLIRContext *context);

/// Reports the problems verifyPlan found in the plan of `refit`: the first
/// as an error, the others as its notes.
void emitUnsoundPlan(RefitOp refit, llvm::ArrayRef<std::string> problems);

/// The refit's reshards as a spec, for planFromSpec. Fails, with a
/// diagnostic, on IR that has already been decomposed.
mlir::FailureOr<spec::RefitSpec> readSpec(RefitOp refit);

/// Replaces the refit's `m2n.reshard`s by one `m2n.transfers` per group of
/// `plan`, a plan of readSpec(refit) that has been decomposed.
void writeTransfers(RefitOp refit, const plan::Plan &plan);

/// The plan of a decomposed refit. Fails, with a diagnostic, on a refit that
/// still has `m2n.reshard`s or whose messages name groups or slices that do
/// not exist.
mlir::FailureOr<plan::Plan> readPlan(RefitOp refit);

/// Writes a plan read by readPlan back: the slices of each group, the
/// messages, and, once scheduled, the step count and staging budget.
void writePlan(RefitOp refit, const plan::Plan &plan);

/// The plans of a module's refits exactly as the last m2n pass wrote them
/// to IR: an analysis of the module. A pass that writes plans and marks the
/// cache preserved keeps it equal to the IR; any other pass invalidates it,
/// and the next m2n pass reads the IR again.
class PlanCache {
public:
  explicit PlanCache(mlir::Operation *) {}

  /// The plan of `refit`: the cached one, or read from IR (and cached).
  /// Fails, with readPlan's diagnostic, on a refit that cannot be read.
  mlir::FailureOr<plan::Plan *> get(RefitOp refit);
  /// Records `plan` as what `refit` holds in IR.
  void set(RefitOp refit, plan::Plan plan);

  /// Records a schedule that a pass worked out for the plan it leaves in
  /// `refit` (m2n-fuse schedules the messages it chooses between), in a
  /// staging budget and for the topology file `topology` ("" the default),
  /// for m2n-schedule to take instead of scheduling the same plan again.
  /// It lives as long as the cache: a pass that changes the plan without
  /// preserving the cache drops it.
  void setSchedule(RefitOp refit, int64_t stagingBudget,
                   llvm::StringRef topology, plan::ScheduledMessages schedule);
  /// The schedule recorded for `refit` in that budget and topology, taken
  /// out of the cache; none when there is none or it was for others.
  std::optional<plan::ScheduledMessages>
  takeSchedule(RefitOp refit, int64_t stagingBudget, llvm::StringRef topology);
  /// Forgets the schedule recorded for `refit`, if any.
  void dropSchedule(RefitOp refit);

private:
  struct PendingSchedule {
    int64_t stagingBudget;
    std::string topology;
    plan::ScheduledMessages schedule;
  };
  llvm::DenseMap<mlir::Operation *, plan::Plan> plans;
  llvm::DenseMap<mlir::Operation *, PendingSchedule> schedules;
};

/// What a pass does with fan-out slices (`S -> * [box]`): works on them,
/// or needs the slices they stand for.
enum class FanOuts { Keep, Expand };

/// Runs `transform` on the plan of every refit in `module`, taken from
/// `cache`, with its fan-out slices expanded first unless `fanOuts` keeps
/// them, and when that succeeds writes the plan back to IR, leaving the
/// cache equal to it. A schedule recorded for the plan is dropped before
/// `transform` runs (which may record another). Stops at the first
/// failure; the caller then must not preserve the cache.
mlir::LogicalResult transformPlans(
    mlir::ModuleOp module, PlanCache &cache,
    llvm::function_ref<mlir::LogicalResult(RefitOp, plan::Plan &)> transform,
    FanOuts fanOuts = FanOuts::Expand);

/// Replaces the fan-out slices of `plan`, the plan of `refit`, by the
/// slices they stand for; fails, with a diagnostic, where one cannot be.
mlir::LogicalResult expandFanOuts(RefitOp refit, plan::Plan &plan);

/// Fails, with a diagnostic, when the refit already has messages: `pass`
/// rewrites slice tables, which would leave the messages' parts stale.
mlir::LogicalResult checkNotFused(RefitOp refit, const plan::Plan &plan,
                                  llvm::StringRef pass);

/// The cost model of a JSON topology file, or of the default topology when
/// `path` is empty. Fails, with a diagnostic on `op`, on a bad file.
mlir::FailureOr<plan::CostModel> loadCostModel(mlir::Operation *op,
                                               llvm::StringRef path);

} // namespace m2n

#endif // M2N_DIALECT_M2N_TRANSFORMS_PLANIR_H
