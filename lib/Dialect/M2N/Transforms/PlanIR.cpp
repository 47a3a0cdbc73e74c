//===- PlanIR.cpp - Between m2n IR and the transfer plan ------------------===//

#include "m2n/Dialect/M2N/Transforms/PlanIR.h"

#include "m2n/Dialect/M2N/IR/DTypes.h"
#include "m2n/Plan/Decompose.h"
#include "m2n/Plan/Parallel.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

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

static DenseI64ArrayAttr buildSliceTable(MLIRContext *context,
                                         const plan::TransferGroup &group) {
  SmallVector<int64_t> table;
  fillSliceTable(group, table);
  return DenseI64ArrayAttr::get(context, table);
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
  // The tables are most of the work, and independent: they are built on
  // the context's threads, whose attribute uniquing is thread-safe.
  std::vector<DenseI64ArrayAttr> tables(plan.groups.size());
  plan::forEachGroup(plan, groupPool(context), [&](size_t g) {
    tables[g] = buildSliceTable(context, plan.groups[g]);
  });
  OpBuilder builder = OpBuilder::atBlockEnd(&refit.getBody().front());
  for (auto [group, table] : llvm::zip(plan.groups, tables)) {
    SmallVector<Value> operands;
    for (int32_t member : group.members)
      operands.push_back(values.lookup(plan.tensors[member].name));
    TransfersOp::create(builder, refit.getLoc(), operands,
                        buildLayout(context, plan, group.src),
                        buildLayout(context, plan, group.dst), table);
  }
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

/// Reads the messages of `op`, checking that their parts name existing
/// groups, slices and members (the op's verifier checked the rest).
static LogicalResult readMessages(MessagesOp op, plan::Plan &plan) {
  ArrayRef<int64_t> table = op.getTable();
  ArrayRef<int64_t> parts = op.getParts();
  plan.messages.resize(op.getNumMessages());
  const int64_t *part = parts.data();
  for (auto [index, message] : llvm::enumerate(plan.messages)) {
    ArrayRef<int64_t> row = table.slice(index * MessagesOp::kRowWidth,
                                        MessagesOp::kRowWidth);
    message.step = row[MessagesOp::kStep];
    message.sender = row[MessagesOp::kSender];
    message.receiver = row[MessagesOp::kReceiver];
    message.bytes = row[MessagesOp::kBytes];
    message.zeroCopy = row[MessagesOp::kZeroCopy] != 0;
    message.parts.resize(row[MessagesOp::kPartCount]);
    for (auto [p, read] : llvm::enumerate(message.parts)) {
      if (part[0] >= static_cast<int64_t>(plan.groups.size()))
        return mlir::emitError(op.getLoc())
               << "message " << index << ": part " << p << " names group "
               << part[0] << " of " << plan.groups.size();
      const plan::TransferGroup &group = plan.groups[part[0]];
      if (part[1] >= static_cast<int64_t>(group.slices.size()) ||
          part[3] > static_cast<int64_t>(group.members.size()))
        return mlir::emitError(op.getLoc())
               << "message " << index << ": part " << p
               << " names a slice or member that group " << part[0]
               << " does not have";
      read = {static_cast<int32_t>(part[0]), static_cast<int32_t>(part[1]),
              static_cast<int32_t>(part[2]), static_cast<int32_t>(part[3])};
      part += kPartWidth;
    }
  }
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
    group.slices = readSlices(transfers);
  }
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

/// Whether `table` holds the rows fillSliceTable would make of `group`.
static bool holdsSlices(ArrayRef<int64_t> table,
                        const plan::TransferGroup &group) {
  size_t rank = group.shape.size();
  size_t width = TransfersOp::rowWidth(rank);
  if (table.size() != group.slices.size() * width)
    return false;
  const int64_t *row = table.data();
  for (const plan::Slice &slice : group.slices) {
    if (row[kSender] != slice.sender || row[kReceiver] != slice.receiver ||
        row[kOrigin] != static_cast<int64_t>(slice.origin) ||
        row[kRound] != slice.round || slice.box.rank() != int64_t(rank))
      return false;
    // A loop rather than std::equal, which calls memcmp for a few values.
    for (size_t d = 0; d < rank; ++d)
      if (row[kBox + d] != slice.box.offsets[d] ||
          row[kBox + rank + d] != slice.box.sizes[d])
        return false;
    row += width;
  }
  return true;
}

/// Most passes leave most of the plan as they found it, and a slice table
/// holds hundreds of thousands of values that MLIR would hash and copy again,
/// so only the tables that changed are replaced.
static void writeSliceTables(RefitOp refit, const plan::Plan &plan) {
  MLIRContext *context = refit.getContext();
  SmallVector<TransfersOp> ops(refit.getBody().getOps<TransfersOp>());
  // Groups are compared, and their new tables built, on the context's
  // threads; the ops are changed on this one.
  std::vector<DenseI64ArrayAttr> tables(plan.groups.size());
  plan::forEachGroup(plan, groupPool(context), [&](size_t g) {
    if (g < ops.size() && !holdsSlices(ops[g].getSlices(), plan.groups[g]))
      tables[g] = buildSliceTable(context, plan.groups[g]);
  });
  for (auto [op, table] : llvm::zip(ops, tables))
    if (table)
      op.setSlicesAttr(table);
}

/// Leaves the refit with one `m2n.messages` holding `messages`, at the end
/// of its body, or none when there are none. The tables are filled in
/// place: they are the op's properties, so nothing is uniqued or copied.
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
  MessagesOp::Properties &properties = op.getProperties();
  SmallVector<int64_t> &table = properties.table;
  SmallVector<int64_t> &parts = properties.parts;
  size_t partCount = 0;
  for (const plan::Message &message : messages)
    partCount += message.parts.size();
  table.clear();
  parts.clear();
  table.reserve(messages.size() * MessagesOp::kRowWidth);
  parts.reserve(partCount * kPartWidth);
  for (const plan::Message &message : messages) {
    table.append({message.step, message.sender, message.receiver,
                  message.bytes, message.zeroCopy ? 1 : 0,
                  static_cast<int64_t>(message.parts.size())});
    for (const plan::MessagePart &part : message.parts)
      parts.append({part.group, part.slice, part.memberBegin, part.memberEnd});
  }
}

