//===- plan_reject_test.cpp - One damaged plan per check of the loader ----===//
//
// Each test edits the sample plan (plan_test_util.h) to break one rule,
// and expects the loader's exact code and message. Structural edits
// recompute the content hash, so that the rule itself is what fails.
//
//===----------------------------------------------------------------------===//

#include "plan_internal.h"
#include "plan_test_util.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <string>

namespace m2n::test {
namespace {

::testing::AssertionResult rejected(const std::vector<uint8_t> &bytes,
                                    m2n_status_code_t code,
                                    const std::string &message) {
  LoadResult result = load(bytes);
  if (result.code == code && result.message == "<memory>: " + message)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "got " << m2n_status_code_name(result.code) << " \""
         << result.message << "\"\nwanted " << m2n_status_code_name(code)
         << " \"<memory>: " << message << "\"";
}

::testing::AssertionResult corrupt(const std::vector<uint8_t> &bytes,
                                   const std::string &message) {
  return rejected(bytes, M2N_STATUS_DATA_LOSS, message);
}

std::string at(uint64_t offset) { return std::to_string(offset); }

// Field offsets, by struct.
#define HEADER(field) offsetof(m2n_plan_header_t, field)
#define TENSOR(field) offsetof(m2n_plan_tensor_t, field)
#define RANK(field) offsetof(m2n_plan_rank_header_t, field)
#define BOX(field) offsetof(m2n_plan_box_t, field)
#define BINDING(field) offsetof(m2n_plan_binding_t, field)
#define RECORD(field) offsetof(m2n_plan_instruction_t, field)
#define RUNS(field) offsetof(m2n_plan_runs_t, field)
#define TRANSFER(field) offsetof(m2n_plan_transfer_t, field)
// The arrays after m2n_plan_runs_t of a record with `levels` levels.
#define COUNT(levels, i) (sizeof(m2n_plan_runs_t) + 8 * (i))
#define FROM_STRIDE(levels, i) (sizeof(m2n_plan_runs_t) + 8 * ((levels) + (i)))
#define TO_STRIDE(levels, i)                                                   \
  (sizeof(m2n_plan_runs_t) + 8 * (2 * (levels) + (i)))

// Instructions of the sample plan, by rank:
//   0: STEP 0, PACK, PACK, SEND 2, SEND 3, SEND_DIRECT 2, SEND_DIRECT 3
//   1: COPY, STEP 1, PACK, PACK, SEND 2, SEND 3
//   2, 3: STEP 0, RECV 0, RECV_DIRECT 0, UNPACK, STEP 1, RECV 1, UNPACK
class Reject : public ::testing::Test {
protected:
  PlanBytes file{samplePlan()};

