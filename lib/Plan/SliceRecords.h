//===- SliceRecords.h - The message parts of each slice ---------*- C++ -*-===//
//
// The verifier and the scheduler both ask, for a slice of a group, which
// message parts carry it. A plan has about as many parts as slices, and
// hundreds of thousands of each, so the parts' records go into one list,
// slice after slice, by a counting sort, and a slice's records are a range
// of it.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_LIB_PLAN_SLICERECORDS_H
#define M2N_LIB_PLAN_SLICERECORDS_H

#include "m2n/Plan/Plan.h"

#include "llvm/ADT/ArrayRef.h"

#include <algorithm>
#include <cstddef>
#include <vector>

namespace m2n::plan {

template <typename Record> class SliceRecords {
public:
  SliceRecords() = default;

  /// The records that `forEach(add)` gives, by calling add(group, slice,
  /// record) for each, with group and slice valid indices into `plan`. It
  /// is called twice (to count, then to place) and must give the same
  /// records both times. Within a slice, records keep the order given.
  template <typename ForEach>
  SliceRecords(const Plan &plan, ForEach forEach) {
    sliceBase.assign(plan.groups.size() + 1, 0);
    for (size_t g = 0; g < plan.groups.size(); ++g)
      sliceBase[g + 1] = sliceBase[g] + plan.groups[g].slices.size();
    start.assign(sliceBase.back() + 1, 0);
    forEach([&](size_t g, size_t i, const Record &) {
      ++start[sliceBase[g] + i + 1];
    });
    for (size_t k = 1; k < start.size(); ++k)
      start[k] += start[k - 1];
    std::vector<size_t> next(start.begin(), start.end() - 1);
    records.resize(start.back());
    forEach([&](size_t g, size_t i, const Record &record) {
      records[next[sliceBase[g] + i]++] = record;
    });
  }

  /// The records of slice `i` of group `g`.
  llvm::ArrayRef<Record> of(size_t g, size_t i) const {
    size_t key = sliceBase[g] + i;
    return llvm::ArrayRef(records).slice(start[key],
                                         start[key + 1] - start[key]);
  }

  /// Every record, slice after slice.
  llvm::ArrayRef<Record> all() const { return records; }

  /// Sorts each slice's records by `less`, stably (a slice rarely has more
  /// than one).
  template <typename Less> void sortEachSlice(Less less) {
    for (size_t k = 0; k + 1 < start.size(); ++k)
      if (start[k + 1] - start[k] > 1)
        std::stable_sort(records.begin() + start[k],
                         records.begin() + start[k + 1], less);
  }

private:
  /// Group g's slice i is slice sliceBase[g] + i of the plan, and its
  /// records are records[start[k], start[k + 1]) for that k.
  std::vector<size_t> sliceBase, start;
  std::vector<Record> records;
};

} // namespace m2n::plan

#endif // M2N_LIB_PLAN_SLICERECORDS_H
