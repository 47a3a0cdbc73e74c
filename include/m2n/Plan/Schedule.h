//===- Schedule.h - Ordering messages into steps ----------------*- C++ -*-===//

#ifndef M2N_PLAN_SCHEDULE_H
#define M2N_PLAN_SCHEDULE_H

#include "m2n/Plan/CostModel.h"
#include "m2n/Plan/Plan.h"

#include "llvm/Support/Error.h"

namespace llvm {
class ThreadPoolInterface;
} // namespace llvm

namespace m2n::plan {

struct ScheduleOptions {
  /// Staging bytes (pack plus unpack buffers) each rank may use in a step.
  int64_t stagingBudget = int64_t(1) << 30;
  /// When set, messages are spread over the steps so that every rank is
  /// about as busy in each step, by this model's seconds, and forwards
  /// overlap the rounds before them.
  const CostModel *model = nullptr;
  /// Where the candidate schedules run at once; none: one after another.
  /// The result is the same either way.
  llvm::ThreadPoolInterface *pool = nullptr;
  /// From this many messages on, with a model and a pool, the best
  /// candidate before the list schedules after the first is refined on the
  /// pool while they run, and that refinement is kept where none of them
  /// beats it: at scale none does (2,048 ranks: rounds in lockstep, 0.653
  /// s, against 0.69 s and slower for the lists), and the refiner's half a
  /// second would otherwise follow them alone. On smaller plans the lists
  /// mostly win and a refine takes little, so that work would mostly be
  /// thrown away (the seed-1 layout sweep: 268 CPU seconds against 232).
  /// The plan is the same either way.
  size_t refineBesideListsFrom = size_t(1) << 18;
};

struct ScheduleStats {
  int64_t steps = 0;
  int64_t stagingPeak = 0;
  /// With a model: its time of the fastest schedule tried, and of that
  /// schedule once refined (before the steps it left empty are dropped).
  double candidateSeconds = 0;
  double refinedSeconds = 0;
};

/// Assigns every message a step so that each forward comes in a later step
/// than the messages that bring its bytes to its sender (with a model; each
/// round after the last without one), and each rank's staging bytes per
/// step stay within the budget; sorts the messages by (step, sender, receiver) so that every rank
/// issues its sends and receives in an order that matches its peers. Fails,
/// naming the message, when one message alone needs more staging than the
/// budget.
llvm::Expected<ScheduleStats> schedule(Plan &plan,
                                       const ScheduleOptions &options);

/// What schedule() made of a plan: its messages in order, with their steps,
/// the step count and budget, and the statistics. Kept by a caller that
/// scheduled a plan on the way (fuse, to choose its messages), so that the
/// same plan need not be scheduled again.
struct ScheduledMessages {
  std::vector<Message> messages;
  int64_t numSteps = 0;
  int64_t stagingBudget = 0;
  ScheduleStats stats;

  /// Gives `plan`, whose messages were the ones scheduled, this schedule.
  void applyTo(Plan &plan) &&;
};

} // namespace m2n::plan

#endif // M2N_PLAN_SCHEDULE_H
