//===- Fuse.cpp - Packing slices into messages ----------------------------===//
//
// Every (round, sender, receiver) pair gets its remote slices, across groups
// and members, packed into as few messages as the bucket allows. Slices are
// taken in plan order (group, then slice, then member) and packed next-fit:
// a message closes when the next run of members does not fit. That keeps the
// parts of a message adjacent in the plan, which is also the order in which
// they sit in the tensors, and makes the result depend on nothing but the
// plan and the bucket. Forwards are the exception: a pair's go root after
// root (the source-side rank their bytes left from), so that a forward waits
// on few of the source side's messages; and the first hop's go message after
// message of the source side's that brought their bytes, each closing where
// the next one's begin, so that it waits on one.
//
//===----------------------------------------------------------------------===//

#include "m2n/Plan/Fuse.h"

#include "SliceOrigins.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
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

namespace {
/// A remote slice as packing sees it: the pair and round it travels in, where
/// it is in the plan, and one member's bytes. Packing visits slices by pair,
/// not in plan order, and a small copy of what it needs keeps it from
/// touching every slice's box again.
struct PairSlice {
  int32_t round = 0;
  int64_t sender = 0;
  int64_t receiver = 0;
  int32_t group = 0;
  int32_t slice = 0;
  int64_t bytes = 0;
  /// The members this entry takes of the slice: all, unless pairs are cut
  /// into chunks (see chunkPairs).
  int32_t memberBegin = 0;
  int32_t memberEnd = 0;
  /// Where the slice's root comes among its sender's (see setRootKeys).
  int64_t rootKey = 0;
  /// The chunk of its pair the entry is in (see chunkPairs); 0 otherwise.
  int64_t chunk = 0;
  /// For a forward of the first hop, the source side's message that brought
  /// its members' bytes to its sender (see InputMessages); -1 otherwise.
  int64_t input = -1;

  bool samePair(const PairSlice &other) const {
    return round == other.round && sender == other.sender &&
           receiver == other.receiver;
  }
};

/// The boxes the ranks hold of each group, computed for a group only when
/// a slice of it may go zero-copy.
class GroupBoxes {
public:
  explicit GroupBoxes(const Plan &plan)
      : plan(plan), groups(plan.groups.size()) {}

  const HeldBoxes &source(int32_t g) { return get(g).first; }
  const HeldBoxes &destination(int32_t g) { return get(g).second; }

private:
  const std::pair<HeldBoxes, HeldBoxes> &get(int32_t g) {
    if (!groups[g]) {
      const TransferGroup &group = plan.groups[g];
      groups[g].emplace(HeldBoxes(plan, group, group.src),
                        HeldBoxes(plan, group, group.dst));
    }
    return *groups[g];
  }

  const Plan &plan;
  std::vector<std::optional<std::pair<HeldBoxes, HeldBoxes>>> groups;
};
} // namespace

/// Sets each slice's rootKey when the plan forwards anything, and says
/// whether it does. A sender's forwards go root after root, so that each of
/// its messages passes on bytes of few of the source side's messages; and
/// each sender starts at another root (its rank modulo the roots it has,
/// onwards), so that the source side feeds every sender's first forwards at
/// once, not one root all of them.
static bool setRootKeys(const Plan &plan,
                        const std::vector<GroupOrigins> &origins,
                        std::vector<PairSlice> &slices) {
  if (llvm::none_of(origins, [](const auto &group) { return group.forwards(); }))
    return false;
  llvm::DenseMap<int64_t, std::vector<int64_t>> rootsOf;
  for (PairSlice &entry : slices) {
    entry.rootKey = rootOf(origins, plan, entry.group, entry.slice);
    rootsOf[entry.sender].push_back(entry.rootKey);
  }
  for (auto &[sender, list] : rootsOf) {
    llvm::sort(list);
    list.erase(llvm::unique(list), list.end());
  }
  for (PairSlice &entry : slices) {
    const std::vector<int64_t> &list = rootsOf[entry.sender];
    int64_t count = static_cast<int64_t>(list.size());
    int64_t index = llvm::lower_bound(list, entry.rootKey) - list.begin();
    entry.rootKey = (index + count - entry.sender % count) % count;
  }
  return true;
}

