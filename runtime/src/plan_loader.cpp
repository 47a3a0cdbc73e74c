//===- plan_loader.cpp - Loading plans; the C API over loaded plans -------===//

#include "mapped_file.h"
#include "plan_internal.h"

#include <cstdlib>
#include <cstring>

#include <sys/mman.h>

namespace m2n {

//===----------------------------------------------------------------------===//
// Messages and instructions
//===----------------------------------------------------------------------===//

std::string hex64(uint64_t value) {
  static const char kDigits[] = "0123456789abcdef";
  std::string text = "0x0000000000000000";
  for (int i = 17; value; --i, value >>= 4)
    text[i] = kDigits[value & 0xf];
  return text;
}

const char *opcodeName(uint16_t opcode) {
  switch (opcode) {
  case M2N_OP_STEP:
    return "STEP";
  case M2N_OP_COPY:
    return "COPY";
  case M2N_OP_PACK:
    return "PACK";
  case M2N_OP_UNPACK:
    return "UNPACK";
  case M2N_OP_SEND:
    return "SEND";
  case M2N_OP_RECV:
    return "RECV";
  case M2N_OP_SEND_DIRECT:
    return "SEND_DIRECT";
  case M2N_OP_RECV_DIRECT:
    return "RECV_DIRECT";
  }
  return nullptr;
}

namespace {

bool hasRuns(uint16_t opcode) {
  return opcode == M2N_OP_COPY || opcode == M2N_OP_PACK ||
         opcode == M2N_OP_UNPACK;
}

// The operand bytes of a known opcode.
uint64_t operandBytes(uint16_t opcode, uint32_t levels) {
  if (opcode == M2N_OP_STEP)
    return sizeof(m2n_plan_step_t);
  if (hasRuns(opcode))
    return sizeof(m2n_plan_runs_t) + 3 * sizeof(int64_t) * uint64_t(levels);
  return sizeof(m2n_plan_transfer_t);
}

} // namespace

std::string decodeInstruction(const uint8_t *data, uint64_t offset,
                              uint64_t end, bool exact, Instruction *out) {
  uint64_t left = end - offset;
  if (left < sizeof(m2n_plan_instruction_t))
    return concat("truncated record: ", left,
                  " bytes left in the instruction stream");
  auto record = readAt<m2n_plan_instruction_t>(data, offset);
  if (record.size < sizeof(record) || record.size % 8 != 0)
    return concat("record size ", record.size,
                  " is not a positive multiple of 8");
  if (record.size > left)
    return concat("record of ", record.size,
                  " bytes runs past the end of the instructions (", left,
                  " bytes left)");
  const char *name = opcodeName(record.opcode);
  if (!name)
    return concat("unknown opcode ", record.opcode);
  if (!hasRuns(record.opcode) && record.levels != 0)
    return concat(name, " record has levels ", record.levels,
                  "; only COPY, PACK and UNPACK have levels");
  if (record.levels > M2N_PLAN_MAX_LEVELS)
    return concat(name, " record has levels ", record.levels, ", more than ",
                  M2N_PLAN_MAX_LEVELS);
  uint64_t needed = sizeof(record) + operandBytes(record.opcode, record.levels);
  if (record.size < needed || (exact && record.size != needed))
    return concat(name, " record of ", record.size, " bytes, expected ",
                  needed);

  Instruction inst;
  inst.opcode = static_cast<m2n_opcode_t>(record.opcode);
  inst.recordSize = record.size;
  inst.fileOffset = offset;
  uint64_t operands = offset + sizeof(record);
  if (inst.opcode == M2N_OP_STEP) {
    inst.step = readAt<m2n_plan_step_t>(data, operands).step;
  } else if (hasRuns(inst.opcode)) {
    inst.runs = readAt<m2n_plan_runs_t>(data, operands);
    inst.levels = record.levels;
    uint64_t arrays = operands + sizeof(m2n_plan_runs_t);
    uint64_t arrayBytes = sizeof(int64_t) * inst.levels;
    for (uint32_t i = 0; i < inst.levels; ++i) {
      uint64_t at = arrays + sizeof(int64_t) * i;
      inst.count[i] = readAt<int64_t>(data, at);
      inst.fromStride[i] = readAt<int64_t>(data, at + arrayBytes);
      inst.toStride[i] = readAt<int64_t>(data, at + 2 * arrayBytes);
    }
  } else {
    inst.transfer = readAt<m2n_plan_transfer_t>(data, operands);
  }
  *out = inst;
  return {};
}

Binding decodeBinding(const uint8_t *data, uint64_t at, uint64_t boxes) {
  auto stored = readAt<m2n_plan_binding_t>(data, at);
  auto box = readAt<m2n_plan_box_t>(data, boxes + uint64_t(stored.box) *
                                                      sizeof(m2n_plan_box_t));
  Binding binding;
  binding.tensor = stored.tensor;
  binding.role = stored.role;
  binding.byte_size = stored.byte_size;
  std::memcpy(binding.offset, box.offset, sizeof(binding.offset));
  std::memcpy(binding.shape, box.shape, sizeof(binding.shape));
  return binding;
}

Instruction memberInstruction(const Instruction &record, uint32_t member) {
  Instruction inst = record;
  inst.runs.members = 1;
  if (member == 0)
    return inst;
  uint64_t walkBytes = record.runs.run_bytes;
  for (uint32_t i = 0; i < record.levels; ++i)
    walkBytes *= static_cast<uint64_t>(record.count[i]);
  if (record.opcode == M2N_OP_UNPACK)
    inst.runs.from_offset += member * walkBytes;
  else
    inst.runs.from_binding += member;
  if (record.opcode == M2N_OP_PACK)
    inst.runs.to_offset += member * walkBytes;
  else
    inst.runs.to_binding += member;
  return inst;
}

InstructionRange::Iterator::Iterator(const uint8_t *data, uint64_t offset,
                                     uint64_t end, bool perMember)
    : data_(data), offset_(offset), end_(end), perMember_(perMember) {
  decode();
}

InstructionRange::Iterator &InstructionRange::Iterator::operator++() {
  if (perMember_ && member_ + 1 < record_.runs.members) {
    current_ = memberInstruction(record_, ++member_);
    return *this;
  }
  offset_ += record_.recordSize;
  member_ = 0;
  decode();
  return *this;
}

void InstructionRange::Iterator::decode() {
  // The plan was validated, so every record decodes, and each record with
  // runs has at least one member.
  if (offset_ >= end_)
    return;
  decodeInstruction(data_, offset_, end_, /*exact=*/false, &record_);
  current_ = perMember_ && record_.runs.members > 1
                 ? memberInstruction(record_, 0)
                 : record_;
}

//===----------------------------------------------------------------------===//
// LoadedPlan
//===----------------------------------------------------------------------===//

LoadedPlan::LoadedPlan(std::string source, const uint8_t *data, uint64_t size,
                       Release release)
    : source_(std::move(source)), data_(data), size_(size), release_(release) {
  tensorsByName_.reserve(tensorCount());
  for (uint32_t i = 0; i < tensorCount(); ++i)
    tensorsByName_.emplace(tensorName(i), i);
  bindings_.resize(worldSize());
  for (uint32_t rank = 0; rank < worldSize(); ++rank) {
    const m2n_plan_rank_header_t *section = rankHeader(rank);
    if (!section)
      continue;
    uint64_t boxes = sectionOffset(rank) + sizeof(m2n_plan_rank_header_t);
    uint64_t first =
        boxes + uint64_t(section->box_count) * sizeof(m2n_plan_box_t);
    bindings_[rank].reserve(section->binding_count);
    for (uint32_t i = 0; i < section->binding_count; ++i)
      bindings_[rank].push_back(decodeBinding(
          data_, first + uint64_t(i) * sizeof(m2n_plan_binding_t), boxes));
  }
}

LoadedPlan::~LoadedPlan() { release_(data_, size_); }

const m2n_plan_tensor_t &LoadedPlan::tensor(uint32_t index) const {
  return reinterpret_cast<const m2n_plan_tensor_t *>(
      data_ + header().tensors_offset)[index];
}

std::string_view LoadedPlan::tensorName(uint32_t index) const {
  const m2n_plan_tensor_t &entry = tensor(index);
  const auto *strings =
      reinterpret_cast<const char *>(data_ + header().strings_offset);
  return std::string_view(strings + entry.name_offset, entry.name_size);
}

std::optional<uint32_t> LoadedPlan::findTensor(std::string_view name) const {
  auto found = tensorsByName_.find(name);
  if (found == tensorsByName_.end())
    return std::nullopt;
  return found->second;
}

uint64_t LoadedPlan::sectionOffset(uint32_t rank) const {
  return reinterpret_cast<const m2n_plan_rank_entry_t *>(
             data_ + header().ranks_offset)[rank]
      .offset;
}

const m2n_plan_rank_header_t *LoadedPlan::rankHeader(uint32_t rank) const {
  uint64_t offset = sectionOffset(rank);
  if (offset == 0)
    return nullptr;
  return reinterpret_cast<const m2n_plan_rank_header_t *>(data_ + offset);
}

InstructionRange LoadedPlan::instructions(uint32_t rank) const {
  return rankInstructions(rank, /*perMember=*/true);
}

InstructionRange LoadedPlan::records(uint32_t rank) const {
  return rankInstructions(rank, /*perMember=*/false);
}

InstructionRange LoadedPlan::rankInstructions(uint32_t rank,
                                              bool perMember) const {
  const m2n_plan_rank_header_t *section = rankHeader(rank);
  if (!section)
    return InstructionRange(data_, 0, 0, perMember);
  uint64_t begin = sectionOffset(rank) + section->instructions_offset;
  return InstructionRange(data_, begin, begin + section->instruction_bytes,
                          perMember);
}

} // namespace m2n

