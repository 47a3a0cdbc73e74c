//===- PlanIR.cpp - Between m2n IR and the transfer plan ------------------===//

#include "m2n/Dialect/M2N/Transforms/PlanIR.h"

#include "m2n/Dialect/M2N/IR/DTypes.h"
#include "m2n/Plan/Decompose.h"
#include "m2n/Plan/Parallel.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

#include <numeric>

using namespace mlir;

namespace m2n {

namespace {
enum SliceColumn : int64_t { kSender, kReceiver, kOrigin, kRound, kBox };
constexpr int64_t kPartWidth = MessagesOp::kPartWidth;
static_assert(TransfersOp::kEveryHolder == plan::kEveryHolder,
              "a fan-out slice reads and writes as it is");
} // namespace

InFlightDiagnostic emitRefitError(RefitOp refit) {
  return mlir::emitError(refit.getLoc());
}

llvm::ThreadPoolInterface *groupPool(MLIRContext *context) {
  return context->isMultithreadingEnabled() ? &context->getThreadPool()
                                            : nullptr;
}

void emitUnsoundPlan(RefitOp refit, ArrayRef<std::string> problems) {
  // A plan that fails here came out of the compiler's own passes (or was
  // edited by hand): it must never reach a runtime.
  InFlightDiagnostic diag = emitRefitError(refit)
                            << "the plan of refit @" << refit.getSymName()
                            << " is unsound: " << problems.front();
  for (const std::string &problem : problems.drop_front())
    diag.attachNote() << problem;
}

static spec::LayoutSpec readLayout(LayoutAttr layout) {
  return {layout.getMesh().getValue().str(), layout.getPlacementList()};
}

FailureOr<spec::RefitSpec> readSpec(RefitOp refit) {
  spec::RefitSpec result;
  result.name = refit.getSymName().str();
  for (MeshOp mesh : refit.getBody().getOps<MeshOp>()) {
    spec::MeshSpec &meshSpec = result.meshes.emplace_back();
    meshSpec.name = mesh.getSymName().str();
    meshSpec.shape.assign(mesh.getShape().begin(), mesh.getShape().end());
    meshSpec.ranks.assign(mesh.getRanks().begin(), mesh.getRanks().end());
    if (std::optional<ArrayAttr> axes = mesh.getAxes())
      for (StringRef axis : axes->getAsValueRange<StringAttr>())
        meshSpec.axes.push_back(axis.str());
  }
  if (!refit.getBody().getOps<TransfersOp>().empty())
    return emitRefitError(refit)
           << "refit @" << refit.getSymName() << " is already decomposed";
  for (ReshardOp reshard : refit.getBody().getOps<ReshardOp>()) {
    TensorOp tensor = reshard.getTensorOp();
    auto type = cast<RankedTensorType>(tensor.getType());
    spec::TensorSpec &tensorSpec = result.tensors.emplace_back();
    tensorSpec.name = tensor.getName().str();
    tensorSpec.dtype = *getDType(type.getElementType());
    tensorSpec.shape = type.getShape().vec();
    tensorSpec.src = readLayout(reshard.getSrc());
    tensorSpec.dst = readLayout(reshard.getDst());
  }
  return result;
}

static LayoutAttr buildLayout(MLIRContext *context, const plan::Plan &plan,
                              const plan::PlanLayout &layout) {
  SmallVector<PlacementAttr> placements;
  for (Placement placement : layout.placements)
    placements.push_back(PlacementAttr::get(context, placement));
  return LayoutAttr::get(
      context, FlatSymbolRefAttr::get(context, plan.meshNames[layout.mesh]),
      placements);
}

/// The rows of `group`'s slices, as `m2n.transfers` stores them.
static void fillSliceTable(const plan::TransferGroup &group,
                           SmallVectorImpl<int64_t> &table) {
  table.clear();
  table.reserve(group.slices.size() *
                TransfersOp::rowWidth(group.shape.size()));
  for (const plan::Slice &slice : group.slices) {
    table.append({slice.sender, slice.receiver,
                  static_cast<int64_t>(slice.origin), slice.round});
    table.append(slice.box.offsets.begin(), slice.box.offsets.end());
    table.append(slice.box.sizes.begin(), slice.box.sizes.end());
  }
}

/// The refit's tensor values by name.
static llvm::StringMap<Value> tensorValues(RefitOp refit) {
  llvm::StringMap<Value> values;
  for (TensorOp tensor : refit.getBody().getOps<TensorOp>())
    values[tensor.getName()] = tensor.getResult();
  return values;
}

void writeTransfers(RefitOp refit, const plan::Plan &plan) {
  MLIRContext *context = refit.getContext();
  llvm::StringMap<Value> values = tensorValues(refit);
  SmallVector<ReshardOp> reshards(refit.getBody().getOps<ReshardOp>());
  OpBuilder builder = OpBuilder::atBlockEnd(&refit.getBody().front());
  SmallVector<TransfersOp> ops;
  for (const plan::TransferGroup &group : plan.groups) {
    SmallVector<Value> operands;
    for (int32_t member : group.members)
      operands.push_back(values.lookup(plan.tensors[member].name));
    ops.push_back(TransfersOp::create(builder, refit.getLoc(), operands,
                                      buildLayout(context, plan, group.src),
                                      buildLayout(context, plan, group.dst),
                                      ArrayRef<int64_t>()));
  }
  // The tables are most of the work, and each belongs to its op alone.
  plan::forEachGroup(plan, groupPool(context), [&](size_t g) {
    fillSliceTable(plan.groups[g], ops[g].getProperties().slices);
  });
  for (ReshardOp reshard : reshards)
    reshard.erase();
}

//===----------------------------------------------------------------------===//
// Reading a decomposed plan
//===----------------------------------------------------------------------===//

static plan::PlanLayout readPlanLayout(const llvm::StringMap<int32_t> &meshes,
                                       LayoutAttr layout) {
  return {meshes.lookup(layout.getMesh().getValue()),
          layout.getPlacementList()};
}

static std::vector<plan::Slice> readSlices(TransfersOp transfers) {
  int64_t rank = transfers.getTensorType().getRank();
  int64_t width = TransfersOp::rowWidth(rank);
  ArrayRef<int64_t> table = transfers.getSlices();
  std::vector<plan::Slice> slices;
  slices.reserve(table.size() / width);
  for (size_t begin = 0; begin < table.size(); begin += width) {
    ArrayRef<int64_t> row = table.slice(begin, width);
    plan::Slice &slice = slices.emplace_back();
    slice.sender = row[kSender];
    slice.receiver = row[kReceiver];
    slice.origin = static_cast<plan::Origin>(row[kOrigin]);
    slice.round = static_cast<int32_t>(row[kRound]);
    slice.box.offsets.assign(row.begin() + kBox, row.begin() + kBox + rank);
    slice.box.sizes.assign(row.begin() + kBox + rank, row.end());
  }
  return slices;
}

namespace {
/// Messages read or written together on one thread.
constexpr size_t kMessageChunk = 1 << 16;

/// The index of every message's first part in the parts table, and the
/// parts in all, last.
std::vector<size_t> firstParts(ArrayRef<int64_t> table) {
  size_t count = table.size() / MessagesOp::kRowWidth;
  std::vector<size_t> first(count + 1, 0);
  for (size_t m = 0; m < count; ++m)
    first[m + 1] =
        first[m] +
        static_cast<size_t>(
            table[m * MessagesOp::kRowWidth + MessagesOp::kPartCount]);
  return first;
}
} // namespace

/// Reads messages [begin, end) of `op` into `plan`, whose groups are read:
/// the first problem with a part that names a group, slice or member that
/// does not exist, or "" (the op's verifier checked the rest).
static std::string readMessageChunk(MessagesOp op, ArrayRef<size_t> firstPart,
                                    size_t begin, size_t end,
                                    plan::Plan &plan) {
  ArrayRef<int64_t> table = op.getTable();
  ArrayRef<int64_t> parts = op.getParts();
  for (size_t index = begin; index < end; ++index) {
    plan::Message &message = plan.messages[index];
    const int64_t *row = table.data() + index * MessagesOp::kRowWidth;
    message.step = row[MessagesOp::kStep];
    message.sender = row[MessagesOp::kSender];
    message.receiver = row[MessagesOp::kReceiver];
    message.bytes = row[MessagesOp::kBytes];
    message.zeroCopy = row[MessagesOp::kZeroCopy] != 0;
    message.parts.resize(firstPart[index + 1] - firstPart[index]);
    const int64_t *part = parts.data() + firstPart[index] * kPartWidth;
    for (auto [p, read] : llvm::enumerate(message.parts)) {
      auto names = [&, p = p](const std::string &what) {
        return "message " + std::to_string(index) + ": part " +
               std::to_string(p) + " names " + what;
      };
      if (part[0] >= static_cast<int64_t>(plan.groups.size()))
        return names("group " + std::to_string(part[0]) + " of " +
                     std::to_string(plan.groups.size()));
      const plan::TransferGroup &group = plan.groups[part[0]];
      if (part[1] >= static_cast<int64_t>(group.slices.size()) ||
          part[3] > static_cast<int64_t>(group.members.size()))
        return names("a slice or member that group " + std::to_string(part[0]) +
                     " does not have");
      read = {static_cast<int32_t>(part[0]), static_cast<int32_t>(part[1]),
              static_cast<int32_t>(part[2]), static_cast<int32_t>(part[3])};
      part += kPartWidth;
    }
  }
  return "";
}

/// Reads the messages of `op`, checking that their parts name existing
/// groups, slices and members, in chunks on the context's threads.
static LogicalResult readMessages(MessagesOp op, plan::Plan &plan) {
  std::vector<size_t> firstPart = firstParts(op.getTable());
  size_t count = firstPart.size() - 1;
  plan.messages.resize(count);
  size_t chunks = (count + kMessageChunk - 1) / kMessageChunk;
  std::vector<std::string> problems(chunks);
  plan::forEachIndex(chunks, groupPool(op.getContext()), [&](size_t chunk) {
    size_t begin = chunk * kMessageChunk;
    problems[chunk] = readMessageChunk(
        op, firstPart, begin, std::min(count, begin + kMessageChunk), plan);
  });
  for (const std::string &problem : problems)
    if (!problem.empty())
      return mlir::emitError(op.getLoc()) << problem;
  return success();
}

FailureOr<plan::Plan> readPlan(RefitOp refit) {
  if (!refit.getBody().getOps<ReshardOp>().empty())
    return emitRefitError(refit)
           << "refit @" << refit.getSymName()
           << " has reshards left; run m2n-decompose first";
  plan::Plan result;
  llvm::StringMap<int32_t> meshIndex;
  for (MeshOp mesh : refit.getBody().getOps<MeshOp>()) {
    meshIndex[mesh.getSymName()] = result.meshes.size();
    result.meshNames.push_back(mesh.getSymName().str());
    result.meshes.push_back(mesh.getMesh());
  }
  DenseMap<Value, int32_t> tensorIndex;
  for (TensorOp tensor : refit.getBody().getOps<TensorOp>()) {
    tensorIndex[tensor.getResult()] = result.tensors.size();
    result.tensors.push_back({tensor.getName().str(), -1});
  }
  SmallVector<TransfersOp> transfersOps;
  for (TransfersOp transfers : refit.getBody().getOps<TransfersOp>()) {
    int32_t groupIndex = result.groups.size();
    plan::TransferGroup &group = result.groups.emplace_back();
    RankedTensorType type = transfers.getTensorType();
    group.shape = type.getShape().vec();
    group.dtype = *getDType(type.getElementType());
    group.src = readPlanLayout(meshIndex, transfers.getSrc());
    group.dst = readPlanLayout(meshIndex, transfers.getDst());
    for (Value tensor : transfers.getTensors()) {
      int32_t member = tensorIndex.lookup(tensor);
      group.members.push_back(member);
      result.tensors[member].group = groupIndex;
    }
    transfersOps.push_back(transfers);
  }
  // Each group's slices are its own; the largest tables go first.
  std::vector<size_t> bySize(transfersOps.size());
  std::iota(bySize.begin(), bySize.end(), 0);
  llvm::stable_sort(bySize, [&](size_t a, size_t b) {
    return transfersOps[a].getSlices().size() >
           transfersOps[b].getSlices().size();
  });
  plan::forEachIndex(bySize.size(), groupPool(refit.getContext()),
                     [&](size_t i) {
                       size_t g = bySize[i];
                       result.groups[g].slices = readSlices(transfersOps[g]);
                     });
  for (MessagesOp op : refit.getBody().getOps<MessagesOp>())
    if (failed(readMessages(op, result)))
      return failure();
  result.numSteps = static_cast<int64_t>(refit.getNumSteps().value_or(0));
  result.stagingBudget =
      static_cast<int64_t>(refit.getStagingBudget().value_or(0));
  return result;
}

//===----------------------------------------------------------------------===//
// Writing a plan back
//===----------------------------------------------------------------------===//

/// Fills each group's table in place, on the context's threads: a table
/// is its op's own property.
static void writeSliceTables(RefitOp refit, const plan::Plan &plan) {
  SmallVector<TransfersOp> ops(refit.getBody().getOps<TransfersOp>());
  plan::forEachGroup(plan, groupPool(refit.getContext()), [&](size_t g) {
    if (g < ops.size())
      fillSliceTable(plan.groups[g], ops[g].getProperties().slices);
  });
}

/// Leaves the refit with one `m2n.messages` holding `messages`, at the end
/// of its body, or none when there are none. The tables are the op's
/// properties, filled in place in chunks on the context's threads.
static void writeMessages(RefitOp refit, ArrayRef<plan::Message> messages) {
  auto ops = refit.getBody().getOps<MessagesOp>();
  MessagesOp op = ops.empty() ? MessagesOp() : *ops.begin();
  if (messages.empty()) {
    if (op)
      op.erase();
    return;
  }
  Block &body = refit.getBody().front();
  if (!op) {
    OpBuilder builder = OpBuilder::atBlockEnd(&body);
    op = MessagesOp::create(builder, refit.getLoc(), ArrayRef<int64_t>(),
                            ArrayRef<int64_t>());
  } else if (&body.back() != op.getOperation()) {
    op->moveBefore(&body, body.end());
  }
  std::vector<size_t> firstPart(messages.size() + 1, 0);
  for (size_t m = 0; m < messages.size(); ++m)
    firstPart[m + 1] = firstPart[m] + messages[m].parts.size();
  MessagesOp::Properties &properties = op.getProperties();
  SmallVector<int64_t> &table = properties.table;
  SmallVector<int64_t> &parts = properties.parts;
  table.resize_for_overwrite(messages.size() * MessagesOp::kRowWidth);
  parts.resize_for_overwrite(firstPart.back() * kPartWidth);
  size_t chunks = (messages.size() + kMessageChunk - 1) / kMessageChunk;
  plan::forEachIndex(chunks, groupPool(refit.getContext()), [&](size_t chunk) {
    size_t begin = chunk * kMessageChunk;
    size_t end = std::min(messages.size(), begin + kMessageChunk);
    int64_t *row = table.data() + begin * MessagesOp::kRowWidth;
    int64_t *part = parts.data() + firstPart[begin] * kPartWidth;
    for (const plan::Message &message : messages.slice(begin, end - begin)) {
      row[MessagesOp::kStep] = message.step;
      row[MessagesOp::kSender] = message.sender;
      row[MessagesOp::kReceiver] = message.receiver;
      row[MessagesOp::kBytes] = message.bytes;
      row[MessagesOp::kZeroCopy] = message.zeroCopy ? 1 : 0;
      row[MessagesOp::kPartCount] = static_cast<int64_t>(message.parts.size());
      row += MessagesOp::kRowWidth;
      for (const plan::MessagePart &each : message.parts) {
        part[0] = each.group;
        part[1] = each.slice;
        part[2] = each.memberBegin;
        part[3] = each.memberEnd;
        part += kPartWidth;
      }
    }
  });
}

void writePlan(RefitOp refit, const plan::Plan &plan) {
  writeSliceTables(refit, plan);
  writeMessages(refit, plan.messages);
  if (plan.numSteps > 0) {
    refit.setNumSteps(plan.numSteps);
    refit.setStagingBudget(plan.stagingBudget);
    return;
  }
  refit.removeNumStepsAttr();
  refit.removeStagingBudgetAttr();
  refit.removeScheduleTopologyAttr();
}

/// The topology as `schedule_topology` records it: a topology file's keys,
/// in its units.
static DictionaryAttr topologyAttr(MLIRContext *context,
                                   const plan::Topology &topology) {
  Builder builder(context);
  return builder.getDictionaryAttr({
      builder.getNamedAttr(
          "inter_node_gbps",
          builder.getF64FloatAttr(topology.interNodeBandwidth / 1e9)),
      builder.getNamedAttr(
          "intra_node_gbps",
          builder.getF64FloatAttr(topology.intraNodeBandwidth / 1e9)),
      builder.getNamedAttr(
          "latency_us", builder.getF64FloatAttr(topology.latencySeconds * 1e6)),
      builder.getNamedAttr("ranks_per_node",
                           builder.getI64IntegerAttr(topology.ranksPerNode)),
      builder.getNamedAttr("step_us",
                           builder.getF64FloatAttr(topology.stepSeconds * 1e6)),
  });
}

void recordScheduleTopology(RefitOp refit, const plan::Topology &topology) {
  refit.setScheduleTopologyAttr(topologyAttr(refit.getContext(), topology));
}

bool isScheduledFor(RefitOp refit, int64_t stagingBudget,
                    const plan::Topology &topology) {
  std::optional<uint64_t> budget = refit.getStagingBudget();
  return refit.getNumSteps() && budget &&
         static_cast<int64_t>(*budget) == stagingBudget &&
         refit.getScheduleTopologyAttr() ==
             topologyAttr(refit.getContext(), topology);
}

LogicalResult expandFanOuts(RefitOp refit, plan::Plan &plan) {
  std::string problem =
      plan::expandFanOuts(plan, groupPool(refit.getContext()));
  if (problem.empty())
    return success();
  return emitRefitError(refit)
         << "refit @" << refit.getSymName() << ": " << problem;
}

LogicalResult
transformPlan(RefitOp refit,
              function_ref<LogicalResult(RefitOp, plan::Plan &)> transform,
              FanOuts fanOuts) {
  FailureOr<plan::Plan> plan = readPlan(refit);
  if (failed(plan) ||
      (fanOuts == FanOuts::Expand && failed(expandFanOuts(refit, *plan))) ||
      failed(transform(refit, *plan)))
    return failure();
  writePlan(refit, *plan);
  return success();
}

LogicalResult
transformPlans(ModuleOp module,
               function_ref<LogicalResult(RefitOp, plan::Plan &)> transform,
               FanOuts fanOuts) {
  for (RefitOp refit : module.getOps<RefitOp>())
    if (failed(transformPlan(refit, transform, fanOuts)))
      return failure();
  return success();
}

LogicalResult checkNotFused(RefitOp refit, const plan::Plan &plan,
                            StringRef pass) {
  if (plan.messages.empty())
    return success();
  return emitRefitError(refit) << pass << " must run before m2n-fuse: refit @"
                               << refit.getSymName() << " already has messages";
}

FailureOr<plan::CostModel> loadCostModel(Operation *op, StringRef path) {
  if (path.empty())
    return plan::CostModel();
  llvm::Expected<plan::Topology> topology = plan::readTopology(path);
  if (!topology)
    return mlir::emitError(op->getLoc())
           << llvm::toString(topology.takeError());
  return plan::CostModel(*topology);
}

} // namespace m2n
