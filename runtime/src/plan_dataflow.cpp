//===- plan_dataflow.cpp - What a plan's bytes mean, proved at load -------===//
//
// validatePlan proves that a plan reads and writes only memory it may. This
// proves that it computes the refit, whoever wrote the file: every byte of
// every destination shard is written exactly once, with the element of the
// same tensor at the same global coordinates, read from a shard that its
// rank holds (a source shard, or bytes of a destination shard written in an
// earlier step); and every rank's staging stays within the plan's budget.
//
// The plan is followed step by step over all ranks at once, by whole
// records rather than runs or bytes: what each rank's staging holds (PACKs
// and receives write it, and it keeps its bytes from step to step) is a
// list of pieces of records, and transfers pair up as the validator
// matched them, so each UNPACK or RECV_DIRECT traces back to the records
// that read the bytes from a shard. Where both records walk a box of their
// binding in row-major order, as compiled plans do, a member's bytes are
// the right elements when the two boxes are the same box of the tensor: a
// check per member, not per run. Anything else is compared run by run.
// The writes to destination shards are kept, as references to records, to
// the end, where each binding's runs are checked for coverage and the order
// of relays; bindings written alike (the members of a group) once.
//
//===----------------------------------------------------------------------===//

#include "plan_internal.h"
#include "walk.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

