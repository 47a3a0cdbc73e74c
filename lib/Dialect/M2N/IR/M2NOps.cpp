//===- M2NOps.cpp - m2n operations ----------------------------------------===//

#include "m2n/Dialect/M2N/IR/M2NOps.h"

#include "m2n/Dialect/M2N/IR/DTypes.h"
#include "m2n/Spec/RefitSpec.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace m2n;

#define GET_OP_CLASSES
#include "m2n/Dialect/M2N/IR/M2NOps.cpp.inc"

//===----------------------------------------------------------------------===//
// RefitOp
//===----------------------------------------------------------------------===//

void RefitOp::build(OpBuilder &builder, OperationState &state, StringRef name) {
  state.addAttribute(mlir::SymbolTable::getSymbolAttrName(),
                     builder.getStringAttr(name));
  state.addRegion()->emplaceBlock();
}

/// A problem with the refit's messages and its step count, or "".
static std::string checkMessages(RefitOp refit) {
  auto tables = refit.getBody().getOps<MessagesOp>();
  if (!tables.empty() && std::next(tables.begin()) != tables.end())
    return "more than one m2n.messages";
  MessagesOp messages = tables.empty() ? MessagesOp() : *tables.begin();
  std::optional<uint64_t> numSteps = refit.getNumSteps();
  if (!numSteps)
    return "";
  auto steps = static_cast<int64_t>(*numSteps);
  int64_t count = messages ? messages.getNumMessages() : 0;
  for (int64_t i = 0; i < count; ++i) {
    int64_t step = messages.getTable()[i * MessagesOp::kRowWidth +
                                       MessagesOp::kStep];
    if (step >= steps)
      return "num_steps is " + std::to_string(steps) + ", but message " +
             std::to_string(i) + " is in step " + std::to_string(step);
  }
  // A step count beyond the messages (a refit without any may have one
  // step) describes work that no message does; without a step, the
  // messages would be dropped.
  if (steps < 1 || steps > std::max<int64_t>(count, 1))
    return "num_steps is " + std::to_string(steps) + " with " +
           std::to_string(count) +
           " messages; it must be between 1 and the number of messages";
  return "";
}

