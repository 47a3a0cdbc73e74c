//===- Schedule.cpp - Ordering messages into steps ------------------------===//
//
// A plan takes, by the cost model, the sum over steps of its busiest rank's
// time and of every step's own cost, so a step that one rank fills while
// others idle costs time that no rank's total accounts for.
//
// A plan without relays has no order to keep: its steps are the fewest that
// its busiest rank's staging allows, and its messages go, largest first,
// each into the step with staging room where it adds least to the plan's
// time (nothing while its ranks stay within the even share, the busiest
// rank's work over the steps) and, among equals, where its two ranks are
// least busy, so that every rank's work spreads evenly over the steps
// (longest-processing-time first). A message that fits in no step opens
// one. Without a model, messages go largest first into the earliest step
// with room: first-fit decreasing.
//
// A plan with relays has forwards, each of which must come in a later step
// than every message that brings its bytes to its sender; nothing else
// orders it: rounds do not run in lockstep. Rounds are placed in order, so
// that a message's inputs are placed before it. A message that others wait
// on goes in the earliest step after its inputs where its ranks are within
// their eager share (the part of the even share such messages take of each
// rank's work), so that what the forwards need arrives at a steady rate
// from the first step on; the others go, after their inputs, where they add
// least to the plan's time. The source side's sends, the forwards and the
// direct messages then overlap, and a pipeline fills and drains in a step
// or two. The step count weighs that fill and drain, about one share per
// hop, against every step's own cost: a few counts are tried, and rounds
// one after another too.
//
// Placing message by message into fixed steps packs poorly where messages
// are large against a step's share, or where zero-copy messages, which
// take no staging, mix with staged ones on ranks that both send and
// receive. So list schedules are tried as well, for every plan: steps are
// filled one after another, each with the ready messages (those whose
// inputs arrived in earlier steps) that fit its share on both of their
// ranks, longest chains first; where there are forwards, the fastest of
// them once more in a second order (ListOrder::NeedBy), and, while the
// looks allow, in a third with senders started otherwise (SenderTurns),
// and at step counts near the fastest's. The fastest of all by the model
// is kept.
//
//===----------------------------------------------------------------------===//

#include "m2n/Plan/Schedule.h"

#include "m2n/Plan/Parallel.h"

#include "BoxIndex.h"
#include "SliceRecords.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ThreadPool.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <tuple>

using namespace m2n;
using namespace m2n::plan;

static bool partLess(const MessagePart &a, const MessagePart &b) {
  return std::tie(a.group, a.slice, a.memberBegin, a.memberEnd) <
         std::tie(b.group, b.slice, b.memberBegin, b.memberEnd);
}

static bool partsLess(const Message &a, const Message &b) {
  return std::lexicographical_compare(a.parts.begin(), a.parts.end(),
                                      b.parts.begin(), b.parts.end(), partLess);
}

/// The staging bytes a message takes on each of its ends.
static int64_t stagingOf(const Message &message) {
  return message.zeroCopy ? 0 : message.bytes;
}

/// Where a message comes from, for diagnostics: its ranks, its first tensor
/// and its size.
static std::string describe(const Plan &plan, const Message &message) {
  std::string text = llvm::formatv("message from rank {0} to rank {1}",
                                   message.sender, message.receiver);
  if (!message.parts.empty()) {
    const MessagePart &part = message.parts.front();
    const TransferGroup &group = plan.groups[part.group];
    if (part.memberBegin >= 0 &&
        part.memberBegin < static_cast<int32_t>(group.members.size())) {
      int32_t tensor = group.members[part.memberBegin];
      if (tensor >= 0 && tensor < static_cast<int32_t>(plan.tensors.size()))
        text += " (tensor \"" + plan.tensors[tensor].name + "\"" +
                (message.parts.size() > 1 ? " and more)" : ")");
    }
  }
  return text + llvm::formatv(" of {0} bytes", message.bytes).str();
}

/// The round of every message: that of the slices it carries. A message
/// without parts keeps its step as its round.
static llvm::Expected<std::vector<int64_t>> roundsOf(const Plan &plan) {
  std::vector<int64_t> rounds;
  rounds.reserve(plan.messages.size());
  for (const Message &message : plan.messages) {
    if (message.parts.empty()) {
      rounds.push_back(message.step);
      continue;
    }
    const MessagePart &part = message.parts.front();
    if (part.group < 0 ||
        part.group >= static_cast<int32_t>(plan.groups.size()) ||
        part.slice < 0 ||
        part.slice >=
            static_cast<int32_t>(plan.groups[part.group].slices.size()))
      return llvm::createStringError(llvm::formatv(
          "message from rank {0} to rank {1} carries slice {2} "
          "of group {3}, which does not exist",
          message.sender, message.receiver, part.slice, part.group));
    rounds.push_back(plan.groups[part.group].slices[part.slice].round);
  }
  return rounds;
}

namespace {
/// A message to sort by (first, second, third, sender, receiver), then by
/// its parts.
/// Sorting these rather than the messages keeps the comparisons within a
/// small array: a plan has tens of thousands of messages. The parts compare
/// lexicographically, so `head`, whether there are parts and the first one,
/// decides between most messages of a pair without reading them.
struct MessageKey {
  int64_t first = 0;
  int64_t second = 0;
  int64_t third = 0;
  int64_t sender = 0;
  int64_t receiver = 0;
  std::array<int32_t, 5> head = {};
  size_t index = 0;

  MessageKey(int64_t first, int64_t second, int64_t third,
             const Message &message, size_t index)
      : first(first), second(second), third(third), sender(message.sender),
        receiver(message.receiver), index(index) {
    if (!message.parts.empty()) {
      const MessagePart &part = message.parts.front();
      head = {1, part.group, part.slice, part.memberBegin, part.memberEnd};
    }
  }
};

/// The order of MessageKeys of messages of `plan`; messages alike in all of
/// it (only a hand-made plan has them) keep their order.
struct KeyLess {
  const Plan &plan;
  bool operator()(const MessageKey &a, const MessageKey &b) const {
    auto order = [](const MessageKey &key) {
      return std::tie(key.first, key.second, key.third, key.sender,
                      key.receiver, key.head);
    };
    if (order(a) != order(b))
      return order(a) < order(b);
    const Message &x = plan.messages[a.index], &y = plan.messages[b.index];
    if (partsLess(x, y) || partsLess(y, x))
      return partsLess(x, y);
    return a.index < b.index;
  }
};

/// Sorts `keys` by KeyLess.
void sortByKey(const Plan &plan, std::vector<MessageKey> &keys) {
  llvm::sort(keys, KeyLess{plan});
}

/// Sorts `keys`, whose `first` is a step in [0, numSteps), as sortByKey
/// would: a stable counting sort by step, then each step's keys on their
/// own, on the pool's threads. Fuse leaves messages in order of (round,
/// sender, receiver), so where a step holds one round its keys are in pair
/// order already, and only each pair's messages are left to sort.
void sortBySteps(const Plan &plan, std::vector<MessageKey> &keys,
                 int64_t numSteps, llvm::ThreadPoolInterface *pool) {
  std::vector<size_t> next(static_cast<size_t>(numSteps) + 1, 0);
  for (const MessageKey &key : keys)
    ++next[key.first + 1];
  for (size_t step = 1; step < next.size(); ++step)
    next[step] += next[step - 1];
  std::vector<size_t> stepStart = next;
  std::vector<MessageKey> byStep(keys.size(), keys.front());
  for (const MessageKey &key : keys)
    byStep[next[key.first]++] = key;
  keys = std::move(byStep);
  auto pair = [](const MessageKey &key) {
    return std::tie(key.sender, key.receiver);
  };
  forEachIndex(static_cast<size_t>(numSteps), pool, [&](size_t step) {
    auto first = keys.begin() + static_cast<ptrdiff_t>(stepStart[step]);
    auto last = keys.begin() + static_cast<ptrdiff_t>(stepStart[step + 1]);
    if (!std::is_sorted(first, last,
                        [&](const MessageKey &a, const MessageKey &b) {
                          return pair(a) < pair(b);
                        })) {
      std::sort(first, last, KeyLess{plan});
      return;
    }
    for (auto begin = first, end = first; begin != last; begin = end) {
      end = std::find_if(begin + 1, last, [&](const MessageKey &key) {
        return pair(key) != pair(*begin);
      });
      if (end - begin > 1)
        std::sort(begin, end, KeyLess{plan});
    }
  });
}

/// What each rank does in each step of one round: the staging bytes it
/// uses and, when the steps are balanced, its busy seconds each way. Ranks
/// are numbered densely and each has a row of steps, so that placing a
/// message, which looks at every step of its two ranks, reads two short
/// rows: a real round has tens of thousands of messages and may have a
/// hundred steps.
class StepLoads {
public:
  StepLoads(const Plan &plan, llvm::ArrayRef<size_t> indices, int64_t budget,
             const CostModel *model)
      : budget(budget), model(model), ranks(roundRanks(plan, indices)),
        index(ranks) {}

  /// Places a message in the earliest step with room at both ends and
  /// returns that step's index.
  int64_t place(const Message &message) {
    int64_t bytes = stagingOf(message);
    auto [from, to] = slots(message);
    const int64_t *sent = staging.data() + from * capacity;
    const int64_t *received = staging.data() + to * capacity;
    for (size_t step = 0; step < numSteps; ++step)
      if (fits(sent[step], received[step], message, bytes))
        return take(step, message);
    open(1);
    return take(numSteps - 1, message);
  }

  /// Places a message in the step of [first, last] with room where its ends
  /// are least busy, the earliest among equals: each rank's work then
  /// spreads evenly over the steps, and no step waits on a rank that others
  /// left idle. Without room there, the message goes to the least busy
  /// later step with room, or opens one.
  int64_t balance(const Message &message, int64_t first, int64_t last) {
    if (static_cast<size_t>(first) >= numSteps)
      open(first + 1 - static_cast<int64_t>(numSteps));
    size_t end = std::min(numSteps, static_cast<size_t>(last) + 1);
    std::optional<size_t> best =
        leastBusy(message, static_cast<size_t>(first), end);
    if (!best)
      best = leastBusy(message, std::max(end, static_cast<size_t>(first)),
                       numSteps);
    if (!best) {
      open(1);
      best = numSteps - 1;
    }
    return take(*best, message);
  }

