//===- M2NOps.cpp - m2n operations ----------------------------------------===//

#include "m2n/Dialect/M2N/IR/M2NOps.h"

#include "m2n/Dialect/M2N/IR/DTypes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"

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

LogicalResult RefitOp::verify() {
  llvm::StringMap<TensorOp> tensors;
  for (auto tensor : getBody().getOps<TensorOp>()) {
    auto [it, inserted] = tensors.try_emplace(tensor.getName(), tensor);
    if (!inserted) {
      InFlightDiagnostic diag = tensor.emitOpError()
                                << "tensor \"" << tensor.getName()
                                << "\" is declared twice";
      diag.attachNote(it->second.getLoc()) << "first declared here";
      return diag;
    }
    auto reshards = llvm::count_if(tensor->getUsers(), [](Operation *user) {
      return isa<ReshardOp>(user);
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
  if (getName().empty())
    return emitOpError() << "tensor name must not be empty";
  auto type = cast<RankedTensorType>(getResult().getType());
  if (!getDType(type.getElementType()))
    return emitOpError() << "tensor \"" << getName() << "\": element type "
                         << type.getElementType()
                         << " is not one that m2n moves";
  std::string problem = checkTensorShape(type.getShape().vec());
  if (!problem.empty())
    return emitOpError() << "tensor \"" << getName() << "\": " << problem;
  return success();
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

/// Checks that `layout` names a mesh of the refit and fits it and the tensor.
static LogicalResult verifyLayout(ReshardOp op, StringRef side,
                                  LayoutAttr layout,
                                  SymbolTableCollection &symbolTable) {
  TensorOp tensor = op.getTensorOp();
  StringRef name = tensor ? tensor.getName() : StringRef("?");
  auto mesh = symbolTable.lookupNearestSymbolFrom<MeshOp>(op, layout.getMesh());
  if (!mesh)
    return op.emitOpError() << "tensor \"" << name << "\": " << side
                            << " mesh " << layout.getMesh()
                            << " is not a 'm2n.mesh' of this refit";
  int64_t tensorRank = op.getTensor().getType().getRank();
  std::string problem =
      checkPlacements(layout.getPlacementList(),
                      static_cast<int64_t>(mesh.getShape().size()), tensorRank);
  if (!problem.empty())
    return op.emitOpError() << "tensor \"" << name << "\": " << side
                            << " layout on mesh " << layout.getMesh() << ": "
                            << problem;
  return success();
}

LogicalResult
ReshardOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  if (failed(verifyLayout(*this, "source", getSrc(), symbolTable)))
    return failure();
  return verifyLayout(*this, "destination", getDst(), symbolTable);
}