  std::string instruction(uint32_t rank, uint32_t index) const {
    return "rank " + std::to_string(rank) + " instruction " +
           std::to_string(index) + " at byte " +
           at(file.instructionAt(rank, index)) + ": ";
  }
  std::string section(uint32_t rank) const {
    return "rank " + std::to_string(rank) + " section at byte " +
           at(file.sectionAt(rank)) + ": ";
  }
  std::string binding(uint32_t rank, uint32_t index) const {
    return "rank " + std::to_string(rank) + " binding " +
           std::to_string(index) + " at byte " +
           at(file.bindingAt(rank, index)) + ": ";
  }
  std::string tensor(uint32_t index) const {
    return "tensor " + std::to_string(index) + " at byte " +
           at(file.tensorAt(index)) + ": ";
  }
  template <typename T>
  void setOperand(uint32_t rank, uint32_t index, size_t field, T value) {
    file.set(file.operandAt(rank, index, field), value);
    file.rehash();
  }
};

//===----------------------------------------------------------------------===//
// Preamble
//===----------------------------------------------------------------------===//

TEST_F(Reject, EmptyInputIsTruncated) {
  EXPECT_TRUE(
      corrupt({}, "truncated: file has 0 bytes, a plan header has 160"));
}

TEST_F(Reject, ForeignFileHasBadMagic) {
  EXPECT_TRUE(rejected({'P', 'K', 3, 4, 20, 0, 0, 0, 8, 0},
                       M2N_STATUS_INVALID_ARGUMENT,
                       "not an m2n plan (bad magic)"));
  file.bytes[3] = 'X';
  EXPECT_TRUE(rejected(file.bytes, M2N_STATUS_INVALID_ARGUMENT,
                       "not an m2n plan (bad magic)"));
}

TEST_F(Reject, PrefixOfTheMagicIsTruncated) {
  file.bytes.resize(5);
  EXPECT_TRUE(corrupt(file.bytes,
                      "truncated: file has 5 bytes, a plan header has 160"));
}

TEST_F(Reject, NewerMajorIsUnimplemented) {
  file.set<uint16_t>(HEADER(version_major), 3);
  file.set<uint16_t>(HEADER(version_minor), 3);
  EXPECT_TRUE(rejected(file.bytes, M2N_STATUS_UNIMPLEMENTED,
                       "plan format version 3.3 is not supported; this "
                       "runtime reads version 2.x"));
  // Even when only the version survives.
  file.bytes.resize(12);
  EXPECT_TRUE(rejected(file.bytes, M2N_STATUS_UNIMPLEMENTED,
                       "plan format version 3.3 is not supported; this "
                       "runtime reads version 2.x"));
}

TEST_F(Reject, TruncatedHeader) {
  file.bytes.resize(100);
  EXPECT_TRUE(corrupt(file.bytes,
                      "truncated: file has 100 bytes, a plan header has 160"));
}

TEST_F(Reject, TruncatedFile) {
  uint64_t size = file.bytes.size();
  file.bytes.resize(1000);
  EXPECT_TRUE(corrupt(file.bytes, "truncated: header says " + at(size) +
                                      " bytes, file has 1000"));
}

TEST_F(Reject, TrailingBytes) {
  uint64_t size = file.bytes.size();
  file.bytes.resize(size + 8);
  EXPECT_TRUE(corrupt(file.bytes, "trailing bytes: header says " + at(size) +
                                      " bytes, file has " + at(size + 8)));
}

TEST_F(Reject, ContentHashMismatch) {
  uint64_t stored = file.header().content_hash;
  file.bytes[file.bindingAt(2, 0) + BINDING(byte_size)] ^= 0x40;
  uint64_t actual = planContentHash(file.bytes.data(), file.bytes.size());
  EXPECT_TRUE(corrupt(
      file.bytes, "content hash mismatch (file corrupted): header says " +
                      hex64(stored) + ", content hashes to " + hex64(actual)));
}

//===----------------------------------------------------------------------===//
// Header
//===----------------------------------------------------------------------===//

TEST_F(Reject, HeaderSize) {
  file.set<uint32_t>(HEADER(header_size), 168);
  file.rehash();
  EXPECT_TRUE(
      corrupt(file.bytes, "header at byte 12: header_size 168, expected 160"));
}

TEST_F(Reject, FlagsInAKnownMinor) {
  file.set<uint32_t>(HEADER(flags), 1);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, "header at byte 44: flags "
                                  "0x0000000000000001 set; version 2.0 "
                                  "defines none"));
}

TEST_F(Reject, ReservedHeaderBytes) {
  file.set<uint8_t>(HEADER(reserved) + 31, 1);
  file.rehash();
  EXPECT_TRUE(
      corrupt(file.bytes, "header at byte 128: reserved bytes are not zero"));
}

TEST_F(Reject, ZeroWorldSize) {
  file.set<uint32_t>(HEADER(world_size), 0);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, "header at byte 32: world_size is 0"));
}

TEST(NewerMinor, MayUseReservedFieldsAndLongerRecords) {
  PlanBytes file{samplePlan()};
  file.set<uint16_t>(HEADER(version_minor), 1);
  file.set<uint32_t>(HEADER(flags), 0x10);
  file.set<uint8_t>(HEADER(reserved), 7);
  file.set<uint8_t>(file.tensorAt(0) + TENSOR(reserved), 7);
  file.set<uint64_t>(file.sectionAt(0) + RANK(reserved1), 7);
  // Rank 0's first PACK, read as a record with trailing operands. It then
  // packs one run of its walk, and the plan no longer computes the refit.
  file.set<uint16_t>(file.instructionAt(0, 1) + RECORD(levels), 0);
  file.rehash();
  EXPECT_EQ(load(file.bytes, M2N_PLAN_LOAD_TRUSTED).message, "");
  EXPECT_EQ(load(file.bytes).code, M2N_STATUS_DATA_LOSS);
  file.set<uint16_t>(HEADER(version_minor), 0);
  file.rehash();
  EXPECT_NE(load(file.bytes, M2N_PLAN_LOAD_TRUSTED).message, "");
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

TEST_F(Reject, MisalignedTable) {
  file.set<uint64_t>(HEADER(tensors_offset), 264);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, "header at byte 72: tensor table offset "
                                  "264 is not a multiple of 64"));
}

TEST_F(Reject, TensorTablePastTheEnd) {
  file.set<uint32_t>(HEADER(tensor_count), 1000);
  file.rehash();
  EXPECT_TRUE(
      corrupt(file.bytes, "header at byte 72: tensor table [256, 80256) runs "
                          "past the end of the file (" +
                              at(file.bytes.size()) + " bytes)"));
}

TEST_F(Reject, StringTablePastTheEnd) {
  file.set<uint64_t>(HEADER(strings_size), UINT64_MAX);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, "header at byte 56: string table [192, +" +
                                      std::to_string(UINT64_MAX) +
                                      ") runs past the end of the file (" +
                                      at(file.bytes.size()) + " bytes)"));
}

