//===- ExportPlan.cpp - A compiled plan as runtime bytecode ---------------===//

#include "m2n/Target/ExportPlan.h"

#include "m2n/Dialect/M2N/IR/M2NOps.h"
#include "m2n/Dialect/M2N/Transforms/PlanIR.h"
#include "m2n/Plan/Coalesce.h"
#include "m2n/Plan/Verify.h"
#include "m2n/plan_writer.h"
#include "mlir/Tools/mlir-translate/Translation.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <thread>

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

/// Builds the file: each rank's bindings and instruction stream. Ranks are
/// independent, so they are bound and emitted by chunks of ranks, which
/// threads take in turn.
class Exporter {
public:
  Exporter(const Plan &plan) : plan(plan) {
    // Every binding, pack and unpack asks for a shard's box: the boxes of
    // each group's layouts are computed once.
    held.reserve(plan.groups.size());
    for (const TransferGroup &group : plan.groups)
      held.push_back({plan::HeldBoxes(plan, group, group.src),
                      plan::HeldBoxes(plan, group, group.dst)});
    // Enough chunks that a thread that started late still gets a share.
    worldSize = static_cast<uint32_t>(plan.worldSize());
    chunkSize = std::max<uint32_t>(1, (worldSize + 15) / 16);
    messagesOfChunk.resize((worldSize + chunkSize - 1) / chunkSize);
    std::vector<std::vector<const Message *>> messagesOfStep(
        std::max<int64_t>(plan.numSteps, 0));
    for (const Message &message : plan.messages)
      if (message.step >= 0 && message.step < plan.numSteps)
        messagesOfStep[message.step].push_back(&message);
    for (const std::vector<const Message *> &messages : messagesOfStep)
      for (const Message *message : messages) {
        size_t from = message->sender / chunkSize;
        size_t to = message->receiver / chunkSize;
        messagesOfChunk[from].push_back(message);
        if (to != from)
          messagesOfChunk[to].push_back(message);
      }
    for (const TransferGroup &group : plan.groups)
      for (const Slice &slice : group.slices)
        if (slice.isLocalCopy() && !slice.box.empty())
          localCopies.push_back({&group, &slice});
    memberIndex.assign(plan.tensors.size(), 0);
    firstBinding.resize(plan.groups.size());
    for (size_t g = 0; g < plan.groups.size(); ++g) {
      const TransferGroup &group = plan.groups[g];
      for (size_t m = 0; m < group.members.size(); ++m)
        memberIndex[group.members[m]] = static_cast<uint32_t>(m);
      for (std::vector<uint32_t> &first : firstBinding[g])
        first.assign(worldSize, 0);
    }
  }

