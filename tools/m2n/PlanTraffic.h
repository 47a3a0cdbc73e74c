//===- PlanTraffic.h - What a plan moves between its ranks ------*- C++ -*-===//
//
// The traffic of a plan, read off its instructions: the bytes and messages
// between every ordered pair of ranks over all steps, each rank's totals,
// what each step moves, and what stays on a rank as local copies. The
// pictures of `m2n inspect --svg` and `--html` draw it.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_TOOLS_M2N_PLANTRAFFIC_H
#define M2N_TOOLS_M2N_PLANTRAFFIC_H

#include <cstdint>
#include <vector>

namespace m2n {
class LoadedPlan;
} // namespace m2n

namespace m2n::driver {

/// What one step moves between ranks.
struct StepTraffic {
  uint64_t messages = 0;
  uint64_t bytes = 0;
  uint64_t largestMessage = 0;
  /// The ranks that send and receive the most in the step (the lowest rank
  /// of a tie), and how much; rank 0 and 0 bytes in a step without messages.
  uint32_t busiestSender = 0;
  uint64_t busiestSenderBytes = 0;
  uint32_t busiestReceiver = 0;
  uint64_t busiestReceiverBytes = 0;
  /// How many distinct ranks send, and receive, in the step.
  uint32_t sendingRanks = 0;
  uint32_t receivingRanks = 0;
};

/// The bytes a plan moves over all its steps. The "ranks" may also be
/// blocks of consecutive ranks (see inBlocks).
struct Traffic {
  /// Ranks (or blocks) along each side of the matrix.
  uint32_t size = 0;
  /// From sender s to receiver r, at [s * size + r]. A rank never sends to
  /// itself, so the diagonal of a matrix of ranks is 0: what stays on a rank
  /// is a local copy.
  std::vector<uint64_t> bytes;
  std::vector<uint64_t> messages;
  /// Each rank's totals.
  std::vector<uint64_t> sendBytes, receiveBytes;
  std::vector<uint64_t> sendMessages, receiveMessages;
  std::vector<uint64_t> localCopyBytes;
  /// Every step of the plan, in order; empty for blocks.
  std::vector<StepTraffic> steps;
  uint64_t wireBytes = 0;
  uint64_t messageCount = 0;
  uint64_t localCopyTotal = 0;
  /// The ranks (not blocks) that send, and that receive, in any step: those
  /// a step leaves idle are these less its own.
  uint32_t senders = 0;
  uint32_t receivers = 0;

  uint64_t pairBytes(uint32_t sender, uint32_t receiver) const {
    return bytes[uint64_t(sender) * size + receiver];
  }
  uint64_t pairMessages(uint32_t sender, uint32_t receiver) const {
    return messages[uint64_t(sender) * size + receiver];
  }
};

/// The traffic of a validated plan.
Traffic trafficOf(const LoadedPlan &plan);

/// `traffic` summed over blocks of `blockSize` consecutive ranks, the last
/// block holding what is left: block b is ranks [b * blockSize, (b + 1) *
/// blockSize). Pairs within a block sum into the block's diagonal.
Traffic inBlocks(const Traffic &traffic, uint32_t blockSize);

} // namespace m2n::driver

#endif // M2N_TOOLS_M2N_PLANTRAFFIC_H