TEST_F(Reject, RankDirectoryPastTheEnd) {
  file.set<uint32_t>(HEADER(world_size), 1000);
  file.rehash();
  EXPECT_TRUE(
      corrupt(file.bytes, "header at byte 80: rank directory [448, 16448) runs "
                          "past the end of the file (" +
                              at(file.bytes.size()) + " bytes)"));
}

TEST_F(Reject, EntryWithoutSectionButASize) {
  file.set<uint64_t>(file.entryAt(4) + 8, 64);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, "rank directory entry 4 at byte " +
                                      at(file.entryAt(4)) +
                                      ": no section (offset 0) but size 64"));
}

TEST_F(Reject, MisalignedSection) {
  uint64_t offset = file.sectionAt(0) + 8;
  file.set<uint64_t>(file.entryAt(0), offset);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, "rank directory entry 0 at byte " +
                                      at(file.entryAt(0)) +
                                      ": section offset " + at(offset) +
                                      " is not a multiple of 64"));
}

TEST_F(Reject, SectionSmallerThanARankHeader) {
  file.set<uint64_t>(file.entryAt(0) + 8, 32);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes,
                      "rank directory entry 0 at byte " + at(file.entryAt(0)) +
                          ": section of 32 bytes is smaller than a rank "
                          "header (64)"));
}

TEST_F(Reject, SectionPastTheEnd) {
  uint64_t offset = file.sectionAt(3);
  uint64_t size = file.get<uint64_t>(file.entryAt(3) + 8) + 64;
  file.set<uint64_t>(file.entryAt(3) + 8, size);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, "rank directory entry 3 at byte " +
                                      at(file.entryAt(3)) + ": section [" +
                                      at(offset) + ", " + at(offset + size) +
                                      ") runs past the end of the file (" +
                                      at(file.bytes.size()) + " bytes)"));
}

TEST_F(Reject, OverlappingSections) {
  auto entry0 = file.get<m2n_plan_rank_entry_t>(file.entryAt(0));
  file.set(file.entryAt(1), entry0);
  file.rehash();
  std::string range =
      "[" + at(entry0.offset) + ", " + at(entry0.offset + entry0.size) + ")";
  EXPECT_TRUE(corrupt(file.bytes, "layout: rank 1 section " + range +
                                      " overlaps rank 0 section " + range));
}

TEST_F(Reject, OverlappingTables) {
  file.set<uint64_t>(HEADER(tensors_offset), 192);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, "layout: tensor table [192, 352) overlaps "
                                  "string table [192, 194)"));
}

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

TEST_F(Reject, UnknownDType) {
  file.set<uint8_t>(file.tensorAt(1) + TENSOR(dtype), M2N_DTYPE_COUNT);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, tensor(1) + "dtype 15 is not a known dtype"));
}

TEST_F(Reject, TooManyDimensions) {
  file.set<uint8_t>(file.tensorAt(0) + TENSOR(rank), 9);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, tensor(0) + "rank 9 exceeds 8 dimensions"));
}

TEST_F(Reject, NegativeDimension) {
  file.set<int64_t>(file.tensorAt(0) + TENSOR(shape) + 8, -6);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, tensor(0) + "dimension 1 is negative (-6)"));
}

TEST_F(Reject, UnusedDimensionSet) {
  file.set<int64_t>(file.tensorAt(1) + TENSOR(shape) + 16, 7);
  file.rehash();
  EXPECT_TRUE(
      corrupt(file.bytes, tensor(1) + "unused dimension 2 is 7, not 0"));
}

TEST_F(Reject, TensorSizeOverflows) {
  file.set<int64_t>(file.tensorAt(0) + TENSOR(shape), INT64_MAX / 2);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, tensor(0) + "size [" +
                                      std::to_string(INT64_MAX / 2) +
                                      ", 6] of BF16 overflows 64 bits"));
}

TEST_F(Reject, ReservedTensorBytes) {
  file.set<uint8_t>(file.tensorAt(0) + TENSOR(reserved) + 5, 1);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, tensor(0) + "reserved bytes are not zero"));
}

TEST_F(Reject, EmptyName) {
  file.set<uint32_t>(file.tensorAt(1) + TENSOR(name_size), 0);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, tensor(1) + "empty name"));
}

TEST_F(Reject, NameOutsideTheStringTable) {
  file.set<uint32_t>(file.tensorAt(1) + TENSOR(name_size), 5);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, tensor(1) + "name [1, 6) lies outside the "
                                              "string table (2 bytes)"));
}

TEST_F(Reject, NameWithNul) {
  file.bytes[file.header().strings_offset + 1] = 0;
  file.rehash();
  EXPECT_TRUE(
      corrupt(file.bytes, tensor(1) + "name \"\\x00\" contains a NUL byte"));
}

TEST_F(Reject, DuplicateName) {
  file.set<uint32_t>(file.tensorAt(1) + TENSOR(name_offset), 0);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, tensor(1) + "name \"w\" repeats tensor 0"));
}

