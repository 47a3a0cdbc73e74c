//===- plan_disassemble.cpp - A loaded plan as text -----------------------===//
//
// The text is for people and for tests that compare it line by line, so it
// is stable: docs/plan-format.md documents it, and a change to it is a
// change to that document.
//
//===----------------------------------------------------------------------===//

#include "plan_internal.h"

#include <cctype>
#include <cstdlib>

namespace m2n {

std::string quoteName(std::string_view name) {
  static const char kDigits[] = "0123456789abcdef";
  std::string text = "\"";
  for (char c : name) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      text += '\\';
      text += c;
    } else if (byte >= 0x20 && byte < 0x7f) {
      text += c;
    } else {
      text += "\\x";
      text += kDigits[byte >> 4];
      text += kDigits[byte & 0xf];
    }
  }
  return text + "\"";
}

namespace {

std::string shapeText(const int64_t *shape, uint32_t rank) {
  std::string text = "[";
  for (uint32_t d = 0; d < rank; ++d)
    text += concat(d ? ", " : "", shape[d]);
  return text + "]";
}

// "[0:4, 2:4]": each dimension's offset and size, as m2n IR writes boxes.
std::string boxText(const Binding &binding, uint32_t rank) {
  std::string text = "[";
  for (uint32_t d = 0; d < rank; ++d)
    text += concat(d ? ", " : "", binding.offset[d], ":", binding.shape[d]);
  return text + "]";
}

std::string tensorLine(const LoadedPlan &plan, uint32_t index) {
  const m2n_plan_tensor_t &tensor = plan.tensor(index);
  return concat("tensor ", index, " ", quoteName(plan.tensorName(index)), " ",
                m2n_dtype_name(static_cast<m2n_dtype_t>(tensor.dtype)), " ",
                shapeText(tensor.shape, tensor.rank), "\n");
}

std::string bindingLine(const LoadedPlan &plan, uint32_t rank,
                        uint32_t index) {
  const Binding &binding = plan.binding(rank, index);
  const m2n_plan_tensor_t &tensor = plan.tensor(binding.tensor);
  const char *role =
      binding.role == M2N_ROLE_SOURCE ? "source" : "destination";
  return concat("  binding ", index, ": tensor ", binding.tensor, " ",
                quoteName(plan.tensorName(binding.tensor)), " ", role, " ",
                boxText(binding, tensor.rank), " ", binding.byte_size,
                " bytes\n");
}

// "pack binding 0 +16 -> staging +0: 8 runs of 12 bytes, levels
// [2 x (96, 48), 4 x (24, 12)]", a level being its count and its from and
// to strides.
std::string runsText(const Instruction &inst) {
  const m2n_plan_runs_t &runs = inst.runs;
  std::string from = inst.opcode == M2N_OP_UNPACK
                         ? std::string("staging")
                         : concat("binding ", runs.from_binding);
  std::string to = inst.opcode == M2N_OP_PACK
                       ? std::string("staging")
                       : concat("binding ", runs.to_binding);
  int64_t count = 1;
  std::string levels;
  for (uint32_t i = 0; i < inst.levels; ++i) {
    count *= inst.count[i];
    levels += concat(i ? ", " : "", inst.count[i], " x (", inst.fromStride[i],
                     ", ", inst.toStride[i], ")");
  }
  std::string text = concat(from, " +", runs.from_offset, " -> ", to, " +",
                            runs.to_offset, ": ", count,
                            count == 1 ? " run" : " runs", " of ",
                            runs.run_bytes, " bytes");
  if (inst.levels != 0)
    text += concat(", levels [", levels, "]");
  if (inst.runs.members > 1)
    text += concat(", members ", inst.runs.members);
  return text;
}

std::string transferText(const Instruction &inst) {
  const m2n_plan_transfer_t &transfer = inst.transfer;
  bool sends =
      inst.opcode == M2N_OP_SEND || inst.opcode == M2N_OP_SEND_DIRECT;
  bool direct = inst.opcode == M2N_OP_SEND_DIRECT ||
                inst.opcode == M2N_OP_RECV_DIRECT;
  std::string buffer =
      direct ? concat("binding ", transfer.binding) : std::string("staging");
  return concat(sends ? "to " : "from ", transfer.peer, " ", buffer, " [",
                transfer.staging_offset, ", ",
                transfer.staging_offset + transfer.bytes, ")");
}

std::string instructionLine(const Instruction &inst) {
  std::string name = opcodeName(inst.opcode);
  for (char &c : name)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string operands;
  switch (inst.opcode) {
  case M2N_OP_STEP:
    operands = concat(inst.step);
    break;
  case M2N_OP_COPY:
  case M2N_OP_PACK:
  case M2N_OP_UNPACK:
    operands = runsText(inst);
    break;
  default:
    operands = transferText(inst);
    break;
  }
  return concat("  ", name, " ", operands, "\n");
}

std::string rankText(const LoadedPlan &plan, uint32_t rank) {
  const m2n_plan_rank_header_t *section = plan.rankHeader(rank);
  m2n_plan_rank_header_t none = {};
  const m2n_plan_rank_header_t &header = section ? *section : none;
  std::string text = concat(
      "rank ", rank, ": bindings ", header.binding_count, " instructions ",
      header.instruction_count, " staging ", header.staging_bytes, " send ",
      header.send_bytes, " receive ", header.receive_bytes, "\n");
  for (uint32_t i = 0; i < header.binding_count; ++i)
    text += bindingLine(plan, rank, i);
  for (const Instruction &inst : plan.records(rank))
    text += instructionLine(inst);
  return text;
}

std::string disassemble(const LoadedPlan &plan, int rank) {
  const m2n_plan_header_t &header = plan.header();
  std::string text = concat(
      "plan v", header.version_major, ".", header.version_minor, " world ",
      header.world_size, " tensors ", header.tensor_count, " steps ",
      header.step_count, " staging_budget ", header.staging_budget, " hash ",
      hex64(header.content_hash), "\n");
  text += concat("summary wire_bytes ", header.wire_bytes,
                 " local_copy_bytes ", header.local_copy_bytes, " messages ",
                 header.message_count, " predicted_ns ", header.predicted_ns,
                 " lower_bound_ns ", header.lower_bound_ns, "\n");
  for (uint32_t i = 0; i < header.tensor_count; ++i)
    text += tensorLine(plan, i);
  if (rank >= 0)
    return text + rankText(plan, static_cast<uint32_t>(rank));
  for (uint32_t r = 0; r < header.world_size; ++r)
    if (plan.rankHeader(r))
      text += rankText(plan, r);
  return text;
}

} // namespace
} // namespace m2n

