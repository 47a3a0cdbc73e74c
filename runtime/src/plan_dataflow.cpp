//===- plan_dataflow.cpp - What a plan's bytes mean, proved at load -------===//
//
// validatePlan proves that a plan reads and writes only memory it may. This
// proves that it computes the refit, whoever wrote the file: every byte of
// every destination shard is written exactly once, with the element of the
// same tensor at the same global coordinates, read from a shard that its
// rank holds (a source shard, or bytes of a destination shard written in an
// earlier step); and every rank's staging stays within the plan's budget.
//
// The plan is followed step by step over all ranks at once, by byte ranges
// rather than bytes: what each rank's staging holds (PACKs and receives
// write it, and it keeps its bytes from step to step), how transfers pair
// up as the validator matched them, and so where each UNPACK or
// RECV_DIRECT got its bytes, back to the shard they came from. The writes
// to destination shards are kept to the end, where coverage and the order
// of relays are checked.
//
//===----------------------------------------------------------------------===//

#include "plan_internal.h"
#include "walk.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace m2n {
namespace {

/// Bytes [offset, offset + bytes) of a rank's binding.
struct Span {
  uint32_t binding = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

/// What a run of staging bytes holds: the bytes of `from` on `rank`.
struct StagedPiece {
  uint64_t staging = 0;
  uint32_t rank = 0;
  Span from;
};

/// A write or a relay's read of a destination binding, in a step (-1 for
/// the local copies before step 0).
struct Access {
  uint32_t binding = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  int64_t step = 0;
  uint64_t fileOffset = 0; // of the instruction
};

/// One rank's SEND or RECV (direct or not), for pairing.
struct Transfer {
  uint32_t rank = 0;
  uint32_t peer = 0;
  bool direct = false;
  uint32_t binding = 0;
  uint64_t offset = 0; // into staging, or into the binding when direct
  uint64_t bytes = 0;
  uint64_t fileOffset = 0;
};

/// An UNPACK's run: staging bytes into a destination binding.
struct Unpacked {
  uint64_t staging = 0;
  Span to;
  uint64_t fileOffset = 0;
};

/// A rank's work in the step being followed.
struct RankStep {
  std::vector<StagedPiece> packed; // by staging offset once sorted
  std::vector<Transfer> sends, receives;
  std::vector<Unpacked> unpacks;
};

/// What a rank's staging holds, by staging offset: disjoint pieces.
using Staging = std::map<uint64_t, StagedPiece>;

/// Puts `piece` into `staging` over whatever held its bytes before.
void stage(Staging &staging, const StagedPiece &piece) {
  uint64_t begin = piece.staging, end = begin + piece.from.bytes;
  auto it = staging.lower_bound(begin);
  if (it != staging.begin()) {
    auto before = std::prev(it);
    StagedPiece &left = before->second;
    uint64_t leftEnd = left.staging + left.from.bytes;
    if (leftEnd > begin) {
      if (leftEnd > end) { // `piece` falls inside it: keep its tail too
        StagedPiece tail = left;
        tail.staging = end;
        tail.from.offset += end - left.staging;
        tail.from.bytes = leftEnd - end;
        staging.emplace(end, tail);
      }
      left.from.bytes = begin - left.staging;
    }
  }
  while (it != staging.end() && it->first < end) {
    StagedPiece rest = it->second;
    uint64_t restEnd = rest.staging + rest.from.bytes;
    it = staging.erase(it);
    if (restEnd > end) {
      rest.from.offset += end - rest.staging;
      rest.from.bytes = restEnd - end;
      rest.staging = end;
      staging.emplace(end, rest);
      break;
    }
  }
  staging[begin] = piece;
}

/// The pieces of `staging` that hold [offset, offset + bytes), cut to it;
/// false when some byte holds nothing a plan wrote.
bool cover(const Staging &staging, uint64_t offset, uint64_t bytes,
           std::vector<StagedPiece> &out) {
  auto it = staging.upper_bound(offset);
  if (it == staging.begin())
    return false;
  --it;
  uint64_t end = offset + bytes;
  for (uint64_t at = offset; at < end; ++it) {
    if (it == staging.end() || it->first > at ||
        it->first + it->second.from.bytes <= at)
      return false;
    const StagedPiece &piece = it->second;
    uint64_t skip = at - piece.staging;
    uint64_t take = std::min(end, piece.staging + piece.from.bytes) - at;
    out.push_back(
        {at, piece.rank, {piece.from.binding, piece.from.offset + skip, take}});
    at += take;
  }
  return true;
}

/// Calls `run(fromOffset, toOffset, bytes)` for each run of `walk`, runs
/// that continue each other on both sides merged.
template <typename RunFn> void forEachRun(const Walk &walk, RunFn run) {
  size_t levels = walk.levels.size();
  std::vector<int64_t> index(levels, 0);
  int64_t from = walk.fromOffset, to = walk.toOffset;
  uint64_t pendingFrom = 0, pendingTo = 0, pending = 0;
  while (true) {
    if (pending != 0 && pendingFrom + pending == uint64_t(from) &&
        pendingTo + pending == uint64_t(to)) {
      pending += walk.runBytes;
    } else {
      if (pending != 0)
        run(pendingFrom, pendingTo, pending);
      pendingFrom = uint64_t(from);
      pendingTo = uint64_t(to);
      pending = walk.runBytes;
    }
    size_t level = levels;
    while (level > 0) {
      --level;
      const WalkLevel &l = walk.levels[level];
      from += l.fromStride;
      to += l.toStride;
      if (++index[level] < l.count)
        break;
      from -= l.fromStride * l.count;
      to -= l.toStride * l.count;
      index[level] = 0;
      if (level == 0) {
        run(pendingFrom, pendingTo, pending);
        return;
      }
    }
    if (levels == 0) {
      run(pendingFrom, pendingTo, pending);
      return;
    }
  }
}

class Dataflow {
public:
  explicit Dataflow(const LoadedPlan &plan) : plan_(plan) {}