//===----------------------------------------------------------------------===//
// Rank headers
//===----------------------------------------------------------------------===//

TEST_F(Reject, RankFieldDisagrees) {
  file.set<uint32_t>(file.sectionAt(2) + RANK(rank), 3);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, section(2) + "header says rank 3"));
}

TEST_F(Reject, ReservedRankFields) {
  file.set<uint64_t>(file.sectionAt(2) + RANK(reserved1), 1);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, section(2) + "reserved fields are not zero"));
}

TEST_F(Reject, BoxesOverrunTheSection) {
  uint64_t size = file.get<uint64_t>(file.entryAt(2) + 8);
  file.set<uint32_t>(file.sectionAt(2) + RANK(box_count), 100);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, section(2) +
                                      "100 boxes of 128 bytes overrun the "
                                      "section (" +
                                      at(size) + " bytes)"));
}

TEST_F(Reject, BindingsOverrunTheSection) {
  uint64_t size = file.get<uint64_t>(file.entryAt(2) + 8);
  file.set<uint32_t>(file.sectionAt(2) + RANK(binding_count), 100);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, section(2) +
                                      "100 bindings of 24 bytes overrun the "
                                      "section (" +
                                      at(size) + " bytes)"));
}

TEST_F(Reject, InstructionsNotRightAfterBindings) {
  // Rank 2: its header, 2 boxes and 2 bindings.
  uint64_t expected = 64 + 2 * 128 + 2 * 24;
  ASSERT_EQ(file.rankHeader(2).instructions_offset, expected);
  file.set<uint64_t>(file.sectionAt(2) + RANK(instructions_offset),
                     expected + 8);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, section(2) + "instructions_offset " +
                                      at(expected + 8) + ", expected " +
                                      at(expected) +
                                      " (right after the bindings)"));
  file.set<uint64_t>(file.sectionAt(2) + RANK(instructions_offset),
                     expected - 8);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, section(2) + "instructions_offset " +
                                      at(expected - 8) + ", expected " +
                                      at(expected) +
                                      " (right after the bindings)"));
}

TEST_F(Reject, InstructionsDoNotEndTheSection) {
  m2n_plan_rank_header_t header = file.rankHeader(2);
  uint64_t size = file.get<uint64_t>(file.entryAt(2) + 8);
  file.set<uint64_t>(file.sectionAt(2) + RANK(instruction_bytes),
                     header.instruction_bytes - 8);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes,
                      section(2) + "instructions [" +
                          at(header.instructions_offset) + ", " + at(size - 8) +
                          ") do not end the section (" + at(size) + " bytes)"));
}

//===----------------------------------------------------------------------===//
// Bindings
//===----------------------------------------------------------------------===//

TEST_F(Reject, BindingOfAnUnknownTensor) {
  file.set<uint32_t>(file.bindingAt(2, 1) + BINDING(tensor), 2);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, binding(2, 1) + "tensor 2 out of range (the "
                                                  "plan has 2 tensors)"));
}

TEST_F(Reject, BindingRole) {
  file.set<uint8_t>(file.bindingAt(2, 1) + BINDING(role), 3);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, binding(2, 1) +
                                      "role 3 is neither source (1) nor "
                                      "destination (2)"));
}

TEST_F(Reject, ReservedBindingBytes) {
  file.set<uint8_t>(file.bindingAt(2, 1) + BINDING(reserved), 1);
  file.rehash();
  EXPECT_TRUE(
      corrupt(file.bytes, binding(2, 1) + "reserved bytes are not zero"));
  file.set<uint8_t>(file.bindingAt(2, 1) + BINDING(reserved), 0);
  file.set<uint32_t>(file.bindingAt(2, 1) + BINDING(reserved2), 1);
  file.rehash();
  EXPECT_TRUE(
      corrupt(file.bytes, binding(2, 1) + "reserved bytes are not zero"));
}

TEST_F(Reject, BindingBoxOutOfRange) {
  file.set<uint32_t>(file.bindingAt(2, 1) + BINDING(box), 2);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, binding(2, 1) + "box 2 out of range (the "
                                                  "rank has 2 boxes)"));
}

TEST_F(Reject, BoxOutsideTheTensor) {
  file.set<int64_t>(file.boxOfBindingAt(3, 0) + BOX(offset) + 8, 4);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, binding(3, 0) +
                                      "box at [0, 4] of shape [8, 3] lies "
                                      "outside tensor 0 \"w\" [8, 6]"));
  file.set<int64_t>(file.boxOfBindingAt(3, 0) + BOX(offset) + 8, -1);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, binding(3, 0) +
                                      "box at [0, -1] of shape [8, 3] lies "
                                      "outside tensor 0 \"w\" [8, 6]"));
}

TEST_F(Reject, UnusedBoxDimensionSet) {
  file.set<int64_t>(file.boxOfBindingAt(2, 1) + BOX(shape) + 8, 1);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes,
                      binding(2, 1) + "unused dimension 1 of box 1 is not 0"));
}

