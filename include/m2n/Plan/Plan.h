//===- Plan.h - The transfer plan of a refit --------------------*- C++ -*-===//
//
// The compiler's working form of a refit: which rank sends which region of
// which tensor to whom, fused into messages and ordered into steps. The m2n
// passes read it from IR, transform it with the functions declared in
// m2n/Plan/*.h, and write it back; tests and tools use it directly.
//
// Scale: tensors that share shape, dtype and both layouts form one
// TransferGroup and share one decomposition, so a model with a thousand
// tensors but a few dozen distinct layouts keeps a few dozen slice tables.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_PLAN_PLAN_H
#define M2N_PLAN_PLAN_H

#include "m2n/Layout/Layout.h"
#include "m2n/Spec/DType.h"
#include "m2n/Spec/RefitSpec.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace m2n::plan {

/// Which of the sender's buffers a slice is read from.
enum class Origin : uint8_t {
  /// The sender's source shard of the tensor.
  Source,
  /// The sender's destination shard: bytes it received in an earlier round
  /// and now forwards (a relay).
  Destination,
};

/// The receiver of a fan-out slice (see Slice).
constexpr int64_t kEveryHolder = -1;

/// One region of a tensor, in global coordinates, moving from `sender` to
/// `receiver`. When sender == receiver (and origin is Source) it is a local
/// copy from the rank's source shard into its destination shard.
///
/// A fan-out slice (receiver kEveryHolder, origin Source, round 0) stands
/// for one slice to each rank whose destination box contains its box: from
/// `sender`, or a local copy where the rank's own source box contains it.
/// Decompose writes them for replicated destinations, whose regions would
/// otherwise take a slice per replica; balance and relay read them, and
/// expandFanOuts (m2n/Plan/Decompose.h) turns them into the slices they
/// stand for before any other pass.
struct Slice {
  int64_t sender = 0;
  int64_t receiver = 0;
  Origin origin = Origin::Source;
  /// 0 for bytes read from a source shard, except where a relay pipelines
  /// a region: its chunk c leaves the source side in round c. A slice with
  /// origin Destination has round >= 1 and forwards bytes that reached the
  /// sender in an earlier round.
  int32_t round = 0;
  Box box;

  bool isLocalCopy() const { return sender == receiver; }
  bool isFanOut() const { return receiver == kEveryHolder; }
  bool operator==(const Slice &other) const {
    return sender == other.sender && receiver == other.receiver &&
           origin == other.origin && round == other.round && box == other.box;
  }
};

/// A layout by mesh index into Plan::meshes.
struct PlanLayout {
  int32_t mesh = 0;
  std::vector<Placement> placements;
  bool operator==(const PlanLayout &other) const {
    return mesh == other.mesh && placements == other.placements;
  }
};

/// Tensors that share shape, dtype and both layouts, and the one
/// decomposition they share.
struct TransferGroup {
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
  PlanLayout src;
  PlanLayout dst;
  /// Indices into Plan::tensors, ascending.
  std::vector<int32_t> members;
  /// Sorted by (round, receiver, sender, box offsets).
  std::vector<Slice> slices;

  int64_t elementBytes() const { return dtypeByteSize(dtype); }
};

struct TensorInfo {
  std::string name;
  int32_t group = 0;
};

/// Slice `slice` of group `group`, for the group's members
/// [memberBegin, memberEnd) (indices into TransferGroup::members).
struct MessagePart {
  int32_t group = 0;
  int32_t slice = 0;
  int32_t memberBegin = 0;
  int32_t memberEnd = 0;
  bool operator==(const MessagePart &other) const {
    return group == other.group && slice == other.slice &&
           memberBegin == other.memberBegin && memberEnd == other.memberEnd;
  }
};

/// One message from `sender` to `receiver` in `step`: its parts are packed
/// one after another in order into a staging buffer, unless the message is
/// zero-copy (a single part contiguous in both the sender's and the
/// receiver's buffer, sent from and received into the tensors themselves).
struct Message {
  int64_t step = 0;
  int64_t sender = 0;
  int64_t receiver = 0;
  std::vector<MessagePart> parts;
  int64_t bytes = 0;
  bool zeroCopy = false;
  bool operator==(const Message &other) const {
    return step == other.step && sender == other.sender &&
           receiver == other.receiver && parts == other.parts &&
           bytes == other.bytes && zeroCopy == other.zeroCopy;
  }
};