/// The end of the pair that begins at `begin` in `slices`.
static size_t pairEnd(const std::vector<PairSlice> &slices, size_t begin) {
  size_t end = begin + 1;
  while (end < slices.size() && slices[begin].samePair(slices[end]))
    ++end;
  return end;
}

/// Cuts each pair's bytes from each root into about `chunks` chunks by
/// their place among that root's bytes in the pair (members in order),
/// splitting slices between members where a chunk ends, and orders each
/// pair's entries chunk after chunk, root after root within a chunk. Packed
/// so that no message spans two chunks, the k-th messages of a forward pair
/// pass on the k-th chunk of every root, which the source side sends in
/// the k-th messages of its own pairs: a pipeline whose forwards each wait
/// on one message of each root, sent about when the others are.
static void chunkPairs(std::vector<PairSlice> &slices, int64_t chunks) {
  std::vector<PairSlice> result;
  result.reserve(slices.size());
  // Per root of the pair: its bytes, and how many are placed so far.
  llvm::DenseMap<int64_t, std::pair<int64_t, int64_t>> roots;
  for (size_t begin = 0, end; begin < slices.size(); begin = end) {
    end = pairEnd(slices, begin);
    roots.clear();
    for (size_t i = begin; i < end; ++i)
      roots[slices[i].rootKey].first +=
          slices[i].bytes * (slices[i].memberEnd - slices[i].memberBegin);
    size_t first = result.size();
    for (size_t i = begin; i < end; ++i) {
      const PairSlice &entry = slices[i];
      auto &[total, placed] = roots[entry.rootKey];
      for (int32_t member = entry.memberBegin; member < entry.memberEnd;) {
        // long double: bytes times chunks may not fit 64 bits.
        auto chunk = static_cast<int64_t>(static_cast<long double>(placed) *
                                          chunks / std::max<int64_t>(total, 1));
        auto next = static_cast<int64_t>(std::ceil(
            static_cast<long double>(chunk + 1) * total / chunks));
        int64_t take = entry.memberEnd - member;
        if (entry.bytes > 0)
          take = std::clamp<int64_t>(
              (next - placed + entry.bytes - 1) / entry.bytes, 1, take);
        PairSlice &piece = result.emplace_back(entry);
        piece.memberBegin = member;
        piece.memberEnd = member + static_cast<int32_t>(take);
        piece.chunk = chunk;
        member = piece.memberEnd;
        placed += take * entry.bytes;
      }
    }
    std::stable_sort(result.begin() + first, result.end(),
                     [](const PairSlice &a, const PairSlice &b) {
                       return std::tie(a.chunk, a.rootKey) <
                              std::tie(b.chunk, b.rootKey);
                     });
  }
  slices = std::move(result);
}

/// Every remote slice of the plan, ordered by (round, sender, receiver),
/// then by root where the plan forwards (see setRootKeys), and then in plan
/// order (group, then slice): the order fuse packs them in. With `chunks`,
/// each pair is cut into chunks as well (see chunkPairs).
/// Slices are bucketed by pair rather than sorted: there are far fewer pairs
/// than slices, and filling the buckets in plan order keeps that order
/// within each.
static std::vector<PairSlice>
remoteSlicesByPair(const Plan &plan, const std::vector<GroupOrigins> &origins,
                   int64_t chunks) {
  using PairKey = std::tuple<int32_t, int64_t, int64_t>;
  llvm::DenseMap<PairKey, uint32_t> pairIds;
  std::vector<PairKey> pairs;
  std::vector<PairSlice> slices;
  std::vector<uint32_t> pairOf;
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const TransferGroup &group = plan.groups[g];
    for (size_t s = 0; s < group.slices.size(); ++s) {
      const Slice &slice = group.slices[s];
      if (slice.isLocalCopy())
        continue;
      PairKey key{slice.round, slice.sender, slice.receiver};
      auto [it, inserted] =
          pairIds.try_emplace(key, static_cast<uint32_t>(pairs.size()));
      if (inserted)
        pairs.push_back(key);
      pairOf.push_back(it->second);
      slices.push_back({slice.round, slice.sender, slice.receiver,
                        static_cast<int32_t>(g), static_cast<int32_t>(s),
                        sliceBytes(group, slice), 0,
                        static_cast<int32_t>(group.members.size())});
    }
  }

  // Where each pair's bucket starts once the pairs are in order.
  std::vector<uint32_t> order(pairs.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return pairs[a] < pairs[b]; });
  std::vector<uint32_t> count(pairs.size(), 0);
  for (uint32_t pair : pairOf)
    ++count[pair];
  std::vector<uint32_t> next(pairs.size());
  uint32_t position = 0;
  for (uint32_t pair : order) {
    next[pair] = position;
    position += count[pair];
  }

  std::vector<PairSlice> result(slices.size());
  for (size_t i = 0; i < slices.size(); ++i)
    result[next[pairOf[i]]++] = slices[i];
  if (setRootKeys(plan, origins, result))
    for (size_t begin = 0, end; begin < result.size(); begin = end) {
      end = pairEnd(result, begin);
      std::stable_sort(result.begin() + begin, result.begin() + end,
                       [](const PairSlice &a, const PairSlice &b) {
                         return a.rootKey < b.rootKey;
                       });
    }
  if (chunks > 0)
    chunkPairs(result, chunks);
  return result;
}