TEST(RejectBoxes, BoxThatNoBindingNames) {
  // Two tensors of one shape on rank 0, in boxes of their own; pointing the
  // second binding at the first box leaves the second box unnamed.
  PlanWriter writer;
  writer.setWorldSize(1);
  uint32_t x = writer.addTensor("x", M2N_DTYPE_F32, {4});
  uint32_t y = writer.addTensor("y", M2N_DTYPE_F32, {4});
  writer.addBinding(0, x, M2N_ROLE_SOURCE, {0}, {4});
  writer.addBinding(0, y, M2N_ROLE_SOURCE, {0}, {2});
  PlanBytes file{writer.finish()};
  ASSERT_EQ(file.rankHeader(0).box_count, 2u);
  file.set<uint32_t>(file.bindingAt(0, 1) + BINDING(box), 0);
  file.set<uint64_t>(file.bindingAt(0, 1) + BINDING(byte_size), 16);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, "rank 0 box 1 at byte " +
                                      at(file.boxAt(0, 1)) +
                                      ": no binding names it"));
}

TEST_F(Reject, BindingByteSize) {
  file.set<uint64_t>(file.bindingAt(2, 1) + BINDING(byte_size), 13);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, binding(2, 1) +
                                      "byte_size 13, but 3 F32 elements take "
                                      "12 bytes"));
}

TEST_F(Reject, TwoBindingsOfOneTensorAndRole) {
  // Rank 2's binding 1 becomes a second, empty, destination shard of "w".
  file.set<uint32_t>(file.bindingAt(2, 1) + BINDING(tensor), 0);
  file.set<uint64_t>(file.bindingAt(2, 1) + BINDING(byte_size), 0);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, binding(2, 1) +
                                      "a second destination binding of tensor "
                                      "0 \"w\" (binding 0 is the first)"));
}

//===----------------------------------------------------------------------===//
// Instruction records
//===----------------------------------------------------------------------===//

TEST_F(Reject, TruncatedRecord) {
  // Rank 3's section is the last one: give its stream 4 more bytes.
  file.bytes.resize(file.bytes.size() + 4);
  file.set<uint64_t>(HEADER(file_size), file.bytes.size());
  file.set<uint64_t>(file.entryAt(3) + 8,
                     file.get<uint64_t>(file.entryAt(3) + 8) + 4);
  file.set<uint64_t>(file.sectionAt(3) + RANK(instruction_bytes),
                     file.rankHeader(3).instruction_bytes + 4);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes,
                      instruction(3, 7) +
                          "truncated record: 4 bytes left in the instruction "
                          "stream"));
}

TEST_F(Reject, RecordSizeNotAMultipleOf8) {
  file.set<uint32_t>(file.instructionAt(2, 0) + RECORD(size), 12);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, instruction(2, 0) +
                                      "record size 12 is not a positive "
                                      "multiple of 8"));
}

TEST_F(Reject, RecordPastTheStream) {
  file.set<uint32_t>(file.instructionAt(3, 6) + RECORD(size), 56);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, instruction(3, 6) +
                                      "record of 56 bytes runs past the end "
                                      "of the instructions (48 bytes left)"));
}

TEST_F(Reject, UnknownOpcode) {
  file.set<uint16_t>(file.instructionAt(2, 0) + RECORD(opcode), 9);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, instruction(2, 0) + "unknown opcode 9"));
}

TEST_F(Reject, LevelsOnATransfer) {
  file.set<uint16_t>(file.instructionAt(2, 1) + RECORD(levels), 1);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, instruction(2, 1) +
                                      "RECV record has levels 1; only COPY, "
                                      "PACK and UNPACK have levels"));
}

TEST_F(Reject, TooManyLevels) {
  file.set<uint16_t>(file.instructionAt(0, 1) + RECORD(levels), 9);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, instruction(0, 1) +
                                      "PACK record has levels 9, more than 8"));
}

TEST_F(Reject, RecordTooShortForItsLevels) {
  file.set<uint16_t>(file.instructionAt(0, 1) + RECORD(levels), 2);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, instruction(0, 1) +
                                      "PACK record of 72 bytes, expected 96"));
}

TEST_F(Reject, TrailingOperandsInAKnownMinor) {
  file.set<uint16_t>(file.instructionAt(0, 1) + RECORD(levels), 0);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, instruction(0, 1) +
                                      "PACK record of 72 bytes, expected 48"));
}

TEST_F(Reject, InstructionCount) {
  file.set<uint32_t>(file.sectionAt(2) + RANK(instruction_count), 6);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, section(2) + "header says 6 instructions, "
                                               "the stream holds 7"));
}

TEST_F(Reject, SendBytes) {
  file.set<uint64_t>(file.sectionAt(0) + RANK(send_bytes), 70);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, section(0) + "send_bytes 70, but its sends "
                                               "carry 72 bytes"));
}

