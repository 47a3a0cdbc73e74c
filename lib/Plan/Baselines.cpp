//===- Baselines.cpp - What a refit costs without m2n ---------------------===//
//
// The baselines move each group's tensors one after another, and all the
// members of a group move alike, so a group's steps are priced once and
// counted once per member. Messages are added to the cost directly rather
// than built as plan::Messages: a padded all-to-all of a large model has
// tens of millions of them.
//
//===----------------------------------------------------------------------===//

#include "m2n/Plan/Baselines.h"

#include "m2n/Plan/Decompose.h"

#include "LayoutIndex.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>

using namespace m2n;
using namespace m2n::plan;

namespace {

/// Prices steps as CostModel::cost prices the steps of a fused plan: a
/// rank's sends in a step run one after another, and so do its receives;
/// the two directions overlap; a step lasts as long as its busiest rank,
/// plus its own cost; steps run one after another.
class StepPricer {
public:
  StepPricer(const CostModel &model, PlanCost &cost, int64_t worldSize)
      : model(model), cost(cost), loads(worldSize) {
    cost.sendBytes.assign(worldSize, 0);
    cost.receiveBytes.assign(worldSize, 0);
    cost.messagesSent.assign(worldSize, 0);
  }

  /// Adds a message to the current step; an empty one is never sent.
  void add(int64_t sender, int64_t receiver, int64_t bytes) {
    if (bytes <= 0)
      return;
    double seconds = model.messageSeconds(sender, receiver, bytes);
    touch(sender).sendSeconds += seconds;
    touch(receiver).receiveSeconds += seconds;
    loads[sender].sendBytes += bytes;
    loads[receiver].receiveBytes += bytes;
    ++loads[sender].messagesSent;
  }

  /// Adds the current step to the cost `repeats` times, as that many steps
  /// one after another (once per member of a group), and starts an empty
  /// step. A step without messages takes no time and is not counted.
  void commit(int64_t repeats) {
    double longest = 0;
    int64_t messages = 0, bytes = 0;
    for (int64_t rank : touched) {
      Load &load = loads[rank];
      longest = std::max({longest, load.sendSeconds, load.receiveSeconds});
      messages += load.messagesSent;
      bytes += load.sendBytes;
      cost.sendBytes[rank] += load.sendBytes * repeats;
      cost.receiveBytes[rank] += load.receiveBytes * repeats;
      cost.messagesSent[rank] += load.messagesSent * repeats;
      load = Load();
    }
    if (!touched.empty()) {
      cost.steps += repeats;
      cost.messages += messages * repeats;
      cost.wireBytes += bytes * repeats;
      cost.predictedSeconds +=
          (longest + model.getTopology().stepSeconds) *
          static_cast<double>(repeats);
    }
    touched.clear();
  }

private:
  struct Load {
    double sendSeconds = 0;
    double receiveSeconds = 0;
    int64_t sendBytes = 0;
    int64_t receiveBytes = 0;
    int64_t messagesSent = 0;
    bool touched = false;
  };

  Load &touch(int64_t rank) {
    Load &load = loads[rank];
    if (!load.touched) {
      load.touched = true;
      touched.push_back(rank);
    }
    return load;
  }