/// Whether a member's slice `entry` can travel straight from the sender's
/// tensor into the receiver's: contiguous in both, and big enough that a
/// bucket would hold little else.
static bool isZeroCopy(const Plan &plan, GroupBoxes &boxes,
                       const PairSlice &entry, int64_t bucket) {
  if (2 * entry.bytes < bucket)
    return false;
  const Slice &slice = plan.groups[entry.group].slices[entry.slice];
  const HeldBoxes &from = slice.origin == Origin::Source
                              ? boxes.source(entry.group)
                              : boxes.destination(entry.group);
  return isContiguousIn(slice.box, from.of(slice.sender)) &&
         isContiguousIn(slice.box,
                        boxes.destination(entry.group).of(slice.receiver));
}

namespace {
/// The most bytes of a message: packed, or zero-copy, which takes no staging
/// and so may be larger.
struct Limits {
  int64_t bucket;
  int64_t zeroCopy;
  /// The bucket between two ranks of one node, and the ranks per node.
  int64_t nodeBucket;
  int64_t ranksPerNode;

  /// The bucket of the messages from `sender` to `receiver`.
  int64_t bucketOf(int64_t sender, int64_t receiver) const {
    bool sameNode =
        ranksPerNode > 0 && sender / ranksPerNode == receiver / ranksPerNode;
    return sameNode ? nodeBucket : bucket;
  }
};
} // namespace

/// The piece size of `slice`: a zero-copy limit for a slice that would go
/// zero-copy, the bucket otherwise. `boxes` are the group's, made only when
/// a slice is larger than a bucket.
static int64_t pieceBytes(const Plan &plan, const TransferGroup &group,
                          const Slice &slice, const Limits &limits,
                          std::optional<std::pair<HeldBoxes, HeldBoxes>> &boxes) {
  if (sliceBytes(group, slice) <= limits.bucket)
    return limits.bucket;
  if (!boxes)
    boxes.emplace(HeldBoxes(plan, group, group.src),
                  HeldBoxes(plan, group, group.dst));
  const HeldBoxes &from =
      slice.origin == Origin::Source ? boxes->first : boxes->second;
  bool contiguous = isContiguousIn(slice.box, from.of(slice.sender)) &&
                    isContiguousIn(slice.box, boxes->second.of(slice.receiver));
  return contiguous ? std::max(limits.bucket, limits.zeroCopy) : limits.bucket;
}

/// Whether fusion splits `slice` of `group`: a remote slice larger than its
/// piece size. One contiguous on both sides could go zero-copy whole, but
/// its pieces, zero-copy too, let the schedule spread it over steps and
/// forward each piece as soon as it arrives.
static bool isLarge(const Plan &plan, const TransferGroup &group,
                    const Slice &slice, const Limits &limits,
                    std::optional<std::pair<HeldBoxes, HeldBoxes>> &boxes) {
  return !slice.isLocalCopy() &&
         sliceBytes(group, slice) >
             pieceBytes(plan, group, slice, limits, boxes);
}

/// Whether fusion splits any slice of `group`; `boxes` as for isLarge.
static bool
hasLargeSlices(const Plan &plan, const TransferGroup &group,
               const Limits &limits,
               std::optional<std::pair<HeldBoxes, HeldBoxes>> &boxes) {
  return std::any_of(
      group.slices.begin(), group.slices.end(), [&](const Slice &slice) {
        return isLarge(plan, group, slice, limits, boxes);
      });
}