TEST_F(Reject, ReceiveBytes) {
  file.set<uint64_t>(file.sectionAt(2) + RANK(receive_bytes), 0);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, section(2) + "receive_bytes 0, but its "
                                               "receives carry 60 bytes"));
}

//===----------------------------------------------------------------------===//
// Order
//===----------------------------------------------------------------------===//

TEST_F(Reject, StepBeyondStepCount) {
  setOperand<uint64_t>(1, 1, 0, 2);
  EXPECT_TRUE(corrupt(file.bytes,
                      instruction(1, 1) + "STEP 2, but the plan has 2 steps"));
}

TEST_F(Reject, StepsNotIncreasing) {
  setOperand<uint64_t>(2, 4, 0, 0);
  EXPECT_TRUE(corrupt(file.bytes, instruction(2, 4) +
                                      "STEP 0 after STEP 0; steps must "
                                      "increase"));
}

TEST_F(Reject, CopyAfterAStep) {
  file.swapInstructions(1, 0);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, instruction(1, 1) +
                                      "COPY after the first STEP; local "
                                      "copies come before all steps"));
}

TEST_F(Reject, PackBeforeTheFirstStep) {
  file.swapInstructions(0, 0);
  file.rehash();
  EXPECT_TRUE(
      corrupt(file.bytes, instruction(0, 0) + "PACK before the first STEP"));
}

TEST_F(Reject, PackAfterATransfer) {
  file.swapInstructions(0, 2);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, instruction(0, 3) +
                                      "PACK after a transfer in step 0; a "
                                      "step runs its PACKs, then its "
                                      "transfers, then its UNPACKs"));
}

TEST_F(Reject, TransferAfterAnUnpack) {
  file.swapInstructions(2, 2);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, instruction(2, 3) +
                                      "RECV_DIRECT after an UNPACK in step 0; "
                                      "a step runs its PACKs, then its "
                                      "transfers, then its UNPACKs"));
}

//===----------------------------------------------------------------------===//
// Strided runs
//===----------------------------------------------------------------------===//

TEST_F(Reject, UnpackNamesAFromBinding) {
  setOperand<uint32_t>(2, 3, RUNS(from_binding), 1);
  EXPECT_TRUE(corrupt(file.bytes, instruction(2, 3) +
                                      "UNPACK from_binding 1, must be 0 "
                                      "(UNPACK reads staging)"));
}

TEST_F(Reject, PackNamesAToBinding) {
  setOperand<uint32_t>(0, 1, RUNS(to_binding), 1);
  EXPECT_TRUE(corrupt(file.bytes, instruction(0, 1) +
                                      "PACK to_binding 1, must be 0 (PACK "
                                      "writes staging)"));
}

TEST_F(Reject, RunsBindingOutOfRange) {
  setOperand<uint32_t>(0, 1, RUNS(from_binding), 2);
  EXPECT_TRUE(corrupt(file.bytes, instruction(0, 1) +
                                      "PACK reads binding 2, but the rank has "
                                      "2 bindings"));
}

TEST_F(Reject, CopyIntoASourceBinding) {
  setOperand<uint32_t>(1, 0, RUNS(to_binding), 0);
  EXPECT_TRUE(corrupt(file.bytes, instruction(1, 0) +
                                      "COPY writes binding 0, a source "
                                      "binding; only destination bindings are "
                                      "written"));
}

TEST_F(Reject, CopyFromADestinationBinding) {
  setOperand<uint32_t>(1, 0, RUNS(from_binding), 2);
  EXPECT_TRUE(corrupt(file.bytes, instruction(1, 0) +
                                      "COPY reads binding 2, a destination "
                                      "binding; COPY reads source bindings"));
}

TEST_F(Reject, UnpackIntoASourceBinding) {
  file.set<uint8_t>(file.bindingAt(2, 0) + BINDING(role), M2N_ROLE_SOURCE);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, instruction(2, 3) +
                                      "UNPACK writes binding 0, a source "
                                      "binding; only destination bindings are "
                                      "written"));
}

TEST_F(Reject, ZeroMembers) {
  setOperand<uint32_t>(0, 1, RUNS(members), 0);
  EXPECT_TRUE(corrupt(file.bytes, instruction(0, 1) +
                                      "PACK has 0 members; a record moves at "
                                      "least one"));
}

TEST_F(Reject, EveryMemberIsChecked) {
  // Member 1 reads binding 1, a 24-byte shard, with member 0's walk.
  setOperand<uint32_t>(0, 1, RUNS(members), 2);
  EXPECT_TRUE(corrupt(file.bytes, instruction(0, 1) +
                                      "PACK reads bytes [0, 42) of binding 1 "
                                      "which has 24 bytes"));
}

