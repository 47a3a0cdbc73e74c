//===- Verify.cpp - Checking a plan ---------------------------------------===//
//
// Checks in order of dependence: the plan's structure (meshes, groups,
// members), each slice on its own, the slices each destination rank
// receives (a tiling of its box, found by a sweep rather than element by
// element), the relays' rounds, then messages and the schedule. A group
// whose structure is broken is not checked further, so that every later
// check may index its layouts and members freely.
//
//===----------------------------------------------------------------------===//

#include "m2n/Plan/Verify.h"
#include "m2n/Plan/Coalesce.h"

#include "BoxIndex.h"
#include "SliceRecords.h"
#include "LayoutIndex.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <tuple>

using namespace m2n;
using namespace m2n::plan;

namespace {

/// The problems found so far, up to a limit.
class Problems {
public:
  explicit Problems(size_t limit) : limit(limit) {}
  bool full() const { return list.size() >= limit; }
  void add(std::string problem) {
    if (!full())
      list.push_back(std::move(problem));
  }
  std::vector<std::string> take() { return std::move(list); }

private:
  size_t limit;
  std::vector<std::string> list;
};

/// Where a slice travels in messages: members [begin, end) in message
/// `message`.
struct PartRecord {
  int32_t group = 0;
  int32_t slice = 0;
  int32_t memberBegin = 0;
  int32_t memberEnd = 0;
  size_t message = 0;
};

/// The slices of a group that one rank receives, by index.
struct Received {
  int64_t receiver = 0;
  std::vector<int32_t> slices;
  /// The same slices, to find those that meet a forwarded box.
  BoxIndex boxes;
};

/// A group's layouts and who receives what, for the checks after the
/// structural one.
struct GroupContext {
  std::unique_ptr<LayoutIndex> src, dst;
  /// Sorted by receiver.
  std::vector<Received> received;
  /// Slices whose box lies within the tensor, which later checks may do
  /// arithmetic on.
  std::vector<bool> wellFormed;
  /// Slices that also lie within their receiver's box.
  std::vector<bool> placed;

  const Received *receivedBy(int64_t rank) const {
    auto it = std::lower_bound(
        received.begin(), received.end(), rank,
        [](const Received &entry, int64_t r) { return entry.receiver < r; });
    if (it == received.end() || it->receiver != rank)
      return nullptr;
    return &*it;
  }

  /// Calls `visit(j)` for each slice j that `rank` receives and whose box
  /// meets `box`, until it returns true.
  template <typename Visit>
  void forEachArrival(const std::vector<Slice> &slices, int64_t rank,
                      const Box &box, Visit visit) const {
    const Received *entry = receivedBy(rank);
    if (!entry)
      return;
    bool done = false;
    entry->boxes.forEachMeeting(slices, box, [&](int32_t j) {
      done = done || visit(j);
    });
  }
};

std::string quote(const std::string &name) { return "'" + name + "'"; }

class Verifier {
public:
  Verifier(const Plan &plan, size_t maxProblems, bool compiled)
      : plan(plan), problems(maxProblems), compiled(compiled) {}

  std::vector<std::string> run();

private:
  // Naming what a problem concerns.
  std::string groupName(size_t g) const;
  std::string memberName(size_t g, int32_t member) const;
  /// A slice as "slice [0:2] from rank 1 to rank 3 (round 0)".
  std::string sliceText(size_t g, size_t i) const;
  /// The same, after its group's name.
  std::string sliceName(size_t g, size_t i) const;
  std::string messageName(size_t m) const;
  std::string meshName(int32_t mesh) const;

  // The checks, in the order run() calls them.
  void checkMeshes();
  void checkGroupStructure(size_t g);
  void checkTensorMembership();
  void checkSlice(size_t g, size_t i);
  void indexReceivers(size_t g);
  void checkSliceOrder(size_t g);
  void checkTiling(size_t g);
  void checkTilingOf(size_t g, int64_t receiver, const Box &dstBox,
                     const std::vector<int32_t> &slices);
  void checkRelayRounds(size_t g);
  void checkMessage(size_t m);
  void checkMessageCoverage();
  void checkSchedule();
  void checkStaging();
  void checkRelaySteps();