  std::vector<uint8_t> run(llvm::function_ref<plan::PlanCost()> summary,
                           unsigned threads) {
    writer.setWorldSize(worldSize);
    writer.setStepCount(static_cast<uint32_t>(plan.numSteps));
    writer.setStagingBudget(plan.stagingBudget);
    for (const plan::TensorInfo &tensor : plan.tensors) {
      const TransferGroup &group = plan.groups[tensor.group];
      writer.addTensor(tensor.name, static_cast<m2n_dtype_t>(group.dtype),
                       group.shape);
    }
    std::atomic<size_t> next{0};
    auto work = [&] {
      RankEmitter emitter(*this);
      for (size_t chunk; (chunk = next++) < messagesOfChunk.size();)
        emitter.emitRanks(chunk);
    };
    std::vector<std::thread> helpers;
    for (unsigned i = 1; i < threads; ++i)
      helpers.emplace_back(work);
    work();
    for (std::thread &helper : helpers)
      helper.join();
    plan::PlanCost cost = summary();
    writer.setSummary(cost.wireBytes, cost.localCopyBytes, cost.messages,
                      static_cast<uint64_t>(cost.predictedSeconds * 1e9),
                      static_cast<uint64_t>(cost.lowerBoundSeconds * 1e9));
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

  uint32_t binding(int64_t rank, int32_t tensor, m2n_role_t role) const {
    return firstBinding[plan.tensors[tensor].group][roleIndex(role)][rank] +
           memberIndex[tensor];
  }

  /// The sender's buffer that a slice is read from.
  static m2n_role_t readRole(const Slice &slice) {
    return slice.origin == Origin::Source ? M2N_ROLE_SOURCE
                                          : M2N_ROLE_DESTINATION;
  }

  /// Emits the instruction streams of a range of ranks: every record whose
  /// rank is in the range, in the order the format asks. What it keeps per
  /// rank is its own, so emitters of other ranges may run beside it.
  class RankEmitter {
  public:
    explicit RankEmitter(Exporter &exporter)
        : exporter(exporter), plan(exporter.plan), writer(exporter.writer) {
      sendEnd.assign(exporter.worldSize, 0);
      receiveEnd.assign(exporter.worldSize, 0);
      inStep.assign(exporter.worldSize, 0);
    }

    /// Binds and emits the ranks of chunk `chunk`.
    void emitRanks(size_t chunk) {
      lo = static_cast<uint32_t>(chunk * exporter.chunkSize);
      hi = std::min(exporter.worldSize, lo + exporter.chunkSize);
      traffics.assign(hi - lo, {0, 0});
      stagingBytes.assign(hi - lo, 0);
      for (size_t g = 0; g < plan.groups.size(); ++g) {
        addBindings(g, M2N_ROLE_SOURCE);
        addBindings(g, M2N_ROLE_DESTINATION);
      }
      emitLocalCopies();
      llvm::ArrayRef<const Message *> messages =
          exporter.messagesOfChunk[chunk];
      while (!messages.empty()) {
        int64_t step = messages.front()->step;
        size_t count = llvm::find_if(messages,
                                     [&](const Message *message) {
                                       return message->step != step;
                                     }) -
                       messages.begin();
        emitStep(step, messages.take_front(count));
        messages = messages.drop_front(count);
      }
      for (uint32_t rank = lo; rank < hi; ++rank) {
        const std::pair<uint64_t, uint64_t> &traffic = traffics[rank - lo];
        if (traffic.first || traffic.second)
          writer.setTraffic(rank, traffic.first, traffic.second);
        if (stagingBytes[rank - lo])
          writer.setStagingBytes(rank, stagingBytes[rank - lo]);
      }
    }

  private:
    bool owns(int64_t rank) const { return rank >= lo && rank < hi; }

    /// Binds every member of group `g` on each rank of the range that is on
    /// the group's layout in `role`, and records where each rank's first
    /// one is. A group's members get consecutive bindings on each rank, per
    /// role, so that one record moves a run of members (binding + m for
    /// member m).
    void addBindings(size_t g, m2n_role_t role) {
      const TransferGroup &group = plan.groups[g];
      const plan::PlanLayout &layout =
          role == M2N_ROLE_SOURCE ? group.src : group.dst;
      std::vector<uint32_t> &first =
          exporter.firstBinding[g][roleIndex(role)];
      for (int64_t rank : plan.meshes[layout.mesh].ranks) {
        if (!owns(rank))
          continue;
        const Box &box = exporter.shardBox(group.members.front(), rank, role);
        for (size_t m = 0; m < group.members.size(); ++m) {
          uint32_t index = writer.addBinding(
              static_cast<uint32_t>(rank),
              static_cast<uint32_t>(group.members[m]), role,
              box.offsets.begin(), box.sizes.begin());
          if (m == 0)
            first[rank] = index;
        }
      }
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
      for (auto [group, slice] : exporter.localCopies) {
        if (!owns(slice->sender))
          continue;
        int32_t first = group->members.front();
        uint32_t rank = static_cast<uint32_t>(slice->sender);
        PlanRuns &copy =
            runs(*slice, exporter.shardBox(first, rank, M2N_ROLE_SOURCE),
                 exporter.shardBox(first, rank, M2N_ROLE_DESTINATION),
                 group->elementBytes());
        copy.fromBinding = exporter.binding(rank, first, M2N_ROLE_SOURCE);
        copy.toBinding = exporter.binding(rank, first, M2N_ROLE_DESTINATION);
        copy.members = static_cast<uint32_t>(group->members.size());
        writer.copy(rank, copy);
      }
    }

    /// Calls `fn(group, slice, first, members)` for every part of
    /// `message`, in packing order: `members` tensors of the group from
    /// tensor `first` on, whose bindings are consecutive.
    template <typename Fn>
    void forEachPart(const Message &message, Fn fn) const {
      llvm::ArrayRef<MessagePart> parts = message.parts;
      for (size_t p = 0; p < parts.size(); ++p) {
        if (p + 1 < parts.size())
          plan::prefetchSlice(plan, parts[p + 1]);
        const MessagePart &part = parts[p];
        const TransferGroup &group = plan.groups[part.group];
        fn(group, group.slices[part.slice], group.members[part.memberBegin],
           static_cast<uint32_t>(part.memberEnd - part.memberBegin));
      }
    }

    /// Gathers a packed message into the sender's staging buffer.
    void emitPack(const Message &message, uint64_t staging) {
      uint32_t rank = static_cast<uint32_t>(message.sender);
      forEachPart(message, [&](const TransferGroup &group, const Slice &slice,
                               int32_t first, uint32_t members) {
        PlanRuns &pack =
            runs(slice, exporter.shardBox(first, rank, readRole(slice)),
                 slice.box, group.elementBytes());
        pack.fromBinding = exporter.binding(rank, first, readRole(slice));
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
        PlanRuns &unpack = runs(
            slice, slice.box,
            exporter.shardBox(first, rank, M2N_ROLE_DESTINATION),
            group.elementBytes());
        unpack.toBinding = exporter.binding(rank, first, M2N_ROLE_DESTINATION);
        unpack.fromOffset += staging;
        unpack.members = members;
        writer.unpack(rank, unpack);
        staging += plan::sliceBytes(group, slice) * members;
      });
    }

    /// Where a zero-copy message's one member slice lives on the side of
    /// `rank`, the sender (in the buffer the slice is read from) or the
    /// receiver: its binding there and its byte offset in it.
    std::pair<uint32_t, uint64_t> direct(const Message &message,
                                         int64_t rank) {
      const MessagePart &part = message.parts.front();
      const TransferGroup &group = plan.groups[part.group];
      const Slice &slice = group.slices[part.slice];
      int32_t member = group.members[part.memberBegin];
      m2n_role_t role =
          rank == message.sender ? readRole(slice) : M2N_ROLE_DESTINATION;
      uint64_t offset =
          plan::stridedRuns(slice.box, exporter.shardBox(member, rank, role),
                            group.elementBytes())
              .offset;
      return {exporter.binding(rank, member, role), offset};
    }

    /// One step: each rank's sends take staging from offset 0 up, its
    /// receives after them; messages keep the plan's order on every rank.
    void emitStep(int64_t step, llvm::ArrayRef<const Message *> messages) {
      // The step's ranks, in order of first appearance.
      std::vector<uint32_t> &ranks = stepRanks;
      ranks.clear();
      auto begin = [&](int64_t rank) {
        if (!owns(rank) || inStep[rank])
          return;
        inStep[rank] = 1;
        ranks.push_back(static_cast<uint32_t>(rank));
        writer.step(static_cast<uint32_t>(rank), static_cast<uint32_t>(step));
      };
      for (const Message *message : messages) {
        begin(message->sender);
        begin(message->receiver);
      }
      // Staging offsets: a receiver's come after all its sends.
      offsets.assign(messages.size(), {0, 0});
      for (size_t i = 0; i < messages.size(); ++i) {
        if (messages[i]->zeroCopy || !owns(messages[i]->sender))
          continue;
        uint64_t &send = sendEnd[messages[i]->sender];
        offsets[i].first = send;
        send += messages[i]->bytes;
      }
      for (size_t i = 0; i < messages.size(); ++i) {
        if (messages[i]->zeroCopy || !owns(messages[i]->receiver))
          continue;
        uint64_t &receive = receiveEnd[messages[i]->receiver];
        offsets[i].second = sendEnd[messages[i]->receiver] + receive;
        receive += messages[i]->bytes;
      }
      for (size_t i = 0; i < messages.size(); ++i)
        if (!messages[i]->zeroCopy && owns(messages[i]->sender))
          emitPack(*messages[i], offsets[i].first);
      for (size_t i = 0; i < messages.size(); ++i)
        emitTransfer(*messages[i], offsets[i]);
      for (size_t i = 0; i < messages.size(); ++i)
        if (!messages[i]->zeroCopy && owns(messages[i]->receiver))
          emitUnpack(*messages[i], offsets[i].second);
      for (uint32_t rank : ranks) {
        uint64_t &peak = stagingBytes[rank - lo];
        peak = std::max(peak, sendEnd[rank] + receiveEnd[rank]);
        sendEnd[rank] = receiveEnd[rank] = 0;
        inStep[rank] = 0;
      }
    }

    void emitTransfer(const Message &message,
                      std::pair<uint64_t, uint64_t> staging) {
      uint32_t sender = static_cast<uint32_t>(message.sender);
      uint32_t receiver = static_cast<uint32_t>(message.receiver);
      uint64_t bytes = static_cast<uint64_t>(message.bytes);
      bool sends = owns(sender), receives = owns(receiver);
      if (!sends && !receives)
        return;
      if (sends)
        traffics[sender - lo].first += bytes;
      if (receives)
        traffics[receiver - lo].second += bytes;
      if (!message.zeroCopy) {
        if (sends)
          writer.send(sender, receiver, staging.first, bytes);
        if (receives)
          writer.recv(receiver, sender, staging.second, bytes);
        return;
      }
      if (sends) {
        auto [binding, offset] = direct(message, sender);
        writer.sendDirect(sender, receiver, binding, offset, bytes);
      }
      if (receives) {
        auto [binding, offset] = direct(message, receiver);
        writer.recvDirect(receiver, sender, binding, offset, bytes);
      }
    }

    Exporter &exporter;
    const Plan &plan;
    PlanWriter &writer;
    /// The ranks [lo, hi) being emitted.
    uint32_t lo = 0, hi = 0;
    PlanRuns walkRecord;
    /// Per rank of the range: bytes sent and received, and the staging
    /// peak.
    std::vector<std::pair<uint64_t, uint64_t>> traffics;
    std::vector<uint64_t> stagingBytes;
    /// Per rank, within the step being emitted: the end of its sends' and
    /// of its receives' staging, and whether it has begun the step.
    std::vector<uint64_t> sendEnd, receiveEnd;
    std::vector<uint8_t> inStep;
    /// The step's ranks and each message's staging offsets, reused.
    std::vector<uint32_t> stepRanks;
    std::vector<std::pair<uint64_t, uint64_t>> offsets;
  };

  const Plan &plan;
  std::vector<std::pair<plan::HeldBoxes, plan::HeldBoxes>> held;
  uint32_t worldSize = 0;
  /// Ranks [c * chunkSize, (c + 1) * chunkSize) make chunk c, whose
  /// messages, those with a sender or receiver in it, are in order of step
  /// and then of the plan.
  uint32_t chunkSize = 1;
  std::vector<std::vector<const Message *>> messagesOfChunk;
  /// The non-empty local copies, in plan order; every chunk of ranks looks
  /// through them, and most slices are not.
  std::vector<std::pair<const TransferGroup *, const Slice *>> localCopies;
  PlanWriter writer;
  /// Per group and role (source, destination), per rank: the index of the
  /// rank's binding of the group's first member.
  std::vector<std::array<std::vector<uint32_t>, 2>> firstBinding;
  /// Per tensor: its index among its group's members.
  std::vector<uint32_t> memberIndex;
};

} // namespace

