//===- PlanTraffic.cpp - What a plan moves between its ranks --------------===//

#include "PlanTraffic.h"

#include "plan_internal.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"

namespace m2n::driver {
namespace {

struct Message {
  uint64_t step;
  uint32_t sender, receiver;
  uint64_t bytes;
};

Traffic zeroTraffic(uint32_t size) {
  Traffic traffic;
  traffic.size = size;
  traffic.bytes.assign(uint64_t(size) * size, 0);
  traffic.messages.assign(uint64_t(size) * size, 0);
  for (std::vector<uint64_t> *perRank :
       {&traffic.sendBytes, &traffic.receiveBytes, &traffic.sendMessages,
        &traffic.receiveMessages, &traffic.localCopyBytes})
    perRank->assign(size, 0);
  return traffic;
}

/// The bytes a COPY moves: one run for every index vector of its levels.
uint64_t copiedBytes(const Instruction &copy) {
  uint64_t bytes = copy.runs.run_bytes;
  for (uint32_t level = 0; level < copy.levels; ++level)
    bytes *= static_cast<uint64_t>(copy.count[level]);
  return bytes;
}

/// Adds `rank`'s local copies to `traffic` and its sends to `messages`; a
/// validated plan matches every send with a receive, so the senders' side
/// alone sees every message once.
void readRank(const LoadedPlan &plan, uint32_t rank, Traffic &traffic,
              std::vector<Message> &messages) {
  uint64_t step = 0;
  for (const Instruction &instruction : plan.instructions(rank)) {
    switch (instruction.opcode) {
    case M2N_OP_STEP:
      step = instruction.step;
      break;
    case M2N_OP_COPY:
      traffic.localCopyBytes[rank] += copiedBytes(instruction);
      break;
    case M2N_OP_SEND:
    case M2N_OP_SEND_DIRECT:
      messages.push_back(
          {step, rank, instruction.transfer.peer, instruction.transfer.bytes});
      break;
    default:
      break;
    }
  }
}

void addMessage(const Message &message, Traffic &traffic) {
  uint64_t pair = uint64_t(message.sender) * traffic.size + message.receiver;
  traffic.bytes[pair] += message.bytes;
  ++traffic.messages[pair];
  traffic.sendBytes[message.sender] += message.bytes;
  traffic.receiveBytes[message.receiver] += message.bytes;
  ++traffic.sendMessages[message.sender];
  ++traffic.receiveMessages[message.receiver];
  traffic.wireBytes += message.bytes;
  ++traffic.messageCount;
}

/// The rank among `ranks` with the most `bytes`, the lowest on a tie.
std::pair<uint32_t, uint64_t> busiest(llvm::ArrayRef<uint32_t> ranks,
                                      llvm::ArrayRef<uint64_t> bytes) {
  std::pair<uint32_t, uint64_t> best{0, 0};
  for (uint32_t rank : ranks)
    if (bytes[rank] > best.second ||
        (bytes[rank] == best.second && rank < best.first))
      best = {rank, bytes[rank]};
  return best;
}

/// What the messages of one step move. `sent` and `received` are zero per
/// rank on entry and left so, to be reused from step to step.
StepTraffic stepOf(llvm::ArrayRef<Message> messages,
                   std::vector<uint64_t> &sent,
                   std::vector<uint64_t> &received) {
  StepTraffic step;
  std::vector<uint32_t> senders, receivers;
  for (const Message &message : messages) {
    ++step.messages;
    step.bytes += message.bytes;
    step.largestMessage = std::max(step.largestMessage, message.bytes);
    // Every message has at least a byte, so a rank's first one finds 0.
    step.sendingRanks += sent[message.sender] == 0;
    step.receivingRanks += received[message.receiver] == 0;
    sent[message.sender] += message.bytes;
    received[message.receiver] += message.bytes;
    senders.push_back(message.sender);
    receivers.push_back(message.receiver);
  }
  std::tie(step.busiestSender, step.busiestSenderBytes) =
      busiest(senders, sent);
  std::tie(step.busiestReceiver, step.busiestReceiverBytes) =
      busiest(receivers, received);
  for (const Message &message : messages)
    sent[message.sender] = received[message.receiver] = 0;
  return step;
}

} // namespace

Traffic trafficOf(const LoadedPlan &plan) {
  Traffic traffic = zeroTraffic(plan.worldSize());
  std::vector<Message> messages;
  for (uint32_t rank = 0; rank < plan.worldSize(); ++rank)
    readRank(plan, rank, traffic, messages);
  for (const Message &message : messages)
    addMessage(message, traffic);
  for (uint64_t bytes : traffic.localCopyBytes)
    traffic.localCopyTotal += bytes;
  for (uint32_t rank = 0; rank < traffic.size; ++rank) {
    traffic.senders += traffic.sendBytes[rank] > 0;
    traffic.receivers += traffic.receiveBytes[rank] > 0;
  }

  llvm::stable_sort(messages, [](const Message &a, const Message &b) {
    return a.step < b.step;
  });
  traffic.steps.resize(plan.header().step_count);
  std::vector<uint64_t> sent(plan.worldSize()), received(plan.worldSize());
  llvm::ArrayRef<Message> rest = messages;
  while (!rest.empty()) {
    uint64_t step = rest.front().step;
    llvm::ArrayRef<Message> ofStep = rest.take_while(
        [&](const Message &message) { return message.step == step; });
    traffic.steps[step] = stepOf(ofStep, sent, received);
    rest = rest.drop_front(ofStep.size());
  }
  return traffic;
}

Traffic inBlocks(const Traffic &traffic, uint32_t blockSize) {
  uint32_t blocks = (traffic.size + blockSize - 1) / blockSize;
  Traffic result = zeroTraffic(blocks);
  for (uint32_t sender = 0; sender < traffic.size; ++sender)
    for (uint32_t receiver = 0; receiver < traffic.size; ++receiver) {
      uint64_t pair =
          uint64_t(sender / blockSize) * blocks + receiver / blockSize;
      result.bytes[pair] += traffic.pairBytes(sender, receiver);
      result.messages[pair] += traffic.pairMessages(sender, receiver);
    }
  for (uint32_t rank = 0; rank < traffic.size; ++rank) {
    uint32_t block = rank / blockSize;
    result.sendBytes[block] += traffic.sendBytes[rank];
    result.receiveBytes[block] += traffic.receiveBytes[rank];
    result.sendMessages[block] += traffic.sendMessages[rank];
    result.receiveMessages[block] += traffic.receiveMessages[rank];
    result.localCopyBytes[block] += traffic.localCopyBytes[rank];
  }
  result.wireBytes = traffic.wireBytes;
  result.messageCount = traffic.messageCount;
  result.localCopyTotal = traffic.localCopyTotal;
  result.senders = traffic.senders;
  result.receivers = traffic.receivers;
  return result;
}

} // namespace m2n::driver
