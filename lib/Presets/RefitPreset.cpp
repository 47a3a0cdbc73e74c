//===- RefitPreset.cpp - Refit specs generated from presets ---------------===//
//
// Each side's placements follow what the frameworks that use the axis hold,
// written as DTensor placements on one mesh per pipeline stage:
//
//   dp    replicates everything.
//   fsdp  shards dim 0, as FSDP2 does; stacked experts on dim 1 instead when
//         dim 0 has fewer experts than the ranks that split it, as torchtitan
//         does, so that no rank is left without a shard.
//   ep    shards stacked experts by expert (dim 0). Dense tensors are sharded
//         like fsdp's when there is an fsdp axis (torchtitan carves expert
//         parallelism out of the FSDP ranks, which shard dense weights over
//         all of them) and replicated otherwise (Megatron carves it out of
//         data parallelism; serving engines run attention data-parallel).
//   tp    is Megatron's column (dim 0) and row (dim 1) parallelism; norms and
//         routers are replicated. Stacked experts are column or row parallel
//         on their dims 1 and 2, unless there is an ep axis: then the
//         expert-parallel group spans the tp ranks too (vLLM's and SGLang's
//         expert parallelism, Megatron's expert tensor parallelism 1), and tp
//         shards them by expert as well.
//
//===----------------------------------------------------------------------===//

#include "m2n/Presets/RefitPreset.h"
#include "m2n/Support/Assert.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <string>

using namespace m2n;
using namespace m2n::presets;
using namespace m2n::spec;

namespace {

const Placement R = Placement::replicate();
Placement S(int64_t dim) { return Placement::shard(dim); }

/// One side of the refit: its meshes, and each tensor's layout on them.
class SideLayout {
public:
  SideLayout(const ModelConfig &model, const Parallelism &parallelism,
             std::string name, int64_t firstRank)
      : model(model), parallelism(parallelism), name(std::move(name)),
        firstRank(firstRank) {}

  std::vector<MeshSpec> meshes() const;
  LayoutSpec layout(const ModelTensor &tensor) const;

private:
  const ModelConfig &model;
  const Parallelism &parallelism;
  std::string name;
  int64_t firstRank;

