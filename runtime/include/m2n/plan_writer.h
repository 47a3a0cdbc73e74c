//===- m2n/plan_writer.h - Emitting plan files ------------------*- C++ -*-===//
//
// The compiler's side of m2n/plan_format.h: it describes a plan call by call
// and finish() lays out the file. The writer trusts its caller (the compiler
// has verified the plan), checks nothing beyond assertions and throws
// nothing, so that it builds in -fno-exceptions code; the runtime's loader
// validates every file it reads.
//
//   m2n::PlanWriter writer;
//   writer.setWorldSize(2);
//   writer.setStepCount(1);
//   uint32_t w = writer.addTensor("w", M2N_DTYPE_F32, {4});
//   uint32_t src = writer.addBinding(0, w, M2N_ROLE_SOURCE, {0}, {4});
//   uint32_t dst = writer.addBinding(1, w, M2N_ROLE_DESTINATION, {0}, {4});
//   writer.step(0, 0);
//   writer.sendDirect(0, 1, src, 0, 16);
//   writer.setTraffic(0, 16, 0);
//   writer.step(1, 0);
//   writer.recvDirect(1, 0, dst, 0, 16);
//   writer.setTraffic(1, 0, 16);
//   std::vector<uint8_t> file = writer.finish();
//
//===----------------------------------------------------------------------===//

#ifndef M2N_PLAN_WRITER_H
#define M2N_PLAN_WRITER_H

#include "m2n/plan_format.h"

#include <cstddef>
#include <cstdint>
#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace m2n {

/// The operands of a COPY, PACK or UNPACK (see m2n_plan_runs_t): count,
/// fromStride and toStride have one entry per level, outermost first, and
/// at most M2N_PLAN_MAX_LEVELS. A staging side's binding is 0.
struct PlanRuns {
  uint32_t fromBinding = 0;
  uint32_t toBinding = 0;
  uint64_t fromOffset = 0;
  uint64_t toOffset = 0;
  uint64_t runBytes = 0;
  /// Tensors moved alike: bindings fromBinding + m and toBinding + m, and
  /// staging one walk further per member (docs/plan-format.md).
  uint32_t members = 1;
  std::vector<int64_t> count;
  std::vector<int64_t> fromStride;
  std::vector<int64_t> toStride;
};

class PlanWriter {
public:
  /// Calls about different ranks below the world size (instructions,
  /// setStagingBytes, setTraffic) may come from different threads once it
  /// is set; everything else from one thread at a time.
  void setWorldSize(uint32_t worldSize);
  void setStepCount(uint32_t stepCount) { stepCount_ = stepCount; }
  void setStagingBudget(uint64_t bytes) { stagingBudget_ = bytes; }
  void setSummary(uint64_t wireBytes, uint64_t localCopyBytes,
                  uint64_t messageCount, uint64_t predictedNs,
                  uint64_t lowerBoundNs);

  /// Adds a tensor and returns its index. `shape` has at most
  /// M2N_PLAN_MAX_RANK dimensions.
  uint32_t addTensor(std::string name, m2n_dtype_t dtype,
                     std::vector<int64_t> shape);

  /// Adds to `rank` the shard [offset, offset + shape) of `tensor` (which
  /// must have been added) and returns its index among the rank's bindings.
  /// The byte size follows from the shape and the tensor's dtype.
  uint32_t addBinding(uint32_t rank, uint32_t tensor, m2n_role_t role,
                      const std::vector<int64_t> &offset,
                      const std::vector<int64_t> &shape);
  /// The same with the box as two arrays of the tensor's rank.
  uint32_t addBinding(uint32_t rank, uint32_t tensor, m2n_role_t role,
                      const int64_t *offset, const int64_t *shape);

  /// Instructions, appended to `rank`'s stream in call order.
  void step(uint32_t rank, uint32_t step);
  void copy(uint32_t rank, const PlanRuns &runs);
  void pack(uint32_t rank, const PlanRuns &runs);
  void unpack(uint32_t rank, const PlanRuns &runs);
  void send(uint32_t rank, uint32_t peer, uint64_t stagingOffset,
            uint64_t bytes);
  void recv(uint32_t rank, uint32_t peer, uint64_t stagingOffset,
            uint64_t bytes);
  void sendDirect(uint32_t rank, uint32_t peer, uint32_t binding,
                  uint64_t byteOffset, uint64_t bytes);
  void recvDirect(uint32_t rank, uint32_t peer, uint32_t binding,
                  uint64_t byteOffset, uint64_t bytes);

  /// The rank's staging buffer and its traffic (its header fields). A rank
  /// with neither bindings nor instructions gets no section, and these are
  /// then not written.
  void setStagingBytes(uint32_t rank, uint64_t bytes);
  void setTraffic(uint32_t rank, uint64_t sendBytes, uint64_t receiveBytes);

  /// The file. The same calls always give the same bytes.
  std::vector<uint8_t> finish() const;

private:
  /// A box's offsets, then its shape.
  using BoxKey = std::array<int64_t, 2 * M2N_PLAN_MAX_RANK>;

  struct Rank {
    /// Each distinct box once, and where it is by its 16 values.
    std::vector<m2n_plan_box_t> boxes;
    std::map<BoxKey, uint32_t> boxIndex;
    /// The box of the last binding.
    BoxKey lastBox = {};
    std::vector<m2n_plan_binding_t> bindings;
    std::vector<uint8_t> instructions;
    uint32_t instructionCount = 0;
    uint64_t stagingBytes = 0;
    uint64_t sendBytes = 0;
    uint64_t receiveBytes = 0;

    bool hasWork() const { return !bindings.empty() || instructionCount; }
  };

  Rank &entryOf(uint32_t rank);
  /// The index of `key` in the rank's boxes, added when new.
  uint32_t boxOf(Rank &entry, const BoxKey &key);
  void emit(uint32_t rank, m2n_opcode_t opcode, uint16_t levels,
            const uint8_t *operands, size_t size);
  void emitRuns(uint32_t rank, m2n_opcode_t opcode, const PlanRuns &runs);
  void emitTransfer(uint32_t rank, m2n_opcode_t opcode, uint32_t peer,
                    uint32_t binding, uint64_t offset, uint64_t bytes);

  uint32_t worldSize_ = 0;
  uint32_t stepCount_ = 0;
  uint64_t stagingBudget_ = 0;
  uint64_t wireBytes_ = 0;
  uint64_t localCopyBytes_ = 0;
  uint64_t messageCount_ = 0;
  uint64_t predictedNs_ = 0;
  uint64_t lowerBoundNs_ = 0;
  std::vector<m2n_plan_tensor_t> tensors_;
  std::string strings_;
  // By rank, so that the layout does not depend on call order; null for a
  // rank not named yet.
  std::vector<std::unique_ptr<Rank>> ranks_;
};

/// FNV-1a 64 of `size` bytes at `data`, with the header's content_hash
/// field (bytes 24 to 31) taken as zero: the value that field holds.
uint64_t planContentHash(const uint8_t *data, size_t size);

} // namespace m2n

#endif // M2N_PLAN_WRITER_H
