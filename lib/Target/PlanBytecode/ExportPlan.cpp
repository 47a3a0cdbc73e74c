//===- ExportPlan.cpp - A compiled plan as runtime bytecode ---------------===//

#include "m2n/Target/ExportPlan.h"

#include "m2n/Dialect/M2N/IR/M2NOps.h"
#include "m2n/Dialect/M2N/Transforms/PlanIR.h"
#include "m2n/Plan/Coalesce.h"
#include "m2n/Plan/Verify.h"
#include "m2n/plan_writer.h"
#include "mlir/Tools/mlir-translate/Translation.h"

#include <array>

using namespace mlir;

namespace m2n {
namespace {

using plan::Message;
using plan::MessagePart;
using plan::Origin;
using plan::Plan;
using plan::Slice;
using plan::TransferGroup;

static_assert(static_cast<int>(DType::BOOL) == M2N_DTYPE_BOOL &&
                  static_cast<int>(DType::BF16) == M2N_DTYPE_BF16,
              "DType and m2n_dtype_t must number the dtypes alike");

/// Builds the file: bindings first, then each rank's instruction stream.
class Exporter {
public:
  Exporter(const Plan &plan) : plan(plan) {
    // Every binding, pack and unpack asks for a shard's box: the boxes of
    // each group's layouts are computed once.
    held.reserve(plan.groups.size());
    for (const TransferGroup &group : plan.groups)
      held.push_back({plan::HeldBoxes(plan, group, group.src),
                      plan::HeldBoxes(plan, group, group.dst)});
    messagesOfStep.resize(std::max<int64_t>(plan.numSteps, 0));
    size_t worldSize = static_cast<size_t>(plan.worldSize());
    traffics.assign(worldSize, {0, 0});
    stagingBytes.assign(worldSize, 0);
    sendEnd.assign(worldSize, 0);
    receiveEnd.assign(worldSize, 0);
    inStep.assign(worldSize, false);
    for (const Message &message : plan.messages)
      if (message.step >= 0 && message.step < plan.numSteps)
        messagesOfStep[message.step].push_back(&message);
  }

  std::vector<uint8_t> run(const plan::PlanCost &cost) {
    writer.setWorldSize(static_cast<uint32_t>(plan.worldSize()));
    writer.setStepCount(static_cast<uint32_t>(plan.numSteps));
    writer.setStagingBudget(plan.stagingBudget);
    writer.setSummary(cost.wireBytes, cost.localCopyBytes, cost.messages,
                      static_cast<uint64_t>(cost.predictedSeconds * 1e9),
                      static_cast<uint64_t>(cost.lowerBoundSeconds * 1e9));
    for (const plan::TensorInfo &tensor : plan.tensors) {
      const TransferGroup &group = plan.groups[tensor.group];
      writer.addTensor(tensor.name, static_cast<m2n_dtype_t>(group.dtype),
                       group.shape);
    }
    addBindings();
    emitLocalCopies();
    for (int64_t step = 0; step < plan.numSteps; ++step)
      emitStep(step);
    for (size_t rank = 0; rank < traffics.size(); ++rank)
      if (traffics[rank].first || traffics[rank].second)
        writer.setTraffic(rank, traffics[rank].first, traffics[rank].second);
    for (size_t rank = 0; rank < stagingBytes.size(); ++rank)
      if (stagingBytes[rank])
        writer.setStagingBytes(rank, stagingBytes[rank]);
    return writer.finish();
  }

private:
  static size_t roleIndex(m2n_role_t role) {
    return role == M2N_ROLE_DESTINATION;
  }

  /// The shard of `tensor` that `rank` holds in `role`.
  const Box &shardBox(int32_t tensor, int64_t rank, m2n_role_t role) const {
    const std::pair<plan::HeldBoxes, plan::HeldBoxes> &boxes =
        held[plan.tensors[tensor].group];
    return role == M2N_ROLE_SOURCE ? boxes.first.of(rank)
                                   : boxes.second.of(rank);
  }