LogicalResult RefitOp::verifyRegions() {
  std::string messages = checkMessages(*this);
  if (!messages.empty())
    return emitOpError() << "@" << getSymName() << ": " << messages;
  if (std::optional<uint64_t> budget = getStagingBudget();
      budget && static_cast<int64_t>(*budget) < 0)
    return emitOpError() << "@" << getSymName()
                         << ": staging_budget must not be negative";
  auto meshes = getBody().getOps<MeshOp>();
  if (static_cast<size_t>(std::distance(meshes.begin(), meshes.end())) >
      spec::kMaxMeshes)
    return emitOpError() << "@" << getSymName() << ": more than "
                         << spec::kMaxMeshes << " meshes";
  llvm::StringMap<TensorOp> tensors;
  // What the tensors hold, which plan totals add up to.
  int64_t totalBytes = 0;
  for (auto tensor : getBody().getOps<TensorOp>()) {
    if (tensors.size() == spec::kMaxTensors)
      return tensor.emitOpError()
             << "more than " << spec::kMaxTensors << " tensors in a refit";
    if (llvm::AddOverflow(totalBytes, tensor.byteSize(), totalBytes))
      return tensor.emitOpError() << "tensor \"" << tensor.getName()
                                  << "\": the tensors up to this one hold "
                                     "more than 2^63 - 1 bytes";
    auto [it, inserted] = tensors.try_emplace(tensor.getName(), tensor);
    if (!inserted) {
      InFlightDiagnostic diag = tensor.emitOpError()
                                << "tensor \"" << tensor.getName()
                                << "\" is declared twice";
      diag.attachNote(it->second.getLoc()) << "first declared here";
      return diag;
    }
    auto reshards = llvm::count_if(tensor->getUsers(), [](Operation *user) {
      return isa<ReshardOp, TransfersOp>(user);
    });
    if (reshards > 1)
      return tensor.emitOpError()
             << "tensor \"" << tensor.getName() << "\" is resharded "
             << reshards << " times; a refit moves each tensor once";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// MeshOp
//===----------------------------------------------------------------------===//

Mesh MeshOp::getMesh() {
  return Mesh{std::vector<int64_t>(getShape().begin(), getShape().end()),
              std::vector<int64_t>(getRanks().begin(), getRanks().end())};
}

LogicalResult MeshOp::verify() {
  Mesh mesh = getMesh();
  std::string problem = checkMesh(mesh.shape, mesh.ranks);
  if (!problem.empty())
    return emitOpError() << "'" << getSymName() << "': " << problem;
  std::optional<ArrayAttr> axes = getAxes();
  if (!axes)
    return success();
  if (axes->size() != mesh.shape.size())
    return emitOpError() << "'" << getSymName() << "': " << axes->size()
                         << " axis names for a mesh of rank "
                         << mesh.shape.size();
  llvm::StringSet<> seen;
  for (auto [i, axis] : llvm::enumerate(axes->getAsValueRange<StringAttr>())) {
    if (axis.empty())
      return emitOpError() << "'" << getSymName() << "': axis " << i
                           << " has an empty name";
    if (!seen.insert(axis).second)
      return emitOpError() << "'" << getSymName() << "': axis name '" << axis
                           << "' appears twice";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// TensorOp
//===----------------------------------------------------------------------===//

LogicalResult TensorOp::verify() {
  std::string nameProblem = spec::checkTensorName(getName());
  if (!nameProblem.empty())
    return emitOpError() << nameProblem;
  auto type = cast<RankedTensorType>(getResult().getType());
  std::optional<DType> dtype = getDType(type.getElementType());
  if (!dtype)
    return emitOpError() << "tensor \"" << getName() << "\": element type "
                         << type.getElementType()
                         << " is not one that m2n moves";
  std::string problem = checkTensorShape(type.getShape().vec());
  if (problem.empty())
    problem = spec::checkTensorBytes(type.getShape(), *dtype);
  if (!problem.empty())
    return emitOpError() << "tensor \"" << getName() << "\": " << problem;
  return success();
}

int64_t TensorOp::byteSize() {
  auto type = cast<RankedTensorType>(getResult().getType());
  if (llvm::is_contained(type.getShape(), 0))
    return 0;
  return type.getNumElements() * dtypeByteSize(*getDType(type.getElementType()));
}

void TensorOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getResult(), getName());
}

//===----------------------------------------------------------------------===//
// ReshardOp
//===----------------------------------------------------------------------===//

TensorOp ReshardOp::getTensorOp() {
  return getTensor().getDefiningOp<TensorOp>();
}

LogicalResult ReshardOp::verify() {
  if (!getTensorOp())
    return emitOpError() << "operand must be defined by 'm2n.tensor'";
  return success();
}

/// Checks that `layout` names a mesh of the refit and fits it and a tensor
/// of `tensorRank` dimensions called `name`.
static LogicalResult verifyLayout(Operation *op, StringRef name,
                                  int64_t tensorRank, StringRef side,
                                  LayoutAttr layout,
                                  SymbolTableCollection &symbolTable) {
  auto mesh = symbolTable.lookupNearestSymbolFrom<MeshOp>(op, layout.getMesh());
  if (!mesh)
    return op->emitOpError()
           << "tensor \"" << name << "\": " << side << " mesh "
           << layout.getMesh() << " is not a 'm2n.mesh' of this refit";
  std::string problem =
      checkPlacements(layout.getPlacementList(),
                      static_cast<int64_t>(mesh.getShape().size()), tensorRank);
  if (!problem.empty())
    return op->emitOpError()
           << "tensor \"" << name << "\": " << side << " layout on mesh "
           << layout.getMesh() << ": " << problem;
  return success();
}

/// verifyLayout for both layouts of an op that moves tensors.
static LogicalResult verifyLayouts(Operation *op, StringRef name,
                                   int64_t tensorRank, LayoutAttr src,
                                   LayoutAttr dst,
                                   SymbolTableCollection &symbolTable) {
  if (failed(verifyLayout(op, name, tensorRank, "source", src, symbolTable)))
    return failure();
  return verifyLayout(op, name, tensorRank, "destination", dst, symbolTable);
}

LogicalResult ReshardOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  TensorOp tensor = getTensorOp();
  return verifyLayouts(*this, tensor ? tensor.getName() : StringRef("?"),
                       getTensor().getType().getRank(), getSrc(), getDst(),
                       symbolTable);
}

//===----------------------------------------------------------------------===//
// TransfersOp
//===----------------------------------------------------------------------===//

namespace {
enum SliceColumn : int64_t { kSender, kReceiver, kOrigin, kRound, kBox };
} // namespace

RankedTensorType TransfersOp::getTensorType() {
  return cast<RankedTensorType>(getTensors().front().getType());
}

/// `[o:s, o:s]`, as Box::str() prints a box.
static void printBox(OpAsmPrinter &printer, ArrayRef<int64_t> row,
                     int64_t rank) {
  printer << "[";
  for (int64_t d = 0; d < rank; ++d)
    printer << (d ? ", " : "") << row[kBox + d] << ":" << row[kBox + rank + d];
  printer << "]";
}

constexpr int64_t kEveryHolder = TransfersOp::kEveryHolder;

static void printSliceRow(OpAsmPrinter &printer, ArrayRef<int64_t> row,
                          int64_t rank) {
  printer << row[kSender] << " -> ";
  if (row[kReceiver] == kEveryHolder)
    printer << "*";
  else
    printer << row[kReceiver];
  printer << " ";
  printBox(printer, row, rank);
  if (row[kOrigin] == 1)
    printer << " forward";
  if (row[kRound] != 0)
    printer << " round " << row[kRound];
}

void TransfersOp::print(OpAsmPrinter &printer) {
  printer << " " << getTensors() << " from ";
  getSrc().print(printer);
  printer << " to ";
  getDst().print(printer);
  printer << " : " << getTensorType() << " slices {";
  int64_t rank = getTensorType().getRank();
  int64_t width = rowWidth(rank);
  ArrayRef<int64_t> table = getSlices();
  printer.increaseIndent();
  for (size_t begin = 0; begin + width <= table.size(); begin += width) {
    printer.printNewline();
    printSliceRow(printer, table.slice(begin, width), rank);
  }
  printer.decreaseIndent();
  if (!table.empty())
    printer.printNewline();
  printer << "}";
  printer.printOptionalAttrDict((*this)->getAttrs(), {"src", "dst", "slices"});
}

/// `S -> (R | *) [o:s, ...] (forward)? (round k)?`, appended to `table`.
static ParseResult parseSliceRow(OpAsmParser &parser, int64_t rank,
                                 SmallVectorImpl<int64_t> &table) {
  int64_t sender, receiver = kEveryHolder;
  if (parser.parseInteger(sender) || parser.parseArrow() ||
      (failed(parser.parseOptionalStar()) && parser.parseInteger(receiver)) ||
      parser.parseLSquare())
    return failure();
  SmallVector<int64_t> offsets, sizes;
  auto parseDim = [&]() -> ParseResult {
    int64_t offset, size;
    if (parser.parseInteger(offset) || parser.parseColon() ||
        parser.parseInteger(size))
      return failure();
    offsets.push_back(offset);
    sizes.push_back(size);
    return success();
  };
  SMLoc boxLoc = parser.getCurrentLocation();
  if (parser.parseCommaSeparatedList(parseDim) || parser.parseRSquare())
    return failure();
  if (static_cast<int64_t>(offsets.size()) != rank)
    return parser.emitError(boxLoc) << "slice box has " << offsets.size()
                                    << " dimensions, the tensor " << rank;
  int64_t origin = succeeded(parser.parseOptionalKeyword("forward")) ? 1 : 0;
  int64_t round = 0;
  if (succeeded(parser.parseOptionalKeyword("round")) &&
      parser.parseInteger(round))
    return failure();
  table.append({sender, receiver, origin, round});
  table.append(offsets.begin(), offsets.end());
  table.append(sizes.begin(), sizes.end());
  return success();
}

ParseResult TransfersOp::parse(OpAsmParser &parser, OperationState &result) {
  SmallVector<OpAsmParser::UnresolvedOperand> tensors;
  Type type;
  if (parser.parseOperandList(tensors, /*requiredOperandCount=*/-1) ||
      parser.parseKeyword("from"))
    return failure();
  Attribute src = LayoutAttr::parse(parser, Type());
  if (!src || parser.parseKeyword("to"))
    return failure();
  Attribute dst = LayoutAttr::parse(parser, Type());
  if (!dst || parser.parseColonType(type) || parser.parseKeyword("slices") ||
      parser.parseLBrace())
    return failure();
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!tensorType)
    return parser.emitError(parser.getCurrentLocation(),
                            "expected a ranked tensor type");
  SmallVector<int64_t> table;
  while (failed(parser.parseOptionalRBrace()))
    if (parseSliceRow(parser, tensorType.getRank(), table))
      return failure();
  if (parser.parseOptionalAttrDict(result.attributes) ||
      parser.resolveOperands(tensors, type, result.operands))
    return failure();
  Properties &properties = result.getOrAddProperties<Properties>();
  properties.src = cast<LayoutAttr>(src);
  properties.dst = cast<LayoutAttr>(dst);
  properties.slices = std::move(table);
  return success();
}

