//===- M2NAttrs.cpp - m2n attributes --------------------------------------===//

#include "m2n/Dialect/M2N/IR/M2NAttrs.h"

#include "m2n/Dialect/M2N/IR/M2NDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace m2n;

#define GET_ATTRDEF_CLASSES
#include "m2n/Dialect/M2N/IR/M2NAttrs.cpp.inc"

void M2NDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "m2n/Dialect/M2N/IR/M2NAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Placements: `R` or `S(d)`, shared by #m2n.placement and #m2n.layout.
//===----------------------------------------------------------------------===//

static ParseResult parsePlacementBody(AsmParser &parser, int64_t &dim) {
  if (succeeded(parser.parseOptionalKeyword("R"))) {
    dim = Placement::kReplicate;
    return success();
  }
  SMLoc loc = parser.getCurrentLocation();
  if (failed(parser.parseOptionalKeyword("S")))
    return parser.emitError(loc, "expected placement 'R' or 'S(<dim>)'");
  if (parser.parseLParen() || parser.parseInteger(dim) ||
      parser.parseRParen())
    return failure();
  if (dim < 0)
    return parser.emitError(loc, "shard dimension must be non-negative, got ")
           << dim;
  return success();
}

static void printPlacementBody(AsmPrinter &printer, int64_t dim) {
  printer << Placement{dim}.str();
}

LogicalResult
PlacementAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      int64_t dim) {
  if (dim < Placement::kReplicate)
    return emitError() << "invalid placement dimension " << dim;
  return success();
}

Attribute PlacementAttr::parse(AsmParser &parser, Type) {
  int64_t dim;
  if (parser.parseLess() || parsePlacementBody(parser, dim) ||
      parser.parseGreater())
    return {};
  return PlacementAttr::get(parser.getContext(), dim);
}

void PlacementAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printPlacementBody(printer, getDim());
  printer << ">";
}

//===----------------------------------------------------------------------===//
// LayoutAttr: `<@mesh, [R, S(0)]>`
//===----------------------------------------------------------------------===//

Attribute LayoutAttr::parse(AsmParser &parser, Type) {
  FlatSymbolRefAttr mesh;
  SmallVector<PlacementAttr> placements;
  auto parseOne = [&]() -> ParseResult {
    int64_t dim;
    if (parsePlacementBody(parser, dim))
      return failure();
    placements.push_back(PlacementAttr::get(parser.getContext(), dim));
    return success();
  };
  if (parser.parseLess() || parser.parseAttribute(mesh) ||
      parser.parseComma() ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseOne) ||
      parser.parseGreater())
    return {};
  return LayoutAttr::get(parser.getContext(), mesh, placements);
}

void LayoutAttr::print(AsmPrinter &printer) const {
  printer << "<" << getMesh() << ", [";
  llvm::interleaveComma(getPlacements(), printer, [&](PlacementAttr p) {
    printPlacementBody(printer, p.getDim());
  });
  printer << "]>";
}

std::vector<Placement> LayoutAttr::getPlacementList() const {
  std::vector<Placement> result;
  for (PlacementAttr p : getPlacements())
    result.push_back(p.getPlacement());
  return result;
}