  /// Binds every member of group `g` on every rank of `layout`, and
  /// records where each rank's first one is.
  void addBindingsOf(size_t g, const plan::PlanLayout &layout,
                     m2n_role_t role) {
    const TransferGroup &group = plan.groups[g];
    std::vector<uint32_t> &first = firstBinding[g][roleIndex(role)];
    first.assign(static_cast<size_t>(plan.worldSize()), 0);
    for (int64_t rank : plan.meshes[layout.mesh].ranks) {
      const Box &box = shardBox(group.members.front(), rank, role);
      for (size_t m = 0; m < group.members.size(); ++m) {
        uint32_t index =
            writer.addBinding(static_cast<uint32_t>(rank),
                              static_cast<uint32_t>(group.members[m]), role,
                              box.offsets, box.sizes);
        if (m == 0)
          first[rank] = index;
      }
    }
  }

  /// A group's members get consecutive bindings on each rank, per role, so
  /// that one record moves a run of members (binding + m for member m), and
  /// a binding's index is its group's first on the rank plus its member's.
  void addBindings() {
    firstBinding.resize(plan.groups.size());
    memberIndex.assign(plan.tensors.size(), 0);
    for (size_t g = 0; g < plan.groups.size(); ++g) {
      const TransferGroup &group = plan.groups[g];
      for (size_t m = 0; m < group.members.size(); ++m)
        memberIndex[group.members[m]] = static_cast<uint32_t>(m);
      addBindingsOf(g, group.src, M2N_ROLE_SOURCE);
      addBindingsOf(g, group.dst, M2N_ROLE_DESTINATION);
    }
  }

  uint32_t binding(int64_t rank, int32_t tensor, m2n_role_t role) const {
    return firstBinding[plan.tensors[tensor].group][roleIndex(role)][rank] +
           memberIndex[tensor];
  }

  /// The walk of `slice` from one buffer to another, both given as boxes,
  /// in a record that is reused: a plan has one per message part, and
  /// fresh vectors for each would cost more than the walk.
  PlanRuns &runs(const Slice &slice, const Box &from, const Box &to,
                 int64_t elementBytes) {
    auto [fromRuns, toRuns] =
        plan::stridedRunsPair(slice.box, from, to, elementBytes);
    PlanRuns &result = walkRecord;
    result.fromBinding = result.toBinding = 0;
    result.members = 1;
    result.fromOffset = fromRuns.offset;
    result.toOffset = toRuns.offset;
    result.runBytes = fromRuns.runBytes;
    result.count.assign(fromRuns.count.begin(), fromRuns.count.end());
    result.fromStride.assign(fromRuns.stride.begin(), fromRuns.stride.end());
    result.toStride.assign(toRuns.stride.begin(), toRuns.stride.end());
    return result;
  }

  /// One record copies a local slice of every member.
  void emitLocalCopies() {
    for (const TransferGroup &group : plan.groups)
      for (const Slice &slice : group.slices) {
        if (!slice.isLocalCopy() || slice.box.empty())
          continue;
        int32_t first = group.members.front();
        uint32_t rank = static_cast<uint32_t>(slice.sender);
        PlanRuns &copy = runs(slice, shardBox(first, rank, M2N_ROLE_SOURCE),
                              shardBox(first, rank, M2N_ROLE_DESTINATION),
                              group.elementBytes());
        copy.fromBinding = binding(rank, first, M2N_ROLE_SOURCE);
        copy.toBinding = binding(rank, first, M2N_ROLE_DESTINATION);
        copy.members = static_cast<uint32_t>(group.members.size());
        writer.copy(rank, copy);
      }
  }

  /// Calls `fn(group, slice, first, members)` for every part of `message`,
  /// in packing order: `members` tensors of the group from tensor `first`
  /// on, whose bindings are consecutive.
  template <typename Fn> void forEachPart(const Message &message, Fn fn) const {
    for (const MessagePart &part : message.parts) {
      const TransferGroup &group = plan.groups[part.group];
      fn(group, group.slices[part.slice], group.members[part.memberBegin],
         static_cast<uint32_t>(part.memberEnd - part.memberBegin));
    }
  }

