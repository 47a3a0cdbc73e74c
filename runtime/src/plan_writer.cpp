//===- plan_writer.cpp - Emitting plan files ------------------------------===//

#include "m2n/plan_writer.h"

#include "m2n/plan.h"

#include <algorithm>
#include <cassert>
#include <cstring>

// The writer lays out the format's structs as they are in memory.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "plans are little-endian; this host is not");

namespace m2n {

namespace {

/// The most operand bytes of any record: a COPY, PACK or UNPACK of the
/// most levels.
constexpr size_t kMaxOperandBytes =
    sizeof(m2n_plan_runs_t) + 3 * sizeof(int64_t) * M2N_PLAN_MAX_LEVELS;

uint64_t alignUp(uint64_t value) {
  constexpr uint64_t kAlignment = M2N_PLAN_ALIGNMENT;
  return (value + kAlignment - 1) / kAlignment * kAlignment;
}

template <typename T>
void put(std::vector<uint8_t> &file, uint64_t offset, const T &value) {
  std::memcpy(file.data() + offset, &value, sizeof(T));
}

} // namespace

void PlanWriter::setWorldSize(uint32_t worldSize) {
  worldSize_ = worldSize;
  // A slot per rank, so that entryOf never moves the table under a thread
  // that is writing another rank.
  if (ranks_.size() < worldSize)
    ranks_.resize(worldSize);
}

void PlanWriter::setSummary(uint64_t wireBytes, uint64_t localCopyBytes,
                            uint64_t messageCount, uint64_t predictedNs,
                            uint64_t lowerBoundNs) {
  wireBytes_ = wireBytes;
  localCopyBytes_ = localCopyBytes;
  messageCount_ = messageCount;
  predictedNs_ = predictedNs;
  lowerBoundNs_ = lowerBoundNs;
}

uint32_t PlanWriter::addTensor(std::string name, m2n_dtype_t dtype,
                               std::vector<int64_t> shape) {
  assert(shape.size() <= M2N_PLAN_MAX_RANK && "too many dimensions");
  m2n_plan_tensor_t tensor = {};
  tensor.name_offset = static_cast<uint32_t>(strings_.size());
  tensor.name_size = static_cast<uint32_t>(name.size());
  tensor.dtype = static_cast<uint8_t>(dtype);
  tensor.rank = static_cast<uint8_t>(shape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    tensor.shape[d] = shape[d];
  strings_ += name;
  tensors_.push_back(tensor);
  return static_cast<uint32_t>(tensors_.size() - 1);
}

uint32_t PlanWriter::addBinding(uint32_t rank, uint32_t tensor, m2n_role_t role,
                                const std::vector<int64_t> &offset,
                                const std::vector<int64_t> &shape) {
  assert(tensor < tensors_.size() && "binding of an unknown tensor");
  assert(offset.size() == tensors_[tensor].rank &&
         shape.size() == tensors_[tensor].rank && "box of the wrong rank");
  return addBinding(rank, tensor, role, offset.data(), shape.data());
}

uint32_t PlanWriter::addBinding(uint32_t rank, uint32_t tensor, m2n_role_t role,
                                const int64_t *offset, const int64_t *shape) {
  assert(tensor < tensors_.size() && "binding of an unknown tensor");
  std::array<int64_t, 2 *M2N_PLAN_MAX_RANK> key = {};
  int64_t volume = 1;
  for (size_t d = 0; d < tensors_[tensor].rank; ++d) {
    key[d] = offset[d];
    key[M2N_PLAN_MAX_RANK + d] = shape[d];
    volume *= shape[d];
  }
  Rank &entry = entryOf(rank);
  m2n_plan_binding_t binding = {};
  binding.tensor = tensor;
  binding.role = static_cast<uint8_t>(role);
  binding.box = boxOf(entry, key);
  binding.byte_size = static_cast<uint64_t>(
      volume *
      m2n_dtype_size(static_cast<m2n_dtype_t>(tensors_[tensor].dtype)));
  entry.bindings.push_back(binding);
  return static_cast<uint32_t>(entry.bindings.size() - 1);
}

uint32_t PlanWriter::boxOf(Rank &entry, const BoxKey &key) {
  // A model's layers are bound one after another with the same box.
  if (!entry.bindings.empty() && key == entry.lastBox)
    return entry.bindings.back().box;
  auto [it, inserted] = entry.boxIndex.try_emplace(
      key, static_cast<uint32_t>(entry.boxes.size()));
  if (inserted) {
    m2n_plan_box_t &box = entry.boxes.emplace_back();
    std::copy(key.begin(), key.begin() + M2N_PLAN_MAX_RANK, box.offset);
    std::copy(key.begin() + M2N_PLAN_MAX_RANK, key.end(), box.shape);
  }
  entry.lastBox = key;
  return it->second;
}

PlanWriter::Rank &PlanWriter::entryOf(uint32_t rank) {
  if (rank >= ranks_.size())
    ranks_.resize(size_t(rank) + 1);
  if (!ranks_[rank])
    ranks_[rank] = std::make_unique<Rank>();
  return *ranks_[rank];
}

void PlanWriter::emit(uint32_t rank, m2n_opcode_t opcode, uint16_t levels,
                      const uint8_t *operands, size_t size) {
  assert(size % 8 == 0 && "operands of a record are 8-byte words");
  m2n_plan_instruction_t record = {};
  record.opcode = static_cast<uint16_t>(opcode);
  record.levels = levels;
  record.size = static_cast<uint32_t>(sizeof(record) + size);
  // The record is put together here and appended in one go: a plan has
  // one for every part of every message.
  uint8_t bytes[sizeof(record) + kMaxOperandBytes];
  assert(size <= kMaxOperandBytes && "operands too large");
  std::memcpy(bytes, &record, sizeof(record));
  if (size != 0)
    std::memcpy(bytes + sizeof(record), operands, size);
  Rank &entry = entryOf(rank);
  entry.instructions.insert(entry.instructions.end(), bytes,
                            bytes + sizeof(record) + size);
  ++entry.instructionCount;
}

void PlanWriter::emitRuns(uint32_t rank, m2n_opcode_t opcode,
                          const PlanRuns &runs) {
  size_t levels = runs.count.size();
  assert(levels <= M2N_PLAN_MAX_LEVELS && runs.fromStride.size() == levels &&
         runs.toStride.size() == levels && "malformed strided runs");
  m2n_plan_runs_t fixed = {};
  fixed.from_binding = runs.fromBinding;
  fixed.to_binding = runs.toBinding;
  fixed.from_offset = runs.fromOffset;
  fixed.to_offset = runs.toOffset;
  fixed.run_bytes = runs.runBytes;
  fixed.members = runs.members;
  // The record's operands, built on the stack: a plan has a record for
  // every part of every message.
  uint8_t operands[kMaxOperandBytes];
  size_t size = 0;
  auto put = [&](const void *value, size_t bytes) {
    // An empty vector's data() may be null, which memcpy must not see.
    if (bytes != 0)
      std::memcpy(operands + size, value, bytes);
    size += bytes;
  };
  put(&fixed, sizeof(fixed));
  for (const std::vector<int64_t> *array :
       {&runs.count, &runs.fromStride, &runs.toStride})
    put(array->data(), array->size() * sizeof(int64_t));
  emit(rank, opcode, static_cast<uint16_t>(levels), operands, size);
}

void PlanWriter::emitTransfer(uint32_t rank, m2n_opcode_t opcode, uint32_t peer,
                              uint32_t binding, uint64_t offset,
                              uint64_t bytes) {
  m2n_plan_transfer_t transfer = {};
  transfer.peer = peer;
  transfer.binding = binding;
  transfer.staging_offset = offset;
  transfer.bytes = bytes;
  emit(rank, opcode, 0, reinterpret_cast<const uint8_t *>(&transfer),
       sizeof(transfer));
}

void PlanWriter::step(uint32_t rank, uint32_t step) {
  m2n_plan_step_t operand = {};
  operand.step = step;
  emit(rank, M2N_OP_STEP, 0, reinterpret_cast<const uint8_t *>(&operand),
       sizeof(operand));
}

void PlanWriter::copy(uint32_t rank, const PlanRuns &runs) {
  emitRuns(rank, M2N_OP_COPY, runs);
}

void PlanWriter::pack(uint32_t rank, const PlanRuns &runs) {
  emitRuns(rank, M2N_OP_PACK, runs);
}

void PlanWriter::unpack(uint32_t rank, const PlanRuns &runs) {
  emitRuns(rank, M2N_OP_UNPACK, runs);
}

void PlanWriter::send(uint32_t rank, uint32_t peer, uint64_t stagingOffset,
                      uint64_t bytes) {
  emitTransfer(rank, M2N_OP_SEND, peer, 0, stagingOffset, bytes);
}

void PlanWriter::recv(uint32_t rank, uint32_t peer, uint64_t stagingOffset,
                      uint64_t bytes) {
  emitTransfer(rank, M2N_OP_RECV, peer, 0, stagingOffset, bytes);
}

void PlanWriter::sendDirect(uint32_t rank, uint32_t peer, uint32_t binding,
                            uint64_t byteOffset, uint64_t bytes) {
  emitTransfer(rank, M2N_OP_SEND_DIRECT, peer, binding, byteOffset, bytes);
}

void PlanWriter::recvDirect(uint32_t rank, uint32_t peer, uint32_t binding,
                            uint64_t byteOffset, uint64_t bytes) {
  emitTransfer(rank, M2N_OP_RECV_DIRECT, peer, binding, byteOffset, bytes);
}

void PlanWriter::setStagingBytes(uint32_t rank, uint64_t bytes) {
  entryOf(rank).stagingBytes = bytes;
}

void PlanWriter::setTraffic(uint32_t rank, uint64_t sendBytes,
                            uint64_t receiveBytes) {
  Rank &entry = entryOf(rank);
  entry.sendBytes = sendBytes;
  entry.receiveBytes = receiveBytes;
}

std::vector<uint8_t> PlanWriter::finish() const {
  // Place the sections first: the header's offsets depend on them.
  uint64_t stringsOffset = alignUp(sizeof(m2n_plan_header_t));
  uint64_t tensorsOffset = alignUp(stringsOffset + strings_.size());
  uint64_t ranksOffset =
      alignUp(tensorsOffset + tensors_.size() * sizeof(m2n_plan_tensor_t));
  uint64_t end =
      ranksOffset + uint64_t(worldSize_) * sizeof(m2n_plan_rank_entry_t);
  std::map<uint32_t, m2n_plan_rank_entry_t> sections;
  for (uint32_t rank = 0; rank < ranks_.size(); ++rank) {
    if (!ranks_[rank] || !ranks_[rank]->hasWork())
      continue;
    assert(rank < worldSize_ && "rank outside the world");
    const Rank &entry = *ranks_[rank];
    uint64_t offset = alignUp(end);
    uint64_t size = sizeof(m2n_plan_rank_header_t) +
                    entry.boxes.size() * sizeof(m2n_plan_box_t) +
                    entry.bindings.size() * sizeof(m2n_plan_binding_t) +
                    entry.instructions.size();
    sections[rank] = {offset, size};
    end = offset + size;
  }

  std::vector<uint8_t> file(end, 0);
  m2n_plan_header_t header = {};
  std::memcpy(header.magic, M2N_PLAN_MAGIC, sizeof(header.magic));
  header.version_major = M2N_PLAN_VERSION_MAJOR;
  header.version_minor = M2N_PLAN_VERSION_MINOR;
  header.header_size = sizeof(m2n_plan_header_t);
  header.file_size = end;
  header.world_size = worldSize_;
  header.tensor_count = static_cast<uint32_t>(tensors_.size());
  header.step_count = stepCount_;
  header.staging_budget = stagingBudget_;
  header.strings_offset = stringsOffset;
  header.strings_size = strings_.size();
  header.tensors_offset = tensorsOffset;
  header.ranks_offset = ranksOffset;
  header.wire_bytes = wireBytes_;
  header.local_copy_bytes = localCopyBytes_;
  header.message_count = messageCount_;
  header.predicted_ns = predictedNs_;
  header.lower_bound_ns = lowerBoundNs_;
  put(file, 0, header);
  std::copy(strings_.begin(), strings_.end(), file.begin() + stringsOffset);
  for (size_t i = 0; i < tensors_.size(); ++i)
    put(file, tensorsOffset + i * sizeof(m2n_plan_tensor_t), tensors_[i]);

  for (const auto &[rank, placement] : sections) {
    put(file, ranksOffset + uint64_t(rank) * sizeof(m2n_plan_rank_entry_t),
        placement);
    const Rank &entry = *ranks_[rank];
    m2n_plan_rank_header_t rankHeader = {};
    rankHeader.rank = rank;
    rankHeader.binding_count = static_cast<uint32_t>(entry.bindings.size());
    rankHeader.instruction_count = entry.instructionCount;
    rankHeader.box_count = static_cast<uint32_t>(entry.boxes.size());
    uint64_t bindingsOffset = sizeof(m2n_plan_rank_header_t) +
                              entry.boxes.size() * sizeof(m2n_plan_box_t);
    rankHeader.instructions_offset =
        bindingsOffset + entry.bindings.size() * sizeof(m2n_plan_binding_t);
    rankHeader.instruction_bytes = entry.instructions.size();
    rankHeader.staging_bytes = entry.stagingBytes;
    rankHeader.send_bytes = entry.sendBytes;
    rankHeader.receive_bytes = entry.receiveBytes;
    put(file, placement.offset, rankHeader);
    for (size_t i = 0; i < entry.boxes.size(); ++i)
      put(file,
          placement.offset + sizeof(m2n_plan_rank_header_t) +
              i * sizeof(m2n_plan_box_t),
          entry.boxes[i]);
    for (size_t i = 0; i < entry.bindings.size(); ++i)
      put(file,
          placement.offset + bindingsOffset + i * sizeof(m2n_plan_binding_t),
          entry.bindings[i]);
    std::copy(entry.instructions.begin(), entry.instructions.end(),
              file.begin() + placement.offset + rankHeader.instructions_offset);
  }

  header.content_hash = planContentHash(file.data(), file.size());
  put(file, offsetof(m2n_plan_header_t, content_hash), header.content_hash);
  return file;
}

} // namespace m2n