  /// Places a message that others wait on in the earliest step of [first,
  /// last] with room where each end is idle so far or within its eager
  /// share with it, so that what others wait on arrives at a steady rate
  /// from the first step on. Without such a step, as balance() places it.
  int64_t soonest(const Message &message, int64_t first, int64_t last) {
    int64_t bytes = stagingOf(message);
    auto [from, to] = slots(message);
    double seconds =
        model->messageSeconds(message.sender, message.receiver, message.bytes);
    size_t end = std::min(numSteps, static_cast<size_t>(last) + 1);
    for (size_t step = static_cast<size_t>(first); step < end; ++step)
      if (within(sendSeconds[from * capacity + step], seconds,
                 eagerSend[from]) &&
          within(receiveSeconds[to * capacity + step], seconds,
                 eagerReceive[to]) &&
          fits(staging[from * capacity + step], staging[to * capacity + step],
               message, bytes))
        return take(step, message);
    return balance(message, first, last);
  }

  /// What placing a message reads of it, worked out once: a list schedule
  /// looks at each waiting message again in every step.
  struct Footprint {
    uint32_t from, to;
    double seconds;
    int64_t bytes;
  };
  Footprint footprint(const Message &message) const {
    auto [from, to] = slots(message);
    double seconds = model ? model->messageSeconds(message.sender,
                                                   message.receiver,
                                                   message.bytes)
                           : 0;
    return {static_cast<uint32_t>(from), static_cast<uint32_t>(to), seconds,
            stagingOf(message)};
  }

  size_t slotCount() const { return ranks.size(); }
  int64_t stagingBudget() const { return budget; }

  /// Whether a rank busy `busy` seconds in a step stays within `limit`
  /// with a message of `seconds` more: a rank that is idle always does.
  static bool within(double busy, double seconds, double limit) {
    return busy == 0 || busy + seconds <= limit;
  }
  /// Whether a message of `bytes` staging fits a budget of `budget` beside
  /// `sent` and `received` bytes that its ends stage already.
  static bool fits(int64_t sent, int64_t received, int64_t bytes, bool self,
                   int64_t budget) {
    if (bytes == 0)
      return true;
    // A message to oneself would be staged on both sides of the one rank.
    if (self)
      return sent + 2 * bytes <= budget;
    return sent + bytes <= budget && received + bytes <= budget;
  }
  /// What steps cost whose busiest ranks take `longest`: each its own cost
  /// too.
  static double stepsSeconds(llvm::ArrayRef<double> longest,
                             double stepSeconds) {
    double total = static_cast<double>(longest.size()) * stepSeconds;
    for (double seconds : longest)
      total += seconds;
    return total;
  }

  /// Sets the seconds each rank may work in a step at no cost, `seconds`:
  /// the busiest rank's work over the steps, which its steps take in any
  /// case. Of it, each rank's eager share is the part that messages others
  /// wait on take of its work (`eager` marks them): the rest of the share
  /// is left to the messages that wait, in the steps after.
  void setShare(double seconds) { share = seconds; }
  void setShare(const Plan &plan, const std::vector<bool> &eager,
                double seconds) {
    setShare(seconds);
    std::vector<double> sending(ranks.size(), 0), receiving(ranks.size(), 0);
    eagerSend.assign(ranks.size(), 0);
    eagerReceive.assign(ranks.size(), 0);
    for (size_t m = 0; m < plan.messages.size(); ++m) {
      const Message &message = plan.messages[m];
      auto [from, to] = slots(message);
      double time = model->messageSeconds(message.sender, message.receiver,
                                          message.bytes);
      sending[from] += time;
      receiving[to] += time;
      if (eager[m]) {
        eagerSend[from] += time;
        eagerReceive[to] += time;
      }
    }
    for (size_t slot = 0; slot < ranks.size(); ++slot) {
      eagerSend[slot] = sending[slot] > 0
                            ? share * eagerSend[slot] / sending[slot]
                            : share;
      eagerReceive[slot] = receiving[slot] > 0
                               ? share * eagerReceive[slot] / receiving[slot]
                               : share;
    }
  }

  /// Opens `count` empty steps.
  void open(int64_t count) {
    numSteps += static_cast<size_t>(count);
    if (numSteps <= capacity)
      return;
    // Rows grow by doubling, so that opening steps one at a time stays
    // linear.
    size_t grown = std::max(numSteps, 2 * capacity);
    regrow(staging, grown);
    regrow(sendSeconds, grown);
    regrow(receiveSeconds, grown);
    longest.resize(grown, 0);
    capacity = grown;
  }

  /// Opens the fewest steps that the messages `indices` take within the
  /// staging budget: their busiest rank's staging over it.
  void openFewest(const Plan &plan, llvm::ArrayRef<size_t> indices) {
    std::vector<int64_t> total(ranks.size(), 0);
    int64_t most = 0;
    for (size_t i : indices) {
      const Message &message = plan.messages[i];
      auto [from, to] = slots(message);
      // A message to oneself counts twice, as fits() counts it.
      for (size_t slot : {from, to}) {
        total[slot] += stagingOf(message);
        most = std::max(most, total[slot]);
      }
    }
    open(std::max<int64_t>(1, (most + budget - 1) / budget));
  }

  int64_t steps() const { return static_cast<int64_t>(numSteps); }
  int64_t peak() const { return peakBytes; }
  /// What the steps take by the model: each its busiest rank and its own
  /// cost.
  double seconds() const {
    return stepsSeconds(llvm::ArrayRef(longest).take_front(numSteps),
                        model->getTopology().stepSeconds);
  }

private:
  /// The step of [begin, end) with room where the message adds least to
  /// what the plan costs, the sum of the steps' busiest ranks: a step whose
  /// busiest rank stays within the share or as it is costs nothing more.
  /// Among equals, the step
  /// where the message's ends are least busy, which spreads each rank's work
  /// over the steps, then the earliest.
  std::optional<size_t> leastBusy(const Message &message, size_t begin,
                                  size_t end) const {
    int64_t bytes = stagingOf(message);
    auto [from, to] = slots(message);
    const int64_t *sent = staging.data() + from * capacity;
    const int64_t *received = staging.data() + to * capacity;
    const double *sending = sendSeconds.data() + from * capacity;
    const double *receiving = receiveSeconds.data() + to * capacity;
    double seconds =
        model->messageSeconds(message.sender, message.receiver, message.bytes);
    std::optional<size_t> best;
    std::pair<double, double> bestCost;
    for (size_t step = begin; step < end; ++step) {
      double busy = std::max(sending[step], receiving[step]);
      std::pair<double, double> cost = {
          std::max(0.0, busy + seconds - std::max(longest[step], share)),
          busy};
      if ((!best || cost < bestCost) &&
          fits(sent[step], received[step], message, bytes)) {
        best = step;
        bestCost = cost;
      }
    }
    return best;
  }

  /// The distinct ranks of the messages `indices`.
  static std::vector<int64_t> roundRanks(const Plan &plan,
                                         llvm::ArrayRef<size_t> indices) {
    std::vector<int64_t> result;
    result.reserve(2 * indices.size());
    for (size_t i : indices) {
      result.push_back(plan.messages[i].sender);
      result.push_back(plan.messages[i].receiver);
    }
    llvm::sort(result);
    result.erase(llvm::unique(result), result.end());
    return result;
  }

  /// Gives every rank's row `grown` steps, keeping what it holds.
  template <typename T> void regrow(std::vector<T> &table, size_t grown) {
    std::vector<T> wider(ranks.size() * grown, T());
    for (size_t slot = 0; slot < ranks.size(); ++slot)
      std::copy_n(table.begin() + slot * capacity, capacity,
                  wider.begin() + slot * grown);
    table = std::move(wider);
  }

  std::pair<size_t, size_t> slots(const Message &message) const {
    return {static_cast<size_t>(index.find(message.sender)),
            static_cast<size_t>(index.find(message.receiver))};
  }

  bool fits(int64_t sent, int64_t received, const Message &message,
            int64_t bytes) const {
    return fits(sent, received, bytes, message.sender == message.receiver,
                budget);
  }

  int64_t take(size_t step, const Message &message) {
    return take(step, footprint(message));
  }
  int64_t take(size_t step, const Footprint &message) {
    for (size_t slot : {message.from, message.to}) {
      int64_t &rankBytes = staging[slot * capacity + step];
      rankBytes += message.bytes;
      peakBytes = std::max(peakBytes, rankBytes);
    }
    if (model) {
      double &sending = sendSeconds[message.from * capacity + step];
      double &receiving = receiveSeconds[message.to * capacity + step];
      sending += message.seconds;
      receiving += message.seconds;
      longest[step] = std::max({longest[step], sending, receiving});
    }
    return static_cast<int64_t>(step);
  }

  int64_t budget;
  const CostModel *model;
  int64_t peakBytes = 0;
  std::vector<int64_t> ranks;
  RankIndex index;
  size_t numSteps = 0;
  /// Rank slot r, step s: [r * capacity + s], for s < numSteps <= capacity.
  size_t capacity = 0;
  std::vector<int64_t> staging;
  std::vector<double> sendSeconds, receiveSeconds;
  /// Per step, its busiest rank's seconds: what the step costs.
  std::vector<double> longest;
  double share = 0;
  /// Per rank slot, its eager share each way (see setShare).
  std::vector<double> eagerSend, eagerReceive;
};

/// The messages each message waits for: those that bring the bytes it
/// forwards to its sender (same group, overlapping members, meeting boxes).
/// Messages that pass on the same bytes wait on the same messages (a rank
/// forwarding a chunk to each of its peers, say), so each distinct list of
/// inputs, an input set, is kept once: at 2,048 ranks (DeepSeek-V3 fsdp1024
/// -> dp16,ep64) 1.6 million messages wait on 40 million inputs in all, and
/// on 1.1 million sets of 19 million. The messages that are inputs of the
/// same sets form a block, so that a list schedule counts down a block's
/// messages and then its sets: 1.6 and 5.9 million decrements there, where
/// counting down each input's sets took 19 million.
class Dependencies {
public:
  /// The set of a message that waits on nothing.
  static constexpr uint32_t kNoSet = std::numeric_limits<uint32_t>::max();

