//===- StepTimes.h - A plan's time, step by step ---------------*- C++ -*-===//
//
// Where a plan loses time against its lower bound, step by step, as `m2n
// inspect --steps` prints it and the step table of `--html` shows it: per
// step, its busiest rank by the cost model and that rank's seconds, against
// the even share (the plan's lower bound over its steps), and the seconds
// in the step of the rank with the most work in the plan.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_TOOLS_M2N_STEPTIMES_H
#define M2N_TOOLS_M2N_STEPTIMES_H

#include <cstdint>
#include <string>
#include <vector>

namespace m2n::driver {

/// Per step, its busiest rank, sending or receiving (the lowest rank of a
/// tie, sending before receiving), and that rank's seconds, the step's time
/// less its own cost; and the rank with the most work in the plan (its
/// sends or its receives over all steps) and its seconds in each step,
/// whose shortfall against the busiest shows where it waits, as in a
/// pipeline's fill.
struct StepTimes {
  struct Busiest {
    double seconds = 0;
    uint64_t rank = 0;
    bool sending = true;

    /// "send 3", "recv 3".
    std::string label() const {
      return (sending ? "send " : "recv ") + std::to_string(rank);
    }
  };
  std::vector<Busiest> busiest;
  uint64_t loadedRank = 0;
  double loadedSeconds = 0;
  std::vector<double> loaded;
  /// Each step's own cost, and the plan's lower bound.
  double stepSeconds = 0;
  double bound = 0;

  /// The even share: the plan's lower bound over its steps.
  double share() const {
    return busiest.empty() ? 0.0 : bound / static_cast<double>(busiest.size());
  }
  /// Step s's time: its busiest rank and its own cost.
  double seconds(size_t s) const { return busiest[s].seconds + stepSeconds; }
  /// Step s's time over the even share: above 1 where the step loses.
  double overShare(size_t s) const {
    return share() > 0 ? seconds(s) / share() : 0.0;
  }
  /// The steps' times added up, the model's time for the plan.
  double total() const {
    double sum = 0;
    for (size_t s = 0; s < busiest.size(); ++s)
      sum += seconds(s);
    return sum;
  }
  /// The steps' total over the plan's lower bound (1 without one).
  double overBound() const { return bound > 0 ? total() / bound : 1.0; }
};

} // namespace m2n::driver

#endif // M2N_TOOLS_M2N_STEPTIMES_H
