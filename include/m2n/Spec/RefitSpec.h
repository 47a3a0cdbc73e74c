//===- RefitSpec.h - The user's description of a refit ----------*- C++ -*-===//
//
// A refit spec is the JSON file a user hands to m2n: the device meshes of the
// source and destination groups, and per tensor its dtype, global shape and
// its layout on each side. Parsing validates it fully, so a RefitSpec that
// parseRefitSpec returns satisfies the layout model's checks (checkMesh,
// checkTensorShape, checkPlacements) everywhere.
//
// The format, version 1:
//
//   { "m2n_spec": 1,
//     "name": "refit",                                  (optional)
//     "meshes": [ {"name": "train", "shape": [2, 4],
//                  "axes": ["dp", "tp"],                (optional)
//                  "ranks": {"start": 0}},              (or [0, 1, ...])
//                 ... ],
//     "tensors": [ {"name": "w", "dtype": "BF16", "shape": [14336, 4096],
//                   "src": {"mesh": "train", "placements": ["R", "S(0)"]},
//                   "dst": {"mesh": "gen", "placements": ["S(0)"]}},
//                  ... ] }
//
//===----------------------------------------------------------------------===//

#ifndef M2N_SPEC_REFITSPEC_H
#define M2N_SPEC_REFITSPEC_H

#include "m2n/Layout/Layout.h"
#include "m2n/Spec/DType.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace m2n::spec {

/// A named device mesh; ranks[i] is the rank at row-major index i.
struct MeshSpec {
  std::string name;
  std::vector<int64_t> shape;
  /// One name per mesh dimension, or empty when the spec names none.
  std::vector<std::string> axes;
  std::vector<int64_t> ranks;
};

/// A tensor's placements on the mesh called `mesh`, one per mesh dimension.
struct LayoutSpec {
  std::string mesh;
  std::vector<m2n::Placement> placements;
};

/// A tensor moved from its `src` layout to its `dst` layout.
struct TensorSpec {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  LayoutSpec src, dst;
};

struct RefitSpec {
  std::string name = "refit";
  std::vector<MeshSpec> meshes;
  std::vector<TensorSpec> tensors;

  /// The mesh called `name`, or null.
  const MeshSpec *findMesh(llvm::StringRef name) const;
};

/// Limits that keep counts within the plan format's 32-bit indices and the
/// compiler's memory bounded; docs/limits.md lists them all.
constexpr size_t kMaxMeshes = size_t(1) << 16;
constexpr size_t kMaxTensors = size_t(1) << 22;
/// Bytes of a mesh, axis, refit or tensor name.
constexpr size_t kMaxNameBytes = 4096;

/// What keeps `name` from naming a tensor in a plan and a safetensors file
/// (empty, too long, a NUL byte, "__metadata__"), or "" when nothing does.
std::string checkTensorName(llvm::StringRef name);

/// "" when a tensor of `shape` and `dtype` has a size in bytes that fits in
/// int64_t, else what is wrong.
std::string checkTensorBytes(llvm::ArrayRef<int64_t> shape, DType dtype);

/// A placement as written in a spec: "R" or "S(d)", or torch's "Replicate()",
/// "Shard(d)" and "Shard(dim=d)", with blanks allowed around the tokens.
/// Returns nullopt for anything else, including negative dims.
std::optional<m2n::Placement> parsePlacement(llvm::StringRef text);

/// Parses and validates the spec in `text`. On failure the error's message is
/// a complete diagnostic, "<fileName>: error: <where>: <what>" or, for
/// malformed JSON, "<fileName>:<line>:<column>: error: <what>". <where> names
/// the mesh or tensor and a path into it, as in
/// `tensors[3] ("w"): src.placements[1]`.
llvm::Expected<RefitSpec> parseRefitSpec(llvm::StringRef text,
                                         llvm::StringRef fileName);

/// parseRefitSpec on the contents of the file at `path`, or of stdin when
/// `path` is "-"; errors then name it "<stdin>".
llvm::Expected<RefitSpec> readRefitSpec(llvm::StringRef path);

/// The spec as canonical JSON: 2-space indentation, keys in the order of the
/// format above, the optional "axes" only when there are axes, and ranks as
/// {"start": k} when they are contiguous. parseRefitSpec reads it back to an
/// equal spec.
std::string writeRefitSpec(const RefitSpec &spec);

} // namespace m2n::spec

#endif // M2N_SPEC_REFITSPEC_H