  Dependencies(const Plan &plan, llvm::ThreadPoolInterface *pool)
      : setOfMessage(plan.messages.size(), kNoSet), setStart(1, 0) {
    indexRecords(plan);
    indexArrivals(plan);
    // The messages look for their inputs by chunks, on the pool, and each
    // chunk keeps its distinct lists: a rank's messages are next to each
    // other, and so are most that wait on the same messages.
    constexpr size_t kChunk = size_t{1} << 14;
    size_t count = plan.messages.size();
    std::vector<ChunkSets> chunks((count + kChunk - 1) / kChunk);
    forEachIndex(chunks.size(), pool, [&](size_t c) {
      findSets(plan, c * kChunk, std::min(count, (c + 1) * kChunk), chunks[c]);
    });
    // The chunks' sets, numbered after those of the chunks before.
    for (size_t c = 0; c < chunks.size(); ++c) {
      auto base = static_cast<uint32_t>(sets());
      for (size_t m = c * kChunk; m < std::min(count, (c + 1) * kChunk); ++m)
        if (setOfMessage[m] != kNoSet)
          setOfMessage[m] += base;
      size_t offset = setInputs.size();
      setInputs.insert(setInputs.end(), chunks[c].inputs.begin(),
                       chunks[c].inputs.end());
      for (size_t end : llvm::drop_begin(chunks[c].start))
        setStart.push_back(offset + end);
      chunks[c] = ChunkSets();
    }
    indexSets(count);
  }

  /// The messages that message m waits on, in increasing order.
  llvm::ArrayRef<uint32_t> of(size_t m) const {
    uint32_t set = setOfMessage[m];
    return set == kNoSet ? llvm::ArrayRef<uint32_t>() : inputsOf(set);
  }

  size_t sets() const { return setStart.size() - 1; }
  /// The set message m waits on, or kNoSet.
  uint32_t setOf(size_t m) const { return setOfMessage[m]; }
  llvm::ArrayRef<uint32_t> inputsOf(uint32_t set) const {
    return slice(setInputs, setStart, set);
  }
  /// The messages that wait on exactly the set `set`.
  llvm::ArrayRef<uint32_t> membersOf(uint32_t set) const {
    return slice(members, memberStart, set);
  }
  /// Where set s's members start in a table of all sets' members, set
  /// after set.
  size_t firstMemberOf(uint32_t set) const { return memberStart[set]; }
  /// The sets that message m is an input of.
  llvm::ArrayRef<uint32_t> setsWaitingOn(size_t m) const {
    uint32_t block = blockOfMessage[m];
    return block == kNoSet ? llvm::ArrayRef<uint32_t>()
                           : setsWaitingOnBlock(block);
  }

  size_t blocks() const { return blockSizes.size(); }
  /// The block of message m, or kNoSet where no set waits on it.
  uint32_t blockOf(size_t m) const { return blockOfMessage[m]; }
  /// How many messages block b has.
  uint32_t blockSize(uint32_t block) const { return blockSizes[block]; }
  /// The sets that every message of block b is an input of.
  llvm::ArrayRef<uint32_t> setsWaitingOnBlock(uint32_t block) const {
    return slice(blockWaiters, blockWaiterStart, block);
  }
  /// How many blocks set s's inputs fill: each set's inputs are whole
  /// blocks.
  uint32_t blocksIn(uint32_t set) const { return setBlocks[set]; }

private:
  static llvm::ArrayRef<uint32_t> slice(const std::vector<uint32_t> &list,
                                        const std::vector<size_t> &start,
                                        size_t i) {
    return llvm::ArrayRef(list).slice(start[i], start[i + 1] - start[i]);
  }

  /// A list of inputs, and its hash.
  struct HashedList {
    llvm::ArrayRef<uint32_t> inputs;
    llvm::hash_code hash;
  };
  struct HashedListInfo {
    using Info = llvm::DenseMapInfo<llvm::ArrayRef<uint32_t>>;
    static HashedList getEmptyKey() { return {Info::getEmptyKey(), 0}; }
    static HashedList getTombstoneKey() { return {Info::getTombstoneKey(), 0}; }
    static unsigned getHashValue(const HashedList &list) {
      return static_cast<unsigned>(static_cast<size_t>(list.hash));
    }
    static bool isEqual(const HashedList &a, const HashedList &b) {
      return a.hash == b.hash && Info::isEqual(a.inputs, b.inputs);
    }
  };

  /// The distinct input lists of a chunk of messages, numbered from 0:
  /// list i is inputs[start[i], start[i + 1]).
  struct ChunkSets {
    std::vector<uint32_t> inputs;
    std::vector<size_t> start{0};
  };

  /// Finds the inputs of messages [begin, end), keeping each distinct list
  /// once in `sets` and its number in setOfMessage.
  void findSets(const Plan &plan, size_t begin, size_t end, ChunkSets &sets) {
    // Every message's list first, one after another, so that the lists
    // stay where they are while they are compared.
    std::vector<uint32_t> found;
    std::vector<size_t> foundEnd;
    for (size_t m = begin; m < end; ++m) {
      size_t first = found.size();
      for (const MessagePart &part : plan.messages[m].parts)
        addInputs(plan, m, part, found);
      std::sort(found.begin() + first, found.end());
      found.erase(std::unique(found.begin() + first, found.end()), found.end());
      foundEnd.push_back(found.size());
    }
    llvm::DenseMap<HashedList, uint32_t, HashedListInfo> known;
    size_t first = 0;
    for (size_t m = begin; m < end; first = foundEnd[m - begin], ++m) {
      llvm::ArrayRef<uint32_t> inputs(found.data() + first,
                                      foundEnd[m - begin] - first);
      if (inputs.empty())
        continue;
      HashedList list{inputs,
                      llvm::hash_combine_range(inputs.begin(), inputs.end())};
      auto [it, added] =
          known.try_emplace(list, static_cast<uint32_t>(sets.start.size() - 1));
      if (added) {
        sets.inputs.insert(sets.inputs.end(), inputs.begin(), inputs.end());
        sets.start.push_back(sets.inputs.size());
      }
      setOfMessage[m] = it->second;
    }
  }

  /// The members of each set, in message order, and the blocks.
  void indexSets(size_t count) {
    memberStart.assign(sets() + 1, 0);
    std::vector<size_t> waiterStart(count + 1, 0);
    for (size_t m = 0; m < count; ++m)
      if (setOfMessage[m] != kNoSet)
        ++memberStart[setOfMessage[m] + 1];
    for (uint32_t input : setInputs)
      ++waiterStart[input + 1];
    std::partial_sum(memberStart.begin(), memberStart.end(),
                     memberStart.begin());
    std::partial_sum(waiterStart.begin(), waiterStart.end(),
                     waiterStart.begin());
    members.resize(memberStart.back());
    std::vector<uint32_t> waiters(waiterStart.back());
    std::vector<size_t> next(memberStart.begin(), memberStart.end() - 1);
    for (size_t m = 0; m < count; ++m)
      if (setOfMessage[m] != kNoSet)
        members[next[setOfMessage[m]]++] = static_cast<uint32_t>(m);
    next.assign(waiterStart.begin(), waiterStart.end() - 1);
    for (uint32_t set = 0; set < sets(); ++set)
      for (uint32_t input : inputsOf(set))
        waiters[next[input]++] = set;
    indexBlocks(count, waiters, waiterStart);
  }

  /// The blocks, from the sets waiting on each message (in set order):
  /// numbered as their first messages go.
  void indexBlocks(size_t count, const std::vector<uint32_t> &waiters,
                   const std::vector<size_t> &waiterStart) {
    blockOfMessage.assign(count, kNoSet);
    blockWaiterStart.assign(1, 0);
    setBlocks.assign(sets(), 0);
    llvm::DenseMap<HashedList, uint32_t, HashedListInfo> known;
    for (size_t m = 0; m < count; ++m) {
      llvm::ArrayRef<uint32_t> waiting = slice(waiters, waiterStart, m);
      if (waiting.empty())
        continue;
      HashedList list{waiting,
                      llvm::hash_combine_range(waiting.begin(), waiting.end())};
      auto [it, added] =
          known.try_emplace(list, static_cast<uint32_t>(blockSizes.size()));
      if (added) {
        blockWaiters.insert(blockWaiters.end(), waiting.begin(), waiting.end());
        blockWaiterStart.push_back(blockWaiters.size());
        blockSizes.push_back(0);
        for (uint32_t set : waiting)
          ++setBlocks[set];
      }
      blockOfMessage[m] = it->second;
      ++blockSizes[it->second];
    }
  }

  /// Where members [begin, end) of a slice travel: message `message`.
  struct Record {
    uint32_t message;
    int32_t begin, end;
  };

  /// The records of the messages that carry each slice.
  void indexRecords(const Plan &plan) {
    records = SliceRecords<Record>(plan, [&](auto add) {
      for (size_t m = 0; m < plan.messages.size(); ++m)
        for (const MessagePart &part : plan.messages[m].parts)
          add(part.group, part.slice,
              Record{static_cast<uint32_t>(m), part.memberBegin,
                     part.memberEnd});
    });
  }

  /// Per group that forwards anything, what each rank receives of its
  /// tensors: the remote slices that travel, by receiver.
  void indexArrivals(const Plan &plan) {
    arrivals.resize(plan.groups.size());
    for (size_t g = 0; g < plan.groups.size(); ++g) {
      const TransferGroup &group = plan.groups[g];
      if (llvm::none_of(group.slices, [](const Slice &slice) {
            return slice.origin == Origin::Destination;
          }))
        continue;
      llvm::DenseMap<int64_t, std::vector<int32_t>> byReceiver;
      for (size_t i = 0; i < group.slices.size(); ++i)
        if (!group.slices[i].isLocalCopy() && !records.of(g, i).empty())
          byReceiver[group.slices[i].receiver].push_back(
              static_cast<int32_t>(i));
      for (auto &[receiver, slices] : byReceiver)
        arrivals[g].try_emplace(receiver,
                                BoxIndex(group.slices, std::move(slices)));
    }
  }

  /// Adds the messages that bring message m's forwarded part to its
  /// sender to `out`.
  void addInputs(const Plan &plan, size_t m, const MessagePart &part,
                 std::vector<uint32_t> &out) const {
    const TransferGroup &group = plan.groups[part.group];
    const Slice &slice = group.slices[part.slice];
    if (slice.origin != Origin::Destination)
      return;
    auto received = arrivals[part.group].find(slice.sender);
    if (received == arrivals[part.group].end())
      return;
    received->second.forEachMeeting(group.slices, slice.box, [&](int32_t j) {
      for (const Record &record : records.of(part.group, j))
        if (record.begin < part.memberEnd && part.memberBegin < record.end &&
            record.message != m)
          out.push_back(record.message);
    });
  }