void writePlan(RefitOp refit, const plan::Plan &plan) {
  writeSliceTables(refit, plan);
  writeMessages(refit, plan.messages);
  if (plan.numSteps > 0) {
    refit.setNumSteps(plan.numSteps);
    refit.setStagingBudget(plan.stagingBudget);
  }
}

FailureOr<plan::Plan *> PlanCache::get(RefitOp refit) {
  auto it = plans.find(refit);
  if (it != plans.end())
    return &it->second;
  FailureOr<plan::Plan> plan = readPlan(refit);
  if (failed(plan))
    return failure();
  return &(plans[refit] = std::move(*plan));
}

void PlanCache::set(RefitOp refit, plan::Plan plan) {
  plans[refit] = std::move(plan);
}

void PlanCache::setSchedule(RefitOp refit, int64_t stagingBudget,
                            StringRef topology,
                            plan::ScheduledMessages schedule) {
  schedules[refit] = {stagingBudget, topology.str(), std::move(schedule)};
}

void PlanCache::dropSchedule(RefitOp refit) { schedules.erase(refit); }

std::optional<plan::ScheduledMessages>
PlanCache::takeSchedule(RefitOp refit, int64_t stagingBudget,
                        StringRef topology) {
  auto it = schedules.find(refit);
  if (it == schedules.end())
    return std::nullopt;
  PendingSchedule pending = std::move(it->second);
  schedules.erase(it);
  if (pending.stagingBudget != stagingBudget || pending.topology != topology)
    return std::nullopt;
  return std::move(pending.schedule);
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
transformPlans(ModuleOp module, PlanCache &cache,
               function_ref<LogicalResult(RefitOp, plan::Plan &)> transform,
               FanOuts fanOuts) {
  for (RefitOp refit : module.getOps<RefitOp>()) {
    FailureOr<plan::Plan *> plan = cache.get(refit);
    // The plan is about to change: a schedule recorded for it is stale.
    cache.dropSchedule(refit);
    if (failed(plan) ||
        (fanOuts == FanOuts::Expand && failed(expandFanOuts(refit, **plan))) ||
        failed(transform(refit, **plan)))
      return failure();
    writePlan(refit, **plan);
  }
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
