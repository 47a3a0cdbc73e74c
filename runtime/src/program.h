//===- program.h - A rank's part of a plan, as it runs ----------*- C++ -*-===//
//
// The executor decodes its rank's instructions once, into the order they
// run in: the local copies, then per step the packs, the transfers (one
// exchange) and the unpacks.
//
// Where the transport shares an address space (the sim world), the
// executor then pulls what messages it can: the receiver copies such a
// message itself, straight from the sender's bindings into its own, with
// walks that fuse the sender's PACKs and the receiver's UNPACKs of it.
// Each of its bytes is copied once instead of three times (packed,
// carried into the receiver's staging, unpacked), and neither staging
// buffer is touched. Every rank decides the same for every message, as a
// function of the plan alone: the sender must know not to pack what the
// receiver pulls.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_PROGRAM_H
#define M2N_PROGRAM_H

#include "plan_internal.h"
#include "walk.h"

#include <cstdint>
#include <vector>

namespace m2n {

/// A SEND, RECV, SEND_DIRECT or RECV_DIRECT.
struct Transfer {
  bool send = false;
  bool direct = false; // from or into a binding rather than staging
  uint32_t peer = 0;
  uint32_t binding = 0; // direct only
  uint64_t offset = 0;  // in staging, or (direct) in the binding
  uint64_t bytes = 0;
  /// The receiver copies the message itself, from the sender's bindings
  /// into its own; a pulled receive holds the walks that do it (from side:
  /// the sender's bindings, to side: the receiver's).
  bool pulled = false;
  std::vector<Walk> pull;
};

/// One step of a rank, its records grouped by phase.
struct StepProgram {
  uint64_t step = 0;
  std::vector<Walk> packs;
  std::vector<Transfer> transfers;
  std::vector<Walk> unpacks;
};

struct Program {
  std::vector<Walk> copies;
  std::vector<StepProgram> steps;
};

/// `rank`'s instructions as they run; empty for a rank without work.
Program decodeProgram(const LoadedPlan &plan, uint32_t rank);

/// Marks the messages of `rank` that are pulled and drops the staging work
/// they no longer need: the PACKs that only fed pulled sends, and the parts
/// of UNPACKs that read pulled receives. `program` is the rank's, as
/// decodeProgram gives it. A message is pulled when the walks of its two
/// sides fuse, and, on each side that goes through staging, the rank's
/// staging holds nothing from one step to the next (so that bytes it no
/// longer writes are never read): in each of its steps, every staging send
/// is covered by the step's PACKs and every UNPACK by its staging receives,
/// and neither the PACKs nor the UNPACKs overlap. Compiled plans always
/// qualify; other messages keep the staged path.
void pullMessages(const LoadedPlan &plan, uint32_t rank, Program *program);

} // namespace m2n

#endif // M2N_PROGRAM_H
