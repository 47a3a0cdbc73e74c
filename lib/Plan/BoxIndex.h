//===- BoxIndex.h - Finding the slices whose boxes meet a box ---*- C++ -*-===//
//
// Checking a forward means finding what its sender received of the same
// region: among the slices one rank receives of a group, those whose boxes
// meet the forwarded box. A rank may receive hundreds of slices of a group
// (a part of every region, from every peer), and forward as many, so a scan
// of all of them per forward is quadratic. The slices are kept sorted by
// where their boxes start in the first dimension instead: those that meet a
// box start less than the longest box's extent before it, and before its
// end.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_LIB_PLAN_BOXINDEX_H
#define M2N_LIB_PLAN_BOXINDEX_H

#include "m2n/Plan/Plan.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace m2n::plan {

class BoxIndex {
public:
  BoxIndex() = default;
  /// Indexes the slices `ids` of `slices`, which must outlive the index.
  BoxIndex(const std::vector<Slice> &slices, std::vector<int32_t> ids)
      : ids(std::move(ids)) {
    auto start = [&](int32_t id) { return startOf(slices[id].box); };
    std::stable_sort(this->ids.begin(), this->ids.end(),
                     [&](int32_t a, int32_t b) { return start(a) < start(b); });
    starts.reserve(this->ids.size());
    for (int32_t id : this->ids) {
      starts.push_back(start(id));
      longest = std::max(longest, extentOf(slices[id].box));
    }
  }

  /// Calls `visit(id)` for every indexed slice whose box meets `box`, in
  /// order of where they start.
  template <typename Visit>
  void forEachMeeting(const std::vector<Slice> &slices, const Box &box,
                      Visit visit) const {
    int64_t begin = startOf(box), end = begin + extentOf(box);
    // Saturating: boxes read from bad IR may lie anywhere.
    int64_t from = begin >= INT64_MIN + longest ? begin - longest : INT64_MIN;
    auto first = std::upper_bound(starts.begin(), starts.end(), from);
    for (auto it = first; it != starts.end() && *it < end; ++it) {
      int32_t id = ids[it - starts.begin()];
      if (intersects(slices[id].box, box))
        visit(id);
    }
  }

private:
  /// A box of no dimension (a scalar's) starts at 0 and spans 1.
  static int64_t startOf(const Box &box) {
    return box.offsets.empty() ? 0 : box.offsets[0];
  }
  static int64_t extentOf(const Box &box) {
    return box.sizes.empty() ? 1 : std::max<int64_t>(box.sizes[0], 1);
  }

  std::vector<int32_t> ids;
  std::vector<int64_t> starts;
  int64_t longest = 0;
};

} // namespace m2n::plan

#endif // M2N_LIB_PLAN_BOXINDEX_H
