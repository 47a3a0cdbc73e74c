//===- Schedule.cpp - Ordering messages into steps ------------------------===//
//
// A plan takes, by the cost model, the sum over steps of its busiest rank's
// time and of every step's own cost, so a step that one rank fills while
// others idle costs time that no rank's total accounts for.
//
// A plan without relays has no order to keep: its steps are the fewest that
// its busiest rank's staging allows, and its messages go, largest first,
// each into the step with staging room where its two ranks are least busy,
// so that every rank's work spreads evenly over the steps
// (longest-processing-time first). A message that fits in no step opens
// one. Without a model, messages go largest first into the earliest step
// with room: first-fit decreasing.
//
// A plan with relays has forwards, each of which must come in a later step
// than every message that brings its bytes to its sender; nothing else
// orders it: rounds do not run in lockstep. Its messages are list-scheduled
// step by step: a step takes the messages whose inputs have arrived, those
// with the longest chains of forwards after them first, until each rank has
// about its even share of the busiest rank's work (that work over the
// steps). The source side's sends, the forwards and the direct messages
// then overlap, and a pipeline fills and drains in a step or two. The step
// count weighs that fill and drain, about one share per hop, against every
// step's own cost.
//
//===----------------------------------------------------------------------===//

#include "m2n/Plan/Schedule.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <limits>
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

/// The messages each message waits for: those that bring the bytes it
/// forwards to its sender (same group, overlapping members, meeting boxes).
/// Stored as one list, message after message.
class Dependencies {
public:
  explicit Dependencies(const Plan &plan)
      : start(plan.messages.size() + 1, 0) {
    indexRecords(plan);
    indexArrivals(plan);
    for (size_t m = 0; m < plan.messages.size(); ++m) {
      size_t first = list.size();
      for (const MessagePart &part : plan.messages[m].parts)
        addInputs(plan, m, part);
      std::sort(list.begin() + first, list.end());
      list.erase(std::unique(list.begin() + first, list.end()), list.end());
      start[m + 1] = list.size();
    }
  }

  llvm::ArrayRef<uint32_t> of(size_t m) const {
    return llvm::ArrayRef(list).slice(start[m], start[m + 1] - start[m]);
  }
  bool any() const { return !list.empty(); }

private:
  /// Where members [begin, end) of a slice travel: message `message`.
  struct Record {
    uint32_t message;
    int32_t begin, end;
  };

  /// The records of the messages that carry each slice.
  void indexRecords(const Plan &plan) {
    groupBase.assign(plan.groups.size() + 1, 0);
    for (size_t g = 0; g < plan.groups.size(); ++g)
      groupBase[g + 1] = groupBase[g] + plan.groups[g].slices.size();
    records.resize(groupBase.back());
    for (size_t m = 0; m < plan.messages.size(); ++m)
      for (const MessagePart &part : plan.messages[m].parts)
        records[groupBase[part.group] + part.slice].push_back(
            {static_cast<uint32_t>(m), part.memberBegin, part.memberEnd});
  }

  /// Per group, its remote slices that travel, as (receiver, slice),
  /// sorted: what each rank receives of the group's tensors.
  void indexArrivals(const Plan &plan) {
    arrivals.resize(plan.groups.size());
    for (size_t g = 0; g < plan.groups.size(); ++g) {
      const TransferGroup &group = plan.groups[g];
      for (size_t i = 0; i < group.slices.size(); ++i)
        if (!group.slices[i].isLocalCopy() &&
            !records[groupBase[g] + i].empty())
          arrivals[g].emplace_back(group.slices[i].receiver,
                                   static_cast<int32_t>(i));
      llvm::sort(arrivals[g]);
    }
  }

  /// Adds the messages that bring message m's forwarded part to its sender.
  void addInputs(const Plan &plan, size_t m, const MessagePart &part) {
    const TransferGroup &group = plan.groups[part.group];
    const Slice &slice = group.slices[part.slice];
    if (slice.origin != Origin::Destination)
      return;
    const auto &received = arrivals[part.group];
    auto first = llvm::lower_bound(
        received,
        std::make_pair(slice.sender, std::numeric_limits<int32_t>::min()));
    for (auto it = first; it != received.end() && it->first == slice.sender;
         ++it) {
      if (!intersects(group.slices[it->second].box, slice.box))
        continue;
      for (const Record &record : records[groupBase[part.group] + it->second])
        if (record.begin < part.memberEnd && part.memberBegin < record.end &&
            record.message != m)
          list.push_back(record.message);
    }
  }