  SliceRecords<Record> records;
  std::vector<llvm::DenseMap<int64_t, BoxIndex>> arrivals;
  std::vector<uint32_t> setOfMessage;
  /// Set s's inputs are setInputs[setStart[s], setStart[s + 1]); its
  /// members and the sets waiting on a block are stored alike.
  std::vector<size_t> setStart, memberStart, blockWaiterStart;
  std::vector<uint32_t> setInputs, members, blockWaiters;
  std::vector<uint32_t> blockOfMessage, blockSizes, setBlocks;
};

/// Per message, the most messages that wait on it one after another,
/// itself included. Every message waits only on messages of earlier rounds,
/// so going through the rounds from the last sees all that wait on a
/// message before the message itself.
std::vector<int64_t>
chainLengths(const Dependencies &dependencies,
             const std::map<int64_t, std::vector<size_t>> &byRound,
             size_t count) {
  std::vector<int64_t> chains(count, 1);
  for (auto round = byRound.rbegin(); round != byRound.rend(); ++round)
    for (size_t m : round->second)
      for (uint32_t input : dependencies.of(m))
        chains[input] = std::max(chains[input], chains[m] + 1);
  return chains;
}

/// The seconds of the busiest rank's work in either direction.
double busiestWork(const Plan &plan, const CostModel &model) {
  llvm::DenseMap<int64_t, std::pair<double, double>> work;
  for (const Message &message : plan.messages) {
    double time =
        model.messageSeconds(message.sender, message.receiver, message.bytes);
    work[message.sender].first += time;
    work[message.receiver].second += time;
  }
  double busiest = 0;
  for (const auto &entry : work)
    busiest = std::max({busiest, entry.second.first, entry.second.second});
  return busiest;
}

/// The step counts worth trying for a plan whose longest chain of forwards
/// has `chain` messages, besides what staging needs. With the busiest
/// rank's work spread evenly, a pipeline fills and drains in about an even
/// share of a step per hop, and each step costs its own overhead: the count
/// that balances the two is about sqrt((chain - 1) * work / step cost). How
/// well steps pack, and how many receivers the source side can feed in the
/// first step, depend on the messages too, so counts from a few per hop up
/// to twice that are tried, doubling.
std::vector<int64_t> stepCounts(const CostModel &model, int64_t chain,
                                double busiest) {
  constexpr double kMostSteps = 4096;
  if (chain <= 1)
    return {1};
  double stepSeconds = model.getTopology().stepSeconds;
  double balanced =
      stepSeconds > 0
          ? std::sqrt(static_cast<double>(chain - 1) * busiest / stepSeconds)
          : kMostSteps;
  double most = std::min(2 * balanced, kMostSteps);
  std::vector<int64_t> counts;
  for (double count = 2.0 * static_cast<double>(chain);; count *= 2) {
    counts.push_back(static_cast<int64_t>(std::min(count, most)));
    if (count >= most)
      break;
  }
  return counts;
}

} // namespace

/// Without a model: each round's messages, largest staging first, into
/// the earliest step of the round with room, rounds one after another.
/// Returns the step count.
static int64_t firstFit(Plan &plan,
                        const std::map<int64_t, std::vector<size_t>> &byRound,
                        int64_t budget, ScheduleStats &stats) {
  int64_t firstStep = 0;
  for (const auto &[round, indices] : byRound) {
    // Largest first packs tightest; the rest only makes the order total.
    std::vector<MessageKey> keys;
    keys.reserve(indices.size());
    for (size_t i : indices)
      keys.emplace_back(-stagingOf(plan.messages[i]), 0, 0, plan.messages[i],
                        i);
    sortByKey(plan, keys);
    StepLoads steps(plan, indices, budget, nullptr);
    for (const MessageKey &key : keys)
      plan.messages[key.index].step =
          firstStep + steps.place(plan.messages[key.index]);
    firstStep += steps.steps();
    stats.stagingPeak = std::max(stats.stagingPeak, steps.peak());
  }
  return firstStep;
}

namespace {
/// A schedule of every message, and what the cost model says of it.
struct Schedule {
  std::vector<int64_t> steps;
  int64_t count = 0;
  int64_t stagingPeak = 0;
  double seconds = 0;
};

/// The fastest of numbered candidates offered from any thread, the lowest
/// number among equals.
class BestSchedule {
public:
  void offer(size_t index, Schedule candidate) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!best || candidate.seconds < best->seconds ||
        (candidate.seconds == best->seconds && index < bestIndex)) {
      best = std::move(candidate);
      bestIndex = index;
    }
  }
  /// The best so far and its number; one was offered.
  const Schedule &schedule() const { return *best; }
  size_t index() const { return bestIndex; }
  /// The best time so far, infinity before any offer.
  double seconds() {
    std::lock_guard<std::mutex> lock(mutex);
    return best ? best->seconds : std::numeric_limits<double>::infinity();
  }

private:
  std::mutex mutex;
  std::optional<Schedule> best;
  size_t bestIndex = 0;
};
} // namespace

/// With a model: every message into the step where it adds least to the
/// plan's time, after the steps of the messages it waits on and early
/// enough to leave a step for each message waiting on it in turn, within at
/// least `planned` steps (see the file comment). Rounds go in order, so
/// that what a message waits on is placed before it.
static Schedule placeMessages(
    const Plan &plan, const std::map<int64_t, std::vector<size_t>> &byRound,
    const Dependencies *dependencies, const std::vector<int64_t> &chains,
    int64_t budget, const CostModel &model, int64_t planned, double busiest) {
  std::vector<size_t> all(plan.messages.size());
  std::iota(all.begin(), all.end(), 0);
  StepLoads loads(plan, all, budget, &model);
  loads.openFewest(plan, all);
  loads.open(std::max<int64_t>(0, planned - loads.steps()));
  planned = loads.steps();
  std::vector<bool> eager(plan.messages.size());
  for (size_t m = 0; m < plan.messages.size(); ++m)
    eager[m] = chains[m] > 1;
  loads.setShare(plan, eager, busiest / static_cast<double>(planned));
  Schedule placement;
  placement.steps.assign(plan.messages.size(), 0);
  std::vector<int64_t> earliest(plan.messages.size(), 0);
  for (const auto &[round, indices] : byRound) {
    // What others wait on goes first, a receiver's i-th message after every
    // receiver's (i-1)-th, so that the source side feeds all receivers from
    // the first step on; then the rest, those that may start latest first,
    // since they have the fewest steps to choose from, and largest first
    // among those.
    llvm::DenseMap<int64_t, int64_t> received;
    std::vector<MessageKey> keys;
    keys.reserve(indices.size());
    for (size_t i : indices) {
      const Message &message = plan.messages[i];
      if (dependencies)
        for (uint32_t input : dependencies->of(i))
          earliest[i] = std::max(earliest[i], placement.steps[input] + 1);
      if (chains[i] > 1)
        keys.emplace_back(-chains[i], received[message.receiver]++,
                          -message.bytes, message, i);
      else
        keys.emplace_back(-chains[i], -earliest[i], -message.bytes, message,
                          i);
    }
    sortByKey(plan, keys);
    for (const MessageKey &key : keys) {
      const Message &message = plan.messages[key.index];
      int64_t first = earliest[key.index];
      int64_t last = std::max(first, planned - chains[key.index]);
      placement.steps[key.index] = chains[key.index] > 1
                                       ? loads.soonest(message, first, last)
                                       : loads.balance(message, first, last);
    }
  }
  placement.count = loads.steps();
  placement.stagingPeak = loads.peak();
  placement.seconds = loads.seconds();
  return placement;
}

namespace {
/// The turn of each message among its sender's messages of its round, for
/// the list order: with the round's R receivers and S senders each in rank
/// order, a sender at place i starts at the receiver at place i * R / S
/// and goes on from there, wrapping around. Where every rank sends to
/// others (S = R), each starts at itself and goes on to the next ranks, as
/// a ring does; where few senders feed many receivers (8 trainers, 24
/// serving ranks), their starts spread over all receivers, so that the
/// first step reaches every receiver, and each can forward in the next
/// what it got, instead of the first few receivers and the rest idling
/// while the pipeline fills.
class SenderTurns {
public:
  /// Where senders start: spread over the receivers as above, or each at
  /// the rank after itself (Ring), which lines up senders that feed the
  /// same receivers: where a forward passes on a chunk of every trainer,
  /// its owner then has all it waits on early.
  enum class Start { Spread, Ring };

  SenderTurns(const Plan &plan, const std::vector<int64_t> &rounds,
              Start how)
      : how(how), world(std::max<int64_t>(1, plan.worldSize())) {
    if (how == Start::Ring)
      return;
    for (size_t m = 0; m < plan.messages.size(); ++m) {
      Round &round = byRound[rounds[m]];
      round.senders.push_back(plan.messages[m].sender);
      round.receivers.push_back(plan.messages[m].receiver);
    }
    for (auto &[number, round] : byRound)
      for (std::vector<int64_t> *ranks : {&round.senders, &round.receivers}) {
        llvm::sort(*ranks);
        ranks->erase(llvm::unique(*ranks), ranks->end());
      }
  }

  /// The turn of `message`, of round `round`: 0 goes first.
  int64_t of(const Message &message, int64_t round) const {
    if (how == Start::Ring)
      return ((message.receiver - message.sender) % world + world) % world;
    const Round &ranks = byRound.find(round)->second;
    auto place = [](const std::vector<int64_t> &list, int64_t rank) {
      return static_cast<int64_t>(
          std::lower_bound(list.begin(), list.end(), rank) - list.begin());
    };
    int64_t receivers = static_cast<int64_t>(ranks.receivers.size());
    int64_t senders = static_cast<int64_t>(ranks.senders.size());
    int64_t start = place(ranks.senders, message.sender) * receivers / senders;
    return (place(ranks.receivers, message.receiver) - start + receivers) %
           receivers;
  }

private:
  struct Round {
    std::vector<int64_t> senders, receivers;
  };
  Start how;
  int64_t world;
  std::map<int64_t, Round> byRound;
};

/// The order in which a list schedule takes ready messages, and the place
/// of each message in it.
struct ListOrder {
  /// The message at each place in the order: lower places go first. A
  /// list schedule keeps its ready messages by place, and the footprints
  /// are by place too, so that reading the ready messages in order reads
  /// them in order.
  std::vector<uint32_t> messageAt;
  std::vector<uint32_t> placeOf;
  /// The places of the messages that wait on nothing, in order.
  std::vector<uint32_t> unblocked;
  /// The block of the message at each place (Dependencies::blockOf): read
  /// as each is placed, in place order, not all over the messages.
  std::vector<uint32_t> blockAt;

