//===- Schedule.h - Ordering messages into steps ----------------*- C++ -*-===//

#ifndef M2N_PLAN_SCHEDULE_H
#define M2N_PLAN_SCHEDULE_H

#include "m2n/Plan/CostModel.h"
#include "m2n/Plan/Plan.h"

#include "llvm/Support/Error.h"

namespace m2n::plan {

struct ScheduleOptions {
  /// Staging bytes (pack plus unpack buffers) each rank may use in a step.
  int64_t stagingBudget = int64_t(1) << 30;
  /// When set, each round's messages are spread over its steps so that
  /// every rank is about as busy in each step, by this model's seconds.
  const CostModel *model = nullptr;
};

struct ScheduleStats {
  int64_t steps = 0;
  int64_t stagingPeak = 0;
};

/// Assigns every message a step so that messages of a later round come in
/// later steps than those of earlier rounds (a relay after what it forwards
/// has arrived), and each rank's staging bytes per step stay within the
/// budget; sorts the messages by (step, sender, receiver) so that every rank
/// issues its sends and receives in an order that matches its peers. Fails,
/// naming the message, when one message alone needs more staging than the
/// budget.
llvm::Expected<ScheduleStats> schedule(Plan &plan,
                                       const ScheduleOptions &options);

} // namespace m2n::plan

#endif // M2N_PLAN_SCHEDULE_H
