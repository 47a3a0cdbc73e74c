//===- walk.cpp - Strided walks: running, slicing and fusing them ---------===//

#include "walk.h"

#include <algorithm>
#include <cstring>

// Streaming stores need AVX2 (16-byte ones do no better than plain stores),
// chosen at run time, so that the runtime builds for any x86-64.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define M2N_STREAMING_STORES 1
#include <immintrin.h>
#endif

namespace m2n {

uint64_t Walk::bytes() const {
  uint64_t bytes = runBytes;
  for (const WalkLevel &level : levels)
    bytes *= static_cast<uint64_t>(level.count);
  return bytes;
}

Walk walkOf(const Instruction &inst) {
  Walk walk;
  walk.fromBinding = inst.runs.from_binding;
  walk.toBinding = inst.runs.to_binding;
  walk.fromOffset = static_cast<int64_t>(inst.runs.from_offset);
  walk.toOffset = static_cast<int64_t>(inst.runs.to_offset);
  walk.runBytes = inst.runs.run_bytes;
  for (uint32_t level = 0; level < inst.levels; ++level)
    walk.levels.push_back(
        {inst.count[level], inst.fromStride[level], inst.toStride[level]});
  return walk;
}

namespace {

// Runs of a small walk: memcpy each.
struct PlainRuns {
  static void copy(uint8_t *to, const uint8_t *from, uint64_t bytes) {
    std::memcpy(to, from, bytes);
  }
  static void prefetch(uintptr_t) {}
};

#if M2N_STREAMING_STORES
// Runs of a large walk: its destination would not stay in a core's caches
// anyway.
struct StreamedRuns {
  // Stores that bypass the cache: a whole line written this way is not
  // read from memory first, as it is for plain stores, which saves a third
  // of the memory traffic. (memcpy does as much for one long run, but not
  // for many short ones.) Only whole lines are streamed: a line written in
  // part by plain stores would be read after all.
  __attribute__((target("avx2"))) static void
  copy(uint8_t *to, const uint8_t *from, uint64_t bytes) {
    uint64_t head = std::min<uint64_t>(
        bytes, (64 - reinterpret_cast<uintptr_t>(to) % 64) % 64);
    std::memcpy(to, from, head);
    to += head;
    from += head;
    bytes -= head;
    const uint64_t body = bytes / 64 * 64;
    for (uint64_t i = 0; i < body; i += 64) {
      __m256i low =
          _mm256_loadu_si256(reinterpret_cast<const __m256i *>(from + i));
      __m256i high =
          _mm256_loadu_si256(reinterpret_cast<const __m256i *>(from + i + 32));
      _mm256_stream_si256(reinterpret_cast<__m256i *>(to + i), low);
      _mm256_stream_si256(reinterpret_cast<__m256i *>(to + i + 32), high);
    }
    std::memcpy(to + body, from + body, bytes - body);
  }

  // The next run often starts in another page, where the hardware
  // prefetchers stop: ask for its first lines (and so its page's
  // translation) while this run is copied. A hint: it never faults, even
  // past the last run.
  static void prefetch(uintptr_t next) {
    for (uintptr_t line = 0; line < 4; ++line)
      __builtin_prefetch(reinterpret_cast<const void *>(next + 64 * line));
  }
};

// Large walks stream: short runs would stream partial lines, and a small
// walk's destination may well be read again from cache.
constexpr uint64_t kStreamWalkBytes = 256 << 10;
constexpr uint64_t kStreamRunBytes = 256;

bool streams(const Walk &walk) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2 && walk.runBytes >= kStreamRunBytes &&
         walk.bytes() >= kStreamWalkBytes;
}
#endif

// The innermost level in a tight loop, the outer ones as an odometer.
template <typename Runs>
void runLevels(const Walk &walk, const uint8_t *from, uint8_t *to) {
  const uint64_t run = walk.runBytes;
  int64_t fromAt = walk.fromOffset;
  int64_t toAt = walk.toOffset;
  if (walk.levels.empty()) {
    Runs::copy(to + toAt, from + fromAt, run);
    return;
  }
  const WalkLevel *levels = walk.levels.data();
  const size_t inner = walk.levels.size() - 1;
  const WalkLevel innermost = levels[inner];
  int64_t index[kMaxWalkLevels] = {};
  for (;;) {
    for (int64_t i = 0; i < innermost.count; ++i) {
      Runs::prefetch(reinterpret_cast<uintptr_t>(from) + fromAt +
                     (i + 1) * innermost.fromStride);
      Runs::copy(to + toAt + i * innermost.toStride,
                 from + fromAt + i * innermost.fromStride, run);
    }
    size_t level = inner;
    for (;;) {
      if (level == 0)
        return;
      --level;
      fromAt += levels[level].fromStride;
      toAt += levels[level].toStride;
      if (++index[level] < levels[level].count)
        break;
      fromAt -= levels[level].fromStride * levels[level].count;
      toAt -= levels[level].toStride * levels[level].count;
      index[level] = 0;
    }
  }
}

} // namespace