  const CostModel &model;
  PlanCost &cost;
  /// The current step's load of every rank, and the ranks it touches.
  std::vector<Load> loads;
  std::vector<int64_t> touched;
};

/// The refit of `plan` alone: its meshes, tensors and groups without
/// slices, messages or schedule.
Plan refitOf(const Plan &plan) {
  Plan refit;
  refit.meshNames = plan.meshNames;
  refit.meshes = plan.meshes;
  refit.tensors = plan.tensors;
  refit.groups.reserve(plan.groups.size());
  for (const TransferGroup &group : plan.groups) {
    TransferGroup &copy = refit.groups.emplace_back();
    copy.shape = group.shape;
    copy.dtype = group.dtype;
    copy.src = group.src;
    copy.dst = group.dst;
    copy.members = group.members;
  }
  return refit;
}

int64_t memberCount(const TransferGroup &group) {
  return static_cast<int64_t>(group.members.size());
}

/// The source rank that holds the most of the tensor, the first in mesh
/// order on a tie: gathering to it moves the fewest bytes. -1 when no rank
/// holds any of it.
int64_t gatherRoot(const LayoutIndex &src) {
  int64_t root = -1, rootVolume = 0;
  llvm::ArrayRef<int64_t> ranks = src.meshRanks();
  for (size_t index = 0; index < ranks.size(); ++index) {
    int32_t id = src.boxAt(index);
    if (id < 0)
      continue;
    int64_t volume = src.box(id).volume();
    if (volume > rootVolume) {
      root = ranks[index];
      rootVolume = volume;
    }
  }
  return root;
}

void addGatherBroadcast(const Plan &plan, const TransferGroup &group,
                        StepPricer &pricer) {
  LayoutIndex src(plan, group.shape, group.src);
  LayoutIndex dst(plan, group.shape, group.dst);
  int64_t root = gatherRoot(src);
  if (!dst.valid() || root < 0)
    return;
  int32_t rootBox = src.boxOf(root);
  for (int32_t id = 0; id < src.numBoxes(); ++id)
    if (id != rootBox)
      pricer.add(src.holders(id).front(), root,
                 src.box(id).volume() * group.elementBytes());
  pricer.commit(memberCount(group));

  int64_t fullBytes = fullBox(group.shape).volume() * group.elementBytes();
  int64_t previous = root;
  for (int64_t rank : dst.meshRanks()) {
    if (rank == root)
      continue;
    pricer.add(previous, rank, fullBytes);
    previous = rank;
  }
  pricer.commit(memberCount(group));
}

/// Adds the local copies of a decomposed group, for every member.
void addLocalCopies(const TransferGroup &group, PlanCost &cost) {
  for (const Slice &slice : group.slices)
    if (slice.isLocalCopy())
      cost.localCopyBytes += sliceBytes(group, slice) * memberCount(group);
}

void addPointToPoint(const TransferGroup &decomposed, StepPricer &pricer) {
  for (const Slice &slice : decomposed.slices)
    if (!slice.isLocalCopy())
      pricer.add(slice.sender, slice.receiver, sliceBytes(decomposed, slice));
  pricer.commit(memberCount(decomposed));
}

/// The largest bytes of one member that a decomposed group sends from one
/// rank to another.
int64_t largestPairBytes(const TransferGroup &decomposed) {
  llvm::DenseMap<std::pair<int64_t, int64_t>, int64_t> pairBytes;
  int64_t largest = 0;
  for (const Slice &slice : decomposed.slices) {
    if (slice.isLocalCopy())
      continue;
    int64_t &bytes = pairBytes[{slice.sender, slice.receiver}];
    bytes += sliceBytes(decomposed, slice);
    largest = std::max(largest, bytes);
  }
  return largest;
}

void addPaddedAllToAll(const Plan &plan, const TransferGroup &decomposed,
                       StepPricer &pricer) {
  int64_t slotBytes = largestPairBytes(decomposed);
  // No slot: every region is local, or the layouts (of a plan read from
  // malformed IR) gave no slices.
  if (slotBytes == 0)
    return;
  const Mesh &src = plan.meshes[decomposed.src.mesh];
  const Mesh &dst = plan.meshes[decomposed.dst.mesh];
  for (int64_t sender : src.ranks)
    for (int64_t receiver : dst.ranks)
      if (sender != receiver)
        pricer.add(sender, receiver, slotBytes);
  pricer.commit(memberCount(decomposed));
}

} // namespace

llvm::StringRef m2n::plan::baselineName(Baseline baseline) {
  switch (baseline) {
  case Baseline::GatherBroadcast:
    return "gather_broadcast";
  case Baseline::PointToPoint:
    return "point_to_point";
  case Baseline::PaddedAllToAll:
    return "padded_all_to_all";
  }
  llvm_unreachable("unknown baseline");
}

PlanCost m2n::plan::costBaseline(const Plan &plan, Baseline baseline,
                                 const CostModel &model) {
  Plan refit = refitOf(plan);
  PlanCost cost;
  cost.lowerBoundSeconds = model.cost(refit).lowerBoundSeconds;
  StepPricer pricer(model, cost, refit.worldSize());
  if (baseline == Baseline::GatherBroadcast) {
    for (const TransferGroup &group : refit.groups)
      addGatherBroadcast(refit, group, pricer);
    return cost;
  }
  decompose(refit);
  for (const TransferGroup &group : refit.groups) {
    addLocalCopies(group, cost);
    if (baseline == Baseline::PointToPoint)
      addPointToPoint(group, pricer);
    else
      addPaddedAllToAll(refit, group, pricer);
  }
  return cost;
}

int64_t m2n::plan::minimumWireBytes(const Plan &plan) {
  Plan refit = refitOf(plan);
  return decompose(refit).wireBytes;
}
