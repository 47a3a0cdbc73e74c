//===- Schedule.cpp - Ordering messages into steps ------------------------===//
//
// Rounds run one after another, each over a range of consecutive steps, so a
// relay's forward always comes after what it forwards has arrived.
//
// A plan takes, by the cost model, the sum over steps of its busiest rank's
// time, so a step that one rank fills while others idle costs time that no
// rank's total accounts for. With a cost model, a round therefore starts
// with the fewest steps its busiest rank's staging allows, and its messages
// go, largest first, each into the step with staging room where its two
// ranks are least busy: every rank's work spreads evenly over the steps
// (longest-processing-time first). A message that fits in no step opens
// one. Without a model, messages go largest first into the earliest step
// with room: first-fit decreasing, which keeps the step count near the
// fewest.
//
//===----------------------------------------------------------------------===//

#include "m2n/Plan/Schedule.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <array>
#include <map>
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
/// A message to sort by (first, sender, receiver), then by its parts.
/// Sorting these rather than the messages keeps the comparisons within a
/// small array: a plan has tens of thousands of messages. The parts compare
/// lexicographically, so `head`, whether there are parts and the first one,
/// decides between most messages of a pair without reading them.
struct MessageKey {
  int64_t first = 0;
  int64_t sender = 0;
  int64_t receiver = 0;
  std::array<int32_t, 5> head = {};
  size_t index = 0;

  MessageKey(int64_t first, const Message &message, size_t index)
      : first(first), sender(message.sender), receiver(message.receiver),
        index(index) {
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
    if (std::tie(a.first, a.sender, a.receiver, a.head) !=
        std::tie(b.first, b.sender, b.receiver, b.head))
      return std::tie(a.first, a.sender, a.receiver, a.head) <
             std::tie(b.first, b.sender, b.receiver, b.head);
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
/// would. Fuse leaves messages in order of (round, sender, receiver) and a
/// round's steps come after the last round's, so a stable counting sort by
/// step nearly sorts them, and only each pair's messages in a step are left
/// to sort; messages in another order are sorted whole.
void sortBySteps(const Plan &plan, std::vector<MessageKey> &keys,
                 int64_t numSteps) {
  std::vector<size_t> next(static_cast<size_t>(numSteps) + 1, 0);
  for (const MessageKey &key : keys)
    ++next[key.first + 1];
  for (size_t step = 1; step < next.size(); ++step)
    next[step] += next[step - 1];
  std::vector<MessageKey> byStep(keys.size(), keys.front());
  for (const MessageKey &key : keys)
    byStep[next[key.first]++] = key;
  keys = std::move(byStep);
  auto pair = [](const MessageKey &key) {
    return std::tie(key.first, key.sender, key.receiver);
  };
  if (!std::is_sorted(keys.begin(), keys.end(),
                      [&](const MessageKey &a, const MessageKey &b) {
                        return pair(a) < pair(b);
                      })) {
    sortByKey(plan, keys);
    return;
  }
  for (size_t begin = 0, end; begin < keys.size(); begin = end) {
    for (end = begin + 1;
         end < keys.size() && pair(keys[end]) == pair(keys[begin]);)
      ++end;
    if (end - begin > 1)
      std::sort(keys.begin() + begin, keys.begin() + end, KeyLess{plan});
  }
}

/// What each rank does in each step of one round: the staging bytes it
/// uses and, when the steps are balanced, its busy seconds each way. Ranks
/// are numbered densely and each has a row of steps, so that placing a
/// message, which looks at every step of its two ranks, reads two short
/// rows: a real round has tens of thousands of messages and may have a
/// hundred steps.
class RoundSteps {
public:
  RoundSteps(const Plan &plan, llvm::ArrayRef<size_t> indices, int64_t budget,
             const CostModel *model)
      : budget(budget), model(model), ranks(roundRanks(plan, indices)),
        index(ranks) {}

  /// Places a message in the earliest step with room at both ends and
  /// returns that step's index within the round.
  int64_t place(const Message &message) {
    int64_t bytes = stagingOf(message);
    auto [from, to] = slots(message);
    const int64_t *sent = &staging[from * capacity];
    const int64_t *received = &staging[to * capacity];
    for (size_t step = 0; step < numSteps; ++step)
      if (fits(sent[step], received[step], message, bytes))
        return take(step, message, bytes);
    open(1);
    return take(numSteps - 1, message, bytes);
  }

  /// Places a message in the step with room where its ends are least busy:
  /// each rank's work then spreads evenly over the steps, and no step waits
  /// on a rank that others left idle. A message that fits in none opens a
  /// step.
  int64_t balance(const Message &message) {
    int64_t bytes = stagingOf(message);
    auto [from, to] = slots(message);
    const int64_t *sent = &staging[from * capacity];
    const int64_t *received = &staging[to * capacity];
    const double *sending = &sendSeconds[from * capacity];
    const double *receiving = &receiveSeconds[to * capacity];
    std::optional<size_t> best;
    double bestSeconds = 0;
    for (size_t step = 0; step < numSteps; ++step) {
      double seconds = std::max(sending[step], receiving[step]);
      if ((!best || seconds < bestSeconds) &&
          fits(sent[step], received[step], message, bytes)) {
        best = step;
        bestSeconds = seconds;
      }
    }
    if (!best) {
      open(1);
      best = numSteps - 1;
    }
    return take(*best, message, bytes);
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
    capacity = grown;
  }

  /// Opens the fewest steps that the messages `indices` (the round's) take
  /// within the staging budget: their busiest rank's staging over it.
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

private:
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
    if (bytes == 0)
      return true;
    // A message to oneself would be staged on both sides of the one rank.
    if (message.sender == message.receiver)
      return sent + 2 * bytes <= budget;
    return sent + bytes <= budget && received + bytes <= budget;
  }

  int64_t take(size_t step, const Message &message, int64_t bytes) {
    auto [from, to] = slots(message);
    for (size_t slot : {from, to}) {
      int64_t &rankBytes = staging[slot * capacity + step];
      rankBytes += bytes;
      peakBytes = std::max(peakBytes, rankBytes);
    }
    if (model) {
      double seconds = model->messageSeconds(message.sender, message.receiver,
                                             message.bytes);
      sendSeconds[from * capacity + step] += seconds;
      receiveSeconds[to * capacity + step] += seconds;
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
};

} // namespace

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
  int64_t firstStep = 0;
  for (auto &[round, indices] : byRound) {
    // Largest first packs tightest; the rest only makes the order total.
    // Balancing goes by a message's bytes, zero-copy ones too; first fit by
    // its staging.
    std::vector<MessageKey> keys;
    keys.reserve(indices.size());
    for (size_t i : indices) {
      const Message &message = plan.messages[i];
      keys.emplace_back(options.model ? -message.bytes : -stagingOf(message),
                        message, i);
    }
    sortByKey(plan, keys);
    RoundSteps steps(plan, indices, budget, options.model);
    if (options.model)
      steps.openFewest(plan, indices);
    for (const MessageKey &key : keys) {
      const Message &message = plan.messages[key.index];
      int64_t step =
          options.model ? steps.balance(message) : steps.place(message);
      plan.messages[key.index].step = firstStep + step;
    }
    firstStep += steps.steps();
    stats.stagingPeak = std::max(stats.stagingPeak, steps.peak());
  }

  std::vector<MessageKey> keys;
  keys.reserve(plan.messages.size());
  for (size_t i = 0; i < plan.messages.size(); ++i)
    keys.emplace_back(plan.messages[i].step, plan.messages[i], i);
  if (!keys.empty())
    sortBySteps(plan, keys, firstStep);
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