  bool checkPart(size_t m, size_t p);
  const Box *senderBuffer(size_t g, const Slice &slice) const;
  const Box *receiverBuffer(size_t g, const Slice &slice) const;
  /// Indexes the records by (group, slice, first member).
  void indexRecords();

  const Plan &plan;
  Problems problems;
  /// Whether the plan must be ready to run: fused and scheduled.
  bool compiled;
  std::vector<bool> groupValid;
  std::vector<GroupContext> contexts;
  /// Valid parts of all messages, in message order, until indexRecords
  /// puts them in bySlice.
  std::vector<PartRecord> records;
  /// The same by slice, and within a slice by first member, once
  /// indexRecords has run.
  SliceRecords<PartRecord> bySlice;
};

std::string Verifier::groupName(size_t g) const {
  const TransferGroup &group = plan.groups[g];
  if (!group.members.empty() && group.members.front() >= 0 &&
      group.members.front() < static_cast<int32_t>(plan.tensors.size()))
    return "tensor " + quote(plan.tensors[group.members.front()].name);
  return "group " + std::to_string(g);
}

std::string Verifier::memberName(size_t g, int32_t member) const {
  return "tensor " + quote(plan.tensors[plan.groups[g].members[member]].name);
}

std::string Verifier::sliceText(size_t g, size_t i) const {
  const Slice &slice = plan.groups[g].slices[i];
  if (slice.isLocalCopy() && slice.origin == Origin::Source)
    return "local copy " + slice.box.str() + " on rank " +
           std::to_string(slice.sender);
  std::string kind = slice.origin == Origin::Destination ? "relay " : "slice ";
  return kind + slice.box.str() + " from rank " + std::to_string(slice.sender) +
         " to rank " + std::to_string(slice.receiver) + " (round " +
         std::to_string(slice.round) + ")";
}

std::string Verifier::sliceName(size_t g, size_t i) const {
  return groupName(g) + ": " + sliceText(g, i);
}

std::string Verifier::messageName(size_t m) const {
  const Message &message = plan.messages[m];
  return "message " + std::to_string(m) + " (step " +
         std::to_string(message.step) + ", rank " +
         std::to_string(message.sender) + " -> rank " +
         std::to_string(message.receiver) + ")";
}

std::string Verifier::meshName(int32_t mesh) const {
  if (mesh >= 0 && mesh < static_cast<int32_t>(plan.meshNames.size()))
    return "mesh " + quote(plan.meshNames[mesh]);
  return "mesh " + std::to_string(mesh);
}

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

void Verifier::checkMeshes() {
  for (size_t i = 0; i < plan.meshes.size(); ++i) {
    std::string problem = checkMesh(plan.meshes[i].shape, plan.meshes[i].ranks);
    if (!problem.empty())
      problems.add(meshName(static_cast<int32_t>(i)) + ": " + problem);
  }
}

void Verifier::checkGroupStructure(size_t g) {
  const TransferGroup &group = plan.groups[g];
  std::string where = "group " + std::to_string(g) + ": ";
  std::vector<std::string> found;
  std::string problem = checkTensorShape(group.shape);
  if (!problem.empty())
    found.push_back(where + "shape: " + problem);
  auto checkLayout = [&](const PlanLayout &layout, const char *side) {
    if (layout.mesh < 0 ||
        layout.mesh >= static_cast<int32_t>(plan.meshes.size())) {
      found.push_back(where + side + " mesh " + std::to_string(layout.mesh) +
                      " does not exist");
      return;
    }
    std::string layoutProblem = checkPlacements(
        layout.placements,
        static_cast<int64_t>(plan.meshes[layout.mesh].shape.size()),
        static_cast<int64_t>(group.shape.size()));
    if (!layoutProblem.empty())
      found.push_back(where + side + " placements: " + layoutProblem);
  };
  checkLayout(group.src, "source");
  checkLayout(group.dst, "destination");
  if (group.members.empty())
    found.push_back(where + "has no members");
  for (size_t k = 0; k < group.members.size(); ++k) {
    int32_t member = group.members[k];
    if (member < 0 || member >= static_cast<int32_t>(plan.tensors.size())) {
      found.push_back(where + "member " + std::to_string(member) +
                      " is not a tensor");
    } else if (plan.tensors[member].group != static_cast<int32_t>(g)) {
      found.push_back(where + "member " + quote(plan.tensors[member].name) +
                      " belongs to group " +
                      std::to_string(plan.tensors[member].group));
    }
    if (k > 0 && member <= group.members[k - 1])
      found.push_back(where + "members are not ascending");
  }
  // The layouts can only be indexed once the meshes they use are sound.
  bool meshesSound = true;
  for (int32_t mesh : {group.src.mesh, group.dst.mesh})
    if (mesh >= 0 && mesh < static_cast<int32_t>(plan.meshes.size()))
      meshesSound &=
          checkMesh(plan.meshes[mesh].shape, plan.meshes[mesh].ranks).empty();
  groupValid[g] = found.empty() && meshesSound;
  for (std::string &text : found)
    problems.add(std::move(text));
}

void Verifier::checkTensorMembership() {
  std::vector<int> listed(plan.tensors.size(), 0);
  for (const TransferGroup &group : plan.groups)
    for (int32_t member : group.members)
      if (member >= 0 && member < static_cast<int32_t>(plan.tensors.size()))
        ++listed[member];
  for (size_t t = 0; t < plan.tensors.size(); ++t) {
    const TensorInfo &tensor = plan.tensors[t];
    if (tensor.group < 0 ||
        tensor.group >= static_cast<int32_t>(plan.groups.size()))
      problems.add("tensor " + quote(tensor.name) + ": group " +
                   std::to_string(tensor.group) + " does not exist");
    else if (listed[t] != 1)
      problems.add("tensor " + quote(tensor.name) + " is a member of " +
                   std::to_string(listed[t]) + " groups, not 1");
  }
}

//===----------------------------------------------------------------------===//
// Slices
//===----------------------------------------------------------------------===//

void Verifier::checkSlice(size_t g, size_t i) {
  const TransferGroup &group = plan.groups[g];
  const Slice &slice = group.slices[i];
  GroupContext &context = contexts[g];
  // Names are built only for problems: most slices have none.
  auto name = [&] { return sliceName(g, i); };
  size_t rank = group.shape.size();
  if (slice.box.offsets.size() != rank || slice.box.sizes.size() != rank) {
    problems.add(name() +
                 ": has a box of the wrong rank for a tensor of rank " +
                 std::to_string(rank));
    return;
  }
  if (!isWithinTensor(slice.box, group.shape)) {
    problems.add(name() + ": lies outside the tensor " +
                 fullBox(group.shape).str());
    return;
  }
  context.wellFormed[i] = true;
  if (slice.round < 0)
    problems.add(name() + ": has a negative round");
  if (slice.box.empty())
    return;

  if (slice.origin == Origin::Source) {
    int32_t id = context.src->boxOf(slice.sender);
    if (!context.src->onMesh(slice.sender))
      problems.add(name() + ": rank " + std::to_string(slice.sender) +
                   " is not on the source " + meshName(group.src.mesh));
    else if (id < 0 || !contains(context.src->box(id), slice.box))
      problems.add(
          name() + ": rank " + std::to_string(slice.sender) +
          " does not hold it in the source layout (it holds " +
          (id < 0 ? std::string("nothing") : context.src->box(id).str()) + ")");
  } else {
    int32_t id = context.dst->boxOf(slice.sender);
    if (slice.round < 1)
      problems.add(name() + ": forwards in round " +
                   std::to_string(slice.round) + ", before any bytes arrive");
    if (slice.isLocalCopy())
      problems.add(name() + ": forwards to its own sender");
    else if (id < 0 || !contains(context.dst->box(id), slice.box))
      problems.add(
          name() + ": rank " + std::to_string(slice.sender) +
          " does not hold it in the destination layout (it holds " +
          (id < 0 ? std::string("nothing") : context.dst->box(id).str()) + ")");
  }

  if (slice.isFanOut()) {
    problems.add(name() + ": is a fan-out slice, which only balance and "
                          "relay take; expand it first");
    return;
  }
  int32_t dstId = context.dst->boxOf(slice.receiver);
  if (!context.dst->onMesh(slice.receiver)) {
    problems.add(name() + ": rank " + std::to_string(slice.receiver) +
                 " is not on the destination " + meshName(group.dst.mesh));
    return;
  }
  if (dstId < 0 || !contains(context.dst->box(dstId), slice.box)) {
    problems.add(name() + ": lies outside rank " +
                 std::to_string(slice.receiver) + "'s destination box " +
                 (dstId < 0 ? std::string("(it holds nothing)")
                            : context.dst->box(dstId).str()));
    return;
  }
  context.placed[i] = true;
}

void Verifier::indexReceivers(size_t g) {
  const std::vector<Slice> &slices = plan.groups[g].slices;
  std::vector<int32_t> order(slices.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = static_cast<int32_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return slices[a].receiver < slices[b].receiver;
  });
  std::vector<Received> &received = contexts[g].received;
  for (int32_t i : order) {
    if (received.empty() || received.back().receiver != slices[i].receiver)
      received.push_back(Received{slices[i].receiver, {}, {}});
    received.back().slices.push_back(i);
  }
  for (Received &entry : received)
    entry.boxes = BoxIndex(slices, entry.slices);
}

