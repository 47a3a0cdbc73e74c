//===- plan_fuzzer.cpp - libFuzzer target for the plan loader -------------===//
//
// Feeds arbitrary bytes to m2n_plan_load_memory. Whatever loads is then
// read through every accessor, disassembled, and executed on buffers of
// exactly the sizes the plan declares, once as written and once as a sim
// executor rewrites it to pull messages (program.h): under ASan, any read
// or write that validation should have prevented, or that the fused and
// sliced walks of pulls would add, is caught there.
//
//===----------------------------------------------------------------------===//

#include "plan_internal.h"
#include "program.h"

#include "m2n/plan.h"
#include "m2n/plan_writer.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

// Keeps a simulated rank's buffers small, so that the fuzzer stays fast.
constexpr uint64_t kMaxSimulatedBytes = 1 << 20;

void check(bool condition) {
  if (!condition)
    __builtin_trap();
}

using Buffer = std::unique_ptr<uint8_t[]>;

// Moves the runs of `inst` from `from` to `to`, level by level.
void walk(const m2n::Instruction &inst, uint32_t level, uint8_t *from,
          int64_t fromOffset, uint8_t *to, int64_t toOffset) {
  if (level == inst.levels) {
    std::memmove(to + toOffset, from + fromOffset, inst.runs.run_bytes);
    return;
  }
  for (int64_t i = 0; i < inst.count[level]; ++i)
    walk(inst, level + 1, from, fromOffset + i * inst.fromStride[level], to,
         toOffset + i * inst.toStride[level]);
}

// `total` plus the bytes of `rank`'s staging and bindings, saturating: a
// plan's sizes may add up past 2^64, and a wrapped sum would pass the
// harness's own limit.
uint64_t addRankBytes(const m2n::LoadedPlan &plan, uint32_t rank,
                      uint64_t total) {
  const m2n_plan_rank_header_t *header = plan.rankHeader(rank);
  auto add = [&](uint64_t bytes) {
    if (__builtin_add_overflow(total, bytes, &total))
      total = UINT64_MAX;
  };
  add(header->staging_bytes);
  for (uint32_t i = 0; i < header->binding_count; ++i)
    add(plan.binding(rank, i).byte_size);
  return total;
}

// Executes one rank's instructions, transfers as plain reads and writes.
void executeRank(const m2n::LoadedPlan &plan, uint32_t rank) {
  const m2n_plan_rank_header_t *header = plan.rankHeader(rank);
  if (addRankBytes(plan, rank, 0) > kMaxSimulatedBytes)
    return;
  std::vector<Buffer> bindings;
  for (uint32_t i = 0; i < header->binding_count; ++i)
    bindings.emplace_back(new uint8_t[plan.binding(rank, i).byte_size]());
  Buffer staging(new uint8_t[header->staging_bytes]());
  volatile uint8_t sink = 0;
  auto read = [&](const uint8_t *buffer, const m2n_plan_transfer_t &t) {
    for (uint64_t i = 0; i < t.bytes; ++i)
      sink = sink + buffer[t.staging_offset + i];
  };
  auto write = [](uint8_t *buffer, const m2n_plan_transfer_t &t) {
    std::memset(buffer + t.staging_offset, 0xab, t.bytes);
  };
  for (const m2n::Instruction &inst : plan.instructions(rank)) {
    const m2n_plan_runs_t &runs = inst.runs;
    const m2n_plan_transfer_t &transfer = inst.transfer;
    switch (inst.opcode) {
    case M2N_OP_STEP:
      break;
    case M2N_OP_COPY:
      walk(inst, 0, bindings[runs.from_binding].get(), runs.from_offset,
           bindings[runs.to_binding].get(), runs.to_offset);
      break;
    case M2N_OP_PACK:
      walk(inst, 0, bindings[runs.from_binding].get(), runs.from_offset,
           staging.get(), runs.to_offset);
      break;
    case M2N_OP_UNPACK:
      walk(inst, 0, staging.get(), runs.from_offset,
           bindings[runs.to_binding].get(), runs.to_offset);
      break;
    case M2N_OP_SEND:
      read(staging.get(), transfer);
      break;
    case M2N_OP_SEND_DIRECT:
      read(bindings[transfer.binding].get(), transfer);
      break;
    case M2N_OP_RECV:
      write(staging.get(), transfer);
      break;
    case M2N_OP_RECV_DIRECT:
      write(bindings[transfer.binding].get(), transfer);
      break;
    }
  }
}