void runWalk(const Walk &walk, const uint8_t *from, uint8_t *to) {
#if M2N_STREAMING_STORES
  if (streams(walk)) {
    runLevels<StreamedRuns>(walk, from, to);
    // Streamed stores are weakly ordered: fence them before whoever reads
    // the destination is told that it is ready.
    _mm_sfence();
    return;
  }
#endif
  runLevels<PlainRuns>(walk, from, to);
}

namespace {

// Cuts a byte range of a walk into whole blocks: at each level, a partial
// index at either end goes one level down, and the whole indices between
// them are one walk.
class Slicer {
public:
  Slicer(const Walk &walk, std::vector<Walk> *out) : walk_(walk), out_(out) {
    // units_[k]: the bytes one index of level k spans.
    units_.resize(walk.levels.size());
    uint64_t unit = walk.runBytes;
    for (size_t k = walk.levels.size(); k-- > 0;) {
      units_[k] = unit;
      unit *= static_cast<uint64_t>(walk.levels[k].count);
    }
  }

  // Bytes [begin, end) of the walk's levels from `level` inwards, when
  // their indices outside of them put it at (from, to).
  void cover(size_t level, int64_t from, int64_t to, uint64_t begin,
             uint64_t end) {
    if (level == walk_.levels.size()) {
      Walk piece = start(from + int64_t(begin), to + int64_t(begin));
      piece.runBytes = end - begin;
      out_->push_back(std::move(piece));
      return;
    }
    const WalkLevel &here = walk_.levels[level];
    const uint64_t unit = units_[level];
    const uint64_t first = begin / unit, last = (end - 1) / unit;
    auto fromAt = [&](uint64_t i) {
      return from + int64_t(i) * here.fromStride;
    };
    auto toAt = [&](uint64_t i) { return to + int64_t(i) * here.toStride; };
    if (first == last) {
      if (end - begin == unit)
        block(level, fromAt(first), toAt(first), 1);
      else
        cover(level + 1, fromAt(first), toAt(first), begin - first * unit,
              end - first * unit);
      return;
    }
    uint64_t wholeBegin = first, wholeEnd = last + 1;
    if (begin % unit != 0) {
      cover(level + 1, fromAt(first), toAt(first), begin - first * unit, unit);
      ++wholeBegin;
    }
    const bool partialLast = end % unit != 0;
    if (partialLast)
      --wholeEnd;
    if (wholeBegin < wholeEnd)
      block(level, fromAt(wholeBegin), toAt(wholeBegin),
            int64_t(wholeEnd - wholeBegin));
    if (partialLast)
      cover(level + 1, fromAt(last), toAt(last), 0, end - last * unit);
  }

private:
  Walk start(int64_t from, int64_t to) const {
    Walk piece;
    piece.fromBinding = walk_.fromBinding;
    piece.toBinding = walk_.toBinding;
    piece.fromOffset = from;
    piece.toOffset = to;
    return piece;
  }