std::string exportBlocker(const plan::Plan &plan) {
  auto within = [](int64_t index, size_t size) {
    return index >= 0 && static_cast<uint64_t>(index) < size;
  };
  for (const plan::TensorInfo &tensor : plan.tensors)
    if (!within(tensor.group, plan.groups.size()))
      return "tensor '" + tensor.name + "' is in no group";
  // A refit of no meshes verifies, but a plan file has at least one rank.
  if (plan.worldSize() < 1)
    return "the plan has no ranks (a refit needs a mesh)";
  // The exporter keeps tables by rank and by step: both must be small
  // enough to allocate before the verifier has had its say.
  if (plan.worldSize() > kMaxWorldSize)
    return "the plan's ranks reach id " + std::to_string(plan.worldSize() - 1) +
           ", beyond the largest rank id, " + std::to_string(kMaxWorldSize - 1);
  if (plan.numSteps < 0 ||
      plan.numSteps >
          std::max<int64_t>(static_cast<int64_t>(plan.messages.size()), 1))
    return "the plan has " + std::to_string(plan.numSteps) + " steps for " +
           std::to_string(plan.messages.size()) + " messages";
  size_t worldSize =
      static_cast<size_t>(std::max<int64_t>(plan.worldSize(), 0));
  auto isTensor = [&](int32_t m) { return within(m, plan.tensors.size()); };
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const TransferGroup &group = plan.groups[g];
    if (group.members.empty() || !llvm::all_of(group.members, isTensor) ||
        !within(group.src.mesh, plan.meshes.size()) ||
        !within(group.dst.mesh, plan.meshes.size()))
      return "group " + std::to_string(g) + " has no members or no meshes";
    for (const Slice &slice : group.slices)
      if (slice.isLocalCopy() && !within(slice.sender, worldSize))
        return "group " + std::to_string(g) + " copies on rank " +
               std::to_string(slice.sender) + ", which is on no mesh";
  }
  for (const Message &message : plan.messages) {
    if (!within(message.sender, worldSize) ||
        !within(message.receiver, worldSize))
      return "a message goes from rank " + std::to_string(message.sender) +
             " to rank " + std::to_string(message.receiver) +
             ", not both on a mesh";
    if (message.zeroCopy && message.parts.empty())
      return "a zero-copy message carries nothing";
    for (const MessagePart &part : message.parts)
      if (!within(part.group, plan.groups.size()) ||
          !within(part.slice, plan.groups[part.group].slices.size()) ||
          part.memberBegin < 0 || part.memberBegin >= part.memberEnd ||
          part.memberEnd >
              static_cast<int64_t>(plan.groups[part.group].members.size()))
        return "a message carries a slice or members its group lacks";
  }
  return "";
}