  /// Where each group's slices start in `records`.
  std::vector<size_t> groupBase;
  std::vector<std::vector<Record>> records;
  std::vector<std::vector<std::pair<int64_t, int32_t>>> arrivals;
  /// Message m's inputs are list[start[m], start[m + 1]).
  std::vector<size_t> start;
  std::vector<uint32_t> list;
};

/// List-schedules the messages of a plan with relays: see the file comment.
class ListScheduler {
public:
  ListScheduler(const Plan &plan, const Dependencies &dependencies,
                int64_t budget, const CostModel &model)
      : plan(plan), dependencies(dependencies), budget(budget), model(model),
        ranks(planRanks(plan)), index(ranks), send(ranks.size()),
        receive(ranks.size()), staged(ranks.size()) {}

  /// The step of every message, or an error when forwards wait on each
  /// other in a cycle (only a hand-made plan has one).
  llvm::Expected<std::vector<int64_t>> run() {
    size_t count = plan.messages.size();
    std::vector<double> seconds(count);
    for (size_t m = 0; m < count; ++m) {
      const Message &message = plan.messages[m];
      seconds[m] = model.messageSeconds(message.sender, message.receiver,
                                        message.bytes);
    }
    std::vector<uint32_t> waiting(count, 0);
    std::vector<std::vector<uint32_t>> dependents(count);
    for (size_t m = 0; m < count; ++m)
      for (uint32_t input : dependencies.of(m)) {
        dependents[input].push_back(static_cast<uint32_t>(m));
        ++waiting[m];
      }
    std::vector<int64_t> chains = chainLengths(dependents);
    if (chains.empty())
      return cycleError();
    double share = evenShare(seconds, *llvm::max_element(chains));
    auto before = [&](uint32_t a, uint32_t b) {
      return std::make_tuple(-chains[a], -seconds[a], a) <
             std::make_tuple(-chains[b], -seconds[b], b);
    };

    std::vector<int64_t> steps(count, -1);
    std::vector<uint32_t> ready, kept, unlocked;
    for (size_t m = 0; m < count; ++m)
      if (waiting[m] == 0)
        ready.push_back(static_cast<uint32_t>(m));
    llvm::sort(ready, before);
    size_t placed = 0;
    for (int64_t step = 0; placed < count; ++step) {
      if (ready.empty())
        return cycleError();
      clearStep();
      kept.clear();
      unlocked.clear();
      for (uint32_t m : ready) {
        if (!fits(plan.messages[m], seconds[m], share)) {
          kept.push_back(m);
          continue;
        }
        take(plan.messages[m], seconds[m]);
        steps[m] = step;
        ++placed;
        for (uint32_t next : dependents[m])
          if (--waiting[next] == 0)
            unlocked.push_back(next);
      }
      llvm::sort(unlocked, before);
      ready.clear();
      std::merge(kept.begin(), kept.end(), unlocked.begin(), unlocked.end(),
                 std::back_inserter(ready), before);
    }
    return steps;
  }

  int64_t peak() const { return peakBytes; }

private:
  static std::vector<int64_t> planRanks(const Plan &plan) {
    std::vector<int64_t> result;
    for (const Message &message : plan.messages) {
      result.push_back(message.sender);
      result.push_back(message.receiver);
    }
    llvm::sort(result);
    result.erase(llvm::unique(result), result.end());
    return result;
  }

  /// Per message, the most messages that wait on it one after another,
  /// itself included; empty when they wait on each other in a cycle.
  static std::vector<int64_t>
  chainLengths(const std::vector<std::vector<uint32_t>> &dependents) {
    size_t count = dependents.size();
    // Depth-first, without recursion: a chain may be long.
    std::vector<int64_t> chains(count, 0);
    std::vector<uint8_t> state(count, 0); // 0 new, 1 open, 2 done
    std::vector<std::pair<uint32_t, size_t>> stack;
    for (size_t root = 0; root < count; ++root) {
      if (state[root])
        continue;
      stack.emplace_back(static_cast<uint32_t>(root), 0);
      state[root] = 1;
      while (!stack.empty()) {
        auto &[m, next] = stack.back();
        if (next < dependents[m].size()) {
          uint32_t child = dependents[m][next++];
          if (state[child] == 1)
            return {};
          if (state[child] == 0) {
            state[child] = 1;
            stack.emplace_back(child, 0);
          }
          continue;
        }
        int64_t longest = 0;
        for (uint32_t child : dependents[m])
          longest = std::max(longest, chains[child]);
        chains[m] = longest + 1;
        state[m] = 2;
        stack.pop_back();
      }
    }
    return chains;
  }

