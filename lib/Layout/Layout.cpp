//===- Layout.cpp - Which box of a global tensor each rank holds ----------===//
//
// Implements the layout model with torch DTensor's semantics: placements
// apply from mesh axis 0 to the last, and each Shard(d) splits the current
// local extent of dim d as torch.chunk does.
//
//===----------------------------------------------------------------------===//

#include "m2n/Layout/Layout.h"

#include <algorithm>

using namespace m2n;

namespace {

/// Tensors beyond this many elements are rejected, so that volumes, offsets
/// and products of dims computed downstream cannot overflow int64.
constexpr int64_t kMaxTensorElements = int64_t(1) << 62;

/// "[a, b, c]".
std::string formatList(const std::vector<int64_t> &values) {
  std::string result = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i != 0)
      result += ", ";
    result += std::to_string(values[i]);
  }
  return result + "]";
}

/// Whether the product of the nonzero ones of the non-negative `values`
/// exceeds `limit`, computed without overflow.
bool productOfNonZeroExceeds(const std::vector<int64_t> &values,
                             int64_t limit) {
  int64_t product = 1;
  for (int64_t value : values) {
    if (value == 0)
      continue;
    if (value > limit / product)
      return true;
    product *= value;
  }
  return false;
}

} // namespace

// It allocates nothing, so overlaps() can reject disjoint pairs cheaply.
bool m2n::intersects(const Box &a, const Box &b) {
  for (size_t d = 0; d < a.sizes.size(); ++d) {
    int64_t lo = std::max(a.offsets[d], b.offsets[d]);
    int64_t hi = std::min(a.offsets[d] + a.sizes[d], b.offsets[d] + b.sizes[d]);
    if (hi <= lo)
      return false;
  }
  return true;
}

std::string Placement::str() const {
  if (isReplicate())
    return "R";
  return "S(" + std::to_string(dim) + ")";
}

std::string Box::str() const {
  std::string result = "[";
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (d != 0)
      result += ", ";
    result += std::to_string(offsets[d]) + ":" + std::to_string(sizes[d]);
  }
  return result + "]";
}

Box m2n::fullBox(const std::vector<int64_t> &shape) {
  return Box{Dims(shape.size(), 0), shape};
}

Box m2n::intersect(const Box &a, const Box &b) {
  Box result;
  bool isEmpty = false;
  for (size_t d = 0; d < a.sizes.size(); ++d) {
    int64_t lo = std::max(a.offsets[d], b.offsets[d]);
    int64_t hi = std::min(a.offsets[d] + a.sizes[d], b.offsets[d] + b.sizes[d]);
    result.offsets.push_back(lo);
    result.sizes.push_back(std::max<int64_t>(0, hi - lo));
    isEmpty |= hi <= lo;
  }
  // One canonical empty box, so that emptiness shows in every size.
  if (isEmpty)
    std::fill(result.sizes.begin(), result.sizes.end(), 0);
  return result;
}

bool m2n::contains(const Box &outer, const Box &inner) {
  if (outer.rank() != inner.rank())
    return false;
  if (inner.empty())
    return true;
  for (size_t d = 0; d < inner.sizes.size(); ++d) {
    if (inner.offsets[d] < outer.offsets[d] ||
        inner.offsets[d] + inner.sizes[d] > outer.offsets[d] + outer.sizes[d])
      return false;
  }
  return true;
}

Mesh Mesh::contiguous(std::vector<int64_t> shape, int64_t start) {
  Mesh mesh{std::move(shape), {}};
  int64_t count = mesh.size();
  mesh.ranks.reserve(count);
  for (int64_t i = 0; i < count; ++i)
    mesh.ranks.push_back(start + i);
  return mesh;
}

int64_t Mesh::size() const {
  int64_t result = 1;
  for (int64_t dim : shape)
    result *= dim;
  return result;
}

std::vector<int64_t> Mesh::coords(int64_t linearIndex) const {
  std::vector<int64_t> result(shape.size());
  for (size_t axis = shape.size(); axis-- > 0;) {
    result[axis] = linearIndex % shape[axis];
    linearIndex /= shape[axis];
  }
  return result;
}

Chunk m2n::chunk(int64_t n, int64_t k, int64_t i) {
  // ceil(n / k) without forming n + k - 1, which could overflow.
  int64_t c = n / k + (n % k != 0);
  // i * c and (i + 1) * c stay below n + k, so they cannot overflow.
  int64_t begin = std::min(i * c, n);
  int64_t end = std::min((i + 1) * c, n);
  return Chunk{begin, end - begin};
}

Box m2n::localBox(const std::vector<int64_t> &shape, const Mesh &mesh,
                  const std::vector<Placement> &placements,
                  int64_t linearIndex) {
  Box box = fullBox(shape);
  std::vector<int64_t> coords = mesh.coords(linearIndex);
  for (size_t axis = 0; axis < placements.size(); ++axis) {
    if (placements[axis].isReplicate())
      continue;
    int64_t d = placements[axis].dim;
    Chunk piece = chunk(box.sizes[d], mesh.shape[axis], coords[axis]);
    box.offsets[d] += piece.offset;
    box.sizes[d] = piece.size;
  }
  return box;
}

std::vector<Box> m2n::localBoxes(const std::vector<int64_t> &shape,
                                 const Mesh &mesh,
                                 const std::vector<Placement> &placements) {
  std::vector<Box> result;
  int64_t count = mesh.size();
  result.reserve(count);
  for (int64_t i = 0; i < count; ++i)
    result.push_back(localBox(shape, mesh, placements, i));
  return result;
}

