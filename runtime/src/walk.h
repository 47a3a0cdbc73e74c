//===- walk.h - Strided walks: running, slicing and fusing them -*- C++ -*-===//
//
// A walk moves contiguous runs of bytes from one buffer to another, as the
// COPY, PACK and UNPACK records of a plan describe (docs/plan-format.md):
// one run for every index vector of its levels, in row-major order. The
// executor runs the plan's walks as they are, and, where sender and
// receiver share an address space, fuses a sender's PACK with the
// receiver's UNPACK of the same bytes into one walk from the sender's
// buffer straight into the receiver's.
//
// The bytes a walk moves have an order: a run's bytes in order, the runs in
// row-major order of their indices. Byte i of a PACK lands on byte i of its
// dense staging range, so two walks of one message line up by that order;
// slicing and fusing count bytes in it.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_WALK_H
#define M2N_WALK_H

#include "plan_internal.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace m2n {

/// One level of a walk: `count` repetitions, each advancing the from side
/// by `fromStride` and the to side by `toStride` bytes.
struct WalkLevel {
  int64_t count = 1;
  int64_t fromStride = 0;
  int64_t toStride = 0;
};

/// The most levels a walk may have: a fusion of two walks of a plan's 8
/// levels each has at most 16 (and a slice no more than its walk).
constexpr size_t kMaxWalkLevels = 2 * M2N_PLAN_MAX_LEVELS;

/// A walk between two buffers, named by binding index (a staging side's is
/// unused, 0), starting at the given byte offsets.
struct Walk {
  uint32_t fromBinding = 0;
  uint32_t toBinding = 0;
  int64_t fromOffset = 0;
  int64_t toOffset = 0;
  uint64_t runBytes = 0;
  std::vector<WalkLevel> levels; // outermost first

  /// The bytes it moves.
  uint64_t bytes() const;
};

/// The walk of a COPY, PACK or UNPACK record.
Walk walkOf(const Instruction &inst);

/// Moves the runs of `walk` from the buffer at `from` to the one at `to`.
void runWalk(const Walk &walk, const uint8_t *from, uint8_t *to);

/// Walks that together move bytes [begin, begin + length) of `walk`'s
/// order and nothing else, in that order: at most two per level and one
/// more. `walk` itself when the range is all of it. The range must lie
/// within the walk and not be empty.
std::vector<Walk> sliceWalk(const Walk &walk, uint64_t begin, uint64_t length);

/// One walk that moves, for every i, the byte that `reader` reads i-th (on
/// its from side) to where `writer` writes its i-th byte (on its to side):
/// a PACK and an UNPACK of the same message fused, with as few and as long
/// runs as both allow. Both must move the same number of bytes. None when
/// no single walk does it: when the runs of one side do not nest in those
/// of the other (runs of 6 bytes read into runs of 4).
std::optional<Walk> fuseWalks(const Walk &reader, const Walk &writer);

} // namespace m2n

#endif // M2N_WALK_H
