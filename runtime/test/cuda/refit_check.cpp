//===- refit_check.cpp - Expected shards and a host world -----------------===//

#include "refit_check.h"

#include "cuda/pack_kernels.h"

#include <cstring>
#include <map>

namespace m2n::test {

uint8_t encodedByte(uint32_t tensor, uint64_t byte) {
  // splitmix64's finaliser: neighbouring bytes and tensors look unrelated.
  uint64_t x = (uint64_t(tensor) << 48) ^ byte;
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return static_cast<uint8_t>(x ^ (x >> 31));
}

std::vector<uint8_t> expectedShard(const LoadedPlan &plan, uint32_t rank,
                                   uint32_t binding) {
  const m2n::Binding &b = plan.binding(rank, binding);
  const m2n_plan_tensor_t &t = plan.tensor(b.tensor);
  std::vector<uint8_t> bytes(b.byte_size);
  if (b.byte_size == 0)
    return bytes;
  uint64_t element = m2n_dtype_size(static_cast<m2n_dtype_t>(t.dtype));
  uint32_t n = t.rank;
  // Row-major element strides of the whole tensor.
  std::vector<uint64_t> strides(n + 1, 1);
  for (uint32_t d = n; d-- > 0;)
    strides[d] = strides[d + 1] * t.shape[d];
  uint64_t rowLength = n ? b.shape[n - 1] : 1;
  uint64_t rows = b.byte_size / element / rowLength;
  std::vector<int64_t> index(n, 0); // of the row, in the box
  uint64_t at = 0;
  for (uint64_t row = 0; row < rows; ++row) {
    uint64_t first = 0; // global element of the row's start
    for (uint32_t d = 0; d < n; ++d)
      first += (b.offset[d] + index[d]) * strides[d + 1];
    for (uint64_t byte = first * element; byte < (first + rowLength) * element;
         ++byte)
      bytes[at++] = encodedByte(b.tensor, byte);
    // Next row: count up the box's index over all but the last dimension.
    for (uint32_t d = n > 0 ? n - 1 : 0; d-- > 0;) {
      if (++index[d] < b.shape[d])
        break;
      index[d] = 0;
    }
  }
  return bytes;
}

std::vector<HostRank> initialBuffers(const LoadedPlan &plan) {
  std::vector<HostRank> ranks(plan.worldSize());
  for (uint32_t r = 0; r < plan.worldSize(); ++r) {
    const m2n_plan_rank_header_t *header = plan.rankHeader(r);
    if (!header)
      continue;
    ranks[r].staging.assign(header->staging_bytes, 0);
    for (uint32_t i = 0; i < header->binding_count; ++i) {
      std::vector<uint8_t> bytes = expectedShard(plan, r, i);
      if (plan.binding(r, i).role == M2N_ROLE_DESTINATION)
        for (uint8_t &byte : bytes)
          byte = static_cast<uint8_t>(~byte);
      ranks[r].bindings.push_back(std::move(bytes));
    }
  }
  return ranks;
}

::testing::AssertionResult checkBuffers(const LoadedPlan &plan,
                                        const std::vector<HostRank> &ranks) {
  uint64_t wrong = 0;
  std::string first;
  for (uint32_t r = 0; r < plan.worldSize(); ++r) {
    for (uint32_t i = 0; i < ranks[r].bindings.size(); ++i) {
      std::vector<uint8_t> want = expectedShard(plan, r, i);
      const std::vector<uint8_t> &got = ranks[r].bindings[i];
      for (uint64_t byte = 0; byte < want.size(); ++byte) {
        if (got[byte] == want[byte])
          continue;
        if (wrong++ == 0) {
          const m2n::Binding &b = plan.binding(r, i);
          first = concat("rank ", r, " binding ", i, " (",
                         b.role == M2N_ROLE_SOURCE ? "source" : "destination",
                         " of ", quoteName(plan.tensorName(b.tensor)),
                         ") byte ", byte, " of ", want.size(), ": got ",
                         int(got[byte]), ", want ", int(want[byte]));
        }
      }
    }
  }
  if (wrong == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << wrong << " wrong bytes; the first: " << first;
}

namespace {

struct RankProgram {
  std::vector<Instruction> copies;
  // Per step: its packs, transfers and unpacks in record order.
  std::map<uint64_t, std::vector<Instruction>> steps;
};

std::vector<RankProgram> programs(const LoadedPlan &plan) {
  std::vector<RankProgram> out(plan.worldSize());
  for (uint32_t r = 0; r < plan.worldSize(); ++r) {
    uint64_t step = 0;
    bool inStep = false;
    for (const Instruction &inst : plan.instructions(r)) {
      if (inst.opcode == M2N_OP_STEP) {
        step = inst.step;
        inStep = true;
        out[r].steps[step];
      } else if (!inStep) {
        out[r].copies.push_back(inst);
      } else {
        out[r].steps[step].push_back(inst);
      }
    }
  }
  return out;
}

// The buffers an instruction's runs go from and to.
uint8_t *fromBuffer(HostRank &rank, const Instruction &inst) {
  return inst.opcode == M2N_OP_UNPACK
             ? rank.staging.data()
             : rank.bindings[inst.runs.from_binding].data();
}

uint8_t *toBuffer(HostRank &rank, const Instruction &inst) {
  return inst.opcode == M2N_OP_PACK
             ? rank.staging.data()
             : rank.bindings[inst.runs.to_binding].data();
}

uint8_t *transferAddress(HostRank &rank, const Instruction &inst) {
  bool direct =
      inst.opcode == M2N_OP_SEND_DIRECT || inst.opcode == M2N_OP_RECV_DIRECT;
  uint8_t *base = direct ? rank.bindings[inst.transfer.binding].data()
                         : rank.staging.data();
  return base + inst.transfer.staging_offset;
}

void walkRuns(const Instruction &inst, uint32_t level, const uint8_t *from,
              int64_t fromOffset, uint8_t *to, int64_t toOffset) {
  if (level == inst.levels) {
    std::memmove(to + toOffset, from + fromOffset, inst.runs.run_bytes);
    return;
  }
  for (int64_t i = 0; i < inst.count[level]; ++i)
    walkRuns(inst, level + 1, from, fromOffset + i * inst.fromStride[level], to,
             toOffset + i * inst.toStride[level]);
}

// The walks of `batch` (all of one rank), through the kernel's code.
void runKernelOnHost(HostRank &rank, const std::vector<Instruction> &batch) {
  // Bases: the rank's bindings, then its staging buffer.
  std::vector<uint8_t *> bases;
  for (std::vector<uint8_t> &binding : rank.bindings)
    bases.push_back(binding.data());
  uint32_t staging = static_cast<uint32_t>(bases.size());
  bases.push_back(rank.staging.data());
  std::vector<cuda::Walk> walks;
  for (const Instruction &inst : batch) {
    cuda::Walk walk;
    walk.from = inst.opcode == M2N_OP_UNPACK ? staging : inst.runs.from_binding;
    walk.to = inst.opcode == M2N_OP_PACK ? staging : inst.runs.to_binding;
    walk.levels = inst.levels;
    walk.fromOffset = inst.runs.from_offset;
    walk.toOffset = inst.runs.to_offset;
    walk.runBytes = inst.runs.run_bytes;
    for (uint32_t l = 0; l < inst.levels; ++l) {
      walk.count[l] = inst.count[l];
      walk.fromStride[l] = inst.fromStride[l];
      walk.toStride[l] = inst.toStride[l];
    }
    walks.push_back(walk);
  }
  cuda::RunsTableBuilder table;
  // One multiprocessor: the smallest tiles, the most tile boundaries.
  uint32_t index = table.addBatch(walks, 1);
  cuda::emulateRuns(table.batch(index, table.image().data()), bases.data());
}

void runWalks(HostRank &rank, const std::vector<Instruction> &batch,
              Walker walker) {
  if (batch.empty())
    return;
  if (walker == Walker::kKernelOnHost)
    return runKernelOnHost(rank, batch);
  for (const Instruction &inst : batch)
    walkRuns(inst, 0, fromBuffer(rank, inst), inst.runs.from_offset,
             toBuffer(rank, inst), inst.runs.to_offset);
}

std::vector<Instruction> ofOpcode(const std::vector<Instruction> &step,
                                  m2n_opcode_t opcode) {
  std::vector<Instruction> out;
  for (const Instruction &inst : step)
    if (inst.opcode == opcode)
      out.push_back(inst);
  return out;
}

bool isTransfer(const Instruction &inst) {
  return inst.opcode >= M2N_OP_SEND && inst.opcode <= M2N_OP_RECV_DIRECT;
}

bool isSend(const Instruction &inst) {
  return inst.opcode == M2N_OP_SEND || inst.opcode == M2N_OP_SEND_DIRECT;
}

// Each receive copies its matching send: the k-th of a to b in the step.
void copyMessages(const LoadedPlan &plan, std::vector<HostRank> &ranks,
                  const std::vector<const std::vector<Instruction> *> &work) {
  std::vector<std::map<uint32_t, std::vector<const Instruction *>>> sends(
      plan.worldSize());
  for (uint32_t a = 0; a < plan.worldSize(); ++a)
    if (work[a])
      for (const Instruction &inst : *work[a])
        if (isTransfer(inst) && isSend(inst))
          sends[a][inst.transfer.peer].push_back(&inst);
  for (uint32_t b = 0; b < plan.worldSize(); ++b) {
    if (!work[b])
      continue;
    std::map<uint32_t, size_t> received;
    for (const Instruction &inst : *work[b]) {
      if (!isTransfer(inst) || isSend(inst))
        continue;
      uint32_t a = inst.transfer.peer;
      const Instruction *sent = sends[a][b][received[a]++];
      std::memcpy(transferAddress(ranks[b], inst),
                  transferAddress(ranks[a], *sent), inst.transfer.bytes);
    }
  }
}

} // namespace

void runHostWorld(const LoadedPlan &plan, std::vector<HostRank> &ranks,
                  Walker walker) {
  std::vector<RankProgram> program = programs(plan);
  for (uint32_t r = 0; r < plan.worldSize(); ++r)
    runWalks(ranks[r], program[r].copies, walker);
  for (uint32_t step = 0; step < plan.header().step_count; ++step) {
    std::vector<const std::vector<Instruction> *> work(plan.worldSize());
    for (uint32_t r = 0; r < plan.worldSize(); ++r) {
      auto found = program[r].steps.find(step);
      if (found != program[r].steps.end())
        work[r] = &found->second;
    }
    for (uint32_t r = 0; r < plan.worldSize(); ++r)
      if (work[r])
        runWalks(ranks[r], ofOpcode(*work[r], M2N_OP_PACK), walker);
    copyMessages(plan, ranks, work);
    for (uint32_t r = 0; r < plan.worldSize(); ++r)
      if (work[r])
        runWalks(ranks[r], ofOpcode(*work[r], M2N_OP_UNPACK), walker);
  }
}

uint64_t totalBindingBytes(const LoadedPlan &plan) {
  uint64_t total = 0;
  for (uint32_t r = 0; r < plan.worldSize(); ++r)
    if (const m2n_plan_rank_header_t *header = plan.rankHeader(r))
      for (uint32_t i = 0; i < header->binding_count; ++i)
        total += plan.binding(r, i).byte_size;
  return total;
}

::testing::AssertionResult isOk(m2n_status_t status) {
  if (!status)
    return ::testing::AssertionSuccess();
  ::testing::AssertionResult failure =
      ::testing::AssertionFailure()
      << m2n_status_code_name(m2n_status_code(status)) << ": "
      << m2n_status_message(status);
  m2n_status_free(status);
  return failure;
}

::testing::AssertionResult loadPlan(const std::vector<uint8_t> &bytes,
                                    m2n_plan_t *plan) {
  return isOk(m2n_plan_load_memory(bytes.data(), bytes.size(), plan));
}

} // namespace m2n::test