LogicalResult TransfersOp::verify() {
  if (getTensors().empty())
    return emitOpError() << "moves no tensor";
  for (Value tensor : getTensors()) {
    if (!tensor.getDefiningOp<TensorOp>())
      return emitOpError() << "operands must be defined by 'm2n.tensor'";
    if (tensor.getType() != getTensorType())
      return emitOpError() << "moves tensors of different types "
                           << getTensorType() << " and " << tensor.getType();
  }
  int64_t rank = getTensorType().getRank();
  int64_t width = rowWidth(rank);
  ArrayRef<int64_t> table = getSlices();
  if (table.size() % width != 0)
    return emitOpError() << "slice table of " << table.size()
                         << " values is not a whole number of rows of "
                         << width;
  for (size_t begin = 0; begin < table.size(); begin += width) {
    ArrayRef<int64_t> row = table.slice(begin, width);
    int64_t index = begin / width;
    bool fanOut = row[kReceiver] == kEveryHolder;
    for (int64_t rank : {row[kSender], fanOut ? 0 : row[kReceiver]}) {
      std::string problem = checkRankId(rank);
      if (!problem.empty())
        return emitOpError() << "slice " << index << ": " << problem;
    }
    if (fanOut && (row[kOrigin] != 0 || row[kRound] != 0))
      return emitOpError() << "slice " << index
                           << " goes to every holder (*) but is not read "
                              "from a source shard in round 0";
    if (row[kOrigin] != 0 && row[kOrigin] != 1)
      return emitOpError() << "slice " << index << " has origin "
                           << row[kOrigin] << "; expected 0 or 1";
    if (row[kRound] < 0 || row[kRound] > std::numeric_limits<int32_t>::max())
      return emitOpError() << "slice " << index << " is in round "
                           << row[kRound] << ", outside [0, 2^31)";
    if (row[kOrigin] == 1 && row[kRound] == 0)
      return emitOpError() << "slice " << index << " forwards in round "
                           << row[kRound]
                           << "; forwarding needs a round of at least 1";
    ArrayRef<int64_t> shape = getTensorType().getShape();
    for (int64_t d = 0; d < rank; ++d) {
      int64_t offset = row[kBox + d], size = row[kBox + rank + d];
      // Subtracting keeps the comparison clear of overflow.
      if (offset < 0 || size < 0 || offset > shape[d] ||
          size > shape[d] - offset)
        return emitOpError() << "slice " << index << " has box " << offset
                             << ":" << size << " in dimension " << d
                             << ", outside the tensor's 0:" << shape[d];
    }
  }
  return success();
}

