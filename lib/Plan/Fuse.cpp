//===- Fuse.cpp - Packing slices into messages ----------------------------===//
//
// Every (round, sender, receiver) pair gets its remote slices, across groups
// and members, packed into as few messages as the bucket allows. Slices are
// taken in plan order (group, then slice, then member) and packed next-fit:
// a message closes when the next run of members does not fit. That keeps the
// parts of a message adjacent in the plan, which is also the order in which
// they sit in the tensors, and makes the result depend on nothing but the
// plan and the bucket.
//
//===----------------------------------------------------------------------===//

#include "m2n/Plan/Fuse.h"

#include <algorithm>
#include <map>
#include <tuple>

using namespace m2n;
using namespace m2n::plan;

/// Appends to `pieces` the pieces of `box` that each take at most `bucket`
/// bytes: the outermost dimension longer than 1 is split as torch.chunk
/// splits it, into as few pieces as fit, and a piece of a single row that
/// still does not fit is split along the next dimension. A single element
/// larger than the bucket stays whole.
static void splitToFit(const Box &box, int64_t elementBytes, int64_t bucket,
                       std::vector<Box> &pieces) {
  int64_t bytes = box.volume() * elementBytes;
  auto dim = std::find_if(box.sizes.begin(), box.sizes.end(),
                          [](int64_t size) { return size > 1; });
  if (bytes <= bucket || dim == box.sizes.end()) {
    pieces.push_back(box);
    return;
  }
  size_t d = dim - box.sizes.begin();
  int64_t rows = box.sizes[d];
  int64_t rowBytes = bytes / rows;
  int64_t rowsPerPiece = std::max<int64_t>(1, bucket / rowBytes);
  int64_t count = (rows + rowsPerPiece - 1) / rowsPerPiece;
  for (int64_t i = 0; i < count; ++i) {
    Chunk part = chunk(rows, count, i);
    if (part.size == 0)
      continue;
    Box piece = box;
    piece.offsets[d] += part.offset;
    piece.sizes[d] = part.size;
    splitToFit(piece, elementBytes, bucket, pieces);
  }
}

/// Whether `inner`, a box within `buffer`, is one contiguous range of the
/// row-major buffer: the dimensions before its first one longer than 1 are
/// single rows, and every later dimension spans the buffer whole. (Coalesce's
/// stridedRuns describes any box; fusion only needs this yes or no.)
static bool isContiguousIn(const Box &inner, const Box &buffer) {
  size_t d = 0;
  while (d < inner.sizes.size() && inner.sizes[d] <= 1)
    ++d;
  for (++d; d < inner.sizes.size(); ++d)
    if (inner.sizes[d] != buffer.sizes[d])
      return false;
  return true;
}

/// Whether a member's `slice` can travel straight from the sender's tensor
/// into the receiver's: contiguous in both, and big enough that a bucket
/// would hold little else.
static bool isZeroCopy(const Plan &plan, const TransferGroup &group,
                       const Slice &slice, int64_t bucket) {
  if (2 * sliceBytes(group, slice) < bucket)
    return false;
  Box from = slice.origin == Origin::Source
                 ? sourceBox(plan, group, slice.sender)
                 : destinationBox(plan, group, slice.sender);
  return isContiguousIn(slice.box, from) &&
         isContiguousIn(slice.box, destinationBox(plan, group, slice.receiver));
}

/// Replaces every remote slice of `group` larger than `bucket` by pieces that
/// fit, except slices that go zero-copy, which need no staging whatever their
/// size; returns the number of slices split.
static int64_t splitLargeSlices(const Plan &plan, TransferGroup &group,
                                int64_t bucket) {
  std::vector<Slice> slices;
  slices.reserve(group.slices.size());
  int64_t split = 0;
  std::vector<Box> pieces;
  for (const Slice &slice : group.slices) {
    if (slice.isLocalCopy() || sliceBytes(group, slice) <= bucket ||
        isZeroCopy(plan, group, slice, bucket)) {
      slices.push_back(slice);
      continue;
    }
    pieces.clear();
    splitToFit(slice.box, group.elementBytes(), bucket, pieces);
    split += pieces.size() > 1;
    for (Box &piece : pieces) {
      slices.push_back(slice);
      slices.back().box = std::move(piece);
    }
  }
  if (split == 0)
    return 0;
  // A piece may sort after slices that followed the whole.
  sortSlices(slices);
  group.slices = std::move(slices);
  return split;
}

