//===- ImportSpec.cpp - Refit spec to m2n IR ------------------------------===//

#include "m2n/Target/ImportSpec.h"

#include "m2n/Dialect/M2N/IR/DTypes.h"
#include "m2n/Dialect/M2N/IR/M2NOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace m2n {

static LayoutAttr buildLayout(MLIRContext *context,
                              const spec::LayoutSpec &layout) {
  SmallVector<PlacementAttr> placements;
  for (Placement placement : layout.placements)
    placements.push_back(PlacementAttr::get(context, placement));
  return LayoutAttr::get(context,
                         FlatSymbolRefAttr::get(context, layout.mesh),
                         placements);
}

/// A location that names the spec file and the entity, so that a verifier
/// diagnostic on an imported op says where its input came from.
static Location entityLoc(MLIRContext *context, StringRef fileName,
                          const Twine &entity) {
  return NameLoc::get(StringAttr::get(context, entity),
                      FileLineColLoc::get(context, fileName, 0, 0));
}

OwningOpRef<ModuleOp> importRefitSpec(const spec::RefitSpec &spec,
                                      StringRef fileName,
                                      MLIRContext *context) {
  context->loadDialect<M2NDialect>();
  Location fileLoc = FileLineColLoc::get(context, fileName, 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  OpBuilder builder = OpBuilder::atBlockBegin(module->getBody());
  auto refit = RefitOp::create(builder, fileLoc, spec.name);
  builder.setInsertionPointToStart(&refit.getBody().front());

  for (const spec::MeshSpec &mesh : spec.meshes) {
    ArrayAttr axes;
    if (!mesh.axes.empty())
      axes = builder.getStrArrayAttr(
          SmallVector<StringRef>(mesh.axes.begin(), mesh.axes.end()));
    MeshOp::create(builder, entityLoc(context, fileName, "mesh " + mesh.name),
                   mesh.name, mesh.shape, axes, mesh.ranks);
  }
  for (const spec::TensorSpec &tensor : spec.tensors) {
    Location loc = entityLoc(context, fileName, "tensor " + tensor.name);
    auto type = RankedTensorType::get(
        tensor.shape, getElementType(context, tensor.dtype));
    auto value = TensorOp::create(builder, loc, type, tensor.name);
    ReshardOp::create(builder, loc, value, buildLayout(context, tensor.src),
                      buildLayout(context, tensor.dst));
  }
  return module;
}

void registerImportSpecTranslation() {
  TranslateToMLIRRegistration registration(
      "import-m2n-spec", "Import a JSON refit spec as m2n IR",
      [](llvm::SourceMgr &sourceMgr,
         MLIRContext *context) -> OwningOpRef<Operation *> {
        const llvm::MemoryBuffer *buffer =
            sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
        StringRef fileName = buffer->getBufferIdentifier();
        llvm::Expected<spec::RefitSpec> spec =
            spec::parseRefitSpec(buffer->getBuffer(), fileName);
        if (!spec) {
          // The message is already a complete diagnostic naming the file.
          llvm::errs() << llvm::toString(spec.takeError()) << "\n";
          return nullptr;
        }
        return importRefitSpec(*spec, fileName, context);
      },
      [](DialectRegistry &registry) { registry.insert<M2NDialect>(); });
}

} // namespace m2n
