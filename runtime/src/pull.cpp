//===- pull.cpp - Which messages are pulled, and by which walks -----------===//
//
// A message's bytes are numbered as they travel: its byte i is byte
// offset + i of the sender's staging range, which some PACK of the step
// writes, and byte offset' + i of the receiver's, which some UNPACK reads
// (a DIRECT side is one run of a binding instead). Since a PACK writes its
// bytes to staging densely in the order it moves them, and an UNPACK reads
// them likewise, pairing the PACK that writes each stretch of the message
// with the UNPACK that reads it, and fusing the two walks over that
// stretch, gives walks from the sender's bindings straight into the
// receiver's.
//
// Both ends of a message reach the same verdict: each decodes the other's
// program from the plan and calls pullable() with the same arguments.
//
//===----------------------------------------------------------------------===//

#include "program.h"

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <utility>

namespace m2n {
namespace {

/// Staging bytes [begin, end) of a step's walk or transfer number `index`.
struct Range {
  uint64_t begin;
  uint64_t end;
  size_t index;
};

Range packRange(const Walk &pack, size_t index) {
  auto begin = static_cast<uint64_t>(pack.toOffset);
  return {begin, begin + pack.bytes(), index};
}

Range unpackRange(const Walk &unpack, size_t index) {
  auto begin = static_cast<uint64_t>(unpack.fromOffset);
  return {begin, begin + unpack.bytes(), index};
}

Range transferRange(const Transfer &transfer, size_t index) {
  return {transfer.offset, transfer.offset + transfer.bytes, index};
}

void sortByBegin(std::vector<Range> &ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const Range &a, const Range &b) { return a.begin < b.begin; });
}

/// Whether ranges sorted by begin are disjoint.
bool disjoint(const std::vector<Range> &sorted) {
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i].begin < sorted[i - 1].end)
      return false;
  return true;
}

/// The union of `ranges`: disjoint, sorted, touching ranges joined.
std::vector<Range> unite(std::vector<Range> ranges) {
  sortByBegin(ranges);
  std::vector<Range> united;
  for (const Range &range : ranges) {
    if (!united.empty() && range.begin <= united.back().end)
      united.back().end = std::max(united.back().end, range.end);
    else
      united.push_back(range);
  }
  return united;
}

/// The first of disjoint sorted `ranges` that ends after `begin`.
std::vector<Range>::const_iterator
firstEndingAfter(const std::vector<Range> &ranges, uint64_t begin) {
  return std::partition_point(ranges.begin(), ranges.end(),
                              [&](const Range &r) { return r.end <= begin; });
}

/// Whether a union covers all of [begin, end).
bool covers(const std::vector<Range> &united, const Range &range) {
  auto it = firstEndingAfter(united, range.begin);
  return it != united.end() && it->begin <= range.begin && range.end <= it->end;
}

/// Whether a union shares any byte with [begin, end).
bool overlaps(const std::vector<Range> &united, const Range &range) {
  auto it = firstEndingAfter(united, range.begin);
  return it != united.end() && it->begin < range.end;
}

/// Where one step of a rank writes and reads staging: the ranges of its
/// PACKs and of its UNPACKs, each sorted.
struct StagingUse {
  std::vector<Range> packs;
  std::vector<Range> unpacks;
};

/// A rank's program, as the verdicts on its messages need it.
struct RankView {
  const Program *program = nullptr;
  /// Whether its staging holds nothing from one step to the next, and
  /// its PACKs and UNPACKs do not overlap (see pullMessages).
  bool stepLocal = true;
  std::vector<StagingUse> steps; // as program->steps
};