std::vector<Overlap> m2n::overlaps(const std::vector<int64_t> &shape,
                                   const Layout &src, const Layout &dst) {
  std::vector<Box> srcBoxes = localBoxes(shape, *src.mesh, src.placements);
  std::vector<Box> dstBoxes = localBoxes(shape, *dst.mesh, dst.placements);

  // Empty source boxes can overlap nothing; drop them once, not per dst box.
  std::vector<size_t> srcIndices;
  for (size_t i = 0; i < srcBoxes.size(); ++i)
    if (!srcBoxes[i].empty())
      srcIndices.push_back(i);

  std::vector<Overlap> result;
  for (size_t j = 0; j < dstBoxes.size(); ++j) {
    const Box &dstBox = dstBoxes[j];
    if (dstBox.empty())
      continue;
    for (size_t i : srcIndices) {
      if (!intersects(srcBoxes[i], dstBox))
        continue;
      result.push_back(Overlap{src.mesh->ranks[i], dst.mesh->ranks[j],
                               intersect(srcBoxes[i], dstBox)});
    }
  }
  return result;
}

std::string m2n::checkMeshShape(const std::vector<int64_t> &shape) {
  int64_t meshRank = static_cast<int64_t>(shape.size());
  if (meshRank < 1 || meshRank > kMaxMeshRank)
    return "mesh rank must be between 1 and " + std::to_string(kMaxMeshRank) +
           ", got " + std::to_string(meshRank);
  for (size_t axis = 0; axis < shape.size(); ++axis) {
    if (shape[axis] <= 0)
      return "mesh dimension " + std::to_string(axis) +
             " must be positive, got " + std::to_string(shape[axis]);
  }
  if (productOfNonZeroExceeds(shape, kMaxMeshSize))
    return "mesh shape " + formatList(shape) + " has more than " +
           std::to_string(kMaxMeshSize) + " ranks";
  return "";
}

std::string m2n::checkMesh(const std::vector<int64_t> &shape,
                           const std::vector<int64_t> &ranks) {
  std::string problem = checkMeshShape(shape);
  if (!problem.empty())
    return problem;
  int64_t expected = Mesh{shape, {}}.size();
  if (static_cast<int64_t>(ranks.size()) != expected)
    return "mesh shape " + formatList(shape) + " needs " +
           std::to_string(expected) + " ranks, got " +
           std::to_string(ranks.size());

  // The problem reported is the one at the lowest index, as a scan would
  // find it. Passes check the mesh of every group they index, so this is on
  // a hot path: ranks are sorted by value with their indices, and equal
  // neighbours name the duplicates.
  std::vector<std::pair<int64_t, size_t>> sorted(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i)
    sorted[i] = {ranks[i], i};
  if (!std::is_sorted(ranks.begin(), ranks.end()))
    std::sort(sorted.begin(), sorted.end());
  size_t second = ranks.size(), first = 0;
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i].first == sorted[i - 1].first && sorted[i].second < second) {
      first = sorted[i - 1].second;
      second = sorted[i].second;
    }
  auto outside = std::find_if(ranks.begin(), ranks.begin() + second,
                              [](int64_t rank) { return rank < 0; });
  if (outside != ranks.begin() + second)
    return "rank " + std::to_string(*outside) + " at index " +
           std::to_string(outside - ranks.begin()) + " is negative";
  outside = std::find_if(ranks.begin(), ranks.begin() + second,
                         [](int64_t rank) { return rank >= kMaxWorldSize; });
  if (outside != ranks.begin() + second)
    return "rank " + std::to_string(*outside) + " at index " +
           std::to_string(outside - ranks.begin()) +
           " is beyond the largest rank id, " +
           std::to_string(kMaxWorldSize - 1);
  if (second < ranks.size())
    return "rank " + std::to_string(ranks[second]) +
           " appears twice (indices " + std::to_string(first) + " and " +
           std::to_string(second) + ")";
  return "";
}

std::string m2n::checkRankId(int64_t rank) {
  if (rank < 0)
    return "rank " + std::to_string(rank) + " is negative";
  if (rank >= kMaxWorldSize)
    return "rank " + std::to_string(rank) +
           " is beyond the largest rank id, " +
           std::to_string(kMaxWorldSize - 1);
  return "";
}

std::string m2n::checkTensorShape(const std::vector<int64_t> &shape) {
  int64_t tensorRank = static_cast<int64_t>(shape.size());
  if (tensorRank > kMaxTensorRank)
    return "tensor rank must be between 0 and " +
           std::to_string(kMaxTensorRank) + ", got " +
           std::to_string(tensorRank);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0)
      return "dimension " + std::to_string(d) + " is negative (" +
             std::to_string(shape[d]) + ")";
  }
  // Zero dims are skipped: an empty tensor's other dims still enter strides
  // and offsets downstream, so their product must stay bounded too.
  if (productOfNonZeroExceeds(shape, kMaxTensorElements))
    return "shape " + formatList(shape) +
           " has too many elements: its nonzero dimensions multiply to more "
           "than 2^62";
  return "";
}

std::string m2n::checkPlacements(const std::vector<Placement> &placements,
                                 int64_t meshRank, int64_t tensorRank) {
  if (static_cast<int64_t>(placements.size()) != meshRank)
    return "expected " + std::to_string(meshRank) +
           " placements, one per mesh axis, got " +
           std::to_string(placements.size());
  for (size_t axis = 0; axis < placements.size(); ++axis) {
    int64_t dim = placements[axis].dim;
    if (dim < Placement::kReplicate)
      return "placement " + std::to_string(axis) + " has invalid dimension " +
             std::to_string(dim);
    if (dim >= tensorRank)
      return "placement " + std::to_string(axis) + " shards dimension " +
             std::to_string(dim) + " but the tensor has rank " +
             std::to_string(tensorRank);
  }
  return "";
}