  /// The places of the messages that wait on exactly set s, in order: read
  /// together as the set's last input arrives, where their places one by
  /// one would be looked up all over placeOf.
  llvm::ArrayRef<uint32_t> placesWaitingOn(const Dependencies &dependencies,
                                           uint32_t set) const {
    return llvm::ArrayRef(memberPlaces)
        .slice(dependencies.firstMemberOf(set),
               dependencies.membersOf(set).size());
  }

  /// How early a message that nothing waits on is needed, from its place
  /// among the messages of its pair and round: that place; or the share of
  /// the pair before it, in 1/kShares, so that a short pair's messages
  /// weigh as much as a long pair's at the same point of its pipeline.
  enum class NeedBy { Place, Share };
  static constexpr uint64_t kShares = 256;

  ListOrder(const Plan &plan, const Dependencies &dependencies,
            const std::map<int64_t, std::vector<size_t>> &byRound,
            const std::vector<int64_t> &rounds,
            const std::vector<int64_t> &chains, NeedBy needBy,
            SenderTurns::Start senderStart = SenderTurns::Start::Spread) {
    size_t count = plan.messages.size();
    std::vector<uint32_t> need =
        neededAt(plan, dependencies, byRound, rounds, needBy);
    // Longest chains first: they decide how late the last forward arrives.
    // Among equals, what is needed first, and then each sender takes its
    // receivers in turn from a start of its own (SenderTurns); then the
    // largest, which pack worst.
    SenderTurns turns(plan, rounds, senderStart);
    // The keys are made once and sorted together with their messages: a
    // comparison then reads two keys side by side, not four tables each.
    using Key = std::tuple<int64_t, uint32_t, int64_t, int64_t, uint32_t>;
    std::vector<Key> keys(count);
    for (uint32_t m = 0; m < count; ++m) {
      const Message &message = plan.messages[m];
      keys[m] = {-chains[m], need[m], turns.of(message, rounds[m]),
                 -message.bytes, m};
    }
    llvm::sort(keys);
    messageAt.resize(count);
    placeOf.resize(count);
    blockAt.resize(count);
    for (size_t p = 0; p < count; ++p) {
      messageAt[p] = std::get<4>(keys[p]);
      placeOf[messageAt[p]] = static_cast<uint32_t>(p);
      blockAt[p] = dependencies.blockOf(messageAt[p]);
      if (dependencies.setOf(messageAt[p]) == Dependencies::kNoSet)
        unblocked.push_back(static_cast<uint32_t>(p));
    }
    for (uint32_t set = 0; set < dependencies.sets(); ++set) {
      size_t first = memberPlaces.size();
      for (uint32_t member : dependencies.membersOf(set))
        memberPlaces.push_back(placeOf[member]);
      std::sort(memberPlaces.begin() + first, memberPlaces.end());
    }
  }

private:
  std::vector<uint32_t> memberPlaces;

  /// How early each message is needed: one that nothing waits on, as its
  /// place among the messages of its pair and round (fuse packs a pair's
  /// forwards root after root, so the first carry what the source side
  /// sends first); one that others wait on, as the earliest of them. The
  /// source side then feeds every pair's first forwards first, rather than
  /// one pair's all, and the forwards start on every rank at once.
  static std::vector<uint32_t>
  neededAt(const Plan &plan, const Dependencies &dependencies,
           const std::map<int64_t, std::vector<size_t>> &byRound,
           const std::vector<int64_t> &rounds, NeedBy needBy) {
    llvm::DenseMap<std::tuple<int64_t, int64_t, int64_t>, uint32_t> sent;
    std::vector<uint32_t> need(plan.messages.size());
    auto pairOf = [&](size_t m) {
      const Message &message = plan.messages[m];
      return std::make_tuple(rounds[m], message.sender, message.receiver);
    };
    for (size_t m = 0; m < plan.messages.size(); ++m)
      need[m] = sent[pairOf(m)]++;
    if (needBy == NeedBy::Share)
      for (size_t m = 0; m < plan.messages.size(); ++m)
        need[m] = static_cast<uint32_t>(uint64_t{need[m]} * kShares /
                                        sent[pairOf(m)]);
    // A message's inputs come in earlier rounds, so going through the
    // rounds from the last passes each need on before it is read.
    for (auto round = byRound.rbegin(); round != byRound.rend(); ++round)
      for (size_t m : round->second)
        for (uint32_t input : dependencies.of(m))
          need[input] = std::min(need[input], need[m]);
    return need;
  }
};
} // namespace

namespace {
/// What a list schedule reads of the message at each place of a
/// ListOrder, in the rank slots of a StepLoads over all of a plan's
/// messages: the same for every list schedule of the order.
struct ListFootprints {
  /// What a look at a waiting message reads first: its ends and seconds.
  struct Look {
    uint32_t from, to;
    double seconds;
  };
  std::vector<Look> byPlace;
  /// The staging bytes of each place's message, read when its ends have
  /// room: apart, so that the looks' table stays small.
  std::vector<int64_t> bytes;
  /// Each place's seconds as their index among the distinct seconds of
  /// all places: ordered as the seconds are, and small enough to keep
  /// beside each ready place.
  std::vector<uint32_t> secondsIndex;

  ListFootprints(const Plan &plan, const ListOrder &order,
                 const StepLoads &loads) {
    byPlace.reserve(order.messageAt.size());
    bytes.reserve(order.messageAt.size());
    std::vector<double> distinct;
    distinct.reserve(order.messageAt.size());
    for (uint32_t m : order.messageAt) {
      StepLoads::Footprint footprint = loads.footprint(plan.messages[m]);
      byPlace.push_back({footprint.from, footprint.to, footprint.seconds});
      bytes.push_back(footprint.bytes);
      distinct.push_back(footprint.seconds);
    }
    llvm::sort(distinct);
    distinct.erase(llvm::unique(distinct), distinct.end());
    secondsIndex.reserve(byPlace.size());
    for (const Look &look : byPlace)
      secondsIndex.push_back(static_cast<uint32_t>(
          llvm::lower_bound(distinct, look.seconds) - distinct.begin()));
  }
};

/// The step a list schedule is filling. It fills one step at a time and
/// never returns to one, so of the steps before it keeps only their
/// busiest ranks, and of this one what each rank does in it: rows that
/// stay in cache, where a StepLoads' table of every rank and step does not.
class StepFill {
public:
  StepFill(size_t slots, int64_t budget)
      : sending(slots), receiving(slots), staged(slots), budget(budget) {}

  /// Closes the step being filled, if any, and starts the next.
  void next() {
    std::fill(sending.begin(), sending.end(), 0.0);
    std::fill(receiving.begin(), receiving.end(), 0.0);
    std::fill(staged.begin(), staged.end(), 0);
    longest.push_back(0);
  }

  /// Takes the message into the step when each end is idle in it or stays
  /// within `limit` seconds with it, and staging has room; else leaves it
  /// and returns false.
  bool take(const ListFootprints::Look &message, int64_t bytes, double limit) {
    if (!StepLoads::within(sending[message.from], message.seconds, limit) ||
        !StepLoads::within(receiving[message.to], message.seconds, limit) ||
        !StepLoads::fits(staged[message.from], staged[message.to], bytes,
                         message.from == message.to, budget))
      return false;
    for (uint32_t slot : {message.from, message.to}) {
      staged[slot] += bytes;
      peakBytes = std::max(peakBytes, staged[slot]);
    }
    sending[message.from] += message.seconds;
    receiving[message.to] += message.seconds;
    longest.back() = std::max(
        {longest.back(), sending[message.from], receiving[message.to]});
    return true;
  }

  /// Whether a rank's sends (or receives) in the step already leave no
  /// room within `limit` for a message of `seconds`.
  bool sendsFull(uint32_t slot, double limit, double seconds) const {
    return !StepLoads::within(sending[slot], seconds, limit);
  }
  bool receivesFull(uint32_t slot, double limit, double seconds) const {
    return !StepLoads::within(receiving[slot], seconds, limit);
  }

  int64_t steps() const { return static_cast<int64_t>(longest.size()); }
  int64_t peak() const { return peakBytes; }
  double seconds(double stepSeconds) const {
    return StepLoads::stepsSeconds(longest, stepSeconds);
  }

private:
  std::vector<double> sending, receiving;
  std::vector<int64_t> staged;
  std::vector<double> longest;
  int64_t budget;
  int64_t peakBytes = 0;
};
} // namespace

