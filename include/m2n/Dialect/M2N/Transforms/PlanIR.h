//===- PlanIR.h - Between m2n IR and the transfer plan ----------*- C++ -*-===//
//
// A refit's plan lives in IR alone: slice tables on `m2n.transfers`, the
// message tables on `m2n.messages`, the schedule on `m2n.refit`, all of
// them compact tables held as properties. Each pass reads the plan,
// transforms it with the algorithms of m2n/Plan, and writes it back; nothing
// of it is kept between passes, so that what a pass leaves in IR is all the
// next one (or the export) sees. Group g of the plan is the g-th
// `m2n.transfers` of the refit; tensor t is its t-th `m2n.tensor`; mesh m
// its m-th `m2n.mesh`.
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
/// messages, and, once scheduled, the step count and staging budget (which,
/// with the topology recorded, it removes from a plan not scheduled).
void writePlan(RefitOp refit, const plan::Plan &plan);

/// Records on `refit`, whose plan has just been scheduled, the topology the
/// schedule was made for, so that m2n-schedule keeps the schedule (for that
/// topology and the refit's staging budget) instead of making it again.
/// Writing a plan that is not scheduled clears the record.
void recordScheduleTopology(RefitOp refit, const plan::Topology &topology);

/// Whether `refit` holds a schedule made within `stagingBudget` for
/// `topology`, as recordScheduleTopology recorded it.
bool isScheduledFor(RefitOp refit, int64_t stagingBudget,
                    const plan::Topology &topology);

/// What a pass does with fan-out slices (`S -> * [box]`): works on them,
/// or needs the slices they stand for.
enum class FanOuts { Keep, Expand };

/// Runs `transform` on the plan of `refit`, read from IR, with its fan-out
/// slices expanded first unless `fanOuts` keeps them, and when that
/// succeeds writes the plan back to IR.
mlir::LogicalResult transformPlan(
    RefitOp refit,
    llvm::function_ref<mlir::LogicalResult(RefitOp, plan::Plan &)> transform,
    FanOuts fanOuts = FanOuts::Expand);

/// transformPlan on every refit in `module`; stops at the first failure.
mlir::LogicalResult transformPlans(
    mlir::ModuleOp module,
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