TEST_F(Reject, MembersPastTheLastBinding) {
  setOperand<uint32_t>(0, 1, RUNS(from_binding), UINT32_MAX);
  setOperand<uint32_t>(0, 1, RUNS(members), 2);
  EXPECT_TRUE(corrupt(file.bytes, instruction(0, 1) +
                                      "PACK of 2 members names bindings past "
                                      "2^32"));
}

TEST_F(Reject, ReservedRunsField) {
  setOperand<uint32_t>(0, 1, RUNS(reserved), 1);
  EXPECT_TRUE(corrupt(file.bytes,
                      instruction(0, 1) + "PACK reserved field is not zero"));
}

TEST_F(Reject, ZeroRunBytes) {
  setOperand<uint64_t>(0, 1, RUNS(run_bytes), 0);
  EXPECT_TRUE(corrupt(file.bytes,
                      instruction(0, 1) + "PACK run_bytes 0 is out of range"));
}

TEST_F(Reject, ZeroCount) {
  setOperand<int64_t>(0, 1, COUNT(1, 0), 0);
  EXPECT_TRUE(corrupt(file.bytes, instruction(0, 1) +
                                      "PACK level 0 count 0 is not positive"));
}

TEST_F(Reject, WalkMovesTooManyBytes) {
  setOperand<int64_t>(0, 1, COUNT(1, 0), INT64_MAX);
  EXPECT_TRUE(corrupt(file.bytes,
                      instruction(0, 1) + "PACK moves more than 2^63 bytes"));
}

TEST_F(Reject, PackReadsPastItsBinding) {
  setOperand<uint64_t>(0, 2, RUNS(from_offset), 30);
  EXPECT_TRUE(corrupt(file.bytes, instruction(0, 2) +
                                      "PACK reads bytes [30, 72) of binding 0 "
                                      "which has 48 bytes"));
}

TEST_F(Reject, PackReadsBeforeItsBinding) {
  setOperand<int64_t>(0, 1, FROM_STRIDE(1, 0), -12);
  EXPECT_TRUE(corrupt(file.bytes, instruction(0, 1) +
                                      "PACK reads bytes [-36, 6) of binding 0 "
                                      "which has 48 bytes"));
}

TEST_F(Reject, WalkOffsetsOverflow) {
  setOperand<uint64_t>(0, 1, RUNS(from_offset), INT64_MAX - 2);
  EXPECT_TRUE(corrupt(file.bytes, instruction(0, 1) +
                                      "PACK reads binding 0 at offsets that "
                                      "overflow 64 bits"));
  setOperand<uint64_t>(0, 1, RUNS(from_offset), 0);
  setOperand<int64_t>(0, 1, FROM_STRIDE(1, 0), INT64_MAX);
  EXPECT_TRUE(corrupt(file.bytes, instruction(0, 1) +
                                      "PACK reads binding 0 at offsets that "
                                      "overflow 64 bits"));
}

TEST_F(Reject, StagingNotDense) {
  setOperand<int64_t>(0, 1, TO_STRIDE(1, 0), 7);
  EXPECT_TRUE(corrupt(file.bytes, instruction(0, 1) +
                                      "PACK staging stride 7 at level 0, but "
                                      "a dense packing has 6"));
}

TEST_F(Reject, UnpackReadsPastStaging) {
  setOperand<uint64_t>(2, 3, RUNS(from_offset), 8);
  EXPECT_TRUE(corrupt(file.bytes, instruction(2, 3) +
                                      "UNPACK reads bytes [8, 32) of staging "
                                      "which has 24 bytes"));
}

TEST_F(Reject, PackWritesPastStaging) {
  file.set<uint64_t>(file.sectionAt(0) + RANK(staging_bytes), 40);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, instruction(0, 2) +
                                      "PACK writes bytes [24, 48) of staging "
                                      "which has 40 bytes"));
}

TEST(RejectWritten, CopyMovingMoreThanItsDestinationHolds) {
  // Strides of 0 keep the walk in bounds, but it would copy 4 bytes 8 times.
  PlanWriter writer;
  writer.setWorldSize(1);
  uint32_t t = writer.addTensor("t", M2N_DTYPE_U8, {4});
  writer.addBinding(0, t, M2N_ROLE_SOURCE, {0}, {4});
  writer.addBinding(0, t, M2N_ROLE_DESTINATION, {0}, {4});
  PlanRuns runs;
  runs.fromBinding = 0;
  runs.toBinding = 1;
  runs.runBytes = 4;
  runs.count = {8};
  runs.fromStride = {0};
  runs.toStride = {0};
  writer.copy(0, runs);
  PlanBytes file{writer.finish()};
  EXPECT_TRUE(corrupt(file.bytes, "rank 0 instruction 0 at byte " +
                                      at(file.instructionAt(0, 0)) +
                                      ": COPY moves 32 bytes into binding 1, "
                                      "which has 4 bytes"));
}

//===----------------------------------------------------------------------===//
// Transfers
//===----------------------------------------------------------------------===//