void Verifier::checkSliceOrder(size_t g) {
  const std::vector<Slice> &slices = plan.groups[g].slices;
  auto key = [](const Slice &slice) {
    return std::tie(slice.round, slice.receiver, slice.sender,
                    slice.box.offsets);
  };
  for (size_t i = 1; i < slices.size(); ++i) {
    if (key(slices[i]) < key(slices[i - 1])) {
      problems.add(groupName(g) +
                   ": slices are not sorted by (round, receiver, sender, "
                   "offsets): slice " +
                   std::to_string(i) + " " + slices[i].box.str() +
                   " comes after slice " + std::to_string(i - 1) + " " +
                   slices[i - 1].box.str());
      return;
    }
  }
}

//===----------------------------------------------------------------------===//
// Tiling
//===----------------------------------------------------------------------===//

void Verifier::checkTiling(size_t g) {
  const GroupContext &context = contexts[g];
  const LayoutIndex &dst = *context.dst;
  llvm::ArrayRef<int64_t> receivers = dst.meshRanks();
  static const std::vector<int32_t> none;
  for (size_t index = 0; index < receivers.size() && !problems.full();
       ++index) {
    int32_t id = dst.boxAt(index);
    if (id < 0)
      continue;
    const Received *entry = context.receivedBy(receivers[index]);
    const std::vector<int32_t> *slices = entry ? &entry->slices : nullptr;
    checkTilingOf(g, receivers[index], dst.box(id), slices ? *slices : none);
  }
}