// Every rank's program as a sim executor runs it, pulls included, with
// transfers otherwise left out: pulls read the peers' bindings.
void executePulled(const m2n::LoadedPlan &plan) {
  uint64_t total = 0;
  for (uint32_t rank = 0; rank < plan.worldSize(); ++rank)
    if (plan.rankHeader(rank))
      total = addRankBytes(plan, rank, total);
  if (total > kMaxSimulatedBytes)
    return;
  std::vector<std::vector<uint8_t *>> bindings(plan.worldSize());
  std::vector<Buffer> owned;
  std::vector<uint8_t *> staging(plan.worldSize(), nullptr);
  for (uint32_t rank = 0; rank < plan.worldSize(); ++rank)
    if (const m2n_plan_rank_header_t *header = plan.rankHeader(rank)) {
      for (uint32_t i = 0; i < header->binding_count; ++i) {
        owned.emplace_back(new uint8_t[plan.binding(rank, i).byte_size]());
        bindings[rank].push_back(owned.back().get());
      }
      owned.emplace_back(new uint8_t[header->staging_bytes]());
      staging[rank] = owned.back().get();
    }
  for (uint32_t rank = 0; rank < plan.worldSize(); ++rank) {
    m2n::Program program = m2n::decodeProgram(plan, rank);
    m2n::pullMessages(plan, rank, &program);
    std::vector<uint8_t *> &mine = bindings[rank];
    for (const m2n::Walk &copy : program.copies)
      m2n::runWalk(copy, mine[copy.fromBinding], mine[copy.toBinding]);
    for (const m2n::StepProgram &step : program.steps) {
      for (const m2n::Walk &pack : step.packs)
        m2n::runWalk(pack, mine[pack.fromBinding], staging[rank]);
      for (const m2n::Transfer &transfer : step.transfers)
        for (const m2n::Walk &walk : transfer.pull)
          m2n::runWalk(walk, bindings[transfer.peer][walk.fromBinding],
                       mine[walk.toBinding]);
      for (const m2n::Walk &unpack : step.unpacks)
        m2n::runWalk(unpack, staging[rank], mine[unpack.toBinding]);
    }
  }
}

// Reads everything the C API offers and checks what must hold.
void inspect(m2n_plan_t plan) {
  m2n_plan_info_t info;
  check(m2n_plan_get_info(plan, &info) == nullptr);
  for (uint32_t i = 0; i < info.tensor_count; ++i) {
    m2n_plan_tensor_info_t tensor;
    check(m2n_plan_get_tensor(plan, i, &tensor) == nullptr);
    std::string name(tensor.name, tensor.name_size);
    uint32_t found = ~0u;
    check(m2n_plan_find_tensor(plan, name.c_str(), &found) == nullptr);
    check(found == i);
  }
  for (uint32_t rank = 0; rank < info.world_size; ++rank) {
    m2n_plan_rank_info_t rankInfo;
    check(m2n_plan_get_rank(plan, rank, &rankInfo) == nullptr);
    for (uint32_t i = 0; i < rankInfo.binding_count; ++i) {
      m2n_plan_binding_info_t binding;
      check(m2n_plan_get_binding(plan, rank, i, &binding) == nullptr);
      check(binding.tensor < info.tensor_count);
    }
  }
  char *text = nullptr;
  check(m2n_plan_disassemble(plan, -1, &text) == nullptr);
  check(std::strncmp(text, "plan v2.", 8) == 0);
  m2n_free(text);
}

void load(const uint8_t *data, size_t size) {
  m2n_plan_t plan = nullptr;
  m2n_status_t status = m2n_plan_load_memory(data, size, &plan);
  if (status) {
    check(plan == nullptr && m2n_status_message(status)[0] != '\0');
    m2n_status_free(status);
    return;
  }
  inspect(plan);
  const m2n::LoadedPlan &loaded = plan->plan;
  for (uint32_t rank = 0; rank < loaded.worldSize(); ++rank)
    if (loaded.rankHeader(rank))
      executeRank(loaded, rank);
  executePulled(loaded);
  m2n_plan_destroy(plan);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  load(data, size);
  // A mutation nearly always breaks the file size and the content hash,
  // which the loader checks first; repaired, the input reaches the
  // structural checks.
  if (size < sizeof(m2n_plan_header_t))
    return 0;
  std::vector<uint8_t> repaired(data, data + size);
  uint64_t fileSize = size;
  std::memcpy(repaired.data() + offsetof(m2n_plan_header_t, file_size),
              &fileSize, sizeof(fileSize));
  uint64_t hash = m2n::planContentHash(repaired.data(), size);
  std::memcpy(repaired.data() + offsetof(m2n_plan_header_t, content_hash),
              &hash, sizeof(hash));
  load(repaired.data(), size);
  return 0;
}