  std::string meshName(int64_t stage) const;
  int64_t stageOf(int64_t layer) const;
  Placement placement(Axis axis, Role role) const;
  Placement tensorParallel(Role role) const;
  int64_t fsdpExpertDim() const;
};

/// "train" without pipeline parallelism, else "train_pp0", "train_pp1", ...
std::string SideLayout::meshName(int64_t stage) const {
  if (!parallelism.has(Axis::PP))
    return name;
  return name + "_pp" + std::to_string(stage);
}

/// Every axis but pp is a mesh axis, in the order written; ranks are
/// numbered row-major over all the axes, pp included, so stage s holds the
/// ranks whose pp coordinate is s, in row-major order of the others.
std::vector<MeshSpec> SideLayout::meshes() const {
  int64_t stages = parallelism.size(Axis::PP);
  std::vector<MeshSpec> meshes(stages);
  int64_t ppStride = 1; // ranks between consecutive pp coordinates
  bool inner = false;
  for (const AxisSize &axis : parallelism.axes) {
    if (inner)
      ppStride *= axis.size;
    inner |= axis.axis == Axis::PP;
  }
  for (int64_t stage = 0; stage < stages; ++stage) {
    MeshSpec &mesh = meshes[stage];
    mesh.name = meshName(stage);
    for (const AxisSize &axis : parallelism.axes) {
      if (axis.axis == Axis::PP)
        continue;
      mesh.shape.push_back(axis.size);
      mesh.axes.push_back(axisName(axis.axis).str());
    }
    // A stage of one rank ("pp4" alone) is a one-rank mesh.
    if (mesh.shape.empty())
      mesh.shape.push_back(1);
  }
  for (int64_t index = 0; index < parallelism.worldSize(); ++index)
    meshes[(index / ppStride) % stages].ranks.push_back(firstRank + index);
  return meshes;
}

/// Layers split as evenly as possible, the first stages taking one more
/// when they do not split evenly; the embedding goes with the first layer
/// and the final norm and lm_head with the last.
int64_t SideLayout::stageOf(int64_t layer) const {
  int64_t stages = parallelism.size(Axis::PP);
  int64_t layers = model.numLayers;
  layer = std::clamp<int64_t>(layer, 0, layers - 1);
  int64_t base = layers / stages, longer = layers % stages;
  M2N_ASSERT(base > 0, "checkParallelism gives every stage a layer");
  int64_t inLonger = longer * (base + 1);
  if (layer < inLonger)
    return layer / (base + 1);
  return longer + (layer - inLonger) / base;
}

LayoutSpec SideLayout::layout(const ModelTensor &tensor) const {
  LayoutSpec layout;
  layout.mesh = meshName(stageOf(tensor.layer));
  for (const AxisSize &axis : parallelism.axes)
    if (axis.axis != Axis::PP)
      layout.placements.push_back(placement(axis.axis, tensor.role));
  if (layout.placements.empty())
    layout.placements.push_back(R);
  return layout;
}

Placement SideLayout::placement(Axis axis, Role role) const {
  switch (axis) {
  case Axis::DP:
    return R;
  case Axis::FSDP:
    return S(isExpert(role) ? fsdpExpertDim() : 0);
  case Axis::EP:
    if (isExpert(role))
      return S(0);
    return parallelism.has(Axis::FSDP) ? S(0) : R;
  case Axis::TP:
    return tensorParallel(role);
  case Axis::PP:
    break;
  }
  llvm_unreachable("pp is not a mesh axis");
}

Placement SideLayout::tensorParallel(Role role) const {
  bool expertParallel = parallelism.has(Axis::EP);
  switch (role) {
  case Role::Replicated:
    return R;
  case Role::Column:
    return S(0);
  case Role::KeyValue:
    // Beyond the key-value heads, every rank needs whole heads; it receives
    // all of them (a few rows per head) and keeps its own.
    return model.numKvHeads % parallelism.size(Axis::TP) == 0 ? S(0) : R;
  case Role::Row:
    return S(1);
  case Role::ExpertColumn:
    return expertParallel ? S(0) : S(1);
  case Role::ExpertRow:
    return expertParallel ? S(0) : S(2);
  }
  llvm_unreachable("unknown role");
}

/// FSDP shards stacked experts by expert while there are at least as many
/// experts as ranks splitting them, and by output row beyond that.
int64_t SideLayout::fsdpExpertDim() const {
  int64_t splits = parallelism.expertGroupSize() * parallelism.size(Axis::FSDP);
  return splits <= model.numExperts ? 0 : 1;
}

} // namespace

llvm::Expected<RefitSpec> presets::buildRefitSpec(const ModelConfig &model,
                                                  const Parallelism &train,
                                                  const Parallelism &gen,
                                                  const RefitOptions &options) {
  int64_t trainRanks = train.worldSize(), genRanks = gen.worldSize();
  if (options.colocate && trainRanks != genRanks)
    return llvm::createStringError(
        llvm::formatv("training takes {0} ranks and generation {1}; "
                      "colocated sides need the same number",
                      trainRanks, genRanks)
            .str());
  SideLayout source(model, train, "train", 0);
  SideLayout destination(model, gen, "gen", options.colocate ? 0 : trainRanks);

  RefitSpec spec;
  spec.name = model.name;
  for (const SideLayout *side : {&source, &destination})
    for (MeshSpec &mesh : side->meshes())
      spec.meshes.push_back(std::move(mesh));
  for (ModelTensor &tensor : modelTensors(model, options.dtype)) {
    TensorSpec &out = spec.tensors.emplace_back();
    out.src = source.layout(tensor);
    out.dst = destination.layout(tensor);
    out.name = std::move(tensor.name);
    out.dtype = tensor.dtype;
    out.shape = std::move(tensor.shape);
  }
  return spec;
}