namespace {
/// Packs the slices of one (round, sender, receiver) into messages.
class Packer {
public:
  Packer(const Plan &plan, int64_t bucket, int64_t step, int64_t sender,
         int64_t receiver)
      : plan(plan), bucket(bucket) {
    open.step = step;
    open.sender = sender;
    open.receiver = receiver;
  }

  /// Adds every member's share of slice `s` of group `g`.
  void add(int32_t g, int32_t s) {
    const TransferGroup &group = plan.groups[g];
    const Slice &slice = group.slices[s];
    int64_t bytes = sliceBytes(group, slice);
    int32_t members = static_cast<int32_t>(group.members.size());
    if (isZeroCopy(plan, group, slice, bucket)) {
      for (int32_t member = 0; member < members; ++member) {
        Message message = emptyLike(open);
        message.parts.push_back({g, s, member, member + 1});
        message.bytes = bytes;
        message.zeroCopy = true;
        zeroCopy.push_back(std::move(message));
      }
      return;
    }
    for (int32_t member = 0; member < members;) {
      int64_t room = bucket - open.bytes;
      int64_t fit = members - member;
      if (bytes > 0)
        fit = std::min<int64_t>(fit, room / bytes);
      // Only a single element larger than the bucket fits nowhere; it goes
      // alone.
      if (fit == 0 && open.parts.empty())
        fit = 1;
      if (fit == 0) {
        close();
        continue;
      }
      int32_t end = member + static_cast<int32_t>(fit);
      open.parts.push_back({g, s, member, end});
      open.bytes += fit * bytes;
      member = end;
    }
  }

  /// Appends the messages, zero-copy ones first, to `out`.
  void finish(std::vector<Message> &out) {
    close();
    for (Message &message : zeroCopy)
      out.push_back(std::move(message));
    for (Message &message : packed)
      out.push_back(std::move(message));
  }

private:
  static Message emptyLike(const Message &message) {
    Message empty;
    empty.step = message.step;
    empty.sender = message.sender;
    empty.receiver = message.receiver;
    return empty;
  }

  void close() {
    if (open.parts.empty())
      return;
    Message next = emptyLike(open);
    packed.push_back(std::move(open));
    open = std::move(next);
  }

  const Plan &plan;
  int64_t bucket;
  Message open;
  std::vector<Message> zeroCopy, packed;
};
} // namespace

FuseStats plan::fuse(Plan &plan, const FuseOptions &options) {
  // Fewer than one byte per message means nothing; treat it as one.
  int64_t bucket = std::max<int64_t>(options.bucketBytes, 1);
  FuseStats stats;
  for (TransferGroup &group : plan.groups)
    stats.splitSlices += splitLargeSlices(plan, group, bucket);

  using PairKey = std::tuple<int32_t, int64_t, int64_t>;
  std::map<PairKey, std::vector<std::pair<int32_t, int32_t>>> byPair;
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const std::vector<Slice> &slices = plan.groups[g].slices;
    for (size_t s = 0; s < slices.size(); ++s)
      if (!slices[s].isLocalCopy())
        byPair[{slices[s].round, slices[s].sender, slices[s].receiver}]
            .emplace_back(g, s);
  }

  plan.messages.clear();
  for (const auto &[key, slices] : byPair) {
    auto [round, sender, receiver] = key;
    Packer packer(plan, bucket, round, sender, receiver);
    for (auto [g, s] : slices)
      packer.add(g, s);
    packer.finish(plan.messages);
  }
  // Steps are schedule()'s to assign again.
  plan.numSteps = 0;
  stats.messages = static_cast<int64_t>(plan.messages.size());
  stats.zeroCopyMessages =
      std::count_if(plan.messages.begin(), plan.messages.end(),
                    [](const Message &message) { return message.zeroCopy; });
  return stats;
}