  // `count` whole indices of `level`, with every level inside it whole.
  void block(size_t level, int64_t from, int64_t to, int64_t count) {
    Walk piece = start(from, to);
    piece.runBytes = walk_.runBytes;
    const WalkLevel &here = walk_.levels[level];
    if (count > 1)
      piece.levels.push_back({count, here.fromStride, here.toStride});
    piece.levels.insert(piece.levels.end(),
                        walk_.levels.begin() + long(level) + 1,
                        walk_.levels.end());
    out_->push_back(std::move(piece));
  }

  const Walk &walk_;
  std::vector<Walk> *out_;
  std::vector<uint64_t> units_;
};

// One side of a walk as dimensions, innermost first: the run's bytes, then
// the levels that repeat, each joined to the one inside it where it
// continues it (a side may be contiguous where the other is not).
struct Dim {
  int64_t count;
  int64_t stride;
};

std::vector<Dim> sideDims(const Walk &walk, bool fromSide) {
  std::vector<Dim> dims = {{static_cast<int64_t>(walk.runBytes), 1}};
  for (size_t k = walk.levels.size(); k-- > 0;) {
    const WalkLevel &level = walk.levels[k];
    int64_t stride = fromSide ? level.fromStride : level.toStride;
    Dim &inner = dims.back();
    if (level.count == 1)
      continue;
    if (stride == inner.count * inner.stride)
      inner.count *= level.count;
    else
      dims.push_back({level.count, stride});
  }
  return dims;
}

// Merges dimensions (innermost first, the first of them bytes contiguous on
// both sides) into a walk: those that continue the run on both sides join
// it, and one that continues the next inner level on both sides joins that.
void setLevels(const std::vector<WalkLevel> &dims, Walk *walk) {
  int64_t run = dims[0].count;
  size_t k = 1;
  for (;
       k < dims.size() && dims[k].fromStride == run && dims[k].toStride == run;
       ++k)
    run *= dims[k].count;
  std::vector<WalkLevel> levels; // innermost first
  for (; k < dims.size(); ++k) {
    if (!levels.empty()) {
      WalkLevel &inner = levels.back();
      if (dims[k].fromStride == inner.count * inner.fromStride &&
          dims[k].toStride == inner.count * inner.toStride) {
        inner.count *= dims[k].count;
        continue;
      }
    }
    levels.push_back(dims[k]);
  }
  walk->runBytes = static_cast<uint64_t>(run);
  walk->levels.assign(levels.rbegin(), levels.rend());
}

} // namespace

std::vector<Walk> sliceWalk(const Walk &walk, uint64_t begin, uint64_t length) {
  std::vector<Walk> pieces;
  Slicer(walk, &pieces)
      .cover(0, walk.fromOffset, walk.toOffset, begin, begin + length);
  return pieces;
}

// Both sides' dimensions index the same bytes in the same order, so they
// have a common refinement exactly when, taken innermost first, each
// dimension's count divides the other side's current one: then the larger
// is split into the smaller and what is left of it. Each step consumes a
// dimension of one side or both, so the result has at most as many levels
// as the two walks together.
std::optional<Walk> fuseWalks(const Walk &reader, const Walk &writer) {
  std::vector<Dim> a = sideDims(reader, true), b = sideDims(writer, false);
  std::vector<WalkLevel> dims; // innermost first
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    Dim &x = a[i], &y = b[j];
    int64_t n = std::min(x.count, y.count);
    if (std::max(x.count, y.count) % n != 0)
      return std::nullopt;
    dims.push_back({n, x.stride, y.stride});
    if (x.count == n)
      ++i;
    else
      x = {x.count / n, x.stride * n};
    if (y.count == n)
      ++j;
    else
      y = {y.count / n, y.stride * n};
  }
  if (i != a.size() || j != b.size())
    return std::nullopt; // they move different numbers of bytes
  Walk fused;
  fused.fromBinding = reader.fromBinding;
  fused.fromOffset = reader.fromOffset;
  fused.toBinding = writer.toBinding;
  fused.toOffset = writer.toOffset;
  setLevels(dims, &fused);
  return fused;
}

} // namespace m2n