std::vector<uint8_t>
exportPlan(const plan::Plan &plan,
           llvm::function_ref<plan::PlanCost()> summary, unsigned threads) {
  return Exporter(plan).run(summary, std::max(threads, 1u));
}

std::vector<uint8_t> exportPlan(const plan::Plan &plan,
                                const plan::PlanCost &cost, unsigned threads) {
  return exportPlan(
      plan, [&] { return cost; }, threads);
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
  std::vector<std::string> problems = plan::verifyCompiledPlan(*plan);
  if (problems.empty())
    if (std::string blocker = exportBlocker(*plan); !blocker.empty())
      problems.push_back(blocker);
  if (!problems.empty())
    return emitRefitError(refit) << "the plan of refit @" << refit.getSymName()
                                 << " is unsound: " << problems.front();
  return plan;
}

FailureOr<std::vector<uint8_t>> exportCompiledModule(ModuleOp module) {
  FailureOr<plan::Plan> plan = readCompiledPlan(module);
  if (failed(plan))
    return failure();
  return exportPlan(*plan, plan::CostModel().cost(*plan));
}

void registerExportPlanTranslation() {
  TranslateFromMLIRRegistration registration(
      "m2n-to-plan", "Export a compiled m2n refit as a plan file",
      [](Operation *op, llvm::raw_ostream &output) -> LogicalResult {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitError() << "expected a module";
        FailureOr<std::vector<uint8_t>> bytes = exportCompiledModule(module);
        if (failed(bytes))
          return failure();
        output.write(reinterpret_cast<const char *>(bytes->data()),
                     bytes->size());
        return success();
      },
      [](DialectRegistry &registry) { registry.insert<M2NDialect>(); });
}

} // namespace m2n
