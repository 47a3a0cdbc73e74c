//===- plan_test_util.h - A sample plan and tools to damage it --*- C++ -*-===//

#ifndef M2N_RUNTIME_TEST_PLAN_TEST_UTIL_H
#define M2N_RUNTIME_TEST_PLAN_TEST_UTIL_H

#include "m2n/plan.h"
#include "m2n/plan_writer.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace m2n::test {

/// A refit of two tensors over five ranks that uses every opcode:
///   "w" BF16 [8, 6]: ranks 0 and 1 hold rows 0:4 and 4:8 (source); ranks 2
///     and 3 hold columns 0:3 and 3:6 (destination). Ranks 0 and 1 pack
///     their rows' halves and send them, in steps 0 and 1.
///   "b" F32 [6]: ranks 0 and 1 hold it whole (source); rank 1 copies it
///     into its own destination shard, ranks 2 and 3 receive their halves
///     straight from rank 0 (zero-copy) in step 0.
///   Rank 4 has no work.
inline void writeSamplePlan(PlanWriter &writer) {
  writer.setWorldSize(5);
  writer.setStepCount(2);
  writer.setStagingBudget(1 << 20);
  writer.setSummary(/*wire=*/120, /*local=*/24, /*messages=*/6,
                    /*predicted=*/5000, /*lowerBound=*/4000);
  uint32_t w = writer.addTensor("w", M2N_DTYPE_BF16, {8, 6});
  uint32_t b = writer.addTensor("b", M2N_DTYPE_F32, {6});

  // Each sender packs the two column halves of its 4 rows: 4 runs of 3
  // elements (6 bytes), 12 bytes apart in its shard, dense in staging.
  auto half = [](uint64_t column) {
    PlanRuns runs;
    runs.fromOffset = column * 2;
    runs.toOffset = column == 0 ? 0 : 24;
    runs.runBytes = 6;
    runs.count = {4};
    runs.fromStride = {12};
    runs.toStride = {6};
    return runs;
  };
  for (uint32_t sender = 0; sender < 2; ++sender) {
    writer.addBinding(sender, w, M2N_ROLE_SOURCE, {4 * sender, 0}, {4, 6});
    writer.addBinding(sender, b, M2N_ROLE_SOURCE, {0}, {6});
    writer.setStagingBytes(sender, 48);
  }
  writer.addBinding(1, b, M2N_ROLE_DESTINATION, {0}, {6});
  for (uint32_t receiver = 2; receiver < 4; ++receiver) {
    int64_t column = receiver == 2 ? 0 : 3;
    writer.addBinding(receiver, w, M2N_ROLE_DESTINATION, {0, column}, {8, 3});
    writer.addBinding(receiver, b, M2N_ROLE_DESTINATION, {column}, {3});
    writer.setStagingBytes(receiver, 24);
    writer.setTraffic(receiver, 0, 60);
  }

  PlanRuns copyB;
  copyB.fromBinding = 1;
  copyB.toBinding = 2;
  copyB.runBytes = 24;
  writer.copy(1, copyB);

  for (uint32_t sender = 0; sender < 2; ++sender) {
    writer.step(sender, sender);
    writer.pack(sender, half(0));
    writer.pack(sender, half(3));
    writer.send(sender, 2, 0, 24);
    writer.send(sender, 3, 24, 24);
  }
  writer.sendDirect(0, 2, 1, 0, 12);
  writer.sendDirect(0, 3, 1, 12, 12);
  writer.setTraffic(0, 72, 0);
  writer.setTraffic(1, 48, 0);

  for (uint32_t receiver = 2; receiver < 4; ++receiver) {
    for (uint32_t sender = 0; sender < 2; ++sender) {
      writer.step(receiver, sender);
      writer.recv(receiver, sender, 0, 24);
      if (sender == 0)
        writer.recvDirect(receiver, 0, 1, 0, 12);
      PlanRuns unpack;
      unpack.toOffset = 24 * sender;
      unpack.runBytes = 24;
      writer.unpack(receiver, unpack);
    }
  }
}

