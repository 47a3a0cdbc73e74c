//===- plan_writer_test.cpp - Writer to loader round trips; disassembly ---===//

#include "plan_internal.h"
#include "plan_test_util.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace m2n::test {
namespace {

// Loads `bytes` or fails the test; `flags` as for load().
struct Loaded {
  explicit Loaded(const std::vector<uint8_t> &bytes, uint32_t flags = 0) {
    m2n_status_t status =
        m2n_plan_load_memory_flags(bytes.data(), bytes.size(), flags, &plan);
    EXPECT_EQ(status, nullptr) << m2n_status_message(status);
    m2n_status_free(status);
  }
  ~Loaded() { m2n_plan_destroy(plan); }
  m2n_plan_t plan = nullptr;
};

std::string disassemble(m2n_plan_t plan, int rank) {
  char *text = nullptr;
  m2n_status_t status = m2n_plan_disassemble(plan, rank, &text);
  EXPECT_EQ(status, nullptr) << m2n_status_message(status);
  m2n_status_free(status);
  std::string result = text ? text : "";
  m2n_free(text);
  return result;
}

TEST(PlanHash, IsFnv1a64OverWordsWithTheHashFieldAsZero) {
  constexpr uint64_t kBasis = 0xcbf29ce484222325ull, kPrime = 0x100000001b3ull;
  EXPECT_EQ(planContentHash(nullptr, 0), kBasis);
  // One byte is one zero-padded word, as FNV-1a of the byte alone.
  const uint8_t a = 'a';
  EXPECT_EQ(planContentHash(&a, 1), 0xaf63dc4c8601ec8cull);
  // Two words: each XORed in whole, little-endian, then multiplied.
  const uint8_t words[9] = {1, 0, 0, 0, 0, 0, 0, 2, 3};
  EXPECT_EQ(planContentHash(words, 9),
            ((kBasis ^ 0x0200000000000001ull) * kPrime ^ 3) * kPrime);
  std::vector<uint8_t> zeros(40, 0), marked(40, 0);
  for (size_t i = 24; i < 32; ++i)
    marked[i] = 0xff;
  EXPECT_EQ(planContentHash(zeros.data(), 40),
            planContentHash(marked.data(), 40));
  marked[32] = 1;
  EXPECT_NE(planContentHash(zeros.data(), 40),
            planContentHash(marked.data(), 40));
}

/// The contents of the first fenced block of `page` after `marker`.
std::string fencedAfter(const std::string &page, const std::string &marker) {
  size_t open = page.find("```", page.find(marker));
  if (open == std::string::npos)
    return "";
  size_t begin = page.find('\n', open) + 1;
  size_t close = page.find("\n```", begin);
  return close == std::string::npos ? ""
                                    : page.substr(begin, close + 1 - begin);
}

// docs/plan-format.md builds one plan with the writer and shows its size
// and its disassembly; the same calls here keep the page true to the
// format.
TEST(PlanWriter, MatchesTheFormatPagesExample) {
  std::ifstream in(M2N_PLAN_FORMAT_DOC);
  ASSERT_TRUE(in) << M2N_PLAN_FORMAT_DOC;
  std::string page((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  std::string code = fencedAfter(page, "### Worked example");
  ASSERT_NE(code.find("writer.finish();   // "), std::string::npos);
  uint64_t size =
      std::stoull(code.substr(code.find("writer.finish();   // ") + 22));
  std::string shown =
      fencedAfter(page, "`m2n_plan_disassemble(plan, -1, &text)` on it gives:");

  PlanWriter writer;
  writer.setWorldSize(2);
  writer.setStepCount(1);
  writer.setStagingBudget(1 << 20);
  writer.setSummary(16, 0, 1, 2000, 1500);
  uint32_t w = writer.addTensor("w", M2N_DTYPE_F32, {2, 4});
  uint32_t src = writer.addBinding(0, w, M2N_ROLE_SOURCE, {0, 0}, {2, 4});
  uint32_t dst = writer.addBinding(1, w, M2N_ROLE_DESTINATION, {0, 2}, {2, 2});
  PlanRuns columns;
  columns.fromBinding = src;
  columns.fromOffset = 8;
  columns.runBytes = 8;
  columns.count = {2};
  columns.fromStride = {16};
  columns.toStride = {8};
  writer.step(0, 0);
  writer.pack(0, columns);
  writer.send(0, 1, 0, 16);
  writer.setStagingBytes(0, 16);
  writer.setTraffic(0, 16, 0);
  PlanRuns whole;
  whole.toBinding = dst;
  whole.runBytes = 16;
  writer.step(1, 0);
  writer.recv(1, 0, 0, 16);
  writer.unpack(1, whole);
  writer.setStagingBytes(1, 16);
  writer.setTraffic(1, 0, 16);
  std::vector<uint8_t> file = writer.finish();

  EXPECT_EQ(file.size(), size);
  Loaded loaded(file);
  EXPECT_EQ(disassemble(loaded.plan, -1), shown);
}

TEST(PlanWriter, IsDeterministic) { EXPECT_EQ(samplePlan(), samplePlan()); }

TEST(PlanWriter, LaysOutTheFile) {
  PlanBytes file{samplePlan()};
  m2n_plan_header_t header = file.header();
  EXPECT_EQ(std::string(header.magic), "M2NPLAN");
  EXPECT_EQ(header.header_size, 160u);
  EXPECT_EQ(header.file_size, file.bytes.size());
  EXPECT_EQ(header.content_hash,
            planContentHash(file.bytes.data(), file.bytes.size()));
  // Sections in order, each aligned; "w" and "b" make a 2-byte table.
  EXPECT_EQ(header.strings_offset, 192u);
  EXPECT_EQ(header.strings_size, 2u);
  EXPECT_EQ(header.tensors_offset, 256u);
  EXPECT_EQ(header.ranks_offset, 448u);
  EXPECT_EQ(file.sectionAt(0), 576u);
  for (uint32_t rank = 0; rank < 4; ++rank)
    EXPECT_EQ(file.sectionAt(rank) % M2N_PLAN_ALIGNMENT, 0u);
  EXPECT_EQ(file.sectionAt(4), 0u);
  EXPECT_EQ(file.get<m2n_plan_rank_entry_t>(file.entryAt(4)).size, 0u);
  m2n_plan_rank_header_t rank3 = file.rankHeader(3);
  EXPECT_EQ(file.sectionAt(3) + rank3.instructions_offset +
                rank3.instruction_bytes,
            file.bytes.size());
}

TEST(PlanWriter, EmptyPlanLoads) {
  PlanWriter writer;
  writer.setWorldSize(1);
  Loaded loaded(writer.finish());
  ASSERT_NE(loaded.plan, nullptr);
  m2n_plan_rank_info_t rank;
  ASSERT_EQ(m2n_plan_get_rank(loaded.plan, 0, &rank), nullptr);
  EXPECT_EQ(rank.instruction_count, 0u);
}

TEST(PlanRoundTrip, Info) {
  Loaded loaded(samplePlan());
  ASSERT_NE(loaded.plan, nullptr);
  m2n_plan_info_t info;
  ASSERT_EQ(m2n_plan_get_info(loaded.plan, &info), nullptr);
  EXPECT_EQ(info.version_major, 2);
  EXPECT_EQ(info.version_minor, 0);
  EXPECT_EQ(info.world_size, 5u);
  EXPECT_EQ(info.tensor_count, 2u);
  EXPECT_EQ(info.step_count, 2u);
  EXPECT_EQ(info.staging_budget, 1u << 20);
  EXPECT_EQ(info.file_size, samplePlan().size());
  EXPECT_EQ(info.content_hash, PlanBytes{samplePlan()}.header().content_hash);
  EXPECT_EQ(info.wire_bytes, 120u);
  EXPECT_EQ(info.local_copy_bytes, 24u);
  EXPECT_EQ(info.message_count, 6u);
  EXPECT_EQ(info.predicted_ns, 5000u);
  EXPECT_EQ(info.lower_bound_ns, 4000u);
}

TEST(PlanRoundTrip, Tensors) {
  Loaded loaded(samplePlan());
  ASSERT_NE(loaded.plan, nullptr);
  m2n_plan_tensor_info_t w, b;
  ASSERT_EQ(m2n_plan_get_tensor(loaded.plan, 0, &w), nullptr);
  ASSERT_EQ(m2n_plan_get_tensor(loaded.plan, 1, &b), nullptr);
  EXPECT_EQ(std::string(w.name, w.name_size), "w");
  EXPECT_EQ(w.dtype, M2N_DTYPE_BF16);
  EXPECT_EQ(w.rank, 2u);
  EXPECT_EQ(std::vector<int64_t>(w.shape, w.shape + 8),
            (std::vector<int64_t>{8, 6, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(std::string(b.name, b.name_size), "b");
  EXPECT_EQ(b.dtype, M2N_DTYPE_F32);
  EXPECT_EQ(b.rank, 1u);
  EXPECT_EQ(b.shape[0], 6);
  uint32_t index = 99;
  ASSERT_EQ(m2n_plan_find_tensor(loaded.plan, "b", &index), nullptr);
  EXPECT_EQ(index, 1u);
  ASSERT_EQ(m2n_plan_find_tensor(loaded.plan, "w", &index), nullptr);
  EXPECT_EQ(index, 0u);
}

TEST(PlanRoundTrip, Ranks) {
  Loaded loaded(samplePlan());
  ASSERT_NE(loaded.plan, nullptr);
  struct Expected {
    uint32_t bindings, instructions;
    uint64_t staging, send, receive;
  };
  const Expected expected[] = {{2, 7, 48, 72, 0},
                               {3, 6, 48, 48, 0},
                               {2, 7, 24, 0, 60},
                               {2, 7, 24, 0, 60},
                               {0, 0, 0, 0, 0}};
  for (uint32_t r = 0; r < 5; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    m2n_plan_rank_info_t rank;
    ASSERT_EQ(m2n_plan_get_rank(loaded.plan, r, &rank), nullptr);
    EXPECT_EQ(rank.binding_count, expected[r].bindings);
    EXPECT_EQ(rank.instruction_count, expected[r].instructions);
    EXPECT_EQ(rank.staging_bytes, expected[r].staging);
    EXPECT_EQ(rank.send_bytes, expected[r].send);
    EXPECT_EQ(rank.receive_bytes, expected[r].receive);
  }
}

TEST(PlanRoundTrip, Bindings) {
  Loaded loaded(samplePlan());
  ASSERT_NE(loaded.plan, nullptr);
  m2n_plan_binding_info_t binding;
  ASSERT_EQ(m2n_plan_get_binding(loaded.plan, 1, 0, &binding), nullptr);
  EXPECT_EQ(binding.tensor, 0u);
  EXPECT_EQ(binding.role, M2N_ROLE_SOURCE);
  EXPECT_EQ(binding.byte_size, 48u);
  EXPECT_EQ(std::vector<int64_t>(binding.offset, binding.offset + 8),
            (std::vector<int64_t>{4, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(std::vector<int64_t>(binding.shape, binding.shape + 8),
            (std::vector<int64_t>{4, 6, 0, 0, 0, 0, 0, 0}));
  ASSERT_EQ(m2n_plan_get_binding(loaded.plan, 3, 1, &binding), nullptr);
  EXPECT_EQ(binding.tensor, 1u);
  EXPECT_EQ(binding.role, M2N_ROLE_DESTINATION);
  EXPECT_EQ(binding.byte_size, 12u);
  EXPECT_EQ(binding.offset[0], 3);
  EXPECT_EQ(binding.shape[0], 3);
}

TEST(PlanRoundTrip, DecodedInstructions) {
  Loaded loaded(samplePlan());
  ASSERT_NE(loaded.plan, nullptr);
  const LoadedPlan &plan = loaded.plan->plan;
  std::vector<Instruction> rank0;
  for (const Instruction &inst : plan.instructions(0))
    rank0.push_back(inst);
  ASSERT_EQ(rank0.size(), 7u);
  EXPECT_EQ(rank0[0].opcode, M2N_OP_STEP);
  EXPECT_EQ(rank0[0].step, 0u);
  EXPECT_EQ(rank0[0].recordSize, 16u);
  const Instruction &pack = rank0[2];
  EXPECT_EQ(pack.opcode, M2N_OP_PACK);
  EXPECT_EQ(pack.fileOffset, PlanBytes{samplePlan()}.instructionAt(0, 2));
  EXPECT_EQ(pack.runs.from_binding, 0u);
  EXPECT_EQ(pack.runs.from_offset, 6u);
  EXPECT_EQ(pack.runs.to_offset, 24u);
  EXPECT_EQ(pack.runs.run_bytes, 6u);
  EXPECT_EQ(pack.levels, 1u);
  EXPECT_EQ(pack.count[0], 4);
  EXPECT_EQ(pack.fromStride[0], 12);
  EXPECT_EQ(pack.toStride[0], 6);
  const Instruction &direct = rank0[6];
  EXPECT_EQ(direct.opcode, M2N_OP_SEND_DIRECT);
  EXPECT_EQ(direct.transfer.peer, 3u);
  EXPECT_EQ(direct.transfer.binding, 1u);
  EXPECT_EQ(direct.transfer.staging_offset, 12u);
  EXPECT_EQ(direct.transfer.bytes, 12u);
  EXPECT_EQ(plan.instructions(4).begin(), plan.instructions(4).end());
  EXPECT_EQ(plan.rankHeader(4), nullptr);
}

TEST(PlanDisassembler, WholePlan) {
  Loaded loaded(samplePlan());
  ASSERT_NE(loaded.plan, nullptr);
  std::string hash = hex64(PlanBytes{samplePlan()}.header().content_hash);
  EXPECT_EQ(
      disassemble(loaded.plan, -1),
      "plan v2.0 world 5 tensors 2 steps 2 staging_budget 1048576 hash " +
          hash + "\n" +
          R"(summary wire_bytes 120 local_copy_bytes 24 messages 6 predicted_ns 5000 lower_bound_ns 4000
tensor 0 "w" BF16 [8, 6]
tensor 1 "b" F32 [6]
rank 0: bindings 2 instructions 7 staging 48 send 72 receive 0
  binding 0: tensor 0 "w" source [0:4, 0:6] 48 bytes
  binding 1: tensor 1 "b" source [0:6] 24 bytes
  step 0
  pack binding 0 +0 -> staging +0: 4 runs of 6 bytes, levels [4 x (12, 6)]
  pack binding 0 +6 -> staging +24: 4 runs of 6 bytes, levels [4 x (12, 6)]
  send to 2 staging [0, 24)
  send to 3 staging [24, 48)
  send_direct to 2 binding 1 [0, 12)
  send_direct to 3 binding 1 [12, 24)
rank 1: bindings 3 instructions 6 staging 48 send 48 receive 0
  binding 0: tensor 0 "w" source [4:4, 0:6] 48 bytes
  binding 1: tensor 1 "b" source [0:6] 24 bytes
  binding 2: tensor 1 "b" destination [0:6] 24 bytes
  copy binding 1 +0 -> binding 2 +0: 1 run of 24 bytes
  step 1
  pack binding 0 +0 -> staging +0: 4 runs of 6 bytes, levels [4 x (12, 6)]
  pack binding 0 +6 -> staging +24: 4 runs of 6 bytes, levels [4 x (12, 6)]
  send to 2 staging [0, 24)
  send to 3 staging [24, 48)
rank 2: bindings 2 instructions 7 staging 24 send 0 receive 60
  binding 0: tensor 0 "w" destination [0:8, 0:3] 48 bytes
  binding 1: tensor 1 "b" destination [0:3] 12 bytes
  step 0
  recv from 0 staging [0, 24)
  recv_direct from 0 binding 1 [0, 12)
  unpack staging +0 -> binding 0 +0: 1 run of 24 bytes
  step 1
  recv from 1 staging [0, 24)
  unpack staging +0 -> binding 0 +24: 1 run of 24 bytes
rank 3: bindings 2 instructions 7 staging 24 send 0 receive 60
  binding 0: tensor 0 "w" destination [0:8, 3:3] 48 bytes
  binding 1: tensor 1 "b" destination [3:3] 12 bytes
  step 0
  recv from 0 staging [0, 24)
  recv_direct from 0 binding 1 [0, 12)
  unpack staging +0 -> binding 0 +0: 1 run of 24 bytes
  step 1
  recv from 1 staging [0, 24)
  unpack staging +0 -> binding 0 +24: 1 run of 24 bytes
)");
}

TEST(PlanDisassembler, OneRank) {
  Loaded loaded(samplePlan());
  ASSERT_NE(loaded.plan, nullptr);
  std::string text = disassemble(loaded.plan, 1);
  std::string ranks = text.substr(text.find("rank "));
  EXPECT_EQ(ranks.find("rank 0"), std::string::npos);
  EXPECT_EQ(ranks.find("rank 1: bindings 3 instructions 6"), 0u);
  EXPECT_EQ(ranks.find("rank 2"), std::string::npos);
  // A rank without work is listed when asked for.
  std::string idle = disassemble(loaded.plan, 4);
  EXPECT_NE(idle.find("\nrank 4: bindings 0 instructions 0 staging 0 send 0 "
                      "receive 0\n"),
            std::string::npos);
}

TEST(PlanDisassembler, ScalarsNestedLevelsAndOddNames) {
  PlanWriter writer;
  writer.setWorldSize(1);
  writer.setStepCount(0);
  uint32_t scalar = writer.addTensor("a \"q\"\n", M2N_DTYPE_I64, {});
  uint32_t matrix = writer.addTensor("m", M2N_DTYPE_U8, {4, 4});
  writer.addBinding(0, scalar, M2N_ROLE_SOURCE, {}, {});
  writer.addBinding(0, matrix, M2N_ROLE_SOURCE, {0, 0}, {4, 4});
  writer.addBinding(0, matrix, M2N_ROLE_DESTINATION, {0, 0}, {4, 4});
  // The transpose-free 2 x 2 block copy of the top-left quarter.
  PlanRuns runs;
  runs.fromBinding = 1;
  runs.toBinding = 2;
  runs.runBytes = 1;
  runs.count = {2, 2};
  runs.fromStride = {4, 1};
  runs.toStride = {4, 1};
  writer.copy(0, runs);
  // It copies a quarter of the destination: a walk, not a refit.
  Loaded loaded(writer.finish(), M2N_PLAN_LOAD_TRUSTED);
  ASSERT_NE(loaded.plan, nullptr);
  std::string text = disassemble(loaded.plan, -1);
  EXPECT_NE(text.find("tensor 0 \"a \\\"q\\\"\\x0a\" I64 []\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  binding 0: tensor 0 \"a \\\"q\\\"\\x0a\" source [] "
                      "8 bytes\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  copy binding 1 +0 -> binding 2 +0: 4 runs of 1 "
                      "bytes, levels [2 x (4, 4), 2 x (1, 1)]\n"),
            std::string::npos)
      << text;
}

TEST(PlanValidation, AcceptsSignedStridesAndEmptyShards) {
  PlanWriter writer;
  writer.setWorldSize(1);
  uint32_t t = writer.addTensor("t", M2N_DTYPE_F16, {3, 2});
  writer.addBinding(0, t, M2N_ROLE_SOURCE, {0, 0}, {3, 2});
  writer.addBinding(0, t, M2N_ROLE_DESTINATION, {0, 0}, {3, 2});
  uint32_t empty = writer.addTensor("empty", M2N_DTYPE_F16, {0, 2});
  writer.addBinding(0, empty, M2N_ROLE_DESTINATION, {0, 0}, {0, 2});
  // Rows in reverse order: start at the last row, step back a row.
  PlanRuns reverse;
  reverse.fromBinding = 0;
  reverse.toBinding = 1;
  reverse.fromOffset = 8;
  reverse.runBytes = 4;
  reverse.count = {3};
  reverse.fromStride = {-4};
  reverse.toStride = {4};
  writer.copy(0, reverse);
  // Reversed rows are no refit: only the structure is checked.
  std::vector<uint8_t> bytes = writer.finish();
  EXPECT_EQ(load(bytes, M2N_PLAN_LOAD_TRUSTED).message, "");
  EXPECT_EQ(load(bytes).message,
            "<memory>: rank 0 instruction at byte 904: writes element 2 of "
            "dimension 0 of tensor \"t\" where element 0 belongs");
}

/// Two layers of one shape, a group: rank 0 holds both whole, rank 1 their
/// columns 2..3, bound in `order` (layers by index). One PACK record of
/// two members, reading from byte `packFrom` of each row, and one UNPACK
/// record of `unpackMembers` move the layers' columns, as compiled plans
/// move a model's layers.
std::vector<uint8_t> groupPlan(std::vector<uint32_t> order, uint64_t packFrom,
                               uint32_t unpackMembers) {
  PlanWriter writer;
  writer.setWorldSize(2);
  writer.setStepCount(1);
  writer.setStagingBudget(64);
  uint32_t layers[2] = {writer.addTensor("l0", M2N_DTYPE_F32, {4, 4}),
                        writer.addTensor("l1", M2N_DTYPE_F32, {4, 4})};
  for (uint32_t layer : layers)
    writer.addBinding(0, layer, M2N_ROLE_SOURCE, {0, 0}, {4, 4});
  for (uint32_t layer : order)
    writer.addBinding(1, layers[layer], M2N_ROLE_DESTINATION, {0, 2}, {4, 2});
  PlanRuns pack; // columns 2..3 of each row, dense in staging
  pack.fromOffset = packFrom;
  pack.runBytes = 8;
  pack.members = 2;
  pack.count = {4};
  pack.fromStride = {16};
  pack.toStride = {8};
  PlanRuns unpack; // each member's 32 bytes are its whole shard
  unpack.runBytes = 32;
  unpack.members = unpackMembers;
  writer.step(0, 0);
  writer.pack(0, pack);
  writer.send(0, 1, 0, 64);
  writer.step(1, 0);
  writer.recv(1, 0, 0, 64);
  writer.unpack(1, unpack);
  writer.setStagingBytes(0, 64);
  writer.setStagingBytes(1, 64);
  writer.setTraffic(0, 64, 0);
  writer.setTraffic(1, 0, 64);
  return writer.finish();
}

TEST(PlanDataflow, ProvesAGroupMovedByWholeRecords) {
  EXPECT_EQ(load(groupPlan({0, 1}, 8, 2)).message, "");
}

// Each plan below is sound in structure (it loads trusted) and moves the
// group's bytes, but not the refit: the proof over whole records must still
// see it.
TEST(PlanDataflow, RejectsALayerUnpackedIntoTheOther) {
  std::vector<uint8_t> bytes = groupPlan({1, 0}, 8, 2);
  EXPECT_EQ(load(bytes, M2N_PLAN_LOAD_TRUSTED).message, "");
  LoadResult result = load(bytes);
  EXPECT_EQ(result.code, M2N_STATUS_DATA_LOSS);
  EXPECT_NE(result.message.find("writes bytes of tensor \"l0\" into binding "
                                "0 of tensor \"l1\""),
            std::string::npos)
      << result.message;
}

TEST(PlanDataflow, RejectsTheWrongColumnsOfAGroup) {
  std::vector<uint8_t> bytes = groupPlan({0, 1}, 0, 2);
  EXPECT_EQ(load(bytes, M2N_PLAN_LOAD_TRUSTED).message, "");
  LoadResult result = load(bytes);
  EXPECT_EQ(result.code, M2N_STATUS_DATA_LOSS);
  EXPECT_NE(result.message.find("writes element 0 of dimension 1 of tensor "
                                "\"l0\" where element 2 belongs"),
            std::string::npos)
      << result.message;
}

TEST(PlanDataflow, RejectsAGroupMemberNeverWritten) {
  std::vector<uint8_t> bytes = groupPlan({0, 1}, 8, 1);
  EXPECT_EQ(load(bytes, M2N_PLAN_LOAD_TRUSTED).message, "");
  EXPECT_EQ(load(bytes).message,
            "<memory>: rank 1 binding 1 (tensor \"l1\"): byte 0 of 32 is "
            "never written");
}

TEST(DType, NamesSizesAndLookup) {
  EXPECT_STREQ(m2n_dtype_name(M2N_DTYPE_BF16), "BF16");
  EXPECT_STREQ(m2n_dtype_name(M2N_DTYPE_F8_E5M2), "F8_E5M2");
  EXPECT_STREQ(m2n_dtype_name(M2N_DTYPE_BOOL), "BOOL");
  EXPECT_STREQ(m2n_dtype_name(M2N_DTYPE_COUNT), "UNKNOWN");
  EXPECT_EQ(m2n_dtype_size(M2N_DTYPE_F64), 8);
  EXPECT_EQ(m2n_dtype_size(M2N_DTYPE_U16), 2);
  EXPECT_EQ(m2n_dtype_size(M2N_DTYPE_COUNT), 0);
  for (int i = 0; i < M2N_DTYPE_COUNT; ++i) {
    auto dtype = static_cast<m2n_dtype_t>(i);
    m2n_dtype_t found = M2N_DTYPE_COUNT;
    ASSERT_EQ(m2n_dtype_from_name(m2n_dtype_name(dtype), &found), nullptr);
    EXPECT_EQ(found, dtype);
  }
  m2n_dtype_t found;
  m2n_status_t status = m2n_dtype_from_name("bf16", &found);
  EXPECT_EQ(m2n_status_code(status), M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(m2n_status_message(status), "unknown dtype \"bf16\"");
  m2n_status_free(status);
}

} // namespace
} // namespace m2n::test