/// The slices that land in a rank's destination box must not overlap and
/// must add up to it. Overlaps are found by a sweep along the dimension in
/// which the slices' offsets vary most, so that the slices active at once
/// (and compared pairwise) are few.
void Verifier::checkTilingOf(size_t g, int64_t receiver, const Box &dstBox,
                             const std::vector<int32_t> &indices) {
  const TransferGroup &group = plan.groups[g];
  std::vector<int32_t> slices;
  int64_t covered = 0;
  for (int32_t i : indices) {
    if (!contexts[g].placed[i])
      continue;
    slices.push_back(i);
    covered += group.slices[i].box.volume();
  }

  size_t rank = group.shape.size();
  size_t sweep = 0;
  size_t mostOffsets = 0;
  for (size_t d = 0; d < rank; ++d) {
    std::vector<int64_t> offsets;
    for (int32_t i : slices)
      offsets.push_back(group.slices[i].box.offsets[d]);
    std::sort(offsets.begin(), offsets.end());
    size_t distinct =
        std::unique(offsets.begin(), offsets.end()) - offsets.begin();
    if (distinct > mostOffsets) {
      mostOffsets = distinct;
      sweep = d;
    }
  }
  auto begin = [&](int32_t i) {
    return rank == 0 ? 0 : group.slices[i].box.offsets[sweep];
  };
  auto end = [&](int32_t i) {
    return rank == 0 ? 1 : begin(i) + group.slices[i].box.sizes[sweep];
  };
  std::stable_sort(slices.begin(), slices.end(),
                   [&](int32_t a, int32_t b) { return begin(a) < begin(b); });
  std::vector<int32_t> active;
  for (int32_t i : slices) {
    llvm::erase_if(active, [&](int32_t j) { return end(j) <= begin(i); });
    for (int32_t j : active) {
      if (!intersects(group.slices[i].box, group.slices[j].box))
        continue;
      problems.add(
          groupName(g) + ": rank " + std::to_string(receiver) + " receives " +
          intersect(group.slices[i].box, group.slices[j].box).str() +
          " twice: in " + sliceText(g, j) + " and in " + sliceText(g, i));
      if (problems.full())
        return;
    }
    active.push_back(i);
  }
  if (covered < dstBox.volume())
    problems.add(groupName(g) + ": rank " + std::to_string(receiver) +
                 " receives " + std::to_string(covered) + " of the " +
                 std::to_string(dstBox.volume()) +
                 " elements of its destination box " + dstBox.str());
}

