//===- ExportPlan.h - A compiled plan as runtime bytecode -------*- C++ -*-===//

#ifndef M2N_TARGET_EXPORTPLAN_H
#define M2N_TARGET_EXPORTPLAN_H

#include "m2n/Plan/CostModel.h"
#include "m2n/Plan/Plan.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>
#include <string>
#include <vector>

namespace m2n {

/// The plan bytecode (m2n/plan_format.h) of a verified, fused and scheduled
/// plan. Every rank of a source mesh gets a source binding of each tensor
/// on that mesh and every rank of a destination mesh a destination binding,
/// empty shards included; its instructions are its local copies, then per
/// step its packs, its sends and receives in the plan's message order (the
/// same on both ends of every message), and its unpacks. `cost` fills the
/// header's summary. The ranks' streams are emitted by `threads` threads;
/// the bytes are the same for any number.
std::vector<uint8_t> exportPlan(const plan::Plan &plan,
                                const plan::PlanCost &cost,
                                unsigned threads = 1);

/// The same, with the summary asked for once the ranks' streams are done,
/// from the calling thread: a caller may work it out meanwhile.
std::vector<uint8_t>
exportPlan(const plan::Plan &plan,
           llvm::function_ref<plan::PlanCost()> summary, unsigned threads);

/// What keeps exportPlan from reading `plan` safely (an index out of range,
/// a message without parts) or from writing a file the runtime loads (no
/// rank at all), or "" when nothing does. Every such plan with ranks fails
/// verifyPlan too; this is the cheap part of that check, for a caller that
/// exports a plan while verifying it.
std::string exportBlocker(const plan::Plan &plan);

/// What `--m2n-to-plan` writes: the plan file of the one compiled
/// `m2n.refit` of `module`, once verifyCompiledPlan has passed its plan.
/// Fails, with a diagnostic, on any other module.
mlir::FailureOr<std::vector<uint8_t>>
exportCompiledModule(mlir::ModuleOp module);

/// Registers `--m2n-to-plan` with mlir-translate style drivers: a module
/// holding one compiled `m2n.refit` becomes its plan file.
void registerExportPlanTranslation();

} // namespace m2n

#endif // M2N_TARGET_EXPORTPLAN_H