inline std::vector<uint8_t> samplePlan() {
  PlanWriter writer;
  writeSamplePlan(writer);
  return writer.finish();
}

/// A plan file to edit in place, with the offsets of its parts.
struct PlanBytes {
  std::vector<uint8_t> bytes;

  template <typename T> T get(uint64_t offset) const {
    T value;
    std::memcpy(&value, bytes.data() + offset, sizeof(T));
    return value;
  }
  template <typename T> void set(uint64_t offset, T value) {
    std::memcpy(bytes.data() + offset, &value, sizeof(T));
  }

  m2n_plan_header_t header() const { return get<m2n_plan_header_t>(0); }
  uint64_t tensorAt(uint32_t index) const {
    return header().tensors_offset + index * sizeof(m2n_plan_tensor_t);
  }
  uint64_t entryAt(uint32_t rank) const {
    return header().ranks_offset + rank * sizeof(m2n_plan_rank_entry_t);
  }
  uint64_t sectionAt(uint32_t rank) const {
    return get<m2n_plan_rank_entry_t>(entryAt(rank)).offset;
  }
  m2n_plan_rank_header_t rankHeader(uint32_t rank) const {
    return get<m2n_plan_rank_header_t>(sectionAt(rank));
  }
  uint64_t boxAt(uint32_t rank, uint32_t index) const {
    return sectionAt(rank) + sizeof(m2n_plan_rank_header_t) +
           index * sizeof(m2n_plan_box_t);
  }
  uint64_t bindingAt(uint32_t rank, uint32_t index) const {
    return boxAt(rank, rankHeader(rank).box_count) +
           index * sizeof(m2n_plan_binding_t);
  }
  /// Where the box that binding `index` of `rank` names starts.
  uint64_t boxOfBindingAt(uint32_t rank, uint32_t index) const {
    return boxAt(rank, get<m2n_plan_binding_t>(bindingAt(rank, index)).box);
  }
  uint64_t instructionAt(uint32_t rank, uint32_t index) const {
    uint64_t offset = sectionAt(rank) + rankHeader(rank).instructions_offset;
    for (uint32_t i = 0; i < index; ++i)
      offset += get<m2n_plan_instruction_t>(offset).size;
    return offset;
  }
  /// The byte of operand field `field` of instruction `index`.
  uint64_t operandAt(uint32_t rank, uint32_t index, size_t field) const {
    return instructionAt(rank, index) + sizeof(m2n_plan_instruction_t) + field;
  }
  /// Swaps instruction `index` with the next one.
  void swapInstructions(uint32_t rank, uint32_t index) {
    uint64_t first = instructionAt(rank, index);
    uint64_t second = instructionAt(rank, index + 1);
    uint64_t end = instructionAt(rank, index + 2);
    std::vector<uint8_t> swapped(bytes.begin() + second, bytes.begin() + end);
    swapped.insert(swapped.end(), bytes.begin() + first,
                   bytes.begin() + second);
    std::copy(swapped.begin(), swapped.end(), bytes.begin() + first);
  }
  /// Makes the hash right again, so that a structural check is what fails.
  void rehash() {
    set(offsetof(m2n_plan_header_t, content_hash),
        planContentHash(bytes.data(), bytes.size()));
  }
};

struct LoadResult {
  m2n_status_code_t code;
  std::string message;
};

/// Loads `bytes` from memory and keeps only the outcome. Tests of the
/// format's structure on walks that compute no refit pass
/// M2N_PLAN_LOAD_TRUSTED, which checks the structure alone.
inline LoadResult load(const std::vector<uint8_t> &bytes, uint32_t flags = 0) {
  m2n_plan_t plan = nullptr;
  m2n_status_t status =
      m2n_plan_load_memory_flags(bytes.data(), bytes.size(), flags, &plan);
  LoadResult result = {m2n_status_code(status), m2n_status_message(status)};
  m2n_status_free(status);
  m2n_plan_destroy(plan);
  return result;
}

} // namespace m2n::test

#endif // M2N_RUNTIME_TEST_PLAN_TEST_UTIL_H
