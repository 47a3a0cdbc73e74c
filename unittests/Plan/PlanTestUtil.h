//===- PlanTestUtil.h - Building small plans in tests -----------*- C++ -*-===//

#ifndef M2N_UNITTESTS_PLAN_PLANTESTUTIL_H
#define M2N_UNITTESTS_PLAN_PLANTESTUTIL_H

#include "m2n/Plan/Plan.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <ostream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace m2n {
inline void PrintTo(const Box &box, std::ostream *os) { *os << box.str(); }
namespace plan {
inline void PrintTo(const Slice &slice, std::ostream *os) {
  *os << "{" << slice.sender << " -> " << slice.receiver << " "
      << slice.box.str()
      << (slice.origin == Origin::Destination ? " relay" : "") << " round "
      << slice.round << "}";
}
} // namespace plan
} // namespace m2n

namespace m2n::plan::test {

using Shape = std::vector<int64_t>;
using Placements = std::vector<Placement>;

inline const Placement R = Placement::replicate();
inline Placement S(int64_t dim) { return Placement::shard(dim); }

inline Box box(Shape offsets, Shape sizes) {
  return Box{std::move(offsets), std::move(sizes)};
}

inline Slice slice(int64_t sender, int64_t receiver, Box region,
                   Origin origin = Origin::Source, int32_t round = 0) {
  Slice result;
  result.sender = sender;
  result.receiver = receiver;
  result.origin = origin;
  result.round = round;
  result.box = std::move(region);
  return result;
}

/// A refit spec written in a few calls.
class Refit {
public:
  Refit &mesh(std::string name, Shape shape, int64_t start) {
    return mesh(std::move(name), shape, Mesh::contiguous(shape, start).ranks);
  }
  Refit &mesh(std::string name, Shape shape, std::vector<int64_t> ranks) {
    spec.meshes.push_back(spec::MeshSpec{
        std::move(name), std::move(shape), {}, std::move(ranks)});
    return *this;
  }
  Refit &tensor(std::string name, Shape shape, std::string srcMesh,
                Placements src, std::string dstMesh, Placements dst,
                DType dtype = DType::F32) {
    spec::TensorSpec tensor;
    tensor.name = std::move(name);
    tensor.dtype = dtype;
    tensor.shape = std::move(shape);
    tensor.src = spec::LayoutSpec{std::move(srcMesh), std::move(src)};
    tensor.dst = spec::LayoutSpec{std::move(dstMesh), std::move(dst)};
    spec.tensors.push_back(std::move(tensor));
    return *this;
  }
  Plan plan() const { return planFromSpec(spec); }

  spec::RefitSpec spec;
};

/// Fuses by hand, as simply as possible: one message per remote slice
/// carrying all members, in the step of its round; the plan counts as
/// scheduled with an unlimited staging budget.
inline void fuseByHand(Plan &plan) {
  plan.messages.clear();
  int64_t steps = 0;
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const TransferGroup &group = plan.groups[g];
    for (size_t i = 0; i < group.slices.size(); ++i) {
      const Slice &slice = group.slices[i];
      if (slice.isLocalCopy())
        continue;
      Message message;
      message.step = slice.round;
      message.sender = slice.sender;
      message.receiver = slice.receiver;
      int32_t members = static_cast<int32_t>(group.members.size());
      message.parts.push_back(MessagePart{static_cast<int32_t>(g),
                                          static_cast<int32_t>(i), 0, members});
      message.bytes = sliceBytes(group, slice) * members;
      plan.messages.push_back(std::move(message));
      steps = std::max<int64_t>(steps, slice.round + 1);
    }
  }
  std::stable_sort(plan.messages.begin(), plan.messages.end(),
                   [](const Message &a, const Message &b) {
                     return std::tie(a.step, a.sender, a.receiver) <
                            std::tie(b.step, b.sender, b.receiver);
                   });
  plan.numSteps = std::max<int64_t>(steps, 1);
  plan.stagingBudget = int64_t(1) << 40;
}

/// The problems, one a line, for failure messages.
inline std::string joined(const std::vector<std::string> &problems) {
  std::string result;
  for (const std::string &problem : problems)
    result += problem + "\n";
  return result;
}

/// Whether some problem contains `text`.
inline bool mentions(const std::vector<std::string> &problems,
                     const std::string &text) {
  return std::any_of(problems.begin(), problems.end(),
                     [&](const std::string &problem) {
                       return problem.find(text) != std::string::npos;
                     });
}

} // namespace m2n::plan::test

#endif // M2N_UNITTESTS_PLAN_PLANTESTUTIL_H