struct Plan {
  std::vector<std::string> meshNames;
  std::vector<Mesh> meshes;
  std::vector<TensorInfo> tensors;
  std::vector<TransferGroup> groups;
  /// Empty until fused; sorted by (step, sender, receiver) once scheduled.
  std::vector<Message> messages;
  /// Number of steps once scheduled; every rank runs every step.
  int64_t numSteps = 0;
  /// Staging bytes per rank that the schedule was built to stay within.
  int64_t stagingBudget = 0;

  /// The ranks of every mesh, ascending and unique.
  std::vector<int64_t> ranks() const;
  /// One past the largest rank.
  int64_t worldSize() const;
};

/// The plan of a validated spec before decomposition: meshes, tensors, and
/// one group per distinct (shape, dtype, src layout, dst layout), in order of
/// first appearance, with no slices yet.
Plan planFromSpec(const spec::RefitSpec &spec);

/// A member's bytes of a slice. Inline: passes ask for it per slice and
/// per message part, millions of times at a real model's scale.
inline int64_t sliceBytes(const TransferGroup &group, const Slice &slice) {
  return slice.box.volume() * group.elementBytes();
}

/// Asks the processor for the slice that `part` names, if it names one, so
/// that it is in cache when used: a message's parts name slices all over the
/// plan, and passes that walk them fetch the next while using this one.
inline void prefetchSlice(const Plan &plan, const MessagePart &part) {
  if (part.group < 0 ||
      part.group >= static_cast<int32_t>(plan.groups.size()) ||
      part.slice < 0 ||
      part.slice >= static_cast<int32_t>(plan.groups[part.group].slices.size()))
    return;
  const char *slice = reinterpret_cast<const char *>(
      &plan.groups[part.group].slices[part.slice]);
  for (size_t line = 0; line < sizeof(Slice); line += 64)
    __builtin_prefetch(slice + line);
}

/// The order of TransferGroup::slices: (round, receiver, sender, box
/// offsets), then origin and box sizes, so that the order is total and every
/// pass that re-sorts a group's slices gets the same result.
bool sliceLess(const Slice &a, const Slice &b);
void sortSlices(std::vector<Slice> &slices);

/// Whether localBox may be asked about `layout` of a tensor of `shape`:
/// only a plan read from malformed IR has an invalid one.
bool isValidLayout(const Plan &plan, const std::vector<int64_t> &shape,
                   const PlanLayout &layout);

/// The box that `rank` holds of a group's tensors in the source or
/// destination layout; an empty box when the rank is not on that mesh (for a
/// rank-0 tensor, whose boxes have no dimension to be empty in, the rank-1
/// box [0:0]). Linear in the mesh's size: passes that ask for many ranks
/// should use HeldBoxes instead.
Box sourceBox(const Plan &plan, const TransferGroup &group, int64_t rank);
Box destinationBox(const Plan &plan, const TransferGroup &group, int64_t rank);

/// Where each of a list of distinct ranks is in it. Passes look ranks up
/// once per slice, and meshes number their ranks nearly densely, so the
/// lookup is a table from the lowest rank up; for ranks too sparse for one,
/// a binary search.
class RankIndex {
public:
  explicit RankIndex(const std::vector<int64_t> &ranks);

  /// The position of `rank` in the list, or -1.
  int64_t find(int64_t rank) const;

private:
  /// The position of rank firstRank + i, or -1; empty when too sparse.
  int64_t firstRank = 0;
  std::vector<int32_t> table;
  /// (rank, position), sorted by rank, when there is no table.
  std::vector<std::pair<int64_t, int64_t>> sorted;
};

/// What sourceBox or destinationBox say for every rank, for one layout of a
/// group: the layout is checked and the boxes computed once, and each rank
/// then costs a lookup.
class HeldBoxes {
public:
  HeldBoxes(const Plan &plan, const TransferGroup &group,
            const PlanLayout &layout);

  /// The box `rank` holds.
  const Box &of(int64_t rank) const;

private:
  HeldBoxes(const Plan &plan, const TransferGroup &group,
            const PlanLayout &layout, bool valid);

  /// What a rank off the mesh, or any rank of an invalid layout, holds.
  Box nothing;
  /// The box of each rank of the mesh, in mesh order; none for an invalid
  /// layout.
  std::vector<Box> boxes;
  RankIndex index;
};

} // namespace m2n::plan

#endif // M2N_PLAN_PLAN_H
