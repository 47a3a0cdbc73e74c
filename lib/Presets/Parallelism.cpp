//===- Parallelism.cpp - How one side of a refit parallelizes -------------===//

#include "m2n/Presets/Parallelism.h"

#include "m2n/Layout/Layout.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <optional>

using namespace m2n;
using namespace m2n::presets;
using llvm::StringRef;

namespace {

constexpr Axis kAxes[] = {Axis::PP, Axis::DP, Axis::FSDP, Axis::EP, Axis::TP};

template <typename... Args>
llvm::Error error(const char *format, Args &&...args) {
  return llvm::createStringError(
      llvm::formatv(format, std::forward<Args>(args)...).str());
}

/// In any case: people write TP8 as often as tp8.
std::optional<Axis> parseAxisName(StringRef name) {
  for (Axis axis : kAxes)
    if (name.equals_insensitive(axisName(axis)))
      return axis;
  return std::nullopt;
}

/// "tp8" as tp and 8.
llvm::Expected<AxisSize> parseAxis(StringRef text, Side side) {
  StringRef name = text.take_while([](char c) { return llvm::isAlpha(c); });
  std::optional<Axis> axis = parseAxisName(name);
  if (!axis)
    return error("unknown axis \"{0}\" (expected pp, dp, fsdp, ep or tp)",
                 name.empty() ? text : name);
  if (side == Side::Gen && *axis == Axis::FSDP)
    return error("fsdp is a training axis; generation takes pp, dp, ep or tp");
  int64_t size;
  if (text.drop_front(name.size()).getAsInteger(10, size) || size <= 0)
    return error("axis \"{0}\" needs a positive size, as in {1}8", text, name);
  return AxisSize{*axis, size};
}

} // namespace

StringRef presets::axisName(Axis axis) {
  switch (axis) {
  case Axis::PP:
    return "pp";
  case Axis::DP:
    return "dp";
  case Axis::FSDP:
    return "fsdp";
  case Axis::EP:
    return "ep";
  case Axis::TP:
    return "tp";
  }
  llvm_unreachable("unknown axis");
}

bool Parallelism::has(Axis axis) const {
  return llvm::any_of(axes, [&](const AxisSize &a) { return a.axis == axis; });
}

int64_t Parallelism::size(Axis axis) const {
  for (const AxisSize &a : axes)
    if (a.axis == axis)
      return a.size;
  return 1;
}

int64_t Parallelism::worldSize() const {
  int64_t ranks = 1;
  for (const AxisSize &a : axes)
    ranks *= a.size;
  return ranks;
}

int64_t Parallelism::expertGroupSize() const {
  return has(Axis::EP) ? size(Axis::EP) * size(Axis::TP) : 1;
}

llvm::Expected<Parallelism> presets::parseParallelism(StringRef text,
                                                      Side side) {
  if (text.trim().empty())
    return error("expected parallel axes, as in tp8,fsdp32");
  llvm::SmallVector<StringRef> parts;
  text.split(parts, ',');
  Parallelism parallelism;
  int64_t ranks = 1;
  for (StringRef part : parts) {
    part = part.trim();
    if (part.empty())
      return error("an empty axis between commas");
    llvm::Expected<AxisSize> axis = parseAxis(part, side);
    if (!axis)
      return axis.takeError();
    if (parallelism.has(axis->axis))
      return error("{0} appears twice", axisName(axis->axis));
    // Each size is bounded before it multiplies, so that the product of two
    // numbers of at most 2^24 cannot overflow.
    if (axis->size > kMaxMeshSize || ranks * axis->size > kMaxMeshSize)
      return error("more than {0} ranks", kMaxMeshSize);
    ranks *= axis->size;
    parallelism.axes.push_back(*axis);
  }
  return parallelism;
}

/// Tensor parallelism splits heads: every rank needs whole ones.
static llvm::Error checkHeads(const ModelConfig &model, int64_t tp, Side side) {
  if (model.numHeads % tp != 0)
    return error("tp{0} must divide the {1} attention heads of {2}", tp,
                 model.numHeads, model.name);
  int64_t kvHeads = model.numKvHeads;
  if (kvHeads % tp == 0)
    return llvm::Error::success();
  // Serving engines give each rank one whole key-value head when tp exceeds
  // them; Megatron and torchtitan do not.
  if (side == Side::Train)
    return error("tp{0} must divide the {1} key-value heads of {2} when "
                 "training",
                 tp, kvHeads, model.name);
  if (tp % kvHeads != 0)
    return error("tp{0} must divide the {1} key-value heads of {2} or be a "
                 "multiple of them",
                 tp, kvHeads, model.name);
  return llvm::Error::success();
}

static llvm::Error checkExperts(const ModelConfig &model,
                                const Parallelism &parallelism) {
  int64_t ep = parallelism.size(Axis::EP);
  if (!model.isMoe())
    return error("ep needs a mixture-of-experts model; {0} has no routed "
                 "experts",
                 model.name);
  int64_t group = parallelism.expertGroupSize();
  if (model.numExperts % group == 0)
    return llvm::Error::success();
  if (group == ep)
    return error("ep{0} must divide the {1} routed experts of {2}", ep,
                 model.numExperts, model.name);
  return error("the expert-parallel group, ep{0} x tp{1} = {2} ranks, must "
               "divide the {3} routed experts of {4}",
               ep, parallelism.size(Axis::TP), group, model.numExperts,
               model.name);
}

llvm::Error presets::checkParallelism(const ModelConfig &model,
                                      const Parallelism &parallelism,
                                      Side side) {
  if (llvm::Error err = checkHeads(model, parallelism.size(Axis::TP), side))
    return err;
  if (parallelism.has(Axis::EP))
    if (llvm::Error err = checkExperts(model, parallelism))
      return err;
  int64_t pp = parallelism.size(Axis::PP);
  if (pp > model.numLayers)
    return error("pp{0} leaves pipeline stages without layers: {1} has {2}", pp,
                 model.name, model.numLayers);
  return llvm::Error::success();
}

llvm::Expected<Parallelism>
presets::parseParallelism(StringRef text, Side side, const ModelConfig &model) {
  llvm::Expected<Parallelism> parallelism = parseParallelism(text, side);
  if (!parallelism)
    return parallelism.takeError();
  if (llvm::Error err = checkParallelism(model, *parallelism, side))
    return std::move(err);
  return parallelism;
}