  m2n_status_t check();

private:
  template <typename... Args>
  m2n_status_t wrong(uint32_t rank, uint64_t fileOffset,
                     const Args &...parts) const {
    return m2n_status_create(
        M2N_STATUS_DATA_LOSS,
        concat(plan_.source(), ": rank ", rank, " instruction at byte ",
               fileOffset, ": ", parts...)
            .c_str());
  }

  template <typename... Args>
  m2n_status_t wrongInStep(uint32_t rank, const Args &...parts) const {
    return m2n_status_create(M2N_STATUS_DATA_LOSS,
                             concat(plan_.source(), ": rank ", rank, " step ",
                                    step_, ": ", parts...)
                                 .c_str());
  }

  m2n_status_t checkStaging(uint32_t rank);
  m2n_status_t followCopies(uint32_t rank);
  m2n_status_t readStep(uint32_t rank);
  m2n_status_t pairTransfers();
  m2n_status_t traceUnpacks(uint32_t rank);
  m2n_status_t write(uint32_t rank, uint32_t fromRank, const Span &from,
                     const Span &to, uint64_t fileOffset);
  m2n_status_t sameElements(uint32_t rank, uint32_t fromRank,
                            const Span &from, const Span &to,
                            uint64_t fileOffset) const;
  m2n_status_t checkWrites(uint32_t rank);