void Verifier::checkRelayRounds(size_t g) {
  const TransferGroup &group = plan.groups[g];
  for (size_t i = 0; i < group.slices.size() && !problems.full(); ++i) {
    const Slice &relay = group.slices[i];
    if (relay.origin != Origin::Destination || !contexts[g].placed[i])
      continue;
    contexts[g].forEachArrival(
        group.slices, relay.sender, relay.box, [&](int32_t j) {
          const Slice &arrival = group.slices[j];
          if (!contexts[g].placed[j] || arrival.round < relay.round)
            return false;
          problems.add(sliceName(g, i) + ": forwards " +
                       intersect(arrival.box, relay.box).str() +
                       ", which reaches rank " + std::to_string(relay.sender) +
                       " only in round " + std::to_string(arrival.round));
          return true;
        });
  }
}

//===----------------------------------------------------------------------===//
// Messages
//===----------------------------------------------------------------------===//

const Box *Verifier::senderBuffer(size_t g, const Slice &slice) const {
  const LayoutIndex &layout =
      slice.origin == Origin::Source ? *contexts[g].src : *contexts[g].dst;
  int32_t id = layout.boxOf(slice.sender);
  return id < 0 ? nullptr : &layout.box(id);
}

const Box *Verifier::receiverBuffer(size_t g, const Slice &slice) const {
  int32_t id = contexts[g].dst->boxOf(slice.receiver);
  return id < 0 ? nullptr : &contexts[g].dst->box(id);
}

/// Checks part `p` of message `m` and records it; false when it names no
/// valid slice.
bool Verifier::checkPart(size_t m, size_t p) {
  const Message &message = plan.messages[m];
  const MessagePart &part = message.parts[p];
  auto where = [&] { return messageName(m) + ": part " + std::to_string(p); };
  if (part.group < 0 ||
      part.group >= static_cast<int32_t>(plan.groups.size())) {
    problems.add(where() + " names group " + std::to_string(part.group) +
                 ", which does not exist");
    return false;
  }
  if (!groupValid[part.group])
    return false;
  const TransferGroup &group = plan.groups[part.group];
  if (part.slice < 0 ||
      part.slice >= static_cast<int32_t>(group.slices.size())) {
    problems.add(where() + " names slice " + std::to_string(part.slice) +
                 " of " + groupName(part.group) + ", which has " +
                 std::to_string(group.slices.size()) + " slices");
    return false;
  }
  if (part.memberBegin < 0 || part.memberBegin >= part.memberEnd ||
      part.memberEnd > static_cast<int32_t>(group.members.size())) {
    problems.add(
        where() + " names members [" + std::to_string(part.memberBegin) + ", " +
        std::to_string(part.memberEnd) + ") of " + groupName(part.group) +
        ", which has " + std::to_string(group.members.size()));
    return false;
  }
  const Slice &slice = group.slices[part.slice];
  if (slice.isLocalCopy() && slice.origin == Origin::Source)
    problems.add(where() + " carries the " + sliceName(part.group, part.slice));
  else if (slice.sender != message.sender || slice.receiver != message.receiver)
    problems.add(where() + " carries the " + sliceName(part.group, part.slice) +
                 " between other ranks");
  records.push_back(
      PartRecord{part.group, part.slice, part.memberBegin, part.memberEnd, m});
  return true;
}