  /// The seconds each rank may work in a step: the busiest rank's work
  /// over the steps. More steps shorten the fill and drain of the
  /// pipeline, about a share per hop, but each costs its own overhead; the
  /// count that balances the two is sqrt(hops * work / step cost). It is
  /// no fewer than staging needs, and a share holds a few of the largest
  /// messages, so that steps pack well.
  double evenShare(const std::vector<double> &seconds, int64_t chain) {
    std::vector<double> sent(ranks.size(), 0), received(ranks.size(), 0);
    std::vector<int64_t> staging(ranks.size(), 0);
    double largest = 0;
    for (size_t m = 0; m < seconds.size(); ++m) {
      const Message &message = plan.messages[m];
      size_t from = index.find(message.sender), to = index.find(message.receiver);
      sent[from] += seconds[m];
      received[to] += seconds[m];
      if (!message.zeroCopy) {
        staging[from] += message.bytes;
        staging[to] += message.bytes;
      }
      largest = std::max(largest, seconds[m]);
    }
    double work = std::max(*llvm::max_element(sent), *llvm::max_element(received));
    int64_t mostStaged = *llvm::max_element(staging);
    double fewest = std::ceil(static_cast<double>(mostStaged) /
                              static_cast<double>(budget));
    double stepSeconds =
        std::max(model.getTopology().stepSeconds, 1e-3 * work / kMostSteps);
    double balanced = std::sqrt(static_cast<double>(chain - 1) * work / stepSeconds);
    double packable = work / (kLargestPerShare * largest);
    double steps = std::clamp(std::min(balanced, packable), 1.0, kMostSteps);
    steps = std::max(steps, fewest);
    return work / std::floor(steps);
  }

  void clearStep() {
    for (size_t slot : touched)
      send[slot] = receive[slot] = 0, staged[slot] = 0;
    touched.clear();
  }

  /// Whether a message fits the step: staging room at both ends, and each
  /// end either idle so far or within its share with it.
  bool fits(const Message &message, double seconds, double share) const {
    size_t from = index.find(message.sender), to = index.find(message.receiver);
    int64_t bytes = message.zeroCopy ? 0 : message.bytes;
    if (bytes > 0 &&
        (staged[from] + bytes > budget || staged[to] + bytes > budget))
      return false;
    auto within = [&](double busy) {
      return busy == 0 || busy + seconds <= share;
    };
    return within(send[from]) && within(receive[to]);
  }

  void take(const Message &message, double seconds) {
    size_t from = index.find(message.sender), to = index.find(message.receiver);
    int64_t bytes = message.zeroCopy ? 0 : message.bytes;
    for (size_t slot : {from, to}) {
      if (send[slot] == 0 && receive[slot] == 0 && staged[slot] == 0)
        touched.push_back(slot);
      staged[slot] += bytes;
      peakBytes = std::max(peakBytes, staged[slot]);
    }
    send[from] += seconds;
    receive[to] += seconds;
  }

  static llvm::Error cycleError() {
    return llvm::createStringError(
        "forwards wait on each other in a cycle: no step can come first");
  }

  /// A share holds this many of the largest messages.
  static constexpr double kLargestPerShare = 2;
  static constexpr double kMostSteps = 4096;

  const Plan &plan;
  const Dependencies &dependencies;
  int64_t budget;
  const CostModel &model;
  int64_t peakBytes = 0;
  std::vector<int64_t> ranks;
  RankIndex index;
  /// This step's work of each rank slot, and the slots it touched.
  std::vector<double> send, receive;
  std::vector<int64_t> staged;
  std::vector<size_t> touched;
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
  std::optional<Dependencies> dependencies;
  if (options.model && byRound.size() > 1)
    dependencies.emplace(plan);
  if (dependencies && dependencies->any()) {
    ListScheduler scheduler(plan, *dependencies, budget, *options.model);
    llvm::Expected<std::vector<int64_t>> steps = scheduler.run();
    if (!steps)
      return steps.takeError();
    for (size_t m = 0; m < plan.messages.size(); ++m) {
      plan.messages[m].step = (*steps)[m];
      firstStep = std::max(firstStep, (*steps)[m] + 1);
    }
    stats.stagingPeak = scheduler.peak();
    byRound.clear();
  }
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