/// With a model, a list schedule: step by step, the messages whose inputs
/// all arrived in earlier steps go, in `order`, into the step while their
/// ends stay within the share (the busiest rank's work over `planned`
/// steps); the rest wait for the next step. Every rank's work then fills
/// each step evenly, whatever the sizes of its messages and whether they
/// take staging; a forward goes as soon as what it passes on has arrived
/// and its ranks have room; and the source side's sends, the forwards and
/// the direct messages overlap. Adds the ready messages it looked at to
/// `looks`. `loads` is a StepLoads over all of the plan's messages, whose
/// rank slots and staging budget it keeps to. It gives up, returning a
/// schedule of infinite seconds, once the steps so far and the work a rank
/// has left surely take more than `giveUpAbove`: each later step lasts at
/// least as long as that rank's part of it.
static Schedule listSchedule(const Plan &plan, const Dependencies &dependencies,
                             const ListOrder &order,
                             const ListFootprints &footprints,
                             const StepLoads &loads, double stepSeconds,
                             int64_t planned, double busiest, double &looks,
                             double giveUpAbove) {
  size_t count = plan.messages.size();
  double share = busiest / static_cast<double>(planned);

  // Per block, how many of its messages are still to be placed; per
  // input set, how many of its blocks.
  std::vector<uint32_t> blockMissing(dependencies.blocks());
  for (uint32_t block = 0; block < blockMissing.size(); ++block)
    blockMissing[block] = dependencies.blockSize(block);
  std::vector<uint32_t> missing(dependencies.sets());
  for (uint32_t set = 0; set < missing.size(); ++set)
    missing[set] = dependencies.blocksIn(set);
  StepFill fill(loads.slotCount(), loads.stagingBudget());
  // Each rank's seconds still to be placed, sending and receiving.
  std::vector<double> toSend(loads.slotCount(), 0),
      toReceive(loads.slotCount(), 0);
  for (const ListFootprints::Look &look : footprints.byPlace) {
    toSend[look.from] += look.seconds;
    toReceive[look.to] += look.seconds;
  }
  auto surelyOver = [&] {
    double left = 0;
    for (size_t slot = 0; slot < toSend.size(); ++slot)
      left = std::max({left, toSend[slot], toReceive[slot]});
    // Past the threshold by more than rounding, so that a schedule that
    // would tie with it runs to the end.
    return fill.seconds(stepSeconds) + left + stepSeconds >
           giveUpAbove * (1 + 1e-9);
  };
  // A rank's sends (or receives) that failed to take a message in this
  // step fail for every message at least as long, for the rest of it: a
  // rank's work in a step only grows. So each rank keeps the shortest such
  // message's index of seconds (ListFootprints::secondsIndex), and the
  // ready messages that rules out are passed over at a glance at what each
  // ready place keeps beside it, not at its footprint.
  constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  std::vector<uint32_t> sendsFailFrom(loads.slotCount()),
      receivesFailFrom(loads.slotCount());
  struct Ready {
    uint32_t place, from, to, secondsIndex;
  };
  auto readyAt = [&](uint32_t p) {
    const ListFootprints::Look &look = footprints.byPlace[p];
    return Ready{p, look.from, look.to, footprints.secondsIndex[p]};
  };
  std::vector<Ready> ready;
  ready.reserve(order.unblocked.size());
  for (uint32_t p : order.unblocked)
    ready.push_back(readyAt(p));
  std::vector<uint32_t> arrived;
  Schedule placement;
  placement.steps.assign(count, 0);
  // Every step places a message at least: the first ready one finds its
  // ends idle, and fits the staging budget alone (schedule() checks).
  for (size_t step = 0; !ready.empty(); ++step) {
    if (surelyOver()) {
      placement.seconds = std::numeric_limits<double>::infinity();
      return placement;
    }
    fill.next();
    std::fill(sendsFailFrom.begin(), sendsFailFrom.end(), kNone);
    std::fill(receivesFailFrom.begin(), receivesFailFrom.end(), kNone);
    arrived.clear();
    looks += static_cast<double>(ready.size());
    // The messages left waiting stay in `ready`, moved up over those
    // placed, in order.
    size_t waiting = 0;
    for (size_t r = 0; r < ready.size(); ++r) {
      const Ready candidate = ready[r];
      uint32_t p = candidate.place, from = candidate.from, to = candidate.to;
      if (candidate.secondsIndex >= sendsFailFrom[from] ||
          candidate.secondsIndex >= receivesFailFrom[to]) {
        ready[waiting++] = candidate;
        continue;
      }
      const ListFootprints::Look &look = footprints.byPlace[p];
      if (!fill.take(look, footprints.bytes[p], share)) {
        if (fill.sendsFull(from, share, look.seconds))
          sendsFailFrom[from] =
              std::min(sendsFailFrom[from], candidate.secondsIndex);
        if (fill.receivesFull(to, share, look.seconds))
          receivesFailFrom[to] =
              std::min(receivesFailFrom[to], candidate.secondsIndex);
        ready[waiting++] = candidate;
        continue;
      }
      toSend[from] -= look.seconds;
      toReceive[to] -= look.seconds;
      placement.steps[order.messageAt[p]] = static_cast<int64_t>(step);
      uint32_t block = order.blockAt[p];
      if (block == Dependencies::kNoSet || --blockMissing[block] > 0)
        continue;
      for (uint32_t set : dependencies.setsWaitingOnBlock(block))
        if (--missing[set] == 0)
          llvm::append_range(arrived, order.placesWaitingOn(dependencies, set));
    }
    // The arrived join them in place order, merged from the back, so that
    // the waiting before the first arrived are not moved again.
    llvm::sort(arrived);
    size_t left = waiting, next = waiting + arrived.size();
    ready.resize(next);
    for (size_t a = arrived.size(); a > 0;) {
      if (left > 0 && ready[left - 1].place > arrived[a - 1])
        ready[--next] = ready[--left];
      else
        ready[--next] = readyAt(arrived[--a]);
    }
  }
  placement.count = fill.steps();
  placement.stagingPeak = fill.peak();
  placement.seconds = fill.seconds(stepSeconds);
  return placement;
}

/// placeMessages into each of `counts`, offered to `best` as candidates 0
/// onwards. Placing a message looks at every step of its window, and past
/// the best count the time of placing into more steps mostly grows with
/// them: the counts stop after two in a row no better than the best, or
/// when they would take more than a few seconds of a compile.
static void placeCounts(const Plan &plan,
                        const std::map<int64_t, std::vector<size_t>> &byRound,
                        const Dependencies *dependencies,
                        const std::vector<int64_t> &chains, int64_t budget,
                        const CostModel &model,
                        const std::vector<int64_t> &counts, double busiest,
                        BestSchedule &best) {
  constexpr int kMostWorse = 2;
  constexpr double kMostPlacements = 5e7;
  double placements = 0;
  double fastest = std::numeric_limits<double>::infinity();
  int worse = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    placements += static_cast<double>(plan.messages.size()) *
                  static_cast<double>(counts[i]);
    if (i > 0 && (placements > kMostPlacements || worse >= kMostWorse))
      return;
    Schedule placed = placeMessages(plan, byRound, dependencies, chains,
                                    budget, model, counts[i], busiest);
    if (placed.seconds < fastest) {
      fastest = placed.seconds;
      worse = 0;
    } else {
      ++worse;
    }
    best.offer(i, std::move(placed));
  }
}

/// With a model, rounds one after another, as a plan of chains pipelined
/// in chunks may still fit best: each round in the fewest steps its
/// staging allows, its messages largest first where they add least.
static Schedule lockstepRounds(
    const Plan &plan, const std::map<int64_t, std::vector<size_t>> &byRound,
    int64_t budget, const CostModel &model) {
  Schedule schedule;
  schedule.steps.assign(plan.messages.size(), 0);
  for (const auto &[round, indices] : byRound) {
    std::vector<MessageKey> keys;
    keys.reserve(indices.size());
    for (size_t i : indices)
      keys.emplace_back(-plan.messages[i].bytes, 0, 0, plan.messages[i], i);
    sortByKey(plan, keys);
    StepLoads loads(plan, indices, budget, &model);
    loads.openFewest(plan, indices);
    // Within a share without bound, each message goes where its ranks are
    // least busy.
    loads.setShare(std::numeric_limits<double>::infinity());
    for (const MessageKey &key : keys)
      schedule.steps[key.index] =
          schedule.count +
          loads.balance(plan.messages[key.index], 0, loads.steps() - 1);
    schedule.count += loads.steps();
    schedule.stagingPeak = std::max(schedule.stagingPeak, loads.peak());
    schedule.seconds += loads.seconds();
  }
  return schedule;
}

namespace {
/// Improves a schedule by moving messages between its steps, as long as
/// the plan's time by the model falls: a list schedule fills each step
/// greedily and never returns to one, and placing into fixed steps looks
/// at one message at a time, so both leave steps whose busiest ranks could
/// hand a message to a step where their ranks have room, and tails of a
/// few forwards that could have gone earlier. For a step, every rank at
/// its busiest hands one of its messages in the step to the step of its
/// window (after its inputs, before what waits on it) where it adds least;
/// the moves are kept together when the plan's time falls by them, and
/// undone otherwise: where several ranks are equally busy, as in a
/// symmetric refit, moving one message alone gains nothing.
class StepRefiner {
public:
  StepRefiner(const Plan &plan, const Dependencies &dependencies,
              const StepLoads &loads, double stepSeconds,
              const Schedule &schedule)
      : dependencies(dependencies), stepSeconds(stepSeconds),
        budget(loads.stagingBudget()), slots(loads.slotCount()),
        steps(static_cast<size_t>(schedule.count)), step(schedule.steps) {
    size_t count = plan.messages.size();
    footprints.reserve(count);
    for (const Message &message : plan.messages)
      footprints.push_back(loads.footprint(message));
    sending.assign(steps * slots, 0);
    receiving.assign(steps * slots, 0);
    staged.assign(steps * slots, 0);
    longest.assign(steps, 0);
    messagesIn.assign(steps, 0);
    for (size_t m = 0; m < count; ++m)
      add(m, static_cast<size_t>(step[m]));
    indexBySlot(count);
  }

  /// Whether the tables of every rank and step stay small enough to keep.
  static bool affordable(size_t steps, size_t slots) {
    return steps * slots <= kMostCells;
  }

  /// Improves the schedule step by step, busiest steps first, until a
  /// round over all steps improves none or the work allowed is spent, and
  /// writes it back.
  void run(Schedule &schedule) {
    for (int round = 0; round < kMostRounds && work < kMostWork; ++round) {
      std::vector<size_t> order(steps);
      std::iota(order.begin(), order.end(), 0);
      llvm::stable_sort(order, [&](size_t a, size_t b) {
        return longest[a] > longest[b];
      });
      bool improved = false;
      for (size_t s : order)
        while (work < kMostWork && messagesIn[s] > 0 && improveStep(s))
          improved = true;
      if (!improved)
        break;
    }
    schedule.steps = step;
    schedule.seconds = 0;
    schedule.stagingPeak = 0;
    for (size_t s = 0; s < steps; ++s)
      schedule.seconds += costOf(s);
    for (int64_t bytes : staged)
      schedule.stagingPeak = std::max(schedule.stagingPeak, bytes);
  }

private:
  /// Enough for 2,048 ranks over 2,048 steps: 100 MB of tables at most.
  static constexpr size_t kMostCells = size_t(1) << 22;
  static constexpr int kMostRounds = 8;
  /// Steps looked at and ranks scanned: a bound on the refiner's time,
  /// which at 2,048 ranks (DeepSeek-V3 fsdp1024 -> dp16,ep64) is about half
  /// a second.
  static constexpr double kMostWork = 3e8;

