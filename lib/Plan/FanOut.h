//===- FanOut.h - The slices a fan-out slice stands for ---------*- C++ -*-===//
//
// A fan-out slice (Slice::isFanOut) names its box and sender but no
// receiver: it goes to every rank whose destination box contains its box.
// Decompose writes them, balance and relay read them, and expandFanOuts
// writes out what they stand for; all of them ask FanOutIndex, so that the
// one rule (from the sender, or a local copy where the receiver holds the
// box in its source shard) lives here alone.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_LIB_PLAN_FANOUT_H
#define M2N_LIB_PLAN_FANOUT_H

#include "LayoutIndex.h"

namespace m2n::plan {

/// Whether a receiver whose own source box is `ownBox` copies a region of
/// source box `regionBox` locally instead of receiving it from a holder.
inline bool copiesLocally(int32_t ownBox, int32_t regionBox) {
  return ownBox >= 0 && ownBox == regionBox;
}

/// The source box that contains the non-empty box of `slice`: most often
/// its sender's own, which is tried before a search; -1 when none does.
inline int32_t containingSourceBox(const LayoutIndex &src, const Slice &slice) {
  int32_t own = src.boxOf(slice.sender);
  if (own >= 0 && contains(src.box(own), slice.box))
    return own;
  return src.findContaining(slice.box);
}

/// Both layouts of one group, indexed to answer who a fan-out slice
/// reaches.
class FanOutIndex {
public:
  FanOutIndex(const Plan &plan, const TransferGroup &group)
      : src(plan, group.shape, group.src), dst(plan, group.shape, group.dst) {}

  const LayoutIndex &source() const { return src; }
  const LayoutIndex &destination() const { return dst; }

  /// The destination box that contains the fan-out `slice`'s box, and the
  /// source box that does: -1 where none does (only in malformed IR).
  int32_t destinationOf(const Slice &slice) const {
    return dst.findContaining(slice.box);
  }
  int32_t sourceOf(const Slice &slice) const {
    return containingSourceBox(src, slice);
  }

  /// Calls `fn(sender, receiver)` for each slice that the fan-out `slice`
  /// stands for, receivers in destination mesh order; none when its box
  /// lies in no destination box.
  template <typename Fn> void forEachDelivery(const Slice &slice, Fn fn) const {
    int32_t to = destinationOf(slice);
    if (to < 0)
      return;
    int32_t from = sourceOf(slice);
    for (int64_t receiver : dst.holders(to))
      fn(copiesLocally(src.boxOf(receiver), from) ? receiver : slice.sender,
         receiver);
  }

  /// The slices that the fan-out `slice` stands for, appended to `out`;
  /// false, with `slice` itself appended, when its box lies in no
  /// destination box, so that the slice is not lost without a word.
  bool expand(const Slice &slice, std::vector<Slice> &out) const {
    if (destinationOf(slice) < 0) {
      out.push_back(slice);
      return false;
    }
    forEachDelivery(slice, [&](int64_t sender, int64_t receiver) {
      Slice &one = out.emplace_back(slice);
      one.sender = sender;
      one.receiver = receiver;
    });
    return true;
  }

private:
  LayoutIndex src, dst;
};

} // namespace m2n::plan

#endif // M2N_LIB_PLAN_FANOUT_H
