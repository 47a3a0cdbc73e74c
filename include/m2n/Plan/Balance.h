//===- Balance.h - Choosing senders among replicas --------------*- C++ -*-===//

#ifndef M2N_PLAN_BALANCE_H
#define M2N_PLAN_BALANCE_H

#include "m2n/Plan/Parallel.h"
#include "m2n/Plan/Plan.h"

namespace m2n::plan {

struct BalanceOptions {
  /// Split a region among its holders when that lowers the busiest sender.
  bool split = true;
  /// Regions smaller than this (bytes, all members) are never split.
  int64_t minSplitBytes = int64_t(1) << 20;
  /// Where groups may be looked through at once (see forEachGroup).
  llvm::ThreadPoolInterface *pool = nullptr;
};

struct BalanceStats {
  /// The busiest sender's bytes (over all remote slices) before and after,
  /// and the ideal, a lower bound for any choice of senders: the bytes that
  /// only the ranks of a set can send, spread evenly over the set, for each
  /// region's holder set and for all holders together; at least the
  /// busiest rank's bytes that are not balanced (relays); at least the
  /// largest region that may not be split.
  int64_t maxSendBytesBefore = 0;
  int64_t maxSendBytesAfter = 0;
  int64_t idealMaxSendBytes = 0;
  int64_t splitRegions = 0;
};

/// Re-chooses the sender of every round-0 remote slice among the ranks that
/// hold its region in the source layout so that the busiest sender (over all
/// groups, weighting each slice by its group's member count) carries as
/// little as possible, splitting regions among holders when that helps.
/// Deterministic: the same plan gives the same choice.
BalanceStats balance(Plan &plan, const BalanceOptions &options);

} // namespace m2n::plan

#endif // M2N_PLAN_BALANCE_H