  /// A message moved from one step to another, to be undone.
  struct Move {
    uint32_t message;
    size_t from, to;
  };

  void add(size_t m, size_t s) { shift(m, s, 1); }
  void remove(size_t m, size_t s) { shift(m, s, -1); }
  void shift(size_t m, size_t s, int sign) {
    const StepLoads::Footprint &f = footprints[m];
    double &send = sending[s * slots + f.from];
    double &receive = receiving[s * slots + f.to];
    send += sign * f.seconds;
    receive += sign * f.seconds;
    // Sums of seconds taken away again may leave rounding behind.
    if (send < 1e-15)
      send = 0;
    if (receive < 1e-15)
      receive = 0;
    staged[s * slots + f.from] += sign * f.bytes;
    staged[s * slots + f.to] += sign * f.bytes;
    messagesIn[s] += sign;
    if (sign > 0)
      longest[s] = std::max({longest[s], send, receive});
  }

  /// The busiest rank's time in step s, read afresh.
  double busiestIn(size_t s) const {
    const double *send = sending.data() + s * slots;
    const double *receive = receiving.data() + s * slots;
    double most = 0;
    for (size_t r = 0; r < slots; ++r)
      most = std::max({most, send[r], receive[r]});
    return most;
  }

  /// The steps message m may go in: after its inputs' and before those of
  /// the messages waiting on it.
  std::pair<size_t, size_t> window(size_t m) const {
    size_t first = 0, last = steps - 1;
    for (uint32_t input : dependencies.of(m))
      first = std::max(first, static_cast<size_t>(step[input]) + 1);
    for (uint32_t set : dependencies.setsWaitingOn(m))
      for (uint32_t waiter : dependencies.membersOf(set))
        last = std::min(last, static_cast<size_t>(step[waiter]) - 1);
    return {first, last};
  }

  /// What moving message m into step t adds to that step's busiest rank,
  /// or nothing when staging has no room there.
  std::optional<double> costIn(size_t m, size_t t) const {
    const StepLoads::Footprint &f = footprints[m];
    if (!StepLoads::fits(staged[t * slots + f.from], staged[t * slots + f.to],
                         f.bytes, f.from == f.to, budget))
      return std::nullopt;
    double busy = std::max(sending[t * slots + f.from] + f.seconds,
                           receiving[t * slots + f.to] + f.seconds);
    return std::max(0.0, busy - longest[t]) +
           (messagesIn[t] == 0 ? stepSeconds : 0);
  }

  /// What step s costs: its busiest rank and its own cost, nothing when
  /// it is empty (it will be dropped).
  double costOf(size_t s) const {
    return messagesIn[s] > 0 ? longest[s] + stepSeconds : 0;
  }

  /// Moves one message of every rank at its busiest in step s elsewhere,
  /// and keeps the moves when the plan's time falls by them.
  bool improveStep(size_t s) {
    double level = longest[s];
    double near = level * (1 - 1e-9);
    std::vector<Move> moves;
    // Each step moved into, as it was before its first move: its busiest
    // rank, and whether it was empty (and so cost nothing: it would have
    // been dropped).
    struct Before {
      double longest;
      bool empty;
    };
    llvm::SmallDenseMap<size_t, Before, 8> before;
    auto undo = [&] {
      for (auto move = moves.rbegin(); move != moves.rend(); ++move) {
        remove(move->message, move->to);
        add(move->message, move->from);
        step[move->message] = static_cast<int64_t>(move->from);
      }
      for (auto [t, was] : before)
        longest[t] = was.longest;
      longest[s] = level;
      return false;
    };
    work += static_cast<double>(slots);
    for (size_t r = 0; r < slots; ++r)
      for (bool sends : {true, false}) {
        const std::vector<double> &table = sends ? sending : receiving;
        // An earlier move of the step may have relieved this rank already.
        if (table[s * slots + r] < near)
          continue;
        std::optional<std::pair<uint32_t, size_t>> chosen = bestMove(s, r, sends);
        if (!chosen)
          return undo();
        auto [m, t] = *chosen;
        before.try_emplace(t, Before{longest[t], messagesIn[t] == 0});
        remove(m, s);
        add(m, t);
        step[m] = static_cast<int64_t>(t);
        moves.push_back({m, s, t});
      }
    longest[s] = busiestIn(s);
    double change = costOf(s) - (level + stepSeconds);
    for (auto [t, was] : before)
      change += costOf(t) - (was.empty ? 0 : was.longest + stepSeconds);
    if (change < -1e-9 * level)
      return true;
    return undo();
  }

  /// Of rank slot r's messages in step s (those it sends, or receives),
  /// the one to move and where: the step of its window, with staging room,
  /// where it adds least, the longest among equals.
  std::optional<std::pair<uint32_t, size_t>> bestMove(size_t s, size_t r,
                                                       bool sends) {
    std::optional<std::pair<uint32_t, size_t>> chosen;
    std::tuple<double, double> best;
    for (uint32_t m : sends ? sentBy(r) : receivedBy(r)) {
      if (static_cast<size_t>(step[m]) != s)
        continue;
      auto [first, last] = window(m);
      work += static_cast<double>(last + 1 - std::min(first, last + 1));
      for (size_t t = first; t <= last && t < steps; ++t) {
        if (t == s)
          continue;
        std::optional<double> cost = costIn(m, t);
        if (!cost)
          continue;
        std::tuple<double, double> key = {*cost, -footprints[m].seconds};
        if (!chosen || key < best) {
          chosen = {m, t};
          best = key;
        }
      }
    }
    return chosen;
  }

  void indexBySlot(size_t count) {
    sentStart.assign(slots + 1, 0);
    receivedStart.assign(slots + 1, 0);
    for (const StepLoads::Footprint &f : footprints) {
      ++sentStart[f.from + 1];
      ++receivedStart[f.to + 1];
    }
    std::partial_sum(sentStart.begin(), sentStart.end(), sentStart.begin());
    std::partial_sum(receivedStart.begin(), receivedStart.end(),
                     receivedStart.begin());
    sent.resize(count);
    received.resize(count);
    std::vector<size_t> nextSent(sentStart.begin(), sentStart.end() - 1),
        nextReceived(receivedStart.begin(), receivedStart.end() - 1);
    for (uint32_t m = 0; m < count; ++m) {
      sent[nextSent[footprints[m].from]++] = m;
      received[nextReceived[footprints[m].to]++] = m;
    }
  }
  llvm::ArrayRef<uint32_t> sentBy(size_t r) const {
    return llvm::ArrayRef(sent).slice(sentStart[r],
                                      sentStart[r + 1] - sentStart[r]);
  }
  llvm::ArrayRef<uint32_t> receivedBy(size_t r) const {
    return llvm::ArrayRef(received).slice(
        receivedStart[r], receivedStart[r + 1] - receivedStart[r]);
  }

  const Dependencies &dependencies;
  double stepSeconds;
  int64_t budget;
  size_t slots, steps;
  std::vector<int64_t> step;
  std::vector<StepLoads::Footprint> footprints;
  /// Rank slot r in step s: [s * slots + r].
  std::vector<double> sending, receiving;
  std::vector<int64_t> staged;
  std::vector<double> longest;
  std::vector<int64_t> messagesIn;
  std::vector<uint32_t> sent, received;
  std::vector<size_t> sentStart, receivedStart;
  double work = 0;
};
} // namespace