/// Replaces every remote slice of `group` larger than its piece size by
/// pieces that fit; returns the number of slices split.
static int64_t splitLargeSlices(const Plan &plan, TransferGroup &group,
                                const Limits &limits) {
  // Most plans have none; copying every slice to find that out is not free.
  std::optional<std::pair<HeldBoxes, HeldBoxes>> boxes;
  if (!hasLargeSlices(plan, group, limits, boxes))
    return 0;
  std::vector<Slice> slices;
  slices.reserve(group.slices.size());
  int64_t split = 0;
  std::vector<Box> pieces;
  for (const Slice &slice : group.slices) {
    if (!isLarge(plan, group, slice, limits, boxes)) {
      slices.push_back(slice);
      continue;
    }
    pieces.clear();
    splitToFit(slice.box, group.elementBytes(),
               pieceBytes(plan, group, slice, limits, boxes), pieces);
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
/// Packs the slices of one (round, sender, receiver) after another into
/// messages.
class Packer {
public:
  Packer(const Plan &plan, const Limits &limits, std::vector<Message> &out)
      : plan(plan), boxes(plan), limits(limits), out(out) {}

  /// Starts the messages between another pair in another round, which has
  /// `slices` slices to pack.
  void start(int64_t step, int64_t sender, int64_t receiver, size_t slices) {
    open = Message();
    open.step = step;
    open.sender = sender;
    open.receiver = receiver;
    bucket = limits.bucketOf(sender, receiver);
    remaining = slices;
    chunk = 0;
    input = -1;
    // Most pairs fit in one message: its parts are sized once.
    open.parts.reserve(remaining);
  }

  /// Adds every member's share of the slice `entry`.
  void add(const PairSlice &entry) {
    --remaining;
    // A forward that took the bytes of two messages would wait on both: it
    // closes where the next one's begin, unless it holds little yet (the
    // few bytes that many messages bring each go on together).
    if (entry.chunk != chunk ||
        (entry.input != input && open.bytes >= bucket / kSmallShare)) {
      close();
      chunk = entry.chunk;
    }
    input = entry.input;
    int32_t g = entry.group, s = entry.slice;
    int64_t bytes = entry.bytes;
    int32_t members = entry.memberEnd;
    // Which slices go zero-copy does not depend on the link.
    if (isZeroCopy(plan, boxes, entry, limits.bucket)) {
      for (int32_t member = entry.memberBegin; member < members; ++member) {
        Message message = emptyLike(open);
        message.parts.push_back({g, s, member, member + 1});
        message.bytes = bytes;
        message.zeroCopy = true;
        zeroCopy.push_back(std::move(message));
      }
      return;
    }
    for (int32_t member = entry.memberBegin; member < members;) {
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
        // The next message goes on with this slice, and may take all the
        // pair's others.
        open.parts.reserve(remaining + 1);
        continue;
      }
      int32_t end = member + static_cast<int32_t>(fit);
      open.parts.push_back({g, s, member, end});
      open.bytes += fit * bytes;
      member = end;
    }
  }

  /// Appends the pair's messages, zero-copy ones first, to the output.
  void finish() {
    close();
    for (Message &message : zeroCopy)
      out.push_back(std::move(message));
    for (Message &message : packed)
      out.push_back(std::move(message));
    zeroCopy.clear();
    packed.clear();
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
  GroupBoxes boxes;
  const Limits limits;
  /// The bucket of the pair being packed.
  int64_t bucket = 0;
  std::vector<Message> &out;
  Message open;
  /// The pair's slices not added yet.
  size_t remaining = 0;
  /// The chunk of the pair being packed: a message never spans two.
  int64_t chunk = 0;
  /// The input of the last forward added (see PairSlice::input).
  int64_t input = -1;
  /// A message holding less than this share of a bucket is small.
  static constexpr int64_t kSmallShare = 4;
  std::vector<Message> zeroCopy, packed;
};
} // namespace

/// Fewer than one byte per message means nothing; it counts as one.
static int64_t bucketOf(const FuseOptions &options) {
  return std::max<int64_t>(options.bucketBytes, 1);
}

namespace {
/// Which of the source side's messages each member of each slice of a
/// forwarding group travels in: what the first hop's forwards follow.
/// Later hops pass on what several earlier ones brought together (a
/// gather's rounds double what they pass on), and following each of those
/// only cuts them into more messages.
class InputMessages {
public:
  explicit InputMessages(const std::vector<GroupOrigins> &origins)
      : origins(origins) {}

  /// Records where the slices of forwarding groups in `messages` from
  /// `first` on, the source side's, travel.
  void record(const std::vector<Message> &messages, size_t first) {
    for (size_t m = first; m < messages.size(); ++m)
      for (const MessagePart &part : messages[m].parts)
        if (origins[part.group].forwards())
          records.push_back({part.group, part.slice, part.memberBegin,
                             part.memberEnd, static_cast<int64_t>(m)});
  }

  /// Makes what was recorded findable, once the source side is packed.
  void sort() { std::sort(records.begin(), records.end()); }

  /// Appends `entry` to `out`, in pieces between the members that travelled
  /// in one message to its sender, each with that message as its input.
  void split(const PairSlice &entry, std::vector<PairSlice> &out) const {
    int32_t from = inputOf(origins, entry.group, entry.slice);
    for (int32_t member = entry.memberBegin; member < entry.memberEnd;) {
      PairSlice &piece = out.emplace_back(entry);
      piece.memberBegin = member;
      const Record *record =
          from < 0 ? nullptr : find(entry.group, from, member);
      piece.memberEnd =
          record ? std::min(record->memberEnd, entry.memberEnd) : entry.memberEnd;
      piece.input = record ? record->message : -1;
      member = piece.memberEnd;
    }
  }

private:
  struct Record {
    int32_t group, slice, memberBegin, memberEnd;
    int64_t message;
    bool operator<(const Record &other) const {
      return std::tie(group, slice, memberBegin) <
             std::tie(other.group, other.slice, other.memberBegin);
    }
  };

  /// The record of `member` of slice `s` of group `g`, if any.
  const Record *find(int32_t g, int32_t s, int32_t member) const {
    auto after = std::upper_bound(records.begin(), records.end(),
                                  Record{g, s, member, 0, 0});
    if (after == records.begin())
      return nullptr;
    const Record &record = *std::prev(after);
    bool holds = record.group == g && record.slice == s &&
                 member < record.memberEnd;
    return holds ? &record : nullptr;
  }

  const std::vector<GroupOrigins> &origins;
  std::vector<Record> records;
};
} // namespace

/// The messages of `plan`, none of whose slices is larger than its pair's
/// bucket by `limits`.
static std::vector<Message> packMessages(const Plan &plan, const Limits &limits,
                                         int64_t chunks) {
  std::vector<GroupOrigins> origins = sliceOrigins(plan);
  std::vector<PairSlice> slices = remoteSlicesByPair(plan, origins, chunks);
  std::vector<Message> messages;
  Packer packer(plan, limits, messages);
  InputMessages inputs(origins);
  std::vector<PairSlice> pair;
  bool sorted = false;
  for (size_t begin = 0, end; begin < slices.size(); begin = end) {
    const PairSlice &first = slices[begin];
    for (end = begin + 1; end < slices.size() && first.samePair(slices[end]);)
      ++end;
    llvm::ArrayRef<PairSlice> entries(slices.data() + begin, end - begin);
    if (first.round == 1) {
      if (!sorted) {
        inputs.sort();
        sorted = true;
      }
      // A first hop's bytes go chunk after chunk and root after root as
      // before, and within those message after message of the source
      // side's that brought them.
      pair.clear();
      for (const PairSlice &entry : entries)
        inputs.split(entry, pair);
      std::stable_sort(pair.begin(), pair.end(),
                       [](const PairSlice &a, const PairSlice &b) {
                         return std::tie(a.chunk, a.rootKey, a.input) <
                                std::tie(b.chunk, b.rootKey, b.input);
                       });
      entries = pair;
    }
    size_t packed = messages.size();
    packer.start(first.round, first.sender, first.receiver, entries.size());
    for (const PairSlice &entry : entries)
      packer.add(entry);
    packer.finish();
    if (first.round == 0)
      inputs.record(messages, packed);
  }
  return messages;
}

/// The limits `options` set.
static Limits limitsOf(const FuseOptions &options) {
  int64_t bucket = bucketOf(options);
  return {bucket, options.zeroCopyBytes > 0 ? options.zeroCopyBytes : bucket,
          options.nodeBucketBytes > 0 ? options.nodeBucketBytes : bucket,
          options.ranksPerNode};
}

FuseStats plan::fuse(Plan &plan, const FuseOptions &options) {
  Limits limits = limitsOf(options);
  FuseStats stats;
  for (TransferGroup &group : plan.groups)
    stats.splitSlices += splitLargeSlices(plan, group, limits);
  plan.messages = packMessages(plan, limits, options.pairChunks);
  // Steps are schedule()'s to assign again.
  plan.numSteps = 0;
  stats.messages = static_cast<int64_t>(plan.messages.size());
  stats.zeroCopyMessages =
      std::count_if(plan.messages.begin(), plan.messages.end(),
                    [](const Message &message) { return message.zeroCopy; });
  return stats;
}

std::vector<Message> plan::fusedMessages(const Plan &plan,
                                         const FuseOptions &options) {
  Limits limits = limitsOf(options);
  bool splits = std::any_of(
      plan.groups.begin(), plan.groups.end(), [&](const TransferGroup &group) {
        std::optional<std::pair<HeldBoxes, HeldBoxes>> boxes;
        return hasLargeSlices(plan, group, limits, boxes);
      });
  // Only splitting changes the plan, so only then is a copy needed.
  if (!splits)
    return packMessages(plan, limits, options.pairChunks);
  Plan split = plan;
  fuse(split, options);
  return std::move(split.messages);
}

namespace {
/// What fuseForSchedule reads of a plan before fusing it.
struct Traffic {
  bool forwards = false;
  /// The busiest rank's bytes either way, and all ranks' sends.
  int64_t busiest = 0, total = 0;
  /// The (round, sender, receiver) pairs that move bytes.
  int64_t pairs = 0;
};
} // namespace

static Traffic trafficOf(const Plan &plan) {
  Traffic traffic;
  llvm::DenseMap<int64_t, std::pair<int64_t, int64_t>> bytes;
  llvm::DenseSet<std::tuple<int32_t, int64_t, int64_t>> pairs;
  for (const TransferGroup &group : plan.groups)
    for (const Slice &slice : group.slices) {
      traffic.forwards |= slice.origin == Origin::Destination;
      if (slice.isLocalCopy())
        continue;
      pairs.insert({slice.round, slice.sender, slice.receiver});
      int64_t load =
          sliceBytes(group, slice) * static_cast<int64_t>(group.members.size());
      bytes[slice.sender].first += load;
      bytes[slice.receiver].second += load;
      traffic.total += load;
    }
  traffic.pairs = static_cast<int64_t>(pairs.size());
  for (const auto &entry : bytes)
    traffic.busiest =
        std::max({traffic.busiest, entry.second.first, entry.second.second});
  return traffic;
}

namespace {
/// A plan's messages scheduled, and the model's time for them: infinity
/// when they cannot be scheduled (then the schedule pass reports why).
struct Trial {
  std::optional<ScheduledMessages> scheduled;
  double seconds = std::numeric_limits<double>::infinity();
};
} // namespace

static Trial scheduled(Plan plan, const ScheduleOptions &options) {
  llvm::Expected<ScheduleStats> stats = schedule(plan, options);
  if (!stats) {
    llvm::consumeError(stats.takeError());
    return {};
  }
  Trial trial;
  trial.seconds = options.model->cost(plan).predictedSeconds;
  trial.scheduled = ScheduledMessages{std::move(plan.messages), plan.numSteps,
                                      plan.stagingBudget, *stats};
  return trial;
}

FuseStats plan::fuseForSchedule(Plan &plan, const FuseOptions &options,
                                const ScheduleOptions &schedule,
                                std::optional<ScheduledMessages> *result) {
  if (result)
    result->reset();
  // Every candidate but the last below takes one bucket for every pair.
  FuseOptions uniform = options;
  uniform.nodeBucketBytes = 0;
  // Each try costs a copy of the plan and a schedule: one that would have
  // more messages than this is not tried.
  constexpr int64_t kMostMessages = int64_t(1) << 18;
  Traffic traffic = trafficOf(plan);
  if (!schedule.model)
    return fuse(plan, uniform);
  auto withBucket = [&](int64_t bytes) {
    FuseOptions smaller = uniform;
    smaller.bucketBytes = bytes;
    smaller.zeroCopyBytes = bytes;
    return smaller;
  };
  auto fewEnough = [&](int64_t bucket) {
    return traffic.total / bucket <= kMostMessages;
  };
  // Halved buckets, from half of options' down to over the smallest (the
  // busiest rank's bytes over kPipelineMessages), while each schedules
  // faster than the one before; the smallest always; then the chunks.
  int64_t smallest = std::max<int64_t>(1, traffic.busiest / kPipelineMessages);
  std::vector<FuseOptions> halvings;
  std::vector<FuseOptions> tries;
  if (traffic.forwards) {
    for (int64_t bucket = options.bucketBytes / 2;
         bucket > smallest && fewEnough(bucket); bucket /= 2)
      halvings.push_back(withBucket(bucket));
    if (2 * smallest <= options.bucketBytes && fewEnough(smallest))
      tries.push_back(withBucket(smallest));
    FuseOptions chunked = uniform;
    chunked.pairChunks = kPipelineChunks;
    if (traffic.pairs * kPipelineChunks <= kMostMessages)
      tries.push_back(chunked);
  }
  bool nodes = options.ranksPerNode > 0 && options.nodeBucketBytes > 0 &&
               options.nodeBucketBytes != bucketOf(options) &&
               fewEnough(bucketOf(options));
  if (tries.empty() && halvings.empty() && !nodes)
    return fuse(plan, uniform);

  const Plan unfused = plan;
  FuseStats stats = fuse(plan, uniform);
  // More messages make a larger plan and cost what the model leaves out:
  // they must win by more than 1% (3% kept some plans slower by over 2%,
  // Llama-3-8B fsdp8 -> dp3,tp8 1.16x against 1.13x). A plan already near
  // its bound is kept without trying: each try costs a schedule.
  constexpr double kClearWin = 0.99;
  constexpr double kNearBound = 1.05;
  Trial best = scheduled(plan, schedule);
  if (best.seconds > kNearBound * schedule.model->lowerBound(unfused)) {
    double fastest = kClearWin * best.seconds;
    // Each uniform bucket tried and its time, the first fused above.
    std::vector<std::pair<double, FuseOptions>> uniformTries = {
        {best.seconds, uniform}};
    // Tries `each`, keeps it when it schedules faster than `threshold`,
    // and says how fast it is.
    auto attempt = [&](const FuseOptions &each, double threshold) {
      Plan tried = unfused;
      FuseStats triedStats = fuse(tried, each);
      Trial trial = scheduled(tried, schedule);
      double seconds = trial.seconds;
      if (each.nodeBucketBytes == 0)
        uniformTries.emplace_back(seconds, each);
      if (seconds < threshold) {
        fastest = seconds;
        best = std::move(trial);
        plan = std::move(tried);
        stats = triedStats;
      }
      return seconds;
    };
    double last = best.seconds;
    for (const FuseOptions &each : halvings) {
      double seconds = attempt(each, fastest);
      if (seconds >= last)
        break;
      last = seconds;
    }
    for (const FuseOptions &each : tries)
      attempt(each, fastest);
    // Last, the two fastest uniform buckets with those within a node as
    // much larger as the node bucket is (fewer messages: kept where faster
    // at all). Where a node's links are much faster than its NICs, the
    // latencies of many small messages within a node add up (a replica
    // passing on to its twin on the node what it received); where ranks of
    // a node exchange much (colocated layouts), larger messages pack steps
    // unevenly. Which packs best depends on the bucket between nodes too,
    // so the runner-up is tried as well as the fastest (Llama-3-8B fsdp16
    // -> dp16,tp4: 1.17x the bound from the runner-up, 1.19x from the
    // fastest).
    if (nodes) {
      std::stable_sort(
          uniformTries.begin(), uniformTries.end(),
          [](const auto &a, const auto &b) { return a.first < b.first; });
      uniformTries.resize(std::min<size_t>(2, uniformTries.size()));
      for (const auto &[seconds, each] : uniformTries) {
        FuseOptions larger = each;
        larger.nodeBucketBytes = std::max<int64_t>(
            1,
            static_cast<int64_t>(static_cast<long double>(bucketOf(each)) *
                                 options.nodeBucketBytes / bucketOf(options)));
        attempt(larger, best.seconds);
      }
    }
  }
  if (result)
    *result = std::move(best.scheduled);
  return stats;
}