LogicalResult
TransfersOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto first = getTensors().front().getDefiningOp<TensorOp>();
  return verifyLayouts(*this, first ? first.getName() : StringRef("?"),
                       getTensorType().getRank(), getSrc(), getDst(),
                       symbolTable);
}

//===----------------------------------------------------------------------===//
// MessagesOp
//===----------------------------------------------------------------------===//

static constexpr int64_t kMessageWidth = MessagesOp::kRowWidth;
static constexpr int64_t kPartWidth = MessagesOp::kPartWidth;

/// `step T : S -> R bytes N (zero_copy)? parts [gG sS mB..E, ...]`.
static void printMessageRow(OpAsmPrinter &printer, ArrayRef<int64_t> row,
                            ArrayRef<int64_t> parts) {
  printer << "step " << row[MessagesOp::kStep] << " : "
          << row[MessagesOp::kSender] << " -> " << row[MessagesOp::kReceiver]
          << " bytes " << row[MessagesOp::kBytes]
          << (row[MessagesOp::kZeroCopy] ? " zero_copy" : "") << " parts [";
  for (size_t i = 0; i + kPartWidth <= parts.size(); i += kPartWidth)
    printer << (i ? ", " : "") << "g" << parts[i] << " s" << parts[i + 1]
            << " m" << parts[i + 2] << ".." << parts[i + 3];
  printer << "]";
}

