//===- Layout.h - Which box of a global tensor each rank holds --*- C++ -*-===//
//
// The layout model of m2n. It answers, with exactly torch DTensor's semantics,
// which box of a tensor of global shape G each rank of a device mesh holds,
// and where the boxes of two layouts of one tensor overlap.
//
// The library depends on the C++ standard library only: the compiler, the
// tools and the tests share it, and it needs neither MLIR nor LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_LAYOUT_LAYOUT_H
#define M2N_LAYOUT_LAYOUT_H

#include "m2n/Support/Assert.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace m2n {

/// Tensors and meshes have at most this many dimensions.
constexpr int64_t kMaxTensorRank = 8;
constexpr int64_t kMaxMeshRank = 8;
/// Meshes have at most this many ranks, which keeps every mesh index and
/// product of mesh dims far from overflow.
constexpr int64_t kMaxMeshSize = int64_t(1) << 24;
/// Rank ids are below this, and so is the world size (one past the largest
/// id). Passes, the exporter and the plan format keep tables indexed by rank
/// id, so the bound on ids is what bounds their memory (docs/limits.md).
constexpr int64_t kMaxWorldSize = int64_t(1) << 20;

/// How a tensor is laid out along one mesh axis: replicated on every rank of
/// the axis, or split along one tensor dimension as torch.chunk splits it.
struct Placement {
  /// The split tensor dimension, or kReplicate.
  int64_t dim = kReplicate;
  static constexpr int64_t kReplicate = -1;

  static Placement replicate() { return Placement{kReplicate}; }
  static Placement shard(int64_t dim) { return Placement{dim}; }
  bool isReplicate() const { return dim == kReplicate; }
  bool isShard() const { return dim != kReplicate; }
  bool operator==(const Placement &other) const { return dim == other.dim; }
  bool operator!=(const Placement &other) const { return dim != other.dim; }
  /// "R" or "S(d)".
  std::string str() const;
};

/// One value per dimension of a tensor, at most kMaxTensorRank of them,
/// stored inline: the passes copy boxes by the hundred thousand, and a box
/// that allocates costs more to copy than to compute with. It offers the part
/// of std::vector's interface that boxes need, and converts to and from
/// std::vector<int64_t>.
class Dims {
public:
  using value_type = int64_t;
  using size_type = size_t;
  using iterator = int64_t *;
  using const_iterator = const int64_t *;

  Dims() = default;
  explicit Dims(size_t count, int64_t value = 0) { assign(count, value); }
  Dims(std::initializer_list<int64_t> values) {
    assign(values.begin(), values.end());
  }
  Dims(const std::vector<int64_t> &values) {
    assign(values.begin(), values.end());
  }
  template <typename It> Dims(It first, It last) { assign(first, last); }

  operator std::vector<int64_t>() const { return {begin(), end()}; }

  size_t size() const { return count; }
  bool empty() const { return count == 0; }
  iterator begin() { return values; }
  iterator end() { return values + count; }
  const_iterator begin() const { return values; }
  const_iterator end() const { return values + count; }
  int64_t *data() { return values; }
  const int64_t *data() const { return values; }
  int64_t &operator[](size_t i) {
    M2N_ASSERT(i < count, "dimension out of range");
    return values[i];
  }
  int64_t operator[](size_t i) const {
    M2N_ASSERT(i < count, "dimension out of range");
    return values[i];
  }
  int64_t &front() { return (*this)[0]; }
  int64_t front() const { return (*this)[0]; }
  int64_t &back() { return (*this)[count - 1]; }
  int64_t back() const { return (*this)[count - 1]; }

  void clear() { count = 0; }
  void push_back(int64_t value) {
    M2N_ASSERT(count < kMaxTensorRank, "more dimensions than a tensor has");
    values[count++] = value;
  }
  void resize(size_t newCount, int64_t value = 0) {
    M2N_ASSERT(newCount <= kMaxTensorRank,
               "more dimensions than a tensor has");
    std::fill(values + std::min<size_t>(count, newCount), values + newCount,
              value);
    count = static_cast<uint8_t>(newCount);
  }
  void assign(size_t newCount, int64_t value) {
    clear();
    resize(newCount, value);
  }
  template <typename It> void assign(It first, It last) {
    clear();
    for (; first != last; ++first)
      push_back(*first);
  }