  /// The sender's buffer that a slice is read from.
  m2n_role_t readRole(const Slice &slice) const {
    return slice.origin == Origin::Source ? M2N_ROLE_SOURCE
                                          : M2N_ROLE_DESTINATION;
  }

  /// Gathers a packed message into the sender's staging buffer.
  void emitPack(const Message &message, uint64_t staging) {
    uint32_t rank = static_cast<uint32_t>(message.sender);
    forEachPart(message, [&](const TransferGroup &group, const Slice &slice,
                             int32_t first, uint32_t members) {
      PlanRuns &pack = runs(slice, shardBox(first, rank, readRole(slice)),
                            slice.box, group.elementBytes());
      pack.fromBinding = binding(rank, first, readRole(slice));
      pack.toOffset += staging;
      pack.members = members;
      writer.pack(rank, pack);
      staging += plan::sliceBytes(group, slice) * members;
    });
  }

  /// Scatters a packed message from the receiver's staging buffer.
  void emitUnpack(const Message &message, uint64_t staging) {
    uint32_t rank = static_cast<uint32_t>(message.receiver);
    forEachPart(message, [&](const TransferGroup &group, const Slice &slice,
                             int32_t first, uint32_t members) {
      PlanRuns &unpack =
          runs(slice, slice.box, shardBox(first, rank, M2N_ROLE_DESTINATION),
               group.elementBytes());
      unpack.toBinding = binding(rank, first, M2N_ROLE_DESTINATION);
      unpack.fromOffset += staging;
      unpack.members = members;
      writer.unpack(rank, unpack);
      staging += plan::sliceBytes(group, slice) * members;
    });
  }

  /// A zero-copy message's one member slice: the binding it lives in on
  /// each side and its byte offset there.
  struct Direct {
    uint32_t fromBinding, toBinding;
    uint64_t fromOffset, toOffset;
  };
  Direct direct(const Message &message) {
    const MessagePart &part = message.parts.front();
    const TransferGroup &group = plan.groups[part.group];
    const Slice &slice = group.slices[part.slice];
    int32_t member = group.members[part.memberBegin];
    const PlanRuns &walk =
        runs(slice, shardBox(member, message.sender, readRole(slice)),
             shardBox(member, message.receiver, M2N_ROLE_DESTINATION),
             group.elementBytes());
    return {binding(message.sender, member, readRole(slice)),
            binding(message.receiver, member, M2N_ROLE_DESTINATION),
            walk.fromOffset, walk.toOffset};
  }

  /// One step: each rank's sends take staging from offset 0 up, its
  /// receives after them; messages keep the plan's order on every rank.
  void emitStep(int64_t step) {
    const std::vector<const Message *> &messages = messagesOfStep[step];
    if (messages.empty())
      return;
    // The step's ranks, in order of first appearance.
    std::vector<uint32_t> ranks;
    auto begin = [&](uint32_t rank) {
      if (inStep[rank])
        return;
      inStep[rank] = true;
      ranks.push_back(rank);
      writer.step(rank, static_cast<uint32_t>(step));
    };
    for (const Message *message : messages) {
      begin(static_cast<uint32_t>(message->sender));
      begin(static_cast<uint32_t>(message->receiver));
    }
    std::vector<std::pair<uint64_t, uint64_t>> offsets(messages.size());
    for (size_t i = 0; i < messages.size(); ++i) {
      if (messages[i]->zeroCopy)
        continue;
      uint64_t &send = sendEnd[messages[i]->sender];
      offsets[i].first = send;
      send += messages[i]->bytes;
    }
    for (size_t i = 0; i < messages.size(); ++i) {
      if (messages[i]->zeroCopy)
        continue;
      uint64_t &receive = receiveEnd[messages[i]->receiver];
      offsets[i].second = sendEnd[messages[i]->receiver] + receive;
      receive += messages[i]->bytes;
    }
    for (size_t i = 0; i < messages.size(); ++i)
      if (!messages[i]->zeroCopy)
        emitPack(*messages[i], offsets[i].first);
    for (size_t i = 0; i < messages.size(); ++i)
      emitTransfer(*messages[i], offsets[i]);
    for (size_t i = 0; i < messages.size(); ++i)
      if (!messages[i]->zeroCopy)
        emitUnpack(*messages[i], offsets[i].second);
    for (uint32_t rank : ranks) {
      stagingBytes[rank] =
          std::max(stagingBytes[rank], sendEnd[rank] + receiveEnd[rank]);
      sendEnd[rank] = receiveEnd[rank] = 0;
      inStep[rank] = false;
    }
  }

