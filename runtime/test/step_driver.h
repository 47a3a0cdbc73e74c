//===- step_driver.h - Every rank's step-wise run, one process -*- C++ -*-===//
//
// The caller's side of the step-wise API (m2n_executor_step_next) for tests
// that hold every rank of a plan, each over an external transport: round by
// round, the ranks whose open exchange comes first (the agreement, then by
// step) move it together with a plain loop over the handed-out buffers
// (the k-th send of a to b into the k-th receive of b from a), then
// complete it.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_RUNTIME_TEST_STEP_DRIVER_H
#define M2N_RUNTIME_TEST_STEP_DRIVER_H

#include "sim_test_util.h"

#include "m2n/executor.h"

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace m2n::test {

/// Moves one message: `bytes` from `from` to `to`, in the executors'
/// memory.
using MoveFn = std::function<void(void *to, const void *from, uint64_t bytes)>;

class StepDriver {
public:
  explicit StepDriver(std::vector<m2n_executor_t> executors, MoveFn move)
      : executors_(std::move(executors)), move_(std::move(move)) {}

  /// One whole run of every rank: the outcome of each rank's first failed
  /// call, or of its run. `problem` says what did not match, if anything.
  std::vector<Outcome> run(std::string *problem) {
    size_t size = executors_.size();
    std::vector<Outcome> outcomes(size);
    std::vector<m2n_exchange_t> open(size);
    std::vector<char> done(size, false);
    for (size_t r = 0; r < size; ++r)
      next(r, &open[r], &done[r], &outcomes[r]);
    for (;;) {
      uint64_t first = UINT64_MAX;
      for (size_t r = 0; r < size; ++r)
        if (!done[r])
          first = std::min(first, order(open[r].step));
      if (first == UINT64_MAX)
        return outcomes;
      std::vector<uint32_t> movers;
      for (size_t r = 0; r < size; ++r)
        if (!done[r] && order(open[r].step) == first)
          movers.push_back(static_cast<uint32_t>(r));
      std::string mismatch = moveAll(open, movers);
      if (!mismatch.empty() && problem->empty())
        *problem = mismatch;
      for (uint32_t r : movers) {
        const m2n_exchange_t &x = open[r];
        Outcome completed = outcome(m2n_executor_step_complete(
            executors_[r], x.step, x.send_count, x.receive_count));
        if (!completed.ok()) {
          outcomes[r] = completed;
          done[r] = true;
          continue;
        }
        next(r, &open[r], &done[r], &outcomes[r]);
      }
    }
  }

private:
  // The agreement first, then by step.
  static uint64_t order(uint64_t step) {
    return step == M2N_STEP_AGREEMENT ? 0 : step + 1;
  }

  void next(size_t rank, m2n_exchange_t *out, char *done, Outcome *result) {
    *result = outcome(m2n_executor_step_next(executors_[rank], out));
    *done = !result->ok() || out->done;
  }

  // "" or what does not match.
  std::string moveAll(const std::vector<m2n_exchange_t> &open,
                      const std::vector<uint32_t> &movers) {
    std::map<std::pair<uint32_t, uint32_t>, std::vector<const m2n_message_t *>>
        sends;
    for (uint32_t a : movers)
      for (uint32_t i = 0; i < open[a].send_count; ++i)
        sends[{a, open[a].sends[i].peer}].push_back(&open[a].sends[i]);
    std::map<std::pair<uint32_t, uint32_t>, size_t> taken;
    for (uint32_t b : movers)
      for (uint32_t i = 0; i < open[b].receive_count; ++i) {
        const m2n_message_t &receive = open[b].receives[i];
        std::pair<uint32_t, uint32_t> pair{receive.peer, b};
        size_t k = taken[pair]++;
        if (k >= sends[pair].size() || sends[pair][k]->bytes != receive.bytes)
          return "rank " + std::to_string(b) + " receives from rank " +
                 std::to_string(receive.peer) + " what it does not send";
        move_(receive.data, sends[pair][k]->data, receive.bytes);
      }
    return "";
  }

  std::vector<m2n_executor_t> executors_;
  MoveFn move_;
};

} // namespace m2n::test

#endif // M2N_RUNTIME_TEST_STEP_DRIVER_H
