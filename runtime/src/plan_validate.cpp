//===- plan_validate.cpp - Every check a plan passes before it loads ------===//
//
// The executor trusts a loaded plan completely, so this file is the one
// place that keeps a bad file from reading or writing out of bounds. The
// checks go from the outside in: the preamble (magic, version, sizes, hash),
// the layout of the sections, the tensors, each rank's section, and last
// the messages between ranks. Every read of the file is preceded by a
// check that it lies within the file, and all arithmetic on file values is
// overflow-checked.
//
//===----------------------------------------------------------------------===//

#include "plan_internal.h"

#include "m2n/plan_writer.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

namespace m2n {
namespace {

constexpr uint64_t kAlignment = M2N_PLAN_ALIGNMENT;
constexpr uint64_t kHeaderSize = sizeof(m2n_plan_header_t);

// Whether [offset, offset + size) lies within [0, limit), without overflow.
bool fits(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

// "[begin, end)", or "[begin, +size)" when the end does not fit 64 bits.
std::string byteRange(uint64_t begin, uint64_t size) {
  if (size > UINT64_MAX - begin)
    return concat("[", begin, ", +", size, ")");
  return concat("[", begin, ", ", begin + size, ")");
}

// "[a, b, c]".
std::string dims(const int64_t *values, uint32_t count) {
  std::string text = "[";
  for (uint32_t i = 0; i < count; ++i)
    text += concat(i ? ", " : "", values[i]);
  return text + "]";
}

bool allZero(const void *bytes, size_t size) {
  const auto *begin = static_cast<const uint8_t *>(bytes);
  return std::all_of(begin, begin + size, [](uint8_t b) { return b == 0; });
}

const char *roleName(uint8_t role) {
  return role == M2N_ROLE_SOURCE ? "source" : "destination";
}

// A part of the file that no other part may overlap.
struct Region {
  uint64_t begin;
  uint64_t end;
  std::string name;
};

// One side of a message, for matching senders with receivers.
struct Transfer {
  uint64_t step;
  uint32_t sender;
  uint32_t receiver;
  uint32_t rank;       // whose record it is
  uint32_t index;      // of the record among the rank's instructions
  uint64_t fileOffset; // of the record
  uint64_t bytes;

  auto key() const { return std::make_tuple(step, sender, receiver); }
};

// What a rank's walk through its instructions has seen so far.
struct RankState {
  uint32_t rank = 0;
  uint64_t sectionOffset = 0;
  m2n_plan_rank_header_t header = {};
  std::vector<Binding> bindings;
  /// Whether some binding names each box.
  std::vector<bool> boxUsed;
  bool inStep = false;
  uint64_t step = 0;
  // Within a step: 0 while PACKs may come, 1 once transfers began, 2 once
  // UNPACKs began.
  int phase = 0;
  uint64_t sent = 0;
  uint64_t received = 0;
};

// Where a walk goes on one side: a binding, or the staging buffer.
struct Side {
  std::string name; // "binding 2" or "staging"
  uint64_t size;
  bool staging;
};

class Validator {
public:
  Validator(const std::string &source, const uint8_t *data, uint64_t size)
      : source_(source), data_(data), size_(size) {}

  m2n_status_t validate() {
    M2N_RETURN_IF_ERROR(checkPreamble());
    M2N_RETURN_IF_ERROR(checkHeader());
    M2N_RETURN_IF_ERROR(checkLayout());
    M2N_RETURN_IF_ERROR(checkTensors());
    for (uint32_t rank = 0; rank < header_.world_size; ++rank)
      M2N_RETURN_IF_ERROR(checkRank(rank));
    M2N_RETURN_IF_ERROR(checkStepsUsed());
    return checkMessagesMatch();
  }

private:
  template <typename... Args>
  m2n_status_t fail(m2n_status_code_t code, const Args &...parts) const {
    return m2n_status_create(code, concat(source_, ": ", parts...).c_str());
  }
  template <typename... Args> m2n_status_t corrupt(const Args &...parts) const {
    return fail(M2N_STATUS_DATA_LOSS, parts...);
  }
  template <typename... Args>
  m2n_status_t badInstruction(const RankState &state, uint32_t index,
                              const Instruction &inst,
                              const Args &...parts) const {
    return corrupt("rank ", state.rank, " instruction ", index, " at byte ",
                   inst.fileOffset, ": ", parts...);
  }

  m2n_status_t checkPreamble();
  m2n_status_t checkHeader();
  m2n_status_t checkTable(const char *name, size_t field, uint64_t offset,
                          uint64_t count, uint64_t entrySize);
  m2n_status_t checkLayout();
  m2n_status_t checkTensors();
  m2n_status_t checkTensor(uint32_t index,
                           std::map<std::string_view, uint32_t> &names);
  m2n_status_t checkRank(uint32_t rank);
  m2n_status_t checkRankHeader(RankState &state, uint64_t sectionSize);
  m2n_status_t
  checkBinding(RankState &state, uint32_t index,
               std::map<std::pair<uint32_t, uint8_t>, uint32_t> &seen);
  /// The byte of the file where box `box` of the rank's table starts (the
  /// box count gives where the bindings start).
  uint64_t boxAt(const RankState &state, uint32_t box) const;
  m2n_status_t checkInstructions(RankState &state);
  m2n_status_t checkInstruction(RankState &state, uint32_t index,
                                const Instruction &inst);
  m2n_status_t checkOrder(RankState &state, uint32_t index,
                          const Instruction &inst);
  m2n_status_t checkRuns(const RankState &state, uint32_t index,
                         const Instruction &inst);
  m2n_status_t checkMemberRuns(const RankState &state, uint32_t index,
                               const Instruction &inst);
  m2n_status_t checkBindingOperand(const RankState &state, uint32_t index,
                                   const Instruction &inst, uint32_t binding,
                                   bool writes, Side *side);
  m2n_status_t checkWalk(const RankState &state, uint32_t index,
                         const Instruction &inst, const Side &side,
                         uint64_t offset, const int64_t *strides, bool writes);
  m2n_status_t checkTransfer(RankState &state, uint32_t index,
                             const Instruction &inst);
  m2n_status_t checkMessagesMatch();
  m2n_status_t checkStepsUsed();

  const std::string &source_;
  const uint8_t *data_;
  uint64_t size_;
  // Whether this runtime knows the file's minor version, so that reserved
  // fields must be zero and records exact.
  bool knownMinor_ = true;
  m2n_plan_header_t header_ = {};
  std::vector<m2n_plan_tensor_t> tensors_;
  std::vector<Transfer> sends_;
  std::vector<Transfer> receives_;
  /// STEP records of all ranks.
  uint64_t stepRecords_ = 0;
};

//===----------------------------------------------------------------------===//
// Preamble, header and layout
//===----------------------------------------------------------------------===//

m2n_status_t Validator::checkPreamble() {
  constexpr size_t kMagicSize = sizeof(header_.magic);
  constexpr size_t kVersionEnd = offsetof(m2n_plan_header_t, header_size);
  // A prefix of the magic is a truncated plan; anything else is no plan.
  size_t compared = std::min<uint64_t>(size_, kMagicSize);
  if (compared != 0 && std::memcmp(data_, M2N_PLAN_MAGIC, compared) != 0)
    return fail(M2N_STATUS_INVALID_ARGUMENT, "not an m2n plan (bad magic)");
  auto truncatedHeader = [&] {
    return corrupt("truncated: file has ", size_, " bytes, a plan header has ",
                   kHeaderSize);
  };
  if (size_ < kVersionEnd)
    return truncatedHeader();
  auto major =
      readAt<uint16_t>(data_, offsetof(m2n_plan_header_t, version_major));
  auto minor =
      readAt<uint16_t>(data_, offsetof(m2n_plan_header_t, version_minor));
  if (major != M2N_PLAN_VERSION_MAJOR)
    return fail(M2N_STATUS_UNIMPLEMENTED, "plan format version ", major, ".",
                minor, " is not supported; this runtime reads version ",
                M2N_PLAN_VERSION_MAJOR, ".x");
  knownMinor_ = minor <= M2N_PLAN_VERSION_MINOR;
  if (size_ < kHeaderSize)
    return truncatedHeader();
  header_ = readAt<m2n_plan_header_t>(data_, 0);
  if (header_.file_size > size_)
    return corrupt("truncated: header says ", header_.file_size,
                   " bytes, file has ", size_);
  if (header_.file_size < size_)
    return corrupt("trailing bytes: header says ", header_.file_size,
                   " bytes, file has ", size_);
  uint64_t hash = planContentHash(data_, size_);
  if (hash != header_.content_hash)
    return corrupt("content hash mismatch (file corrupted): header says ",
                   hex64(header_.content_hash), ", content hashes to ",
                   hex64(hash));
  return nullptr;
}

m2n_status_t Validator::checkHeader() {
  uint32_t headerSize = header_.header_size;
  bool sizeOk = knownMinor_ ? headerSize == kHeaderSize
                            : headerSize >= kHeaderSize &&
                                  headerSize % 8 == 0 && headerSize <= size_;
  if (!sizeOk)
    return corrupt("header at byte ", offsetof(m2n_plan_header_t, header_size),
                   ": header_size ", headerSize, ", expected ", kHeaderSize);
  if (knownMinor_ && header_.flags != 0)
    return corrupt("header at byte ", offsetof(m2n_plan_header_t, flags),
                   ": flags ", hex64(header_.flags), " set; version ",
                   M2N_PLAN_VERSION_MAJOR, ".", M2N_PLAN_VERSION_MINOR,
                   " defines none");
  if (knownMinor_ && !allZero(header_.reserved, sizeof(header_.reserved)))
    return corrupt("header at byte ", offsetof(m2n_plan_header_t, reserved),
                   ": reserved bytes are not zero");
  if (header_.world_size == 0)
    return corrupt("header at byte ", offsetof(m2n_plan_header_t, world_size),
                   ": world_size is 0");
  return nullptr;
}

m2n_status_t Validator::checkTable(const char *name, size_t field,
                                   uint64_t offset, uint64_t count,
                                   uint64_t entrySize) {
  if (offset % kAlignment != 0)
    return corrupt("header at byte ", field, ": ", name, " offset ", offset,
                   " is not a multiple of ", kAlignment);
  // Counts are 32-bit, or entries single bytes: this cannot overflow.
  uint64_t bytes = count * entrySize;
  if (!fits(offset, bytes, size_))
    return corrupt("header at byte ", field, ": ", name, " ",
                   byteRange(offset, bytes), " runs past the end of the file (",
                   size_, " bytes)");
  return nullptr;
}

m2n_status_t Validator::checkLayout() {
  M2N_RETURN_IF_ERROR(
      checkTable("string table", offsetof(m2n_plan_header_t, strings_offset),
                 header_.strings_offset, header_.strings_size, 1));
  M2N_RETURN_IF_ERROR(checkTable(
      "tensor table", offsetof(m2n_plan_header_t, tensors_offset),
      header_.tensors_offset, header_.tensor_count, sizeof(m2n_plan_tensor_t)));
  M2N_RETURN_IF_ERROR(checkTable(
      "rank directory", offsetof(m2n_plan_header_t, ranks_offset),
      header_.ranks_offset, header_.world_size, sizeof(m2n_plan_rank_entry_t)));

  std::vector<Region> regions = {
      {0, header_.header_size, "header"},
      {header_.strings_offset, header_.strings_offset + header_.strings_size,
       "string table"},
      {header_.tensors_offset,
       header_.tensors_offset +
           uint64_t(header_.tensor_count) * sizeof(m2n_plan_tensor_t),
       "tensor table"},
      {header_.ranks_offset,
       header_.ranks_offset +
           uint64_t(header_.world_size) * sizeof(m2n_plan_rank_entry_t),
       "rank directory"},
  };
  for (uint32_t rank = 0; rank < header_.world_size; ++rank) {
    uint64_t at = header_.ranks_offset + rank * sizeof(m2n_plan_rank_entry_t);
    auto entry = readAt<m2n_plan_rank_entry_t>(data_, at);
    std::string where = concat("rank directory entry ", rank, " at byte ", at);
    if (entry.offset == 0) {
      if (entry.size != 0)
        return corrupt(where, ": no section (offset 0) but size ", entry.size);
      continue;
    }
    if (entry.offset % kAlignment != 0)
      return corrupt(where, ": section offset ", entry.offset,
                     " is not a multiple of ", kAlignment);
    if (entry.size < sizeof(m2n_plan_rank_header_t))
      return corrupt(where, ": section of ", entry.size,
                     " bytes is smaller than a rank header (",
                     sizeof(m2n_plan_rank_header_t), ")");
    if (!fits(entry.offset, entry.size, size_))
      return corrupt(where, ": section ", byteRange(entry.offset, entry.size),
                     " runs past the end of the file (", size_, " bytes)");
    regions.push_back({entry.offset, entry.offset + entry.size,
                       concat("rank ", rank, " section")});
  }

  // Sorted by start, a region overlaps an earlier one exactly when it
  // starts before the furthest end seen so far.
  regions.erase(
      std::remove_if(regions.begin(), regions.end(),
                     [](const Region &r) { return r.begin == r.end; }),
      regions.end());
  std::stable_sort(
      regions.begin(), regions.end(),
      [](const Region &a, const Region &b) { return a.begin < b.begin; });
  const Region *furthest = nullptr;
  for (const Region &region : regions) {
    if (furthest && region.begin < furthest->end)
      return corrupt("layout: ", region.name, " [", region.begin, ", ",
                     region.end, ") overlaps ", furthest->name, " [",
                     furthest->begin, ", ", furthest->end, ")");
    if (!furthest || region.end > furthest->end)
      furthest = &region;
  }
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

m2n_status_t Validator::checkTensors() {
  tensors_.reserve(header_.tensor_count);
  std::map<std::string_view, uint32_t> names;
  for (uint32_t i = 0; i < header_.tensor_count; ++i)
    M2N_RETURN_IF_ERROR(checkTensor(i, names));
  return nullptr;
}

m2n_status_t
Validator::checkTensor(uint32_t index,
                       std::map<std::string_view, uint32_t> &names) {
  uint64_t at = header_.tensors_offset + index * sizeof(m2n_plan_tensor_t);
  auto tensor = readAt<m2n_plan_tensor_t>(data_, at);
  std::string where = concat("tensor ", index, " at byte ", at, ": ");
  if (tensor.dtype >= M2N_DTYPE_COUNT)
    return corrupt(where, "dtype ", tensor.dtype, " is not a known dtype");
  auto dtype = static_cast<m2n_dtype_t>(tensor.dtype);
  if (tensor.rank > M2N_PLAN_MAX_RANK)
    return corrupt(where, "rank ", tensor.rank, " exceeds ", M2N_PLAN_MAX_RANK,
                   " dimensions");
  if (knownMinor_ && !allZero(tensor.reserved, sizeof(tensor.reserved)))
    return corrupt(where, "reserved bytes are not zero");
  // The volume in bytes must fit int64_t, so that no shard's size can
  // overflow either.
  int64_t bytes = m2n_dtype_size(dtype);
  for (uint32_t d = 0; d < M2N_PLAN_MAX_RANK; ++d) {
    int64_t extent = tensor.shape[d];
    if (d >= tensor.rank && extent != 0)
      return corrupt(where, "unused dimension ", d, " is ", extent, ", not 0");
    if (d < tensor.rank && extent < 0)
      return corrupt(where, "dimension ", d, " is negative (", extent, ")");
    if (d < tensor.rank && __builtin_mul_overflow(bytes, extent, &bytes))
      return corrupt(where, "size ", dims(tensor.shape, tensor.rank), " of ",
                     m2n_dtype_name(dtype), " overflows 64 bits");
  }

  if (tensor.name_size == 0)
    return corrupt(where, "empty name");
  if (!fits(tensor.name_offset, tensor.name_size, header_.strings_size))
    return corrupt(
        where, "name ", byteRange(tensor.name_offset, tensor.name_size),
        " lies outside the string table (", header_.strings_size, " bytes)");
  std::string_view name(reinterpret_cast<const char *>(data_ +
                                                       header_.strings_offset +
                                                       tensor.name_offset),
                        tensor.name_size);
  if (name.find('\0') != std::string_view::npos)
    return corrupt(where, "name ", quoteName(name), " contains a NUL byte");
  if (name == "__metadata__")
    return corrupt(where, "name \"__metadata__\" is the key safetensors "
                          "files keep for metadata");
  auto [it, inserted] = names.emplace(name, index);
  if (!inserted)
    return corrupt(where, "name ", quoteName(name), " repeats tensor ",
                   it->second);
  tensors_.push_back(tensor);
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Ranks and bindings
//===----------------------------------------------------------------------===//

m2n_status_t Validator::checkRank(uint32_t rank) {
  auto entry = readAt<m2n_plan_rank_entry_t>(
      data_, header_.ranks_offset + rank * sizeof(m2n_plan_rank_entry_t));
  if (entry.offset == 0)
    return nullptr;
  RankState state;
  state.rank = rank;
  state.sectionOffset = entry.offset;
  state.header = readAt<m2n_plan_rank_header_t>(data_, entry.offset);
  M2N_RETURN_IF_ERROR(checkRankHeader(state, entry.size));

  std::map<std::pair<uint32_t, uint8_t>, uint32_t> seen;
  state.bindings.reserve(state.header.binding_count);
  state.boxUsed.assign(state.header.box_count, false);
  for (uint32_t i = 0; i < state.header.binding_count; ++i)
    M2N_RETURN_IF_ERROR(checkBinding(state, i, seen));
  for (uint32_t box = 0; box < state.header.box_count; ++box)
    if (!state.boxUsed[box])
      return corrupt("rank ", state.rank, " box ", box, " at byte ",
                     boxAt(state, box), ": no binding names it");
  return checkInstructions(state);
}

m2n_status_t Validator::checkRankHeader(RankState &state,
                                        uint64_t sectionSize) {
  const m2n_plan_rank_header_t &header = state.header;
  std::string where = concat("rank ", state.rank, " section at byte ",
                             state.sectionOffset, ": ");
  if (header.rank != state.rank)
    return corrupt(where, "header says rank ", header.rank);
  if (knownMinor_ && header.reserved1 != 0)
    return corrupt(where, "reserved fields are not zero");
  // checkLayout made sure the section holds at least this header.
  uint64_t room = sectionSize - sizeof(m2n_plan_rank_header_t);
  if (header.box_count > room / sizeof(m2n_plan_box_t))
    return corrupt(where, header.box_count, " boxes of ",
                   sizeof(m2n_plan_box_t), " bytes overrun the section (",
                   sectionSize, " bytes)");
  room -= uint64_t(header.box_count) * sizeof(m2n_plan_box_t);
  if (header.binding_count > room / sizeof(m2n_plan_binding_t))
    return corrupt(where, header.binding_count, " bindings of ",
                   sizeof(m2n_plan_binding_t), " bytes overrun the section (",
                   sectionSize, " bytes)");
  uint64_t bindingsEnd =
      sizeof(m2n_plan_rank_header_t) +
      uint64_t(header.box_count) * sizeof(m2n_plan_box_t) +
      uint64_t(header.binding_count) * sizeof(m2n_plan_binding_t);
  uint64_t begin = header.instructions_offset;
  if (begin % 8 != 0 || begin < bindingsEnd ||
      (knownMinor_ && begin != bindingsEnd))
    return corrupt(where, "instructions_offset ", begin, ", expected ",
                   bindingsEnd, " (right after the bindings)");
  if (begin > sectionSize || header.instruction_bytes != sectionSize - begin)
    return corrupt(where, "instructions ",
                   byteRange(begin, header.instruction_bytes),
                   " do not end the section (", sectionSize, " bytes)");
  return nullptr;
}

m2n_status_t Validator::checkBinding(
    RankState &state, uint32_t index,
    std::map<std::pair<uint32_t, uint8_t>, uint32_t> &seen) {
  uint64_t at = boxAt(state, state.header.box_count) +
                uint64_t(index) * sizeof(m2n_plan_binding_t);
  auto stored = readAt<m2n_plan_binding_t>(data_, at);
  std::string where =
      concat("rank ", state.rank, " binding ", index, " at byte ", at, ": ");
  if (stored.box >= state.header.box_count)
    return corrupt(where, "box ", stored.box, " out of range (the rank has ",
                   state.header.box_count, " boxes)");
  Binding binding = decodeBinding(data_, at, boxAt(state, 0));
  if (binding.tensor >= header_.tensor_count)
    return corrupt(where, "tensor ", binding.tensor,
                   " out of range (the plan has ", header_.tensor_count,
                   " tensors)");
  if (binding.role != M2N_ROLE_SOURCE && binding.role != M2N_ROLE_DESTINATION)
    return corrupt(where, "role ", binding.role,
                   " is neither source (1) nor destination (2)");
  if (knownMinor_ && (!allZero(stored.reserved, sizeof(stored.reserved)) ||
                      stored.reserved2 != 0))
    return corrupt(where, "reserved bytes are not zero");

  const m2n_plan_tensor_t &tensor = tensors_[binding.tensor];
  std::string tensorName =
      concat("tensor ", binding.tensor, " ",
             quoteName(std::string_view(
                 reinterpret_cast<const char *>(data_ + header_.strings_offset +
                                                tensor.name_offset),
                 tensor.name_size)));
  int64_t volume = 1;
  for (uint32_t d = 0; d < M2N_PLAN_MAX_RANK; ++d) {
    int64_t offset = binding.offset[d], extent = binding.shape[d];
    if (d >= tensor.rank) {
      if (offset != 0 || extent != 0)
        return corrupt(where, "unused dimension ", d, " of box ", stored.box,
                       " is not 0");
      continue;
    }
    // Within the tensor, so the volume cannot overflow (the tensor's
    // cannot).
    if (offset < 0 || extent < 0 || offset > tensor.shape[d] ||
        extent > tensor.shape[d] - offset)
      return corrupt(where, "box at ", dims(binding.offset, tensor.rank),
                     " of shape ", dims(binding.shape, tensor.rank),
                     " lies outside ", tensorName, " ",
                     dims(tensor.shape, tensor.rank));
    volume *= extent;
  }
  auto dtype = static_cast<m2n_dtype_t>(tensor.dtype);
  uint64_t expected = static_cast<uint64_t>(volume * m2n_dtype_size(dtype));
  if (binding.byte_size != expected)
    return corrupt(where, "byte_size ", binding.byte_size, ", but ", volume,
                   " ", m2n_dtype_name(dtype), " elements take ", expected,
                   " bytes");
  auto [it, inserted] =
      seen.emplace(std::make_pair(binding.tensor, binding.role), index);
  if (!inserted)
    return corrupt(where, "a second ", roleName(binding.role), " binding of ",
                   tensorName, " (binding ", it->second, " is the first)");
  state.boxUsed[stored.box] = true;
  state.bindings.push_back(binding);
  return nullptr;
}

uint64_t Validator::boxAt(const RankState &state, uint32_t box) const {
  return state.sectionOffset + sizeof(m2n_plan_rank_header_t) +
         uint64_t(box) * sizeof(m2n_plan_box_t);
}

//===----------------------------------------------------------------------===//
// Instructions
//===----------------------------------------------------------------------===//

m2n_status_t Validator::checkInstructions(RankState &state) {
  uint64_t offset = state.sectionOffset + state.header.instructions_offset;
  uint64_t end = offset + state.header.instruction_bytes;
  uint32_t index = 0;
  for (; offset < end; ++index) {
    Instruction inst;
    std::string problem =
        decodeInstruction(data_, offset, end, knownMinor_, &inst);
    if (!problem.empty())
      return corrupt("rank ", state.rank, " instruction ", index, " at byte ",
                     offset, ": ", problem);
    M2N_RETURN_IF_ERROR(checkInstruction(state, index, inst));
    offset += inst.recordSize;
  }
  std::string where = concat("rank ", state.rank, " section at byte ",
                             state.sectionOffset, ": ");
  if (index != state.header.instruction_count)
    return corrupt(where, "header says ", state.header.instruction_count,
                   " instructions, the stream holds ", index);
  if (state.sent != state.header.send_bytes)
    return corrupt(where, "send_bytes ", state.header.send_bytes,
                   ", but its sends carry ", state.sent, " bytes");
  if (state.received != state.header.receive_bytes)
    return corrupt(where, "receive_bytes ", state.header.receive_bytes,
                   ", but its receives carry ", state.received, " bytes");
  return nullptr;
}

m2n_status_t Validator::checkInstruction(RankState &state, uint32_t index,
                                         const Instruction &inst) {
  M2N_RETURN_IF_ERROR(checkOrder(state, index, inst));
  switch (inst.opcode) {
  case M2N_OP_STEP:
    return nullptr;
  case M2N_OP_COPY:
  case M2N_OP_PACK:
  case M2N_OP_UNPACK:
    return checkRuns(state, index, inst);
  case M2N_OP_SEND:
  case M2N_OP_RECV:
  case M2N_OP_SEND_DIRECT:
  case M2N_OP_RECV_DIRECT:
    return checkTransfer(state, index, inst);
  }
  return nullptr; // decodeInstruction accepts no other opcode
}

// COPYs, then steps in increasing order, each PACKs, transfers, UNPACKs.
m2n_status_t Validator::checkOrder(RankState &state, uint32_t index,
                                   const Instruction &inst) {
  const char *name = opcodeName(inst.opcode);
  if (inst.opcode == M2N_OP_STEP) {
    if (inst.step >= header_.step_count)
      return badInstruction(state, index, inst, "STEP ", inst.step,
                            ", but the plan has ", header_.step_count,
                            " steps");
    if (state.inStep && inst.step <= state.step)
      return badInstruction(state, index, inst, "STEP ", inst.step,
                            " after STEP ", state.step,
                            "; steps must increase");
    state.inStep = true;
    state.step = inst.step;
    ++stepRecords_;
    state.phase = 0;
    return nullptr;
  }
  if (inst.opcode == M2N_OP_COPY) {
    if (state.inStep)
      return badInstruction(state, index, inst,
                            "COPY after the first STEP; local copies come "
                            "before all steps");
    return nullptr;
  }
  if (!state.inStep)
    return badInstruction(state, index, inst, name, " before the first STEP");
  int phase = inst.opcode == M2N_OP_PACK     ? 0
              : inst.opcode == M2N_OP_UNPACK ? 2
                                             : 1;
  if (phase < state.phase)
    return badInstruction(state, index, inst, name, " after ",
                          state.phase == 2 ? "an UNPACK" : "a transfer",
                          " in step ", state.step,
                          "; a step runs its PACKs, then its transfers, then "
                          "its UNPACKs");
  state.phase = phase;
  return nullptr;
}

// Resolves a binding operand of a walk or transfer to the side it names.
m2n_status_t Validator::checkBindingOperand(const RankState &state,
                                            uint32_t index,
                                            const Instruction &inst,
                                            uint32_t binding, bool writes,
                                            Side *side) {
  const char *name = opcodeName(inst.opcode);
  if (binding >= state.bindings.size())
    return badInstruction(
        state, index, inst, name, writes ? " writes" : " reads", " binding ",
        binding, ", but the rank has ", state.bindings.size(), " bindings");
  uint8_t role = state.bindings[binding].role;
  if (writes && role != M2N_ROLE_DESTINATION)
    return badInstruction(state, index, inst, name, " writes binding ", binding,
                          ", a source binding; only destination bindings are "
                          "written");
  if (inst.opcode == M2N_OP_COPY && !writes && role != M2N_ROLE_SOURCE)
    return badInstruction(state, index, inst, "COPY reads binding ", binding,
                          ", a destination binding; COPY reads source "
                          "bindings");
  *side = {concat("binding ", binding), state.bindings[binding].byte_size,
           false};
  return nullptr;
}

// Each member is checked as a record of its own; the first member's check
// bounds the walk's bytes, which bounds where the others' staging starts.
m2n_status_t Validator::checkRuns(const RankState &state, uint32_t index,
                                  const Instruction &inst) {
  const char *name = opcodeName(inst.opcode);
  if (inst.runs.members == 0)
    return badInstruction(state, index, inst, name,
                          " has 0 members; a record moves at least one");
  if (knownMinor_ && inst.runs.reserved != 0)
    return badInstruction(state, index, inst, name,
                          " reserved field is not zero");
  uint32_t last = inst.runs.members - 1;
  if ((inst.opcode != M2N_OP_UNPACK &&
       inst.runs.from_binding > UINT32_MAX - last) ||
      (inst.opcode != M2N_OP_PACK && inst.runs.to_binding > UINT32_MAX - last))
    return badInstruction(state, index, inst, name, " of ", inst.runs.members,
                          " members names bindings past 2^32");
  M2N_RETURN_IF_ERROR(
      checkMemberRuns(state, index, memberInstruction(inst, 0)));
  uint64_t walkBytes = inst.runs.run_bytes;
  for (uint32_t i = 0; i < inst.levels; ++i)
    walkBytes *= static_cast<uint64_t>(inst.count[i]);
  uint64_t stagingOffset = inst.opcode == M2N_OP_PACK ? inst.runs.to_offset
                           : inst.opcode == M2N_OP_UNPACK
                               ? inst.runs.from_offset
                               : 0;
  for (uint32_t member = 1; member < inst.runs.members; ++member) {
    uint64_t shifted = 0;
    if (__builtin_mul_overflow(uint64_t(member), walkBytes, &shifted) ||
        __builtin_add_overflow(shifted, stagingOffset, &shifted) ||
        shifted > uint64_t(INT64_MAX))
      return badInstruction(state, index, inst, name, " member ", member,
                            " starts at a staging offset that overflows");
    M2N_RETURN_IF_ERROR(
        checkMemberRuns(state, index, memberInstruction(inst, member)));
  }
  return nullptr;
}

m2n_status_t Validator::checkMemberRuns(const RankState &state, uint32_t index,
                                        const Instruction &inst) {
  const m2n_plan_runs_t &runs = inst.runs;
  const char *name = opcodeName(inst.opcode);
  Side staging = {"staging", state.header.staging_bytes, true};
  Side from = staging, to = staging;
  if (inst.opcode == M2N_OP_UNPACK) {
    if (runs.from_binding != 0)
      return badInstruction(state, index, inst, "UNPACK from_binding ",
                            runs.from_binding,
                            ", must be 0 (UNPACK reads staging)");
  } else {
    M2N_RETURN_IF_ERROR(checkBindingOperand(state, index, inst,
                                            runs.from_binding, false, &from));
  }
  if (inst.opcode == M2N_OP_PACK) {
    if (runs.to_binding != 0)
      return badInstruction(state, index, inst, "PACK to_binding ",
                            runs.to_binding,
                            ", must be 0 (PACK writes staging)");
  } else {
    M2N_RETURN_IF_ERROR(
        checkBindingOperand(state, index, inst, runs.to_binding, true, &to));
  }

  if (runs.run_bytes == 0 || runs.run_bytes > uint64_t(INT64_MAX))
    return badInstruction(state, index, inst, name, " run_bytes ",
                          runs.run_bytes, " is out of range");
  int64_t total = static_cast<int64_t>(runs.run_bytes);
  for (uint32_t i = 0; i < inst.levels; ++i) {
    if (inst.count[i] < 1)
      return badInstruction(state, index, inst, name, " level ", i, " count ",
                            inst.count[i], " is not positive");
    if (__builtin_mul_overflow(total, inst.count[i], &total))
      return badInstruction(state, index, inst, name,
                            " moves more than 2^63 bytes");
  }
  M2N_RETURN_IF_ERROR(checkWalk(state, index, inst, from, runs.from_offset,
                                inst.fromStride, false));
  M2N_RETURN_IF_ERROR(
      checkWalk(state, index, inst, to, runs.to_offset, inst.toStride, true));
  // An injective walk cannot write more than its destination holds; this
  // also bounds the work of a COPY whose strides are 0.
  if (inst.opcode == M2N_OP_COPY && uint64_t(total) > to.size)
    return badInstruction(state, index, inst, "COPY moves ", total,
                          " bytes into ", to.name, ", which has ", to.size,
                          " bytes");
  return nullptr;
}

// The bytes that a walk touches on one side stay within that side; a
// staging side is also packed densely.
m2n_status_t Validator::checkWalk(const RankState &state, uint32_t index,
                                  const Instruction &inst, const Side &side,
                                  uint64_t offset, const int64_t *strides,
                                  bool writes) {
  const char *name = opcodeName(inst.opcode);
  const char *verb = writes ? " writes" : " reads";
  int64_t runBytes = static_cast<int64_t>(inst.runs.run_bytes);
  if (side.staging) {
    int64_t dense = runBytes;
    for (uint32_t i = inst.levels; i-- > 0;) {
      if (strides[i] != dense)
        return badInstruction(state, index, inst, name, " staging stride ",
                              strides[i], " at level ", i,
                              ", but a dense packing has ", dense);
      dense *= inst.count[i]; // cannot overflow: checkRuns bounded the total
    }
  }
  // The lowest and highest byte the walk touches, [low, high).
  bool overflow = offset > uint64_t(INT64_MAX);
  int64_t low = static_cast<int64_t>(offset), high = 0;
  overflow = overflow || __builtin_add_overflow(low, runBytes, &high);
  for (uint32_t i = 0; i < inst.levels && !overflow; ++i) {
    int64_t span = 0;
    overflow = __builtin_mul_overflow(inst.count[i] - 1, strides[i], &span) ||
               __builtin_add_overflow(span < 0 ? low : high, span,
                                      span < 0 ? &low : &high);
  }
  if (overflow)
    return badInstruction(state, index, inst, name, verb, " ", side.name,
                          " at offsets that overflow 64 bits");
  if (low < 0 || uint64_t(high) > side.size)
    return badInstruction(state, index, inst, name, verb, " bytes [", low, ", ",
                          high, ") of ", side.name, " which has ", side.size,
                          " bytes");
  return nullptr;
}

m2n_status_t Validator::checkTransfer(RankState &state, uint32_t index,
                                      const Instruction &inst) {
  const m2n_plan_transfer_t &transfer = inst.transfer;
  const char *name = opcodeName(inst.opcode);
  bool sends = inst.opcode == M2N_OP_SEND || inst.opcode == M2N_OP_SEND_DIRECT;
  bool direct =
      inst.opcode == M2N_OP_SEND_DIRECT || inst.opcode == M2N_OP_RECV_DIRECT;
  if (transfer.peer >= header_.world_size)
    return badInstruction(state, index, inst, name, " peer ", transfer.peer,
                          " is outside the world (", header_.world_size,
                          " ranks)");
  if (transfer.peer == state.rank)
    return badInstruction(state, index, inst, name, " peer is the rank itself");
  if (transfer.bytes == 0)
    return badInstruction(state, index, inst, name, " of 0 bytes");
  Side side = {"staging", state.header.staging_bytes, true};
  if (direct) {
    M2N_RETURN_IF_ERROR(checkBindingOperand(state, index, inst,
                                            transfer.binding, !sends, &side));
  } else if (transfer.binding != 0) {
    return badInstruction(state, index, inst, name, " binding ",
                          transfer.binding,
                          ", must be 0 (only DIRECT transfers name a "
                          "binding)");
  }
  if (!fits(transfer.staging_offset, transfer.bytes, side.size))
    return badInstruction(
        state, index, inst, name, sends ? " reads bytes " : " writes bytes ",
        byteRange(transfer.staging_offset, transfer.bytes), " of ", side.name,
        " which has ", side.size, " bytes");

  uint64_t &total = sends ? state.sent : state.received;
  if (__builtin_add_overflow(total, transfer.bytes, &total))
    return badInstruction(state, index, inst,
                          "the rank's transfers carry more than 2^64 bytes");
  Transfer record = {state.step,
                     sends ? state.rank : transfer.peer,
                     sends ? transfer.peer : state.rank,
                     state.rank,
                     index,
                     inst.fileOffset,
                     transfer.bytes};
  (sends ? sends_ : receives_).push_back(record);
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Messages between ranks
//===----------------------------------------------------------------------===//

// Readers size tables by the step count, so it must follow the file: no
// more steps than STEP records (a plan without any may have one).
m2n_status_t Validator::checkStepsUsed() {
  if (header_.step_count > std::max<uint64_t>(stepRecords_, 1))
    return corrupt("header: step_count ", header_.step_count, ", but the "
                   "ranks have ", stepRecords_, " STEP records");
  return nullptr;
}

// Within a step, the k-th send from a to b and the k-th receive of b from a
// are one message: sorted stably by (step, sender, receiver), the two lists
// pair up in order.
m2n_status_t Validator::checkMessagesMatch() {
  auto byKey = [](const Transfer &a, const Transfer &b) {
    return a.key() < b.key();
  };
  std::stable_sort(sends_.begin(), sends_.end(), byKey);
  std::stable_sort(receives_.begin(), receives_.end(), byKey);
  auto where = [](const Transfer &t) {
    return concat("rank ", t.rank, " instruction ", t.index, " at byte ",
                  t.fileOffset);
  };
  size_t s = 0, r = 0;
  while (s < sends_.size() || r < receives_.size()) {
    bool sendFirst = r == receives_.size() ||
                     (s < sends_.size() && byKey(sends_[s], receives_[r]));
    bool receiveFirst = s == sends_.size() || (r < receives_.size() &&
                                               byKey(receives_[r], sends_[s]));
    if (sendFirst) {
      const Transfer &send = sends_[s];
      return corrupt("step ", send.step, ": ", where(send), " sends ",
                     send.bytes, " bytes to rank ", send.receiver,
                     ", which has no matching receive");
    }
    if (receiveFirst) {
      const Transfer &receive = receives_[r];
      return corrupt("step ", receive.step, ": ", where(receive), " receives ",
                     receive.bytes, " bytes from rank ", receive.sender,
                     ", which has no matching send");
    }
    const Transfer &send = sends_[s++], &receive = receives_[r++];
    if (send.bytes != receive.bytes)
      return corrupt("step ", send.step, ": ", where(send), " sends ",
                     send.bytes, " bytes to rank ", send.receiver,
                     ", but its matching receive, ", where(receive), ", takes ",
                     receive.bytes, " bytes");
  }
  return nullptr;
}

} // namespace

m2n_status_t validatePlan(const std::string &source, const uint8_t *data,
                          uint64_t size) {
  return Validator(source, data, size).validate();
}

} // namespace m2n
