//===- refit_cases.h - Small refits, planned without the compiler -*- C++
//-*-===//
//
// The runtime builds without the MLIR compiler, so its GPU tests plan their
// own refits: tensors laid out over meshes as DTensor lays them out
// (torch.chunk per sharded mesh axis, replication elsewhere), turned into
// a plan the simple way: every destination shard takes each distinct
// source box it overlaps from one holder, with a local COPY when it holds
// it itself, staged or zero-copy (DIRECT) transfers in rotation, and
// optionally relays through a first destination holder. The loader
// validates what comes out.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_RUNTIME_TEST_CUDA_REFIT_CASES_H
#define M2N_RUNTIME_TEST_CUDA_REFIT_CASES_H

#include "m2n/plan_format.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace m2n::test {

struct Box {
  std::vector<int64_t> offset;
  std::vector<int64_t> shape;
  int64_t volume() const;
};

struct Shard {
  uint32_t rank;
  Box box;
};

/// Placement of a mesh axis: the tensor dimension it shards, or kReplicate.
constexpr int kReplicate = -1;

/// The shards of a tensor of `shape` on a mesh of `meshShape` whose ranks
/// are firstRank, firstRank + 1, ... in row-major order; placements[a]
/// shards a dimension over axis a (torch.chunk, trailing chunks possibly
/// empty) or replicates.
std::vector<Shard> layout(const std::vector<int64_t> &shape,
                          const std::vector<int64_t> &meshShape,
                          const std::vector<int> &placements,
                          uint32_t firstRank);

struct TensorSpec {
  std::string name;
  m2n_dtype_t dtype;
  std::vector<int64_t> shape;
  std::vector<Shard> src;
  std::vector<Shard> dst;
};

struct RefitSpec {
  std::string name;
  uint32_t world = 1;
  uint32_t steps = 2;
  /// Use SEND_DIRECT and RECV_DIRECT where the bytes are contiguous.
  bool direct = true;
  /// Destination shards held by several ranks reach all but the first
  /// through the first, in the last step.
  bool relay = false;
  /// Alignment of staging regions; 1 packs them tight, at odd offsets.
  uint64_t stagingAlignment = 16;
  std::vector<TensorSpec> tensors;
};

/// Names a case in test output.
void PrintTo(const RefitSpec &spec, std::ostream *out);

/// The plan file of `spec`.
std::vector<uint8_t> planRefit(const RefitSpec &spec);

/// The refits the tests run: replication, sharding, 2-D and 3-D layouts,
/// uneven and nested shards, empty shards, colocated ranks, relays, a
/// scalar, a small model, and a few MiB with long runs.
std::vector<RefitSpec> refitCases();

} // namespace m2n::test

#endif // M2N_RUNTIME_TEST_CUDA_REFIT_CASES_H