// A step's use of staging; clears *stepLocal unless the step's staging is
// its own: what its staging sends read, its PACKs wrote, and what its
// UNPACKs read, its staging receives brought.
StagingUse stagingUse(const StepProgram &step, bool *stepLocal) {
  StagingUse use;
  for (size_t i = 0; i < step.packs.size(); ++i)
    use.packs.push_back(packRange(step.packs[i], i));
  for (size_t i = 0; i < step.unpacks.size(); ++i)
    use.unpacks.push_back(unpackRange(step.unpacks[i], i));
  sortByBegin(use.packs);
  sortByBegin(use.unpacks);
  std::vector<Range> sends, receives;
  for (size_t i = 0; i < step.transfers.size(); ++i) {
    const Transfer &transfer = step.transfers[i];
    if (!transfer.direct)
      (transfer.send ? sends : receives).push_back(transferRange(transfer, i));
  }
  bool local = disjoint(use.packs) && disjoint(use.unpacks);
  std::vector<Range> packed = unite(use.packs), received = unite(receives);
  for (const Range &send : sends)
    local = local && covers(packed, send);
  for (const Range &unpack : use.unpacks)
    local = local && covers(received, unpack);
  *stepLocal = *stepLocal && local;
  return use;
}

RankView viewOf(const Program &program) {
  RankView view;
  view.program = &program;
  for (const StepProgram &step : program.steps)
    view.steps.push_back(stagingUse(step, &view.stepLocal));
  return view;
}

/// `length` bytes of a message, from its byte `messageBegin`, that one
/// walk moves from its byte `walkBegin` on.
struct Piece {
  const Walk *walk;
  uint64_t walkBegin;
  uint64_t messageBegin;
  uint64_t length;
};

/// One side of a message as pieces, disjoint, in the message's order: on
/// a staging send the PACKs that write its bytes, on a staging receive the
/// UNPACKs that read them, on a DIRECT side `direct`, set to its one run.
/// Staging sides need a step-local view (sorted, disjoint ranges).
std::vector<Piece> piecesOf(const RankView &view, size_t step,
                            const Transfer &transfer, Walk *direct) {
  if (transfer.direct) {
    direct->fromBinding = direct->toBinding = transfer.binding;
    direct->fromOffset = direct->toOffset =
        static_cast<int64_t>(transfer.offset);
    direct->runBytes = transfer.bytes;
    return {{direct, 0, 0, transfer.bytes}};
  }
  const StepProgram &program = view.program->steps[step];
  const StagingUse &use = view.steps[step];
  const std::vector<Range> &ranges = transfer.send ? use.packs : use.unpacks;
  const std::vector<Walk> &walks =
      transfer.send ? program.packs : program.unpacks;
  const uint64_t begin = transfer.offset, end = begin + transfer.bytes;
  std::vector<Piece> pieces;
  for (auto it = firstEndingAfter(ranges, begin);
       it != ranges.end() && it->begin < end; ++it) {
    uint64_t from = std::max(begin, it->begin), to = std::min(end, it->end);
    pieces.push_back(
        {&walks[it->index], from - it->begin, from - begin, to - from});
  }
  return pieces;
}

/// Fusing two walks whose runs line up takes one walk per slice of the
/// two; past this many, they do not line up, and copying through staging
/// is as good.
constexpr size_t kMaxFuseRounds = 64;

/// Appends walks that move bytes [readerBegin, + length) of `reader`'s
/// from side into the to side of bytes [writerBegin, + length) of
/// `writer`; false when that takes more than a few.
bool fuseRange(const Walk &reader, uint64_t readerBegin, const Walk &writer,
               uint64_t writerBegin, uint64_t length, std::vector<Walk> *out) {
  std::vector<Walk> a = sliceWalk(reader, readerBegin, length);
  std::vector<Walk> b = sliceWalk(writer, writerBegin, length);
  std::deque<Walk> reads(a.begin(), a.end()), writes(b.begin(), b.end());
  // Both queues cover `length` bytes, so they run out together.
  for (size_t round = 0; !reads.empty(); ++round) {
    if (round == kMaxFuseRounds)
      return false;
    uint64_t readBytes = reads.front().bytes();
    uint64_t writeBytes = writes.front().bytes();
    if (readBytes == writeBytes) {
      std::optional<Walk> fused = fuseWalks(reads.front(), writes.front());
      if (!fused)
        return false;
      out->push_back(std::move(*fused));
      reads.pop_front();
      writes.pop_front();
      continue;
    }
    // Cut the longer of the two where the shorter ends.
    std::deque<Walk> &longer = readBytes < writeBytes ? writes : reads;
    uint64_t cut = std::min(readBytes, writeBytes);
    Walk whole = std::move(longer.front());
    longer.pop_front();
    std::vector<Walk> head = sliceWalk(whole, 0, cut);
    std::vector<Walk> tail = sliceWalk(whole, cut, whole.bytes() - cut);
    longer.insert(longer.begin(), tail.begin(), tail.end());
    longer.insert(longer.begin(), head.begin(), head.end());
  }
  return true;
}