void Verifier::checkMessage(size_t m) {
  const Message &message = plan.messages[m];
  if (message.parts.empty())
    problems.add(messageName(m) + ": has no parts");
  if (message.bytes < 0)
    problems.add(messageName(m) + ": has a negative size");
  if (message.sender == message.receiver)
    problems.add(messageName(m) + ": is sent from a rank to itself");
  int64_t bytes = 0;
  bool partsValid = true;
  for (size_t p = 0; p < message.parts.size(); ++p) {
    if (p + 1 < message.parts.size())
      prefetchSlice(plan, message.parts[p + 1]);
    if (!checkPart(m, p)) {
      partsValid = false;
      continue;
    }
    const MessagePart &part = message.parts[p];
    const TransferGroup &group = plan.groups[part.group];
    // A slice outside its tensor is reported with the slices, and its
    // bytes may not even be computable.
    if (!contexts[part.group].wellFormed[part.slice]) {
      partsValid = false;
      continue;
    }
    bytes += sliceBytes(group, group.slices[part.slice]) *
             (part.memberEnd - part.memberBegin);
  }
  if (partsValid && bytes != message.bytes)
    problems.add(messageName(m) + ": has " + std::to_string(message.bytes) +
                 " bytes but its parts hold " + std::to_string(bytes));
  if (!message.zeroCopy || !partsValid || message.parts.empty())
    return;

  const MessagePart &part = message.parts.front();
  if (message.parts.size() != 1 || part.memberEnd - part.memberBegin != 1) {
    problems.add(messageName(m) +
                 ": is zero-copy but carries more than one part or member");
    return;
  }
  const TransferGroup &group = plan.groups[part.group];
  const Slice &slice = group.slices[part.slice];
  const Box *from = senderBuffer(part.group, slice);
  const Box *to = receiverBuffer(part.group, slice);
  // A slice outside its buffers is reported with the slices.
  if (!from || !to || !contains(*from, slice.box) || !contains(*to, slice.box))
    return;
  auto [fromRuns, toRuns] =
      stridedRunsPair(slice.box, *from, *to, group.elementBytes());
  if (!fromRuns.contiguous())
    problems.add(messageName(m) + ": is zero-copy but " + slice.box.str() +
                 " is " + std::to_string(fromRuns.runs()) +
                 " runs in the buffers " + from->str() + " of rank " +
                 std::to_string(slice.sender) + " and " + to->str() +
                 " of rank " + std::to_string(slice.receiver));
}

/// Within a slice (rarely more than one record) by first member; stable, so
/// that records of one member range keep message order.
void Verifier::indexRecords() {
  bySlice = SliceRecords<PartRecord>(plan, [&](auto add) {
    for (const PartRecord &record : records)
      add(record.group, record.slice, record);
  });
  bySlice.sortEachSlice([](const PartRecord &a, const PartRecord &b) {
    return a.memberBegin < b.memberBegin;
  });
  // A compiled plan has millions of parts: keep them once.
  std::vector<PartRecord>().swap(records);
}