void MessagesOp::print(OpAsmPrinter &printer) {
  ArrayRef<int64_t> table = getTable();
  ArrayRef<int64_t> parts = getParts();
  printer << " {";
  printer.increaseIndent();
  size_t part = 0;
  for (size_t begin = 0; begin + kMessageWidth <= table.size();
       begin += kMessageWidth) {
    ArrayRef<int64_t> row = table.slice(begin, kMessageWidth);
    // The verifier checks the counts; a printer must not trust them, since
    // invalid IR is printed too.
    size_t count = std::min<size_t>(
        std::max<int64_t>(row[kPartCount], 0) * kPartWidth,
        parts.size() - part);
    printer.printNewline();
    printMessageRow(printer, row, parts.slice(part, count));
    part += count;
  }
  printer.decreaseIndent();
  if (!table.empty())
    printer.printNewline();
  printer << "}";
  printer.printOptionalAttrDict((*this)->getAttrs());
}

/// A keyword such as `g12`: the letter, then a non-negative number.
static ParseResult parseTaggedInteger(OpAsmParser &parser, char tag,
                                      int64_t &value) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  if (!keyword.consume_front(StringRef(&tag, 1)) ||
      keyword.getAsInteger(10, value))
    return parser.emitError(loc) << "expected '" << tag << "<number>'";
  return success();
}

/// `[gG sS mB..E, ...]`, appended to `parts`; returns the number of parts.
static FailureOr<int64_t> parseMessageParts(OpAsmParser &parser,
                                            SmallVectorImpl<int64_t> &parts) {
  int64_t count = 0;
  auto parsePart = [&]() -> ParseResult {
    int64_t group, slice, begin, end;
    if (parseTaggedInteger(parser, 'g', group) ||
        parseTaggedInteger(parser, 's', slice))
      return failure();
    // MLIR identifiers may contain '.', so `m0..2` is one keyword.
    SMLoc loc = parser.getCurrentLocation();
    StringRef keyword;
    if (parser.parseKeyword(&keyword))
      return failure();
    auto [first, last] = keyword.split("..");
    if (!first.consume_front("m") || first.getAsInteger(10, begin) ||
        last.getAsInteger(10, end))
      return parser.emitError(loc) << "expected 'm<begin>..<end>'";
    parts.append({group, slice, begin, end});
    ++count;
    return success();
  };
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Square, parsePart))
    return failure();
  return count;
}