TEST_F(Reject, PeerOutsideTheWorld) {
  setOperand<uint32_t>(0, 3, TRANSFER(peer), 5);
  EXPECT_TRUE(corrupt(file.bytes, instruction(0, 3) +
                                      "SEND peer 5 is outside the world (5 "
                                      "ranks)"));
}

TEST_F(Reject, PeerIsItself) {
  setOperand<uint32_t>(0, 3, TRANSFER(peer), 0);
  EXPECT_TRUE(
      corrupt(file.bytes, instruction(0, 3) + "SEND peer is the rank itself"));
}

TEST_F(Reject, EmptyTransfer) {
  setOperand<uint64_t>(2, 1, TRANSFER(bytes), 0);
  EXPECT_TRUE(corrupt(file.bytes, instruction(2, 1) + "RECV of 0 bytes"));
}

TEST_F(Reject, StagingTransferNamesABinding) {
  setOperand<uint32_t>(0, 3, TRANSFER(binding), 1);
  EXPECT_TRUE(corrupt(file.bytes, instruction(0, 3) +
                                      "SEND binding 1, must be 0 (only DIRECT "
                                      "transfers name a binding)"));
}

TEST_F(Reject, SendPastStaging) {
  setOperand<uint64_t>(0, 4, TRANSFER(staging_offset), 30);
  EXPECT_TRUE(corrupt(file.bytes, instruction(0, 4) +
                                      "SEND reads bytes [30, 54) of staging "
                                      "which has 48 bytes"));
  setOperand<uint64_t>(0, 4, TRANSFER(staging_offset), UINT64_MAX);
  EXPECT_TRUE(corrupt(file.bytes, instruction(0, 4) + "SEND reads bytes [" +
                                      std::to_string(UINT64_MAX) +
                                      ", +24) of staging which has 48 bytes"));
}

TEST_F(Reject, DirectBindingOutOfRange) {
  setOperand<uint32_t>(0, 5, TRANSFER(binding), 2);
  EXPECT_TRUE(corrupt(file.bytes, instruction(0, 5) +
                                      "SEND_DIRECT reads binding 2, but the "
                                      "rank has 2 bindings"));
}

TEST_F(Reject, ReceiveIntoASourceBinding) {
  file.set<uint8_t>(file.bindingAt(2, 1) + BINDING(role), M2N_ROLE_SOURCE);
  file.rehash();
  EXPECT_TRUE(corrupt(file.bytes, instruction(2, 2) +
                                      "RECV_DIRECT writes binding 1, a source "
                                      "binding; only destination bindings are "
                                      "written"));
}

TEST_F(Reject, ReceivePastItsBinding) {
  setOperand<uint64_t>(2, 2, TRANSFER(staging_offset), 4);
  EXPECT_TRUE(corrupt(file.bytes, instruction(2, 2) +
                                      "RECV_DIRECT writes bytes [4, 16) of "
                                      "binding 1 which has 12 bytes"));
}

//===----------------------------------------------------------------------===//
// Messages between ranks
//===----------------------------------------------------------------------===//

TEST_F(Reject, MessageSizesDisagree) {
  setOperand<uint64_t>(2, 1, TRANSFER(bytes), 20);
  file.set<uint64_t>(file.sectionAt(2) + RANK(receive_bytes), 56);
  file.rehash();
  EXPECT_TRUE(corrupt(
      file.bytes, "step 0: rank 0 instruction 3 at byte " +
                      at(file.instructionAt(0, 3)) +
                      " sends 24 bytes to rank 2, but its matching receive, "
                      "rank 2 instruction 1 at byte " +
                      at(file.instructionAt(2, 1)) + ", takes 20 bytes"));
}

TEST_F(Reject, SendWithoutReceive) {
  setOperand<uint32_t>(0, 4, TRANSFER(peer), 1);
  EXPECT_TRUE(corrupt(file.bytes, "step 0: rank 0 instruction 4 at byte " +
                                      at(file.instructionAt(0, 4)) +
                                      " sends 24 bytes to rank 1, which has "
                                      "no matching receive"));
}

TEST_F(Reject, ReceiveWithoutSend) {
  setOperand<uint32_t>(3, 5, TRANSFER(peer), 0);
  EXPECT_TRUE(corrupt(file.bytes, "step 1: rank 3 instruction 5 at byte " +
                                      at(file.instructionAt(3, 5)) +
                                      " receives 24 bytes from rank 0, which "
                                      "has no matching send"));
}

TEST_F(Reject, MessageInAnotherStep) {
  // Rank 1 sends in step 0 instead, where rank 2 and 3 do not listen to it.
  setOperand<uint64_t>(1, 1, 0, 0);
  EXPECT_TRUE(corrupt(file.bytes, "step 0: rank 1 instruction 4 at byte " +
                                      at(file.instructionAt(1, 4)) +
                                      " sends 24 bytes to rank 2, which has "
                                      "no matching receive"));
}

} // namespace
} // namespace m2n::test