/// Every member of every remote slice travels in exactly one message. Empty
/// slices move nothing, so they may travel or not.
void Verifier::checkMessageCoverage() {
  indexRecords();
  for (size_t g = 0; g < plan.groups.size() && !problems.full(); ++g) {
    if (!groupValid[g])
      continue;
    const TransferGroup &group = plan.groups[g];
    for (size_t i = 0; i < group.slices.size() && !problems.full(); ++i) {
      const Slice &slice = group.slices[i];
      bool local = slice.isLocalCopy() && slice.origin == Origin::Source;
      if (local || !contexts[g].wellFormed[i] || slice.box.empty())
        continue;
      llvm::ArrayRef<PartRecord> travels = bySlice.of(g, i);
      int32_t next = 0;
      const PartRecord *previous = travels.empty() ? nullptr : &travels[0];
      for (const PartRecord &record : travels) {
        if (problems.full())
          break;
        if (record.memberBegin > next)
          problems.add(sliceName(g, i) + ": " + memberName(g, next) +
                       " travels in no message");
        else if (record.memberBegin < next)
          problems.add(sliceName(g, i) + ": " +
                       memberName(g, record.memberBegin) +
                       " travels in two messages (" +
                       std::to_string(previous->message) + " and " +
                       std::to_string(record.message) + ")");
        if (record.memberEnd > next) {
          next = record.memberEnd;
          previous = &record;
        }
      }
      if (next < static_cast<int32_t>(group.members.size()))
        problems.add(sliceName(g, i) + ": " + memberName(g, next) +
                     " travels in no message");
    }
  }
}

//===----------------------------------------------------------------------===//
// Schedule
//===----------------------------------------------------------------------===//

void Verifier::checkSchedule() {
  for (size_t m = 0; m < plan.messages.size() && !problems.full(); ++m) {
    const Message &message = plan.messages[m];
    if (message.step < 0 || message.step >= plan.numSteps)
      problems.add(messageName(m) + ": step is outside [0, " +
                   std::to_string(plan.numSteps) + ")");
  }
  auto key = [](const Message &message) {
    return std::tie(message.step, message.sender, message.receiver);
  };
  for (size_t m = 1; m < plan.messages.size(); ++m) {
    if (key(plan.messages[m]) < key(plan.messages[m - 1])) {
      problems.add("messages are not sorted by (step, sender, receiver): " +
                   messageName(m) + " comes after " + messageName(m - 1));
      break;
    }
  }
  checkStaging();
  checkRelaySteps();
}

void Verifier::checkStaging() {
  // (step, rank, bytes) for each end of each staged message.
  std::vector<std::tuple<int64_t, int64_t, int64_t>> staged;
  for (const Message &message : plan.messages) {
    if (message.zeroCopy)
      continue;
    staged.emplace_back(message.step, message.sender, message.bytes);
    staged.emplace_back(message.step, message.receiver, message.bytes);
  }
  std::sort(staged.begin(), staged.end());
  for (size_t begin = 0; begin < staged.size() && !problems.full();) {
    auto [step, rank, bytes] = staged[begin];
    int64_t total = 0;
    size_t end = begin;
    // Saturating, so that absurd sizes read from bad IR cannot overflow.
    for (; end < staged.size() && std::get<0>(staged[end]) == step &&
           std::get<1>(staged[end]) == rank;
         ++end) {
      int64_t more = std::max<int64_t>(std::get<2>(staged[end]), 0);
      total = more > std::numeric_limits<int64_t>::max() - total
                  ? std::numeric_limits<int64_t>::max()
                  : total + more;
    }
    if (total > plan.stagingBudget)
      problems.add("rank " + std::to_string(rank) + " stages " +
                   std::to_string(total) + " bytes in step " +
                   std::to_string(step) + ", over the budget of " +
                   std::to_string(plan.stagingBudget));
    begin = end;
  }
}