extern "C" m2n_status_t m2n_plan_disassemble(m2n_plan_t plan, int rank,
                                             char **text) {
  if (!plan || !text)
    return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT,
                             "m2n_plan_disassemble: null argument");
  *text = nullptr;
  const m2n::LoadedPlan &loaded = plan->plan;
  if (rank < -1)
    return m2n_status_create(
        M2N_STATUS_INVALID_ARGUMENT,
        m2n::concat("m2n_plan_disassemble: rank ", rank,
                    " is neither a rank nor -1 (all ranks)")
            .c_str());
  if (rank >= 0 && static_cast<uint32_t>(rank) >= loaded.worldSize())
    return m2n_status_create(
        M2N_STATUS_NOT_FOUND,
        m2n::concat(loaded.source(), ": no rank ", rank, " (world size ",
                    loaded.worldSize(), ")")
            .c_str());
  std::string disassembly = m2n::disassemble(loaded, rank);
  auto *copy = static_cast<char *>(std::malloc(disassembly.size() + 1));
  if (!copy)
    return m2n_status_create(M2N_STATUS_RESOURCE_EXHAUSTED,
                             "m2n_plan_disassemble: out of memory");
  std::memcpy(copy, disassembly.c_str(), disassembly.size() + 1);
  *text = copy;
  return nullptr;
}
