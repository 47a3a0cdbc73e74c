//===- plan_internal.h - A loaded plan, for the runtime's own use -*- C++ -*-===//
//
// The C API hands out m2n_plan_t; the runtime's executor reads the plan
// through m2n::LoadedPlan instead: typed views of the validated file and
// its instructions, decoded. Everything here assumes a plan that passed
// validation, so the views check nothing.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_PLAN_INTERNAL_H
#define M2N_PLAN_INTERNAL_H

#include "m2n/plan.h"

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

// The format is little-endian, and the runtime reads it in place.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the m2n runtime needs a little-endian host");

#define M2N_RETURN_IF_ERROR(expression)                                       \
  do {                                                                         \
    if (m2n_status_t status_ = (expression))                                   \
      return status_;                                                          \
  } while (0)

namespace m2n {

//===----------------------------------------------------------------------===//
// Messages
//===----------------------------------------------------------------------===//

inline void appendTo(std::string &out, std::string_view text) { out += text; }
inline void appendTo(std::string &out, const char *text) { out += text; }
template <typename T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
void appendTo(std::string &out, T value) {
  out += std::to_string(value);
}

/// The arguments, integers in decimal, one after another.
template <typename... Args>
std::string concat(const Args &...args) {
  std::string out;
  (appendTo(out, args), ...);
  return out;
}

/// `value` as 0x and 16 hex digits.
std::string hex64(uint64_t value);

/// `name` in double quotes, with quotes, backslashes and bytes outside
/// printable ASCII escaped, so that any name prints on one line.
std::string quoteName(std::string_view name);

/// "STEP", "COPY", ...; nullptr for a value that is not an opcode.
const char *opcodeName(uint16_t opcode);

//===----------------------------------------------------------------------===//
// Instructions
//===----------------------------------------------------------------------===//

/// Reads a T at byte `offset` of `data`, which need not be aligned.
template <typename T>
T readAt(const uint8_t *data, uint64_t offset) {
  static_assert(std::is_trivially_copyable_v<T>);
  T value;
  std::memcpy(&value, data + offset, sizeof(T));
  return value;
}

/// One instruction record, decoded. Only the fields of its opcode are set.
struct Instruction {
  m2n_opcode_t opcode = M2N_OP_STEP;
  uint32_t recordSize = 0;
  uint64_t fileOffset = 0;            // of the record
  uint64_t step = 0;                  // STEP
  m2n_plan_transfer_t transfer = {};  // SEND, RECV, SEND_DIRECT, RECV_DIRECT
  m2n_plan_runs_t runs = {};          // COPY, PACK, UNPACK
  uint32_t levels = 0;
  int64_t count[M2N_PLAN_MAX_LEVELS] = {};
  int64_t fromStride[M2N_PLAN_MAX_LEVELS] = {};
  int64_t toStride[M2N_PLAN_MAX_LEVELS] = {};
};

/// Member `member` of a COPY, PACK or UNPACK record, as a record of one
/// member: its bindings or staging offsets moved to that member's.
Instruction memberInstruction(const Instruction &record, uint32_t member);

/// Decodes the record at byte `offset` of `data`, whose instruction stream
/// ends at byte `end`. Checks the record's framing only (size, opcode,
/// levels); `exact` also rejects trailing operand bytes, which only a newer
/// minor version may add. Returns what is wrong, or "" when it decoded.
std::string decodeInstruction(const uint8_t *data, uint64_t offset,
                              uint64_t end, bool exact, Instruction *out);

/// A rank's instructions in execution order, decoded one at a time. A
/// record of several members comes out as one instruction per member (each
/// of members 1), which is how executors run it, unless `perMember` is
/// false: then records come out as the file holds them.
class InstructionRange {
public:
  class Iterator {
  public:
    const Instruction &operator*() const { return current_; }
    const Instruction *operator->() const { return &current_; }
    Iterator &operator++();
    bool operator==(const Iterator &other) const {
      return offset_ == other.offset_ && member_ == other.member_;
    }
    bool operator!=(const Iterator &other) const { return !(*this == other); }

  private:
    friend class InstructionRange;
    Iterator(const uint8_t *data, uint64_t offset, uint64_t end,
             bool perMember);
    void decode();