/// One message row, appended to `table`, its parts to `parts`.
static ParseResult parseMessageRow(OpAsmParser &parser,
                                   SmallVectorImpl<int64_t> &table,
                                   SmallVectorImpl<int64_t> &parts) {
  int64_t step, sender, receiver, bytes;
  if (parser.parseKeyword("step") || parser.parseInteger(step) ||
      parser.parseColon() || parser.parseInteger(sender) ||
      parser.parseArrow() || parser.parseInteger(receiver) ||
      parser.parseKeyword("bytes") || parser.parseInteger(bytes))
    return failure();
  int64_t zeroCopy =
      succeeded(parser.parseOptionalKeyword("zero_copy")) ? 1 : 0;
  if (parser.parseKeyword("parts"))
    return failure();
  FailureOr<int64_t> count = parseMessageParts(parser, parts);
  if (failed(count))
    return failure();
  table.append({step, sender, receiver, bytes, zeroCopy, *count});
  return success();
}

ParseResult MessagesOp::parse(OpAsmParser &parser, OperationState &result) {
  Properties &properties = result.getOrAddProperties<Properties>();
  if (parser.parseLBrace())
    return failure();
  while (failed(parser.parseOptionalRBrace()))
    if (parseMessageRow(parser, properties.table, properties.parts))
      return failure();
  return parser.parseOptionalAttrDict(result.attributes);
}

/// A problem with message `index`, whose parts are `parts`, or "".
static std::string checkMessage(int64_t index, ArrayRef<int64_t> row,
                                ArrayRef<int64_t> parts) {
  std::string name = "message " + std::to_string(index);
  int64_t sender = row[MessagesOp::kSender];
  int64_t receiver = row[MessagesOp::kReceiver];
  if (sender == receiver)
    return name + " sends from rank " + std::to_string(sender) + " to itself";
  if (row[MessagesOp::kStep] < 0 || row[MessagesOp::kBytes] < 0)
    return name + " has a negative step or byte count";
  for (int64_t rank : {sender, receiver}) {
    std::string problem = checkRankId(rank);
    if (!problem.empty())
      return name + ": " + problem;
  }
  if (row[MessagesOp::kZeroCopy] != 0 && row[MessagesOp::kZeroCopy] != 1)
    return name + " has zero-copy flag " +
           std::to_string(row[MessagesOp::kZeroCopy]) + "; expected 0 or 1";
  if (parts.empty())
    return name + " has no part";
  for (size_t i = 0; i < parts.size(); i += kPartWidth)
    if (parts[i] < 0 || parts[i + 1] < 0 || parts[i + 2] < 0 ||
        parts[i + 3] <= parts[i + 2])
      return name + ": part " + std::to_string(i / kPartWidth) +
             " has a negative index or an empty member range";
  if (row[MessagesOp::kZeroCopy] && parts.size() != kPartWidth)
    return name + " is zero-copy but has " +
           std::to_string(parts.size() / kPartWidth) + " parts";
  return "";
}

LogicalResult MessagesOp::verify() {
  ArrayRef<int64_t> table = getTable();
  ArrayRef<int64_t> parts = getParts();
  if (table.size() % kMessageWidth != 0 || parts.size() % kPartWidth != 0)
    return emitOpError() << "tables of " << table.size() << " and "
                         << parts.size()
                         << " values are not whole numbers of rows of "
                         << kMessageWidth << " and " << kPartWidth;
  size_t part = 0;
  for (size_t begin = 0; begin < table.size(); begin += kMessageWidth) {
    ArrayRef<int64_t> row = table.slice(begin, kMessageWidth);
    int64_t index = begin / kMessageWidth;
    int64_t count = row[kPartCount];
    if (count < 0 || static_cast<uint64_t>(count) >
                         (parts.size() - part) / kPartWidth)
      return emitOpError() << "message " << index << " has " << count
                           << " parts, but " << (parts.size() - part) / kPartWidth
                           << " are left in the parts table";
    std::string problem =
        checkMessage(index, row, parts.slice(part, count * kPartWidth));
    if (!problem.empty())
      return emitOpError() << problem;
    part += count * kPartWidth;
  }
  if (part != parts.size())
    return emitOpError() << "the parts table has "
                         << (parts.size() - part) / kPartWidth
                         << " parts that no message names";
  return success();
}