namespace m2n {
namespace {

/// Bytes [offset, offset + bytes) of a rank's binding.
struct Span {
  uint32_t binding = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

/// A box of a binding, in elements of its own coordinates: [lo, lo + n)
/// in each dimension.
struct LocalBox {
  int64_t lo[M2N_PLAN_MAX_RANK] = {};
  int64_t n[M2N_PLAN_MAX_RANK] = {};
};

/// The binding side of a COPY, PACK or UNPACK record, or the span of a
/// SEND_DIRECT or RECV_DIRECT: member m walks binding `binding + m` as
/// member 0's `walk` walks `binding`, and moves `bytes` bytes.
struct Side {
  uint32_t rank = 0;
  uint32_t binding = 0;
  uint32_t members = 1;
  bool onFrom = true; // the binding is the walk's from side
  Walk walk;
  uint64_t bytes = 0;
  int64_t step = -1; // -1 for the local copies before step 0
  uint64_t fileOffset = 0;
  /// The bytes member 0 moves, when they are a box of its binding walked
  /// in row-major order.
  std::optional<LocalBox> box;
};

/// Bytes [begin, begin + bytes) of the walk of each member in
/// [memberBegin, memberEnd) of side `side`: a write or a relay's read.
struct Ref {
  uint32_t side = 0;
  uint32_t memberBegin = 0, memberEnd = 0;
  uint64_t begin = 0, bytes = 0;
};

/// Staging bytes [staging, staging + bytes) hold bytes [order, order +
/// bytes) of side `side`, counted over its members one after another.
struct Piece {
  uint64_t staging = 0;
  uint64_t bytes = 0;
  uint32_t side = 0;
  uint64_t order = 0;
};

/// One rank's SEND or RECV (direct or not), for pairing.
struct Transfer {
  uint32_t rank = 0;
  uint32_t peer = 0;
  bool direct = false;
  uint32_t side = 0;   // the span's side when direct
  uint64_t offset = 0; // into staging, or into the binding when direct
  uint64_t bytes = 0;
  uint64_t fileOffset = 0;
};

/// A rank's work in the step being followed.
struct RankStep {
  std::vector<Piece> packed; // by staging offset once sorted
  std::vector<Transfer> sends, receives;
  std::vector<uint32_t> unpacks; // sides
};

/// What a rank's staging holds, by staging offset: disjoint pieces.
using Staging = std::map<uint64_t, Piece>;

/// `piece` without its first `skip` bytes.
Piece tail(Piece piece, uint64_t skip) {
  piece.staging += skip;
  piece.order += skip;
  piece.bytes -= skip;
  return piece;
}

/// Puts `piece` into `staging` over whatever held its bytes before.
void stage(Staging &staging, const Piece &piece) {
  uint64_t begin = piece.staging, end = begin + piece.bytes;
  auto it = staging.lower_bound(begin);
  if (it != staging.begin()) {
    auto before = std::prev(it);
    Piece &left = before->second;
    uint64_t leftEnd = left.staging + left.bytes;
    if (leftEnd > begin) {
      if (leftEnd > end) // `piece` falls inside it: keep its tail too
        staging.emplace(end, tail(left, end - left.staging));
      left.bytes = begin - left.staging;
    }
  }
  while (it != staging.end() && it->first < end) {
    Piece rest = it->second;
    it = staging.erase(it);
    if (rest.staging + rest.bytes > end) {
      staging.emplace(end, tail(rest, end - rest.staging));
      break;
    }
  }
  staging[begin] = piece;
}

/// The pieces of `staging` that hold [offset, offset + bytes), cut to it;
/// false when some byte holds nothing a plan wrote.
bool cover(const Staging &staging, uint64_t offset, uint64_t bytes,
           std::vector<Piece> &out) {
  auto it = staging.upper_bound(offset);
  if (it == staging.begin())
    return false;
  --it;
  uint64_t end = offset + bytes;
  for (uint64_t at = offset; at < end; ++it) {
    if (it == staging.end() || it->first > at ||
        it->first + it->second.bytes <= at)
      return false;
    Piece piece = tail(it->second, at - it->second.staging);
    piece.bytes = std::min(piece.bytes, end - at);
    out.push_back(piece);
    at += piece.bytes;
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

/// Whether [lo, lo + n) fits in an extent of `extent`, lo being within it.
bool fits(int64_t lo, int64_t n, int64_t extent) { return n <= extent - lo; }

/// Row-major element strides of `binding`'s box.
void boxStrides(const Binding &binding, uint32_t dims, int64_t *strides) {
  int64_t stride = 1;
  for (uint32_t d = dims; d-- > 0;) {
    strides[d] = stride;
    stride *= binding.shape[d];
  }
}

/// The box that one side of `walk` (from side when `onFrom`) covers in
/// `binding`, when it walks that box in row-major order: its run a piece
/// of one row of some dimension, each level one more dimension outward or
/// the same one continued. Nothing otherwise, nor for a walk not aligned
/// to elements of `element` bytes.
std::optional<LocalBox> boxOf(const Walk &walk, bool onFrom,
                              const Binding &binding, uint32_t dims,
                              uint64_t element) {
  int64_t offset = onFrom ? walk.fromOffset : walk.toOffset;
  auto e = static_cast<int64_t>(element);
  if (dims == 0 || offset % e || walk.runBytes % element)
    return std::nullopt;
  int64_t strides[M2N_PLAN_MAX_RANK];
  boxStrides(binding, dims, strides);
  LocalBox box;
  int64_t first = offset / e, run = static_cast<int64_t>(walk.runBytes) / e;
  for (uint32_t d = 0; d < dims; ++d) {
    box.lo[d] = first / strides[d] % binding.shape[d];
    box.n[d] = 1;
  }
  // The run: n rows of the outermost dimension whose rows fit in it.
  uint32_t outer = 0;
  while (strides[outer] > run)
    ++outer;
  if (run % strides[outer] || first % strides[outer])
    return std::nullopt;
  box.n[outer] = run / strides[outer];
  for (uint32_t d = outer + 1; d < dims; ++d)
    box.n[d] = binding.shape[d];
  if (!fits(box.lo[outer], box.n[outer], binding.shape[outer]))
    return std::nullopt;
  for (size_t l = walk.levels.size(); l-- > 0;) {
    const WalkLevel &level = walk.levels[l];
    int64_t stride = onFrom ? level.fromStride : level.toStride;
    if (level.count < 1)
      return std::nullopt;
    if (level.count == 1)
      continue;
    if (stride == box.n[outer] * strides[outer] * e &&
        level.count <= (binding.shape[outer] - box.lo[outer]) / box.n[outer]) {
      box.n[outer] *= level.count; // the same dimension, continued
      continue;
    }
    uint32_t d = outer;
    while (d > 0 && !(strides[d - 1] * e == stride &&
                      fits(box.lo[d - 1], level.count, binding.shape[d - 1])))
      --d;
    if (d == 0)
      return std::nullopt;
    outer = d - 1;
    box.n[outer] = level.count;
  }
  return box;
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

  uint32_t addSide(uint32_t rank, uint32_t binding, uint32_t members,
                   bool onFrom, Walk walk, uint64_t fileOffset);
  uint32_t addSpan(uint32_t rank, const Instruction &inst, bool onFrom);
  void noteRead(uint32_t side);
  m2n_status_t checkStaging(uint32_t rank);
  m2n_status_t followCopies(uint32_t rank);
  m2n_status_t readStep(uint32_t rank);
  m2n_status_t pairTransfers();
  m2n_status_t traceUnpacks(uint32_t rank);
  m2n_status_t write(const Piece &from, uint32_t to, uint64_t at);
  bool sameBox(const Side &from, uint32_t i, const Side &to,
               uint32_t j) const;
  m2n_status_t sameRuns(const Side &from, uint32_t i, uint64_t a,
                        const Side &to, uint32_t j, uint64_t b,
                        uint64_t bytes) const;
  m2n_status_t sameElements(uint32_t rank, uint32_t fromRank,
                            const Span &from, const Span &to,
                            uint64_t fileOffset) const;
  m2n_status_t checkWrites(uint32_t rank);

  const LoadedPlan &plan_;
  /// Every binding side met so far; pieces and refs name them by index.
  std::vector<Side> sides_;
  /// Per rank: where its record stream stands, and its step's work.
  std::vector<InstructionRange::Iterator> next_, end_;
  std::vector<RankStep> steps_;
  std::vector<Staging> staging_;
  /// The ranks with work in the step being followed, and its number (-1
  /// for the local copies).
  std::vector<uint32_t> active_;
  int64_t step_ = -1;
  /// Per rank: writes to and relay reads of its destination bindings.
  std::vector<std::vector<Ref>> writes_, reads_;
};

uint32_t Dataflow::addSide(uint32_t rank, uint32_t binding, uint32_t members,
                           bool onFrom, Walk walk, uint64_t fileOffset) {
  Side &side = sides_.emplace_back();
  side.rank = rank;
  side.binding = binding;
  side.members = members;
  side.onFrom = onFrom;
  side.bytes = walk.bytes();
  side.walk = std::move(walk);
  side.step = step_;
  side.fileOffset = fileOffset;
  const Binding &b = plan_.binding(rank, binding);
  const m2n_plan_tensor_t &tensor = plan_.tensor(b.tensor);
  side.box = boxOf(side.walk, onFrom, b, tensor.rank,
                   static_cast<uint64_t>(m2n_dtype_size(
                       static_cast<m2n_dtype_t>(tensor.dtype))));
  return static_cast<uint32_t>(sides_.size() - 1);
}

// The bytes a SEND_DIRECT reads or a RECV_DIRECT writes: one run.
uint32_t Dataflow::addSpan(uint32_t rank, const Instruction &inst,
                           bool onFrom) {
  const m2n_plan_transfer_t &t = inst.transfer;
  Walk walk;
  walk.fromBinding = walk.toBinding = t.binding;
  walk.fromOffset = walk.toOffset = static_cast<int64_t>(t.staging_offset);
  walk.runBytes = t.bytes;
  return addSide(rank, t.binding, 1, onFrom, std::move(walk), inst.fileOffset);
}

// Relays read destination bindings; what they read must be there by then.
void Dataflow::noteRead(uint32_t index) {
  const Side &side = sides_[index];
  for (uint32_t m = 0; m < side.members; ++m)
    if (plan_.binding(side.rank, side.binding + m).role ==
        M2N_ROLE_DESTINATION) {
      reads_[side.rank].push_back({index, 0, side.members, 0, side.bytes});
      return;
    }
}

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

/// Calls `fn(offset, bytes)` for the runs that bytes [begin, begin + bytes)
/// of `side`'s walk move, by their offsets in its binding.
template <typename RunFn>
void bindingRuns(const Side &side, uint64_t begin, uint64_t bytes, RunFn fn) {
  auto runs = [&](const Walk &walk) {
    forEachRun(walk, [&](uint64_t from, uint64_t to, uint64_t length) {
      fn(side.onFrom ? from : to, length);
    });
  };
  if (begin == 0 && bytes == side.bytes)
    runs(side.walk);
  else if (bytes > 0)
    for (const Walk &walk : sliceWalk(side.walk, begin, bytes))
      runs(walk);
}

// Member i of `from` and member j of `to` move the same elements when both
// walk the same box of the same tensor in row-major order. The members of
// a side must then have member 0's box shape, whose walk is the box.
bool Dataflow::sameBox(const Side &from, uint32_t i, const Side &to,
                       uint32_t j) const {
  if (!from.box || !to.box)
    return false;
  const Binding &a0 = plan_.binding(from.rank, from.binding);
  const Binding &b0 = plan_.binding(to.rank, to.binding);
  const Binding &a = plan_.binding(from.rank, from.binding + i);
  const Binding &b = plan_.binding(to.rank, to.binding + j);
  if (a.tensor != b.tensor)
    return false;
  uint32_t dims = plan_.tensor(a.tensor).rank;
  for (uint32_t d = 0; d < dims; ++d)
    if (a.shape[d] != a0.shape[d] || b.shape[d] != b0.shape[d] ||
        from.box->n[d] != to.box->n[d] ||
        a.offset[d] + from.box->lo[d] != b.offset[d] + to.box->lo[d])
      return false;
  return true;
}

// Bytes [a, a + bytes) of member i of `from` against [b, b + bytes) of
// member j of `to`, run by run: what sameBox cannot decide, and the
// message when it finds a difference.
m2n_status_t Dataflow::sameRuns(const Side &from, uint32_t i, uint64_t a,
                                const Side &to, uint32_t j, uint64_t b,
                                uint64_t bytes) const {
  std::vector<std::pair<uint64_t, uint64_t>> reads, writes;
  bindingRuns(from, a, bytes, [&](uint64_t offset, uint64_t length) {
    reads.emplace_back(offset, length);
  });
  bindingRuns(to, b, bytes, [&](uint64_t offset, uint64_t length) {
    writes.emplace_back(offset, length);
  });
  size_t r = 0, w = 0;
  uint64_t rDone = 0, wDone = 0; // bytes of the current runs behind us
  while (r < reads.size() && w < writes.size()) {
    uint64_t take = std::min(reads[r].second - rDone, writes[w].second - wDone);
    M2N_RETURN_IF_ERROR(sameElements(
        to.rank, from.rank, {from.binding + i, reads[r].first + rDone, take},
        {to.binding + j, writes[w].first + wDone, take}, to.fileOffset));
    rDone += take;
    wDone += take;
    if (rDone == reads[r].second)
      ++r, rDone = 0;
    if (wDone == writes[w].second)
      ++w, wDone = 0;
  }
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

// `from`'s bytes land on bytes [at, at + from.bytes) of side `index`: the
// same elements, member by member, and kept as a write of its binding.
m2n_status_t Dataflow::write(const Piece &from, uint32_t index, uint64_t at) {
  const Side &source = sides_[from.side];
  const Side &to = sides_[index];
  uint64_t order = from.order, left = from.bytes;
  while (left > 0) {
    auto i = static_cast<uint32_t>(order / source.bytes);
    auto j = static_cast<uint32_t>(at / to.bytes);
    uint64_t a = order % source.bytes, b = at % to.bytes;
    if (a == 0 && b == 0 && source.bytes == to.bytes && left >= to.bytes) {
      // Whole members on both sides: as many as follow.
      auto whole = static_cast<uint32_t>(left / to.bytes);
      for (uint32_t k = 0; k < whole; ++k)
        if (!sameBox(source, i + k, to, j + k))
          M2N_RETURN_IF_ERROR(
              sameRuns(source, i + k, 0, to, j + k, 0, to.bytes));
      writes_[to.rank].push_back({index, j, j + whole, 0, to.bytes});
      order += whole * to.bytes;
      at += whole * to.bytes;
      left -= whole * to.bytes;
      continue;
    }
    uint64_t take = std::min({left, source.bytes - a, to.bytes - b});
    M2N_RETURN_IF_ERROR(sameRuns(source, i, a, to, j, b, take));
    writes_[to.rank].push_back({index, j, j + 1, b, take});
    order += take;
    at += take;
    left -= take;
  }
  return nullptr;
}

/// A COPY, PACK or UNPACK record's binding side: the from side of COPY
/// and PACK, the to side of UNPACK.
uint32_t recordBinding(const Instruction &inst, bool onFrom) {
  return onFrom ? inst.runs.from_binding : inst.runs.to_binding;
}

m2n_status_t Dataflow::followCopies(uint32_t rank) {
  for (; next_[rank] != end_[rank] && next_[rank]->opcode == M2N_OP_COPY;
       ++next_[rank]) {
    const Instruction &inst = *next_[rank];
    uint32_t members = inst.runs.members;
    uint32_t from = addSide(rank, inst.runs.from_binding, members, true,
                            walkOf(inst), inst.fileOffset);
    uint32_t to = addSide(rank, inst.runs.to_binding, members, false,
                          walkOf(inst), inst.fileOffset);
    M2N_RETURN_IF_ERROR(
        write({0, members * sides_[from].bytes, from, 0}, to, 0));
  }
  return nullptr;
}

// Collects what `rank`, whose stream is at a STEP, does in that step.
m2n_status_t Dataflow::readStep(uint32_t rank) {
  RankStep &work = steps_[rank];
  work = RankStep();
  for (++next_[rank];
       next_[rank] != end_[rank] && next_[rank]->opcode != M2N_OP_STEP;
       ++next_[rank]) {
    const Instruction &inst = *next_[rank];
    const m2n_plan_transfer_t &t = inst.transfer;
    switch (inst.opcode) {
    case M2N_OP_PACK:
    case M2N_OP_UNPACK: {
      bool pack = inst.opcode == M2N_OP_PACK;
      uint32_t side = addSide(rank, recordBinding(inst, pack),
                              inst.runs.members, pack, walkOf(inst),
                              inst.fileOffset);
      if (pack) {
        work.packed.push_back({inst.runs.to_offset,
                               inst.runs.members * sides_[side].bytes, side,
                               0});
        noteRead(side);
      } else {
        work.unpacks.push_back(side);
      }
      break;
    }
    case M2N_OP_SEND:
    case M2N_OP_SEND_DIRECT: {
      bool direct = inst.opcode == M2N_OP_SEND_DIRECT;
      uint32_t side = direct ? addSpan(rank, inst, true) : 0;
      if (direct)
        noteRead(side);
      work.sends.push_back({rank, t.peer, direct, side, t.staging_offset,
                            t.bytes, inst.fileOffset});
      break;
    }
    case M2N_OP_RECV:
    case M2N_OP_RECV_DIRECT: {
      bool direct = inst.opcode == M2N_OP_RECV_DIRECT;
      work.receives.push_back({rank, t.peer, direct,
                               direct ? addSpan(rank, inst, false) : 0,
                               t.staging_offset, t.bytes, inst.fileOffset});
      break;
    }
    default:
      break; // validatePlan allows nothing else within a step
    }
  }
  auto byStaging = [](const Piece &x, const Piece &y) {
    return x.staging < y.staging;
  };
  std::sort(work.packed.begin(), work.packed.end(), byStaging);
  for (size_t i = 1; i < work.packed.size(); ++i)
    if (work.packed[i].staging <
        work.packed[i - 1].staging + work.packed[i - 1].bytes)
      return wrongInStep(rank, "packs staging byte ", work.packed[i].staging,
                         " twice");
  for (const Piece &piece : work.packed)
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
  std::vector<std::pair<const Transfer *, std::vector<Piece>>> landed;
  for (uint32_t rank : active_)
    for (const Transfer &receive : steps_[rank].receives) {
      const Transfer &send = *sent[{receive.peer, rank}][taken[{receive.peer,
                                                                 rank}]++];
      std::vector<Piece> pieces;
      if (send.direct)
        pieces.push_back({0, send.bytes, send.side, 0});
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
    for (Piece &piece : pieces) {
      if (receive->direct) {
        M2N_RETURN_IF_ERROR(write(piece, receive->side, at - receive->offset));
      } else {
        piece.staging = at;
        stage(staging_[rank], piece);
      }
      at += piece.bytes;
    }
  }
  return nullptr;
}

m2n_status_t Dataflow::traceUnpacks(uint32_t rank) {
  std::vector<Piece> pieces;
  for (uint32_t index : steps_[rank].unpacks) {
    const Side &unpack = sides_[index];
    uint64_t begin = static_cast<uint64_t>(unpack.walk.fromOffset);
    uint64_t bytes = unpack.members * unpack.bytes;
    pieces.clear();
    if (!cover(staging_[rank], begin, bytes, pieces))
      return wrong(rank, unpack.fileOffset, "unpacks staging bytes ", begin,
                   " to ", begin + bytes, " that hold nothing the plan wrote");
    for (const Piece &piece : pieces)
      M2N_RETURN_IF_ERROR(write(piece, index, piece.staging - begin));
  }
  return nullptr;
}

/// A run of a destination binding that a write or read moves.
struct Access {
  uint64_t offset = 0;
  uint64_t bytes = 0;
  int64_t step = 0;
  uint64_t fileOffset = 0; // of the instruction
};

/// For each binding, the refs of `refs` that touch it, by binding.
std::vector<std::pair<uint32_t, uint32_t>>
byBinding(const std::vector<Ref> &refs, const std::vector<Side> &sides) {
  std::vector<std::pair<uint32_t, uint32_t>> uses;
  for (uint32_t r = 0; r < refs.size(); ++r)
    for (uint32_t m = refs[r].memberBegin; m < refs[r].memberEnd; ++m)
      uses.emplace_back(sides[refs[r].side].binding + m, r);
  std::sort(uses.begin(), uses.end());
  return uses;
}

// Every destination byte written once; relays read only what an earlier
// step wrote. The members of a group are written by the same records at
// the same offsets: a binding whose writes are those of the one before,
// with its size and no reads, has its result.
m2n_status_t Dataflow::checkWrites(uint32_t rank) {
  const std::vector<Ref> &refs = writes_[rank];
  const std::vector<Ref> &readRefs = reads_[rank];
  auto writes = byBinding(refs, sides_), reads = byBinding(readRefs, sides_);
  auto accesses = [&](const std::vector<Ref> &from, auto begin, auto end) {
    std::vector<Access> out;
    for (auto it = begin; it != end; ++it) {
      const Ref &ref = from[it->second];
      const Side &side = sides_[ref.side];
      bindingRuns(side, ref.begin, ref.bytes,
                  [&](uint64_t offset, uint64_t bytes) {
                    out.push_back({offset, bytes, side.step, side.fileOffset});
                  });
    }
    return out;
  };
  // The writes of the binding checked last, as (side, begin, bytes).
  std::vector<std::tuple<uint32_t, uint64_t, uint64_t>> last, these;
  uint64_t lastSize = 0;
  const m2n_plan_rank_header_t *header = plan_.rankHeader(rank);
  uint32_t bindings = header ? header->binding_count : 0;
  auto w = writes.begin(), r = reads.begin();
  for (uint32_t b = 0; b < bindings; ++b) {
    auto wEnd = w, rEnd = r;
    while (wEnd != writes.end() && wEnd->first == b)
      ++wEnd;
    while (rEnd != reads.end() && rEnd->first == b)
      ++rEnd;
    const Binding &binding = plan_.binding(rank, b);
    if (binding.role != M2N_ROLE_DESTINATION) {
      w = wEnd, r = rEnd;
      continue;
    }
    these.clear();
    for (auto it = w; it != wEnd; ++it) {
      const Ref &ref = refs[it->second];
      these.emplace_back(ref.side, ref.begin, ref.bytes);
    }
    if (r == rEnd && !these.empty() && these == last &&
        lastSize == binding.byte_size) {
      w = wEnd;
      continue;
    }
    std::vector<Access> written = accesses(refs, w, wEnd);
    std::sort(written.begin(), written.end(),
              [](const Access &x, const Access &y) {
                return x.offset < y.offset;
              });
    uint64_t covered = 0;
    for (const Access &access : written) {
      if (access.offset < covered)
        return wrong(rank, access.fileOffset, "writes byte ", access.offset,
                     " of binding ", b, " (tensor ",
                     quoteName(plan_.tensorName(binding.tensor)),
                     ") a second time");
      if (access.offset > covered)
        break;
      covered = access.offset + access.bytes;
    }
    if (covered != binding.byte_size)
      return m2n_status_create(
          M2N_STATUS_DATA_LOSS,
          concat(plan_.source(), ": rank ", rank, " binding ", b, " (tensor ",
                 quoteName(plan_.tensorName(binding.tensor)), "): byte ",
                 covered, " of ", binding.byte_size, " is never written")
              .c_str());
    for (const Access &read : accesses(readRefs, r, rEnd)) {
      // Writes are disjoint and cover the binding: walk those it spans.
      auto it = std::upper_bound(written.begin(), written.end(), read.offset,
                                 [](uint64_t offset, const Access &x) {
                                   return offset < x.offset;
                                 });
      for (--it; it != written.end() && it->offset < read.offset + read.bytes;
           ++it)
        if (it->step >= read.step)
          return wrong(rank, read.fileOffset, "step ", read.step,
                       " forwards bytes of binding ", b,
                       " that reach it only in step ", it->step);
    }
    std::swap(last, these);
    lastSize = binding.byte_size;
    w = wEnd, r = rEnd;
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
    InstructionRange range = plan_.records(rank);
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