  friend bool operator==(const Dims &a, const Dims &b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator!=(const Dims &a, const Dims &b) { return !(a == b); }
  /// Lexicographic, as std::vector compares.
  friend bool operator<(const Dims &a, const Dims &b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator>(const Dims &a, const Dims &b) { return b < a; }
  friend bool operator<=(const Dims &a, const Dims &b) { return !(b < a); }
  friend bool operator>=(const Dims &a, const Dims &b) { return !(a < b); }

private:
  int64_t values[kMaxTensorRank] = {};
  uint8_t count = 0;
};

/// A rectangular region of a tensor: per dimension an offset and a size.
/// A box with any size 0 is empty. Boxes have at most kMaxTensorRank
/// dimensions.
struct Box {
  Dims offsets;
  Dims sizes;

  int64_t rank() const { return static_cast<int64_t>(sizes.size()); }
  /// Number of elements (0 for an empty box, 1 for a rank-0 box).
  int64_t volume() const {
    int64_t result = 1;
    for (int64_t size : sizes)
      result *= size;
    return result;
  }
  bool empty() const { return volume() == 0; }
  bool operator==(const Box &other) const {
    return offsets == other.offsets && sizes == other.sizes;
  }
  bool operator!=(const Box &other) const { return !(*this == other); }
  /// "[o0:s0, o1:s1]" (offset:size per dimension).
  std::string str() const;
};

/// The whole tensor of the given shape.
Box fullBox(const std::vector<int64_t> &shape);

/// The intersection of two boxes of equal rank; its sizes are all 0 when the
/// boxes do not overlap (offsets then are unspecified but in range).
Box intersect(const Box &a, const Box &b);

/// Whether boxes `a` and `b` of equal rank share at least one element,
/// without building the intersection.
bool intersects(const Box &a, const Box &b);

/// Whether `inner` lies wholly within `outer`. An empty `inner` lies within
/// any box of its rank.
bool contains(const Box &outer, const Box &inner);

/// A device mesh: a row-major grid of ranks. The rank at linear index i is
/// ranks[i].
struct Mesh {
  std::vector<int64_t> shape;
  std::vector<int64_t> ranks;

  /// A mesh over the contiguous ranks start, start+1, ... .
  static Mesh contiguous(std::vector<int64_t> shape, int64_t start);
  /// The number of ranks, the product of the shape.
  int64_t size() const;
  /// Row-major coordinates of the rank at `linearIndex`.
  std::vector<int64_t> coords(int64_t linearIndex) const;
};

/// torch.chunk's split of an extent `n` into `k` pieces: piece `i` starts at
/// min(i*c, n) and ends at min((i+1)*c, n), with c = ceil(n / k). Trailing
/// pieces may be smaller or empty (10 over 4 -> 3,3,3,1; 5 over 4 -> 2,2,1,0).
struct Chunk {
  int64_t offset;
  int64_t size;
};
Chunk chunk(int64_t n, int64_t k, int64_t i);

/// The box held by the rank at `linearIndex` of `mesh`, for a tensor of
/// `shape` with one placement per mesh axis. Placements apply from mesh axis
/// 0 to the last; each Shard(d) chunks the current local extent of dim d.
/// The inputs must be valid (see checkMesh and checkPlacements).
Box localBox(const std::vector<int64_t> &shape, const Mesh &mesh,
             const std::vector<Placement> &placements, int64_t linearIndex);

/// localBox for every linear index of the mesh, in order.
std::vector<Box> localBoxes(const std::vector<int64_t> &shape, const Mesh &mesh,
                            const std::vector<Placement> &placements);

/// A tensor laid out on a mesh.
struct Layout {
  const Mesh *mesh;
  std::vector<Placement> placements;
};

/// A non-empty region held by `srcRank` in one layout and by `dstRank` in
/// another.
struct Overlap {
  int64_t srcRank;
  int64_t dstRank;
  Box box;
  bool operator==(const Overlap &other) const {
    return srcRank == other.srcRank && dstRank == other.dstRank &&
           box == other.box;
  }
};

/// Every non-empty overlap between a box of `src` and a box of `dst` of one
/// tensor of `shape`, ordered by destination mesh index, then source mesh
/// index. Replicated boxes yield one overlap per holder.
std::vector<Overlap> overlaps(const std::vector<int64_t> &shape,
                              const Layout &src, const Layout &dst);

//===----------------------------------------------------------------------===//
// Validation. Each returns an empty string when the input is valid and
// otherwise a message that says what is wrong (without naming the mesh or
// tensor: the caller knows its name and where it came from).
//===----------------------------------------------------------------------===//

/// Mesh rank 1..kMaxMeshRank, positive dims, at most kMaxMeshSize ranks.
std::string checkMeshShape(const std::vector<int64_t> &shape);

/// checkMeshShape, then as many ranks as the product of the shape, ranks
/// distinct and in [0, kMaxWorldSize).
std::string checkMesh(const std::vector<int64_t> &shape,
                      const std::vector<int64_t> &ranks);

/// Tensor rank 0..kMaxTensorRank, non-negative dims, and a product of the
/// nonzero dims of at most 2^62, so that element counts, offsets and strides
/// fit in int64 (even for an empty tensor).
std::string checkTensorShape(const std::vector<int64_t> &shape);

/// What is wrong with `rank` as a rank id ("" when it is in
/// [0, kMaxWorldSize)), for callers that read ranks outside a mesh.
std::string checkRankId(int64_t rank);

/// One placement per mesh axis, each shard dim within the tensor's rank.
std::string checkPlacements(const std::vector<Placement> &placements,
                            int64_t meshRank, int64_t tensorRank);

} // namespace m2n

#endif // M2N_LAYOUT_LAYOUT_H
