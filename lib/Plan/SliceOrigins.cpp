//===- SliceOrigins.cpp - Where forwarded bytes came from -----------------===//

#include "SliceOrigins.h"

#include "BoxIndex.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <numeric>

using namespace m2n;
using namespace m2n::plan;

/// The origins of `group`'s slices, which forward some.
static GroupOrigins groupOrigins(const TransferGroup &group) {
  const std::vector<Slice> &slices = group.slices;
  GroupOrigins origins;
  std::vector<int64_t> &roots = origins.roots;
  roots.resize(slices.size());
  origins.inputs.assign(slices.size(), -1);
  llvm::DenseMap<int64_t, std::vector<int32_t>> byReceiver;
  for (size_t i = 0; i < slices.size(); ++i) {
    roots[i] = slices[i].sender;
    if (!slices[i].isLocalCopy())
      byReceiver[slices[i].receiver].push_back(static_cast<int32_t>(i));
  }
  llvm::DenseMap<int64_t, BoxIndex> arrivals;
  for (auto &[receiver, ids] : byReceiver)
    arrivals.try_emplace(receiver, BoxIndex(slices, std::move(ids)));
  // By round, so that what a forward passes on has its root already.
  std::vector<int32_t> order(slices.size());
  std::iota(order.begin(), order.end(), 0);
  llvm::stable_sort(order, [&](int32_t a, int32_t b) {
    return slices[a].round < slices[b].round;
  });
  for (int32_t i : order) {
    const Slice &slice = slices[i];
    if (slice.origin != Origin::Destination)
      continue;
    auto received = arrivals.find(slice.sender);
    if (received == arrivals.end())
      continue;
    int32_t input = -1;
    received->second.forEachMeeting(slices, slice.box, [&](int32_t j) {
      if (slices[j].round < slice.round &&
          (input < 0 || roots[j] < roots[input]))
        input = j;
    });
    if (input >= 0) {
      roots[i] = roots[input];
      origins.inputs[i] = input;
    }
  }
  return origins;
}

std::vector<GroupOrigins> plan::sliceOrigins(const Plan &plan) {
  std::vector<GroupOrigins> origins(plan.groups.size());
  for (size_t g = 0; g < plan.groups.size(); ++g)
    if (llvm::any_of(plan.groups[g].slices, [](const Slice &slice) {
          return slice.origin == Origin::Destination;
        }))
      origins[g] = groupOrigins(plan.groups[g]);
  return origins;
}