/// Fuses every stretch of a message that a receiving piece and a sending
/// piece share. The sending pieces cover the message; the receiving ones
/// may leave bytes out (which nobody reads).
bool fuseMessage(const std::vector<Piece> &sending,
                 const std::vector<Piece> &receiving, std::vector<Walk> *out) {
  for (const Piece &write : receiving) {
    const uint64_t begin = write.messageBegin, end = begin + write.length;
    auto it = std::partition_point(
        sending.begin(), sending.end(),
        [&](const Piece &p) { return p.messageBegin + p.length <= begin; });
    for (; it != sending.end() && it->messageBegin < end; ++it) {
      uint64_t from = std::max(begin, it->messageBegin);
      uint64_t to = std::min(end, it->messageBegin + it->length);
      if (!fuseRange(*it->walk, it->walkBegin + (from - it->messageBegin),
                     *write.walk, write.walkBegin + (from - begin), to - from,
                     out))
        return false;
    }
  }
  return true;
}

/// The verdict on the message of `send` (in the sender's step number
/// `sendStep`) and `receive`, and, when `walks` is given and it is pulled,
/// the walks that pull it.
bool pullable(const RankView &sender, size_t sendStep, const Transfer &send,
              const RankView &receiver, size_t receiveStep,
              const Transfer &receive, std::vector<Walk> *walks) {
  if ((!send.direct && !sender.stepLocal) ||
      (!receive.direct && !receiver.stepLocal))
    return false;
  Walk sendRun, receiveRun;
  std::vector<Piece> sending = piecesOf(sender, sendStep, send, &sendRun);
  std::vector<Piece> receiving =
      piecesOf(receiver, receiveStep, receive, &receiveRun);
  std::vector<Walk> fused;
  if (!fuseMessage(sending, receiving, &fused))
    return false;
  if (walks)
    *walks = std::move(fused);
  return true;
}

/// The programs of the ranks that one rank exchanges with, decoded once
/// each.
class Peers {
public:
  explicit Peers(const LoadedPlan &plan) : plan_(plan) {}

  const RankView &view(uint32_t rank) {
    auto found = views_.find(rank);
    if (found != views_.end())
      return found->second;
    programs_.push_back(std::make_unique<Program>(decodeProgram(plan_, rank)));
    return views_.emplace(rank, viewOf(*programs_.back())).first->second;
  }

private:
  const LoadedPlan &plan_;
  std::vector<std::unique_ptr<Program>> programs_;
  std::map<uint32_t, RankView> views_;
};

/// A peer's ends of its messages with one rank in one step: its step
/// number, and its sends to and receives from the rank, in order.
struct PeerEnds {
  size_t step = 0;
  std::vector<const Transfer *> sends, receives;
};

/// `peer`'s ends of its messages with rank `me` in step `step`; none when
/// it has no such step (only in a plan that failed validation).
PeerEnds peerEnds(const RankView &peer, uint64_t step, uint32_t me) {
  const std::vector<StepProgram> &steps = peer.program->steps;
  auto it = std::partition_point(
      steps.begin(), steps.end(),
      [&](const StepProgram &program) { return program.step < step; });
  PeerEnds ends;
  if (it == steps.end() || it->step != step)
    return ends;
  ends.step = static_cast<size_t>(it - steps.begin());
  for (const Transfer &transfer : it->transfers)
    if (transfer.peer == me)
      (transfer.send ? ends.sends : ends.receives).push_back(&transfer);
  return ends;
}