//===----------------------------------------------------------------------===//
// The C API
//===----------------------------------------------------------------------===//

using m2n::concat;
using m2n::LoadedPlan;

namespace {

m2n_status_t invalidArgument(const char *function, const char *what) {
  return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT,
                           concat(function, ": ", what).c_str());
}

m2n_status_t notFound(const LoadedPlan &plan, const std::string &what) {
  return m2n_status_create(M2N_STATUS_NOT_FOUND,
                           concat(plan.source(), ": ", what).c_str());
}

void releaseMapping(const uint8_t *data, uint64_t size) {
  if (size != 0)
    munmap(const_cast<uint8_t *>(data), size);
}

void releaseHeap(const uint8_t *data, uint64_t) {
  std::free(const_cast<uint8_t *>(data));
}

// Validates `data` and wraps it in a plan, or releases it.
m2n_status_t adopt(std::string source, const uint8_t *data, uint64_t size,
                   LoadedPlan::Release release, uint32_t flags,
                   m2n_plan_t *out) {
  if (flags & ~uint32_t(M2N_PLAN_LOAD_TRUSTED)) {
    release(data, size);
    return invalidArgument("m2n_plan_load", "unknown flags");
  }
  if (m2n_status_t status = m2n::validatePlan(source, data, size)) {
    release(data, size);
    return status;
  }
  auto *plan =
      new m2n_plan_s{LoadedPlan(std::move(source), data, size, release)};
  if (!(flags & M2N_PLAN_LOAD_TRUSTED))
    if (m2n_status_t status = m2n::checkPlanDataflow(plan->plan)) {
      delete plan;
      return status;
    }
  *out = plan;
  return nullptr;
}

} // namespace