  const LoadedPlan &plan_;
  /// Per rank: where its instruction stream stands, and its step's work.
  std::vector<InstructionRange::Iterator> next_, end_;
  std::vector<RankStep> steps_;
  std::vector<Staging> staging_;
  /// The ranks with work in the step being followed, and its number (-1
  /// for the local copies).
  std::vector<uint32_t> active_;
  int64_t step_ = -1;
  /// Per rank: writes to and relay reads of its destination bindings.
  std::vector<std::vector<Access>> writes_, reads_;
};

m2n_status_t Dataflow::checkStaging(uint32_t rank) {
  const m2n_plan_rank_header_t *header = plan_.rankHeader(rank);
  if (header && header->staging_bytes > plan_.header().staging_budget)
    return m2n_status_create(
        M2N_STATUS_DATA_LOSS,
        concat(plan_.source(), ": rank ", rank, " stages ",
               header->staging_bytes, " bytes, over the plan's budget of ",
               plan_.header().staging_budget)
            .c_str());
  return nullptr;
}

// The bytes that `from` of `fromRank` holds are the elements of its
// binding's box, row-major; `to` must get the same elements of the same
// tensor. Runs are compared in segments within which both boxes advance
// through global coordinates alike.
m2n_status_t Dataflow::sameElements(uint32_t rank, uint32_t fromRank,
                                    const Span &from, const Span &to,
                                    uint64_t fileOffset) const {
  const Binding &a = plan_.binding(fromRank, from.binding);
  const Binding &b = plan_.binding(rank, to.binding);
  if (a.tensor != b.tensor)
    return wrong(rank, fileOffset, "writes bytes of tensor ",
                 quoteName(plan_.tensorName(a.tensor)), " into binding ",
                 to.binding, " of tensor ",
                 quoteName(plan_.tensorName(b.tensor)));
  const m2n_plan_tensor_t &tensor = plan_.tensor(a.tensor);
  auto element = static_cast<uint64_t>(
      m2n_dtype_size(static_cast<m2n_dtype_t>(tensor.dtype)));
  if (from.offset % element || to.offset % element || to.bytes % element)
    return wrong(rank, fileOffset, "moves bytes not aligned to the ",
                 element, "-byte elements of tensor ",
                 quoteName(plan_.tensorName(a.tensor)));
  uint32_t dims = tensor.rank;
  // Dimensions [same, dims) agree in both boxes' extent and offset: there
  // both advance alike, and only a carry into dimension same - 2 or above
  // can make them part.
  uint32_t same = dims;
  while (same > 0 && a.shape[same - 1] == b.shape[same - 1] &&
         a.offset[same - 1] == b.offset[same - 1])
    --same;
  uint64_t inner = 1;
  for (uint32_t d = same; d < dims; ++d)
    inner *= static_cast<uint64_t>(a.shape[d]);
  uint64_t ea = from.offset / element, eb = to.offset / element;
  uint64_t left = to.bytes / element;
  while (left > 0) {
    uint64_t restA = ea, restB = eb;
    for (uint32_t d = dims; d-- > 0;) {
      auto extentA = static_cast<uint64_t>(a.shape[d]);
      auto extentB = static_cast<uint64_t>(b.shape[d]);
      int64_t ga = a.offset[d] + static_cast<int64_t>(restA % extentA);
      int64_t gb = b.offset[d] + static_cast<int64_t>(restB % extentB);
      if (ga != gb)
        return wrong(rank, fileOffset, "writes element ", ga, " of dimension ",
                     d, " of tensor ", quoteName(plan_.tensorName(a.tensor)),
                     " where element ", gb, " belongs");
      restA /= extentA;
      restB /= extentB;
    }
    if (same <= 1 || dims == 0)
      return nullptr;
    auto stretch = [&](const Binding &box, uint64_t e) {
      auto extent = static_cast<uint64_t>(box.shape[same - 1]);
      return (extent - (e / inner) % extent) * inner - e % inner;
    };
    uint64_t segment = std::min({left, stretch(a, ea), stretch(b, eb)});
    ea += segment;
    eb += segment;
    left -= segment;
  }
  return nullptr;
}

m2n_status_t Dataflow::write(uint32_t rank, uint32_t fromRank,
                             const Span &from, const Span &to,
                             uint64_t fileOffset) {
  M2N_RETURN_IF_ERROR(sameElements(rank, fromRank, from, to, fileOffset));
  writes_[rank].push_back({to.binding, to.offset, to.bytes, step_, fileOffset});
  return nullptr;
}

// Relays read destination bindings; what they read must be there by then.
static void noteRead(std::vector<Access> &reads, const Binding &binding,
                     const Span &span, int64_t step, uint64_t fileOffset) {
  if (binding.role == M2N_ROLE_DESTINATION)
    reads.push_back({span.binding, span.offset, span.bytes, step, fileOffset});
}

m2n_status_t Dataflow::followCopies(uint32_t rank) {
  for (; next_[rank] != end_[rank] && next_[rank]->opcode == M2N_OP_COPY;
       ++next_[rank]) {
    const Instruction &inst = *next_[rank];
    Walk walk = walkOf(inst);
    m2n_status_t status = nullptr;
    forEachRun(walk, [&](uint64_t from, uint64_t to, uint64_t bytes) {
      if (!status)
        status = write(rank, rank, {walk.fromBinding, from, bytes},
                       {walk.toBinding, to, bytes}, inst.fileOffset);
    });
    M2N_RETURN_IF_ERROR(status);
  }
  return nullptr;
}

// Collects what `rank`, whose stream is at a STEP, does in that step.
m2n_status_t Dataflow::readStep(uint32_t rank) {
  RankStep &work = steps_[rank];
  work = RankStep();
  int64_t step = step_;
  for (++next_[rank];
       next_[rank] != end_[rank] && next_[rank]->opcode != M2N_OP_STEP;
       ++next_[rank]) {
    const Instruction &inst = *next_[rank];
    const m2n_plan_transfer_t &t = inst.transfer;
    switch (inst.opcode) {
    case M2N_OP_PACK: {
      Walk walk = walkOf(inst);
      const Binding &binding = plan_.binding(rank, walk.fromBinding);
      forEachRun(walk, [&](uint64_t from, uint64_t to, uint64_t bytes) {
        Span span{walk.fromBinding, from, bytes};
        work.packed.push_back({to, rank, span});
        noteRead(reads_[rank], binding, span, step, inst.fileOffset);
      });
      break;
    }
    case M2N_OP_UNPACK: {
      Walk walk = walkOf(inst);
      forEachRun(walk, [&](uint64_t from, uint64_t to, uint64_t bytes) {
        work.unpacks.push_back(
            {from, {walk.toBinding, to, bytes}, inst.fileOffset});
      });
      break;
    }
    case M2N_OP_SEND:
    case M2N_OP_SEND_DIRECT: {
      bool direct = inst.opcode == M2N_OP_SEND_DIRECT;
      work.sends.push_back({rank, t.peer, direct, t.binding, t.staging_offset,
                            t.bytes, inst.fileOffset});
      if (direct)
        noteRead(reads_[rank], plan_.binding(rank, t.binding),
                 {t.binding, t.staging_offset, t.bytes}, step,
                 inst.fileOffset);
      break;
    }
    case M2N_OP_RECV:
    case M2N_OP_RECV_DIRECT:
      work.receives.push_back({rank, t.peer,
                               inst.opcode == M2N_OP_RECV_DIRECT, t.binding,
                               t.staging_offset, t.bytes, inst.fileOffset});
      break;
    default:
      break; // validatePlan allows nothing else within a step
    }
  }
  auto byStaging = [](const StagedPiece &x, const StagedPiece &y) {
    return x.staging < y.staging;
  };
  std::sort(work.packed.begin(), work.packed.end(), byStaging);
  for (size_t i = 1; i < work.packed.size(); ++i)
    if (work.packed[i].staging <
        work.packed[i - 1].staging + work.packed[i - 1].from.bytes)
      return wrongInStep(rank, "packs staging byte ", work.packed[i].staging,
                         " twice");
  for (const StagedPiece &piece : work.packed)
    stage(staging_[rank], piece);
  return nullptr;
}

// The validator proved that within a step the k-th send of a to b and the
// k-th receive of b from a carry the same bytes. Sends read staging as the
// step's PACKs left it, so every send is traced before any receive lands.
m2n_status_t Dataflow::pairTransfers() {
  std::map<std::pair<uint32_t, uint32_t>, std::vector<const Transfer *>> sent;
  for (uint32_t rank : active_)
    for (const Transfer &send : steps_[rank].sends)
      sent[{send.rank, send.peer}].push_back(&send);
  std::map<std::pair<uint32_t, uint32_t>, size_t> taken;
  // What each receive brings, in the order of the receives.
  std::vector<std::pair<const Transfer *, std::vector<StagedPiece>>> landed;
  for (uint32_t rank : active_)
    for (const Transfer &receive : steps_[rank].receives) {
      const Transfer &send = *sent[{receive.peer, rank}][taken[{receive.peer,
                                                                 rank}]++];
      std::vector<StagedPiece> pieces;
      if (send.direct)
        pieces.push_back(
            {0, send.rank, {send.binding, send.offset, send.bytes}});
      else if (!cover(staging_[send.rank], send.offset, send.bytes, pieces))
        return wrong(send.rank, send.fileOffset, "sends staging bytes ",
                     send.offset, " to ", send.offset + send.bytes,
                     " that hold nothing the plan wrote");
      landed.emplace_back(&receive, std::move(pieces));
    }
  for (auto &[receive, pieces] : landed) {
    uint32_t rank = receive->rank;
    if (!receive->direct)
      for (const Transfer &send : steps_[rank].sends)
        if (!send.direct && send.offset < receive->offset + receive->bytes &&
            receive->offset < send.offset + send.bytes)
          return wrong(rank, receive->fileOffset,
                       "receives into staging that a send of the same step "
                       "reads, at byte ",
                       std::max(send.offset, receive->offset));
    uint64_t at = receive->offset;
    for (StagedPiece &piece : pieces) {
      if (receive->direct) {
        M2N_RETURN_IF_ERROR(write(rank, piece.rank, piece.from,
                                  {receive->binding, at, piece.from.bytes},
                                  receive->fileOffset));
      } else {
        piece.staging = at;
        stage(staging_[rank], piece);
      }
      at += piece.from.bytes;
    }
  }
  return nullptr;
}

m2n_status_t Dataflow::traceUnpacks(uint32_t rank) {
  std::vector<StagedPiece> pieces;
  for (const Unpacked &unpack : steps_[rank].unpacks) {
    pieces.clear();
    if (!cover(staging_[rank], unpack.staging, unpack.to.bytes, pieces))
      return wrong(rank, unpack.fileOffset, "unpacks staging bytes ",
                   unpack.staging, " to ", unpack.staging + unpack.to.bytes,
                   " that hold nothing the plan wrote");
    uint64_t at = unpack.to.offset;
    for (const StagedPiece &piece : pieces) {
      M2N_RETURN_IF_ERROR(write(rank, piece.rank, piece.from,
                                {unpack.to.binding, at, piece.from.bytes},
                                unpack.fileOffset));
      at += piece.from.bytes;
    }
  }
  return nullptr;
}

// Every destination byte written once; relays read only what an earlier
// step wrote.
m2n_status_t Dataflow::checkWrites(uint32_t rank) {
  std::vector<Access> &writes = writes_[rank];
  auto order = [](const Access &x, const Access &y) {
    return std::tie(x.binding, x.offset) < std::tie(y.binding, y.offset);
  };
  std::sort(writes.begin(), writes.end(), order);
  const m2n_plan_rank_header_t *header = plan_.rankHeader(rank);
  uint32_t bindings = header ? header->binding_count : 0;
  size_t w = 0;
  for (uint32_t b = 0; b < bindings; ++b) {
    const Binding &binding = plan_.binding(rank, b);
    if (binding.role != M2N_ROLE_DESTINATION)
      continue;
    uint64_t covered = 0;
    for (; w < writes.size() && writes[w].binding == b; ++w) {
      if (writes[w].offset < covered)
        return wrong(rank, writes[w].fileOffset, "writes byte ",
                     writes[w].offset, " of binding ", b, " (tensor ",
                     quoteName(plan_.tensorName(binding.tensor)),
                     ") a second time");
      if (writes[w].offset > covered)
        break;
      covered = writes[w].offset + writes[w].bytes;
    }
    if (covered != binding.byte_size)
      return m2n_status_create(
          M2N_STATUS_DATA_LOSS,
          concat(plan_.source(), ": rank ", rank, " binding ", b, " (tensor ",
                 quoteName(plan_.tensorName(binding.tensor)), "): byte ",
                 covered, " of ", binding.byte_size, " is never written")
              .c_str());
  }
  for (const Access &read : reads_[rank]) {
    Access key{read.binding, read.offset, 0, 0, 0};
    auto it = std::upper_bound(writes.begin(), writes.end(), key, order);
    // Writes are disjoint and cover the binding: walk those the read spans.
    for (--it; it != writes.end() && it->binding == read.binding &&
               it->offset < read.offset + read.bytes;
         ++it)
      if (it->step >= read.step)
        return wrong(rank, read.fileOffset, "step ", read.step,
                     " forwards bytes of binding ", read.binding,
                     " that reach it only in step ", it->step);
  }
  return nullptr;
}

m2n_status_t Dataflow::check() {
  uint32_t world = plan_.worldSize();
  steps_.resize(world);
  staging_.resize(world);
  writes_.resize(world);
  reads_.resize(world);
  // Ranks by the step their stream is at, so that a step costs what its
  // ranks do, however many steps or ranks the plan claims.
  std::map<uint64_t, std::vector<uint32_t>> waiting;
  auto wait = [&](uint32_t rank) {
    if (next_[rank] != end_[rank])
      waiting[next_[rank]->step].push_back(rank);
  };
  for (uint32_t rank = 0; rank < world; ++rank) {
    M2N_RETURN_IF_ERROR(checkStaging(rank));
    InstructionRange range = plan_.instructions(rank);
    next_.push_back(range.begin());
    end_.push_back(range.end());
    M2N_RETURN_IF_ERROR(followCopies(rank));
    wait(rank);
  }
  while (!waiting.empty()) {
    step_ = static_cast<int64_t>(waiting.begin()->first);
    active_ = std::move(waiting.begin()->second);
    waiting.erase(waiting.begin());
    for (uint32_t rank : active_)
      M2N_RETURN_IF_ERROR(readStep(rank));
    M2N_RETURN_IF_ERROR(pairTransfers());
    for (uint32_t rank : active_) {
      M2N_RETURN_IF_ERROR(traceUnpacks(rank));
      wait(rank);
    }
  }
  for (uint32_t rank = 0; rank < world; ++rank)
    M2N_RETURN_IF_ERROR(checkWrites(rank));
  return nullptr;
}

} // namespace

m2n_status_t checkPlanDataflow(const LoadedPlan &plan) {
  return Dataflow(plan).check();
}

} // namespace m2n