    const uint8_t *data_;
    uint64_t offset_;
    uint64_t end_;
    bool perMember_;
    uint32_t member_ = 0;
    Instruction record_;
    Instruction current_;
  };

  InstructionRange(const uint8_t *data, uint64_t begin, uint64_t end,
                   bool perMember = true)
      : data_(data), begin_(begin), end_(end), perMember_(perMember) {}
  Iterator begin() const { return Iterator(data_, begin_, end_, perMember_); }
  Iterator end() const { return Iterator(data_, end_, end_, perMember_); }

private:
  const uint8_t *data_;
  uint64_t begin_;
  uint64_t end_;
  bool perMember_;
};

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

/// Checks every rule of docs/plan-format.md. `source` names the bytes in
/// messages: a path, or "<memory>".
m2n_status_t validatePlan(const std::string &source, const uint8_t *data,
                          uint64_t size);

class LoadedPlan;

/// Proves what a plan computes, beyond validatePlan's memory safety: every
/// destination byte written exactly once, with the element of its tensor at
/// its coordinates, from a source shard or from destination bytes that an
/// earlier step wrote; staging within the plan's budget. DATA_LOSS naming
/// the rank and instruction when not.
m2n_status_t checkPlanDataflow(const LoadedPlan &plan);

/// A binding with its box: what the executors need of a rank's shard.
struct Binding {
  uint32_t tensor = 0;
  uint8_t role = 0;
  uint64_t byte_size = 0;
  int64_t offset[M2N_PLAN_MAX_RANK] = {};
  int64_t shape[M2N_PLAN_MAX_RANK] = {};
};

/// The binding at byte `at` of `data`, with the box it names from the box
/// table at byte `boxes`; the box index must be in range.
Binding decodeBinding(const uint8_t *data, uint64_t at, uint64_t boxes);

/// A validated plan and the bytes it lives in. The bytes are aligned to
/// M2N_PLAN_ALIGNMENT, so the views below point into them directly.
class LoadedPlan {
public:
  /// Frees the bytes when the plan goes.
  using Release = void (*)(const uint8_t *data, uint64_t size);

  /// Takes `data`, which validatePlan accepted.
  LoadedPlan(std::string source, const uint8_t *data, uint64_t size,
             Release release);
  ~LoadedPlan();
  LoadedPlan(const LoadedPlan &) = delete;
  LoadedPlan &operator=(const LoadedPlan &) = delete;

  const std::string &source() const { return source_; }
  const uint8_t *data() const { return data_; }
  uint64_t size() const { return size_; }

  const m2n_plan_header_t &header() const {
    return *reinterpret_cast<const m2n_plan_header_t *>(data_);
  }
  uint32_t worldSize() const { return header().world_size; }
  uint32_t tensorCount() const { return header().tensor_count; }

  const m2n_plan_tensor_t &tensor(uint32_t index) const;
  std::string_view tensorName(uint32_t index) const;
  std::optional<uint32_t> findTensor(std::string_view name) const;

  /// The header of `rank`'s section, or nullptr when the rank has no work.
  const m2n_plan_rank_header_t *rankHeader(uint32_t rank) const;
  const Binding &binding(uint32_t rank, uint32_t index) const {
    return bindings_[rank][index];
  }
  /// Empty for a rank without work. One instruction per member.
  InstructionRange instructions(uint32_t rank) const;
  /// The same, with a record of several members as one instruction.
  InstructionRange records(uint32_t rank) const;

private:
  uint64_t sectionOffset(uint32_t rank) const;
  InstructionRange rankInstructions(uint32_t rank, bool perMember) const;

  std::string source_;
  const uint8_t *data_;
  uint64_t size_;
  Release release_;
  std::unordered_map<std::string_view, uint32_t> tensorsByName_;
  /// Each rank's bindings, decoded once, with their boxes.
  std::vector<std::vector<Binding>> bindings_;
};

} // namespace m2n

/// The C handle is the loaded plan.
struct m2n_plan_s {
  m2n::LoadedPlan plan;
};

#endif // M2N_PLAN_INTERNAL_H