  void emitTransfer(const Message &message,
                    std::pair<uint64_t, uint64_t> staging) {
    uint32_t sender = static_cast<uint32_t>(message.sender);
    uint32_t receiver = static_cast<uint32_t>(message.receiver);
    uint64_t bytes = static_cast<uint64_t>(message.bytes);
    traffics[sender].first += bytes;
    traffics[receiver].second += bytes;
    if (!message.zeroCopy) {
      writer.send(sender, receiver, staging.first, bytes);
      writer.recv(receiver, sender, staging.second, bytes);
      return;
    }
    Direct where = direct(message);
    writer.sendDirect(sender, receiver, where.fromBinding, where.fromOffset,
                      bytes);
    writer.recvDirect(receiver, sender, where.toBinding, where.toOffset, bytes);
  }

  const Plan &plan;
  std::vector<std::pair<plan::HeldBoxes, plan::HeldBoxes>> held;
  std::vector<std::vector<const Message *>> messagesOfStep;
  PlanWriter writer;
  PlanRuns walkRecord;
  /// Per group and role (source, destination), per rank: the index of the
  /// rank's binding of the group's first member.
  std::vector<std::array<std::vector<uint32_t>, 2>> firstBinding;
  /// Per tensor: its index among its group's members.
  std::vector<uint32_t> memberIndex;
  /// Per rank: bytes sent and received, and the staging peak.
  std::vector<std::pair<uint64_t, uint64_t>> traffics;
  std::vector<uint64_t> stagingBytes;
  /// Per rank, within the step being emitted: the end of its sends' and of
  /// its receives' staging.
  std::vector<uint64_t> sendEnd, receiveEnd;
  std::vector<bool> inStep;
};

} // namespace

std::vector<uint8_t> exportPlan(const plan::Plan &plan,
                                const plan::PlanCost &cost) {
  return Exporter(plan).run(cost);
}

/// Reads the one compiled refit of `module` and checks it is ready to run.
static FailureOr<plan::Plan> readCompiledPlan(ModuleOp module) {
  auto refits = module.getOps<RefitOp>();
  if (refits.empty() || std::next(refits.begin()) != refits.end())
    return mlir::emitError(module.getLoc())
           << "expected exactly one 'm2n.refit' to export";
  RefitOp refit = *refits.begin();
  if (!refit.getStagingBudget())
    return emitRefitError(refit) << "refit @" << refit.getSymName()
                                 << " is not scheduled; run m2n-compile first";
  FailureOr<plan::Plan> plan = readPlan(refit);
  if (failed(plan))
    return failure();
  std::vector<std::string> problems = plan::verifyPlan(*plan);
  if (!problems.empty())
    return emitRefitError(refit) << "the plan of refit @" << refit.getSymName()
                                 << " is unsound: " << problems.front();
  return plan;
}

void registerExportPlanTranslation() {
  TranslateFromMLIRRegistration registration(
      "m2n-to-plan", "Export a compiled m2n refit as a plan file",
      [](Operation *op, llvm::raw_ostream &output) -> LogicalResult {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitError() << "expected a module";
        FailureOr<plan::Plan> plan = readCompiledPlan(module);
        if (failed(plan))
          return failure();
        std::vector<uint8_t> bytes =
            exportPlan(*plan, plan::CostModel().cost(*plan));
        output.write(reinterpret_cast<const char *>(bytes.data()),
                     bytes.size());
        return success();
      },
      [](DialectRegistry &registry) { registry.insert<M2NDialect>(); });
}

} // namespace m2n