/// With a model: a plan without forwards in the fewest steps staging
/// allows; one with forwards in whichever of a few step counts, or of
/// rounds one after another, the model finds fastest. Returns the step
/// count.
static llvm::Expected<int64_t>
balanceSteps(Plan &plan, const std::map<int64_t, std::vector<size_t>> &byRound,
             const std::vector<int64_t> &rounds, const ScheduleOptions &options,
             ScheduleStats &stats) {
  if (plan.messages.empty())
    return 0;
  int64_t budget = options.stagingBudget;
  const CostModel &model = *options.model;
  llvm::ThreadPoolInterface *pool = options.pool;
  Dependencies dependencies(plan, pool);
  bool forwards = byRound.size() > 1;
  std::vector<int64_t> chains(plan.messages.size(), 1);
  if (forwards) {
    for (size_t m = 0; m < plan.messages.size(); ++m)
      for (uint32_t input : dependencies.of(m))
        if (rounds[input] >= rounds[m])
          return llvm::createStringError(llvm::formatv(
              "{0} forwards bytes that reach its sender only in round {1}, "
              "not before its own round {2}",
              describe(plan, plan.messages[m]), rounds[input], rounds[m]));
    chains = chainLengths(dependencies, byRound, plan.messages.size());
  }
  double busiest = busiestWork(plan, model);
  std::vector<int64_t> counts =
      stepCounts(model, *llvm::max_element(chains), busiest);
  // The list schedules try the same counts, and the fewest that staging
  // allows and a little over: a plan without forwards has only those. A
  // count below the fewest staging allows gives a share that no step can
  // hold, so that staging alone closes the steps: that wins only on small
  // plans, and such counts go last, nearest first, lest they spend the
  // looks that the counts staging allows need (Kimi-K2 fsdp4 -> dp8,tp8 in
  // 1 GiB: 1.39x the bound when they went first and no count staging
  // allows was reached, 1.06x after).
  std::vector<size_t> all(plan.messages.size());
  std::iota(all.begin(), all.end(), 0);
  // Its rank slots are the list schedules' too.
  StepLoads fewest(plan, all, budget, &model);
  fewest.openFewest(plan, all);
  double stepSeconds = model.getTopology().stepSeconds;
  int64_t fewestSteps = fewest.steps();
  std::vector<int64_t> listCounts = counts;
  for (double over : {1.0, 1.1, 1.25, 1.5, 2.0})
    listCounts.push_back(
        std::llround(over * static_cast<double>(fewestSteps)));
  auto tryOrder = [&](int64_t count) {
    return count >= fewestSteps ? std::make_pair(0, count)
                                : std::make_pair(1, -count);
  };
  llvm::sort(listCounts, [&](int64_t a, int64_t b) {
    return tryOrder(a) < tryOrder(b);
  });
  listCounts.erase(llvm::unique(listCounts), listCounts.end());

  // The candidates are independent of each other, and run on the pool's
  // threads: the placements into fixed counts (one after another, as
  // they stop early), rounds in lockstep, and the first list schedule;
  // then the list schedules of the other counts. Each is numbered in that
  // order, and the fastest wins, the lowest number among equals, so that
  // the result does not depend on the threads.
  BestSchedule best;
  size_t lockstepIndex = counts.size();
  size_t firstListIndex = lockstepIndex + 1;
  std::optional<ListOrder> order;
  std::optional<ListFootprints> footprints;
  double firstLooks = 0;
  // Each list schedule's time, to try the fastest's count again below.
  std::vector<double> listSeconds(listCounts.size(),
                                  std::numeric_limits<double>::infinity());
  // List i is candidate firstListIndex + i, but for those around the
  // fastest count (below), which come after the orders by share and ring.
  size_t doublingLists = listCounts.size();
  auto list = [&](size_t i, double &looks, double giveUpAbove) {
    Schedule placed =
        listSchedule(plan, dependencies, *order, *footprints, fewest,
                     stepSeconds, listCounts[i], busiest, looks, giveUpAbove);
    listSeconds[i] = placed.seconds;
    best.offer(firstListIndex + i + (i < doublingLists ? 0 : 2),
               std::move(placed));
  };
  // The order by share for the last list schedule below, made here too.
  std::optional<ListOrder> byShare;
  std::optional<ListFootprints> shareFootprints;
  std::array<std::function<void()>, 3> first = {
      [&] {
        placeCounts(plan, byRound, forwards ? &dependencies : nullptr, chains,
                    budget, model, counts, busiest, best);
        if (forwards) {
          byShare.emplace(plan, dependencies, byRound, rounds, chains,
                          ListOrder::NeedBy::Share);
          shareFootprints.emplace(plan, *byShare, fewest);
        }
      },
      [&] {
        if (forwards)
          best.offer(lockstepIndex,
                     lockstepRounds(plan, byRound, budget, model));
      },
      [&] {
        order.emplace(plan, dependencies, byRound, rounds, chains,
                      ListOrder::NeedBy::Place);
        footprints.emplace(plan, *order, fewest);
        list(0, firstLooks, std::numeric_limits<double>::infinity());
      }};
  forEachIndex(first.size(), pool, [&](size_t i) { first[i](); });
  auto refine = [&](Schedule &schedule) {
    if (StepRefiner::affordable(static_cast<size_t>(schedule.count),
                                fewest.slotCount()))
      StepRefiner(plan, dependencies, fewest, stepSeconds, schedule)
          .run(schedule);
  };
  // On large plans the best candidate so far is refined beside the list
  // schedules below, on the pool, and kept where none of them beats it
  // (ScheduleOptions says when). The refinement depends on its candidate
  // only, not on threads.
  size_t earlyIndex = best.index();
  std::optional<Schedule> early;
  std::optional<llvm::ThreadPoolTaskGroup> refining;
  if (pool && pool->getMaxConcurrency() > 1 &&
      plan.messages.size() >= options.refineBesideListsFrom) {
    early = best.schedule();
    refining.emplace(*pool);
    refining->async([&] { refine(*early); });
  }
  // A list schedule looks at every waiting message in every step, most of
  // them at a glance: the counts tried stop after a few seconds' worth.
  // They go two at a time, and the looks so far are counted between two
  // such waves, so that how many run does not depend on the threads.
  constexpr double kMostLooks = 2e8;
  constexpr size_t kWave = 2;
  double looks = firstLooks;
  // Runs the list schedules of listCounts from `begin` on, a wave at a
  // time while the looks allow.
  auto runWaves = [&](size_t begin) {
    listSeconds.resize(listCounts.size(),
                       std::numeric_limits<double>::infinity());
    for (; begin < listCounts.size() && looks <= kMostLooks; begin += kWave) {
      std::array<double, kWave> waveLooks{};
      size_t size = std::min(kWave, listCounts.size() - begin);
      // A list schedule that surely ends slower than the best so far and
      // than the fastest list so far (whose count is tried again below) is
      // given up: neither result can change. Both are taken before the
      // wave, so that what is given up does not depend on the threads.
      double giveUpAbove = std::max(
          best.seconds(),
          *std::min_element(listSeconds.begin(), listSeconds.begin() + begin));
      forEachIndex(size, pool, [&](size_t i) {
        list(begin + i, waveLooks[i], giveUpAbove);
      });
      for (double each : waveLooks)
        looks += each;
    }
  };
  runWaves(1);
  auto fastestList = [&] {
    return static_cast<size_t>(llvm::min_element(listSeconds) -
                               listSeconds.begin());
  };
  // Where forwards wait on the source side, the fastest list schedule's
  // count once more, with what nothing waits on needed by its share of its
  // pair: with pairs of very unequal lengths, needs by place send the first
  // messages of every short pair before the second of any long one, and
  // the pipeline fills unevenly.
  if (forwards) {
    size_t fastest = fastestList();
    double shareLooks = 0;
    best.offer(firstListIndex + doublingLists,
               listSchedule(plan, dependencies, *byShare, *shareFootprints,
                            fewest, stepSeconds, listCounts[fastest], busiest,
                            shareLooks, best.seconds()));
    // And with senders started in a ring where the looks allow: which
    // start fills the pipelines sooner depends on what each forward waits
    // on (8 FSDP ranks into 8 TP8 replicas, forwards passing on a chunk of
    // every trainer: 0.341 s without this list, 0.340 s with it).
    if (looks <= kMostLooks) {
      ListOrder ring(plan, dependencies, byRound, rounds, chains,
                     ListOrder::NeedBy::Place, SenderTurns::Start::Ring);
      ListFootprints ringFootprints(plan, ring, fewest);
      double ringLooks = 0;
      best.offer(firstListIndex + doublingLists + 1,
                 listSchedule(plan, dependencies, ring, ringFootprints, fewest,
                              stepSeconds, listCounts[fastest], busiest,
                              ringLooks, best.seconds()));
    }
  }

  // The counts above double, and a list schedule's time is far from
  // smooth in its count: how a step's share packs the messages, and when
  // each forwarder's inputs arrive, change from one count to the next.
  // So, while the looks allow, the counts half an octave and then a
  // quarter either side of the fastest list's are tried too (Llama-3-8B
  // fsdp8 -> dp16,tp8: 1.31x the bound without them, 1.29x with).
  std::optional<Schedule> beforeNear;
  size_t beforeNearIndex = best.index();
  if (looks <= kMostLooks)
    beforeNear = best.schedule();
  for (double factor : {std::sqrt(2.0), std::sqrt(std::sqrt(2.0))}) {
    if (looks > kMostLooks)
      break;
    size_t begin = listCounts.size();
    auto center = static_cast<double>(listCounts[fastestList()]);
    for (double count : {center / factor, center * factor}) {
      auto rounded = std::max<int64_t>(1, std::llround(count));
      if (!llvm::is_contained(listCounts, rounded))
        listCounts.push_back(rounded);
    }
    runWaves(begin);
  }

  if (refining)
    refining->wait();
  // Candidate `index`, refined: the one refined above where it is that
  // (taken once).
  auto refined = [&](size_t index, const Schedule &candidate) {
    if (early && index == earlyIndex) {
      Schedule schedule = std::move(*early);
      early.reset();
      return schedule;
    }
    Schedule schedule = candidate;
    refine(schedule);
    return schedule;
  };
  stats.candidateSeconds = best.schedule().seconds;
  Schedule chosen = refined(best.index(), best.schedule());
  // Refining is not monotone: where a list near the fastest count won,
  // the best before them is refined too, and the faster of the two kept,
  // so that those lists never make a plan slower.
  if (beforeNear && beforeNear->seconds > stats.candidateSeconds) {
    Schedule other = refined(beforeNearIndex, *beforeNear);
    if (other.seconds <= chosen.seconds)
      chosen = std::move(other);
  }
  stats.refinedSeconds = chosen.seconds;
  // A step left empty costs its overhead and moves nothing.
  std::vector<int64_t> renumbered(chosen.count, -1);
  for (int64_t step : chosen.steps)
    renumbered[step] = 0;
  int64_t count = 0;
  for (int64_t &step : renumbered)
    if (step == 0)
      step = count++;
  for (size_t m = 0; m < plan.messages.size(); ++m)
    plan.messages[m].step = renumbered[chosen.steps[m]];
  stats.stagingPeak = chosen.stagingPeak;
  return count;
}

void ScheduledMessages::applyTo(Plan &plan) && {
  plan.messages = std::move(messages);
  plan.numSteps = numSteps;
  plan.stagingBudget = stagingBudget;
}

llvm::Expected<ScheduleStats> plan::schedule(Plan &plan,
                                             const ScheduleOptions &options) {
  int64_t budget = options.stagingBudget;
  llvm::Expected<std::vector<int64_t>> rounds = roundsOf(plan);
  if (!rounds)
    return rounds.takeError();

  std::map<int64_t, std::vector<size_t>> byRound;
  for (size_t i = 0; i < plan.messages.size(); ++i) {
    const Message &message = plan.messages[i];
    int64_t ends = message.sender == message.receiver ? 2 : 1;
    int64_t bytes = stagingOf(message);
    if (bytes > 0 && bytes > budget / ends)
      return llvm::createStringError(llvm::formatv(
          "{0} needs more staging than the budget of {1} bytes per rank",
          describe(plan, message), budget));
    byRound[(*rounds)[i]].push_back(i);
  }

  ScheduleStats stats;
  llvm::Expected<int64_t> steps =
      options.model ? balanceSteps(plan, byRound, *rounds, options, stats)
                    : firstFit(plan, byRound, budget, stats);
  if (!steps)
    return steps.takeError();
  int64_t firstStep = *steps;

  std::vector<MessageKey> keys;
  keys.reserve(plan.messages.size());
  for (size_t i = 0; i < plan.messages.size(); ++i)
    keys.emplace_back(plan.messages[i].step, 0, 0, plan.messages[i], i);
  if (!keys.empty())
    sortBySteps(plan, keys, firstStep, options.pool);
  std::vector<Message> sorted;
  sorted.reserve(plan.messages.size());
  for (const MessageKey &key : keys)
    sorted.push_back(std::move(plan.messages[key.index]));
  plan.messages = std::move(sorted);
  plan.numSteps = firstStep;
  plan.stagingBudget = budget;
  stats.steps = firstStep;
  return stats;
}
