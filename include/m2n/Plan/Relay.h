//===- Relay.h - Forwarding regions among destination ranks ----*- C++ -*-===//

#ifndef M2N_PLAN_RELAY_H
#define M2N_PLAN_RELAY_H

#include "m2n/Plan/CostModel.h"
#include "m2n/Plan/Parallel.h"

namespace m2n::plan {

struct RelayOptions {
  bool enable = true;
  /// Whether exchanges and gathers among the receivers are considered
  /// beside chains and trees.
  bool exchange = true;
  /// Regions are forwarded in chunks of about this many bytes (all members)
  /// so that the hops of a chain overlap; 0 lets the cost model choose.
  int64_t chunkBytes = 0;
  /// Most rounds a plan may use.
  int32_t maxRounds = 64;
  /// Where groups may be looked through at once (see forEachGroup).
  llvm::ThreadPoolInterface *pool = nullptr;
};

struct RelayStats {
  /// Regions now forwarded among destination ranks, and the sends from the
  /// source side that this saved.
  int64_t relayedRegions = 0;
  int64_t sourceSendsSaved = 0;
  /// Rounds the plan uses afterwards.
  int32_t rounds = 0;
};

/// Where one region goes to many destination ranks (replicated
/// destinations), lets receivers forward it to the others in later rounds,
/// as an exchange among them or a chain or tree pipelined in chunks, when
/// the cost model says that is faster or no slower; otherwise leaves the
/// region as it is. A destination box held in many pieces by the source
/// side and by many receivers is gathered among them instead. Each relayed
/// byte then leaves the source side once. A plan whose slices change loses
/// any messages it had: fuse it afterwards.
RelayStats relay(Plan &plan, const CostModel &model,
                 const RelayOptions &options);

} // namespace m2n::plan

#endif // M2N_PLAN_RELAY_H