/// Drops what pulled messages leave to do in a step: a PACK stays only if
/// a staged send reads some of its bytes, and an UNPACK keeps only the
/// bytes that staged receives bring.
void dropPulledStaging(StepProgram &step) {
  std::vector<Range> stagedSends, pulledReceives;
  for (size_t i = 0; i < step.transfers.size(); ++i) {
    const Transfer &transfer = step.transfers[i];
    if (transfer.direct || transfer.send == transfer.pulled)
      continue; // staged sends and pulled receives are what matter
    (transfer.send ? stagedSends : pulledReceives)
        .push_back(transferRange(transfer, i));
  }
  stagedSends = unite(std::move(stagedSends));
  pulledReceives = unite(std::move(pulledReceives));
  std::vector<Walk> packs;
  for (Walk &pack : step.packs)
    if (overlaps(stagedSends, packRange(pack, 0)))
      packs.push_back(std::move(pack));
  step.packs = std::move(packs);

  std::vector<Walk> unpacks;
  for (Walk &unpack : step.unpacks) {
    const Range range = unpackRange(unpack, 0);
    uint64_t at = range.begin; // the first byte not yet placed
    std::vector<std::pair<uint64_t, uint64_t>> kept;
    for (auto it = firstEndingAfter(pulledReceives, range.begin);
         it != pulledReceives.end() && it->begin < range.end; ++it) {
      if (it->begin > at)
        kept.emplace_back(at, it->begin);
      at = std::max(at, it->end);
    }
    if (at < range.end)
      kept.emplace_back(at, range.end);
    if (kept.size() == 1 && kept[0].first == range.begin &&
        kept[0].second == range.end) {
      unpacks.push_back(std::move(unpack));
      continue;
    }
    for (const auto &[begin, end] : kept) {
      std::vector<Walk> pieces =
          sliceWalk(unpack, begin - range.begin, end - begin);
      unpacks.insert(unpacks.end(), pieces.begin(), pieces.end());
    }
  }
  step.unpacks = std::move(unpacks);
}

} // namespace

void pullMessages(const LoadedPlan &plan, uint32_t rank, Program *program) {
  // The verdicts first, on the program as the plan has it (which is how
  // the peers judge this rank's end of their messages); marking transfers
  // pulled leaves the view as it was. Then what the verdicts leave to do.
  const RankView mine = viewOf(*program);
  Peers peers(plan);
  for (size_t s = 0; s < program->steps.size(); ++s) {
    StepProgram &step = program->steps[s];
    // The k-th send to a peer is the peer's k-th receive from this rank,
    // and the other way around.
    std::map<uint32_t, PeerEnds> ends;
    std::map<std::pair<uint32_t, bool>, size_t> earlier; // by peer, send
    for (Transfer &transfer : step.transfers) {
      const RankView &peer = peers.view(transfer.peer);
      auto found = ends.find(transfer.peer);
      if (found == ends.end())
        found =
            ends.emplace(transfer.peer, peerEnds(peer, step.step, rank)).first;
      const std::vector<const Transfer *> &partners =
          transfer.send ? found->second.receives : found->second.sends;
      size_t k = earlier[{transfer.peer, transfer.send}]++;
      if (k >= partners.size())
        continue; // validation matched every message; never read past
      const size_t peerStep = found->second.step;
      transfer.pulled = transfer.send
                            ? pullable(mine, s, transfer, peer, peerStep,
                                       *partners[k], nullptr)
                            : pullable(peer, peerStep, *partners[k], mine, s,
                                       transfer, &transfer.pull);
    }
  }
  for (StepProgram &step : program->steps)
    dropPulledStaging(step);
}

} // namespace m2n