extern "C" {

m2n_status_t m2n_plan_load_file(const char *path, m2n_plan_t *out) {
  return m2n_plan_load_file_flags(path, 0, out);
}

m2n_status_t m2n_plan_load_memory(const void *data, size_t size,
                                  m2n_plan_t *out) {
  return m2n_plan_load_memory_flags(data, size, 0, out);
}

m2n_status_t m2n_plan_load_file_flags(const char *path, uint32_t flags,
                                      m2n_plan_t *out) {
  if (!out)
    return invalidArgument("m2n_plan_load_file", "out is null");
  *out = nullptr;
  if (!path)
    return invalidArgument("m2n_plan_load_file", "path is null");
  const uint8_t *data = nullptr;
  uint64_t size = 0;
  M2N_RETURN_IF_ERROR(m2n::mapFile(path, &data, &size));
  return adopt(path, data, size, releaseMapping, flags, out);
}

m2n_status_t m2n_plan_load_memory_flags(const void *data, size_t size,
                                        uint32_t flags, m2n_plan_t *out) {
  if (!out)
    return invalidArgument("m2n_plan_load_memory", "out is null");
  *out = nullptr;
  if (!data && size != 0)
    return invalidArgument("m2n_plan_load_memory", "data is null");
  // Copy first, so the caller cannot change what was validated, into
  // storage aligned as a mapped file is, so the plan's views are aligned.
  constexpr size_t kAlignment = M2N_PLAN_ALIGNMENT;
  size_t capacity = (size / kAlignment + 1) * kAlignment;
  auto *copy = static_cast<uint8_t *>(std::aligned_alloc(kAlignment, capacity));
  if (!copy)
    return m2n_status_create(
        M2N_STATUS_RESOURCE_EXHAUSTED,
        concat("<memory>: cannot allocate ", size, " bytes").c_str());
  if (size != 0)
    std::memcpy(copy, data, size);
  return adopt("<memory>", copy, size, releaseHeap, flags, out);
}

void m2n_plan_destroy(m2n_plan_t plan) { delete plan; }

m2n_status_t m2n_plan_get_info(m2n_plan_t plan, m2n_plan_info_t *out) {
  if (!plan || !out)
    return invalidArgument("m2n_plan_get_info", "null argument");
  const m2n_plan_header_t &header = plan->plan.header();
  *out = {};
  out->version_major = header.version_major;
  out->version_minor = header.version_minor;
  out->world_size = header.world_size;
  out->tensor_count = header.tensor_count;
  out->step_count = header.step_count;
  out->staging_budget = header.staging_budget;
  out->content_hash = header.content_hash;
  out->file_size = header.file_size;
  out->wire_bytes = header.wire_bytes;
  out->local_copy_bytes = header.local_copy_bytes;
  out->message_count = header.message_count;
  out->predicted_ns = header.predicted_ns;
  out->lower_bound_ns = header.lower_bound_ns;
  return nullptr;
}

m2n_status_t m2n_plan_get_tensor(m2n_plan_t plan, uint32_t index,
                                 m2n_plan_tensor_info_t *out) {
  if (!plan || !out)
    return invalidArgument("m2n_plan_get_tensor", "null argument");
  const LoadedPlan &loaded = plan->plan;
  if (index >= loaded.tensorCount())
    return notFound(loaded, concat("no tensor ", index, " (the plan has ",
                                   loaded.tensorCount(), ")"));
  const m2n_plan_tensor_t &tensor = loaded.tensor(index);
  std::string_view name = loaded.tensorName(index);
  *out = {};
  out->name = name.data();
  out->name_size = name.size();
  out->dtype = static_cast<m2n_dtype_t>(tensor.dtype);
  out->rank = tensor.rank;
  std::memcpy(out->shape, tensor.shape, sizeof(out->shape));
  return nullptr;
}

m2n_status_t m2n_plan_get_rank(m2n_plan_t plan, uint32_t rank,
                               m2n_plan_rank_info_t *out) {
  if (!plan || !out)
    return invalidArgument("m2n_plan_get_rank", "null argument");
  const LoadedPlan &loaded = plan->plan;
  if (rank >= loaded.worldSize())
    return notFound(loaded, concat("no rank ", rank, " (world size ",
                                   loaded.worldSize(), ")"));
  *out = {};
  if (const m2n_plan_rank_header_t *section = loaded.rankHeader(rank)) {
    out->binding_count = section->binding_count;
    out->instruction_count = section->instruction_count;
    out->staging_bytes = section->staging_bytes;
    out->send_bytes = section->send_bytes;
    out->receive_bytes = section->receive_bytes;
  }
  return nullptr;
}

m2n_status_t m2n_plan_get_binding(m2n_plan_t plan, uint32_t rank,
                                  uint32_t index,
                                  m2n_plan_binding_info_t *out) {
  if (!plan || !out)
    return invalidArgument("m2n_plan_get_binding", "null argument");
  m2n_plan_rank_info_t info;
  M2N_RETURN_IF_ERROR(m2n_plan_get_rank(plan, rank, &info));
  const LoadedPlan &loaded = plan->plan;
  if (index >= info.binding_count)
    return notFound(loaded, concat("rank ", rank, " has no binding ", index,
                                   " (it has ", info.binding_count, ")"));
  const m2n::Binding &binding = loaded.binding(rank, index);
  *out = {};
  out->tensor = binding.tensor;
  out->role = static_cast<m2n_role_t>(binding.role);
  out->byte_size = binding.byte_size;
  std::memcpy(out->offset, binding.offset, sizeof(out->offset));
  std::memcpy(out->shape, binding.shape, sizeof(out->shape));
  return nullptr;
}

m2n_status_t m2n_plan_find_tensor(m2n_plan_t plan, const char *name,
                                  uint32_t *index) {
  if (!plan || !name || !index)
    return invalidArgument("m2n_plan_find_tensor", "null argument");
  std::optional<uint32_t> found = plan->plan.findTensor(name);
  if (!found)
    return notFound(plan->plan,
                    concat("no tensor named ", m2n::quoteName(name)));
  *index = *found;
  return nullptr;
}

void m2n_free(void *pointer) { std::free(pointer); }

} // extern "C"