/// A relay of some members travels after every message that brought those
/// members' bytes to its sender. Local copies happen before step 0.
void Verifier::checkRelaySteps() {
  // Every relay reads the steps of all that it forwards: a compact copy
  // stays in cache, where the messages do not.
  std::vector<int64_t> steps;
  steps.reserve(plan.messages.size());
  for (const Message &message : plan.messages)
    steps.push_back(message.step);
  for (const PartRecord &relay : bySlice.all()) {
    if (problems.full())
      return;
    const TransferGroup &group = plan.groups[relay.group];
    const Slice &slice = group.slices[relay.slice];
    if (slice.origin != Origin::Destination ||
        !contexts[relay.group].placed[relay.slice])
      continue;
    int64_t step = steps[relay.message];
    bool reported = false;
    contexts[relay.group].forEachArrival(
        group.slices, slice.sender, slice.box, [&](int32_t j) {
          const Slice &arrival = group.slices[j];
          if (arrival.isLocalCopy() || !contexts[relay.group].placed[j])
            return false;
          for (const PartRecord &record : bySlice.of(relay.group, j)) {
            int64_t arrivalStep = steps[record.message];
            if (record.memberEnd <= relay.memberBegin ||
                record.memberBegin >= relay.memberEnd || arrivalStep < step)
              continue;
            problems.add(
                messageName(relay.message) + ": forwards " +
                intersect(arrival.box, slice.box).str() + " of " +
                memberName(relay.group,
                           std::max(record.memberBegin, relay.memberBegin)) +
                ", which reaches rank " + std::to_string(slice.sender) +
                " only in step " + std::to_string(arrivalStep) + " (" +
                messageName(record.message) + ")");
            reported = true;
            return true;
          }
          return false;
        });
    // One forward too early tells enough.
    if (reported)
      return;
  }
}

std::vector<std::string> Verifier::run() {
  checkMeshes();
  groupValid.assign(plan.groups.size(), false);
  for (size_t g = 0; g < plan.groups.size(); ++g)
    checkGroupStructure(g);
  checkTensorMembership();

  contexts.resize(plan.groups.size());
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    if (!groupValid[g] || problems.full())
      continue;
    const TransferGroup &group = plan.groups[g];
    GroupContext &context = contexts[g];
    context.src = std::make_unique<LayoutIndex>(plan, group.shape, group.src);
    context.dst = std::make_unique<LayoutIndex>(plan, group.shape, group.dst);
    context.wellFormed.assign(group.slices.size(), false);
    context.placed.assign(group.slices.size(), false);
    for (size_t i = 0; i < group.slices.size() && !problems.full(); ++i)
      checkSlice(g, i);
    checkSliceOrder(g);
    indexReceivers(g);
    checkTiling(g);
    checkRelayRounds(g);
  }
  if (problems.full())
    return problems.take();

  if (plan.numSteps < 0)
    problems.add("the plan has a negative number of steps (" +
                 std::to_string(plan.numSteps) + ")");
  if (plan.stagingBudget < 0)
    problems.add("the plan has a negative staging budget (" +
                 std::to_string(plan.stagingBudget) + ")");
  // More steps than messages (a plan with none may have one) is work that
  // no message does, and a count that tables by step cannot follow.
  if (plan.numSteps >
      std::max<int64_t>(static_cast<int64_t>(plan.messages.size()), 1))
    problems.add("the plan has " + std::to_string(plan.numSteps) +
                 " steps but " + std::to_string(plan.messages.size()) +
                 " messages; every step holds one at least");
  if (compiled && plan.numSteps == 0 && !plan.messages.empty())
    problems.add("the plan has " + std::to_string(plan.messages.size()) +
                 " messages but no steps: it is not scheduled");
  bool fused = compiled || !plan.messages.empty() || plan.numSteps != 0;
  if (!fused || problems.full())
    return problems.take();
  for (size_t m = 0; m < plan.messages.size() && !problems.full(); ++m)
    checkMessage(m);
  checkMessageCoverage();
  if (plan.numSteps > 0 && !problems.full())
    checkSchedule();
  return problems.take();
}

} // namespace

std::vector<std::string> m2n::plan::verifyPlan(const Plan &plan,
                                               size_t maxProblems) {
  if (maxProblems == 0)
    return {};
  return Verifier(plan, maxProblems, /*compiled=*/false).run();
}

std::vector<std::string> m2n::plan::verifyCompiledPlan(const Plan &plan,
                                                       size_t maxProblems) {
  if (maxProblems == 0)
    return {};
  return Verifier(plan, maxProblems, /*compiled=*/true).run();
}
