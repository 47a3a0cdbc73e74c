//===- executor_test_util.h - Refits to run and check -----------*- C++ -*-===//
//
// Plans for tests are written by hand with m2n::PlanWriter. To check a run,
// every tensor gets known contents: byte i of tensor t is contentByte(t, i).
// A rank's source buffers are filled with their box of those contents, and
// after the run every destination buffer must hold its box, byte for byte.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_RUNTIME_TEST_EXECUTOR_TEST_UTIL_H
#define M2N_RUNTIME_TEST_EXECUTOR_TEST_UTIL_H

#include "m2n/executor.h"
#include "m2n/plan.h"
#include "m2n/plan_writer.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace m2n::test {

/// A box of a tensor: [offset, offset + shape).
struct Box {
  std::vector<int64_t> offset;
  std::vector<int64_t> shape;

  int64_t volume() const {
    int64_t volume = 1;
    for (int64_t extent : shape)
      volume *= extent;
    return volume;
  }
};

/// Byte `index` of tensor `tensor`'s contents: a hash, so that no two
/// nearby bytes are alike and a misplaced run shows.
inline uint8_t contentByte(uint32_t tensor, uint64_t index) {
  uint64_t x = (uint64_t(tensor) << 48) ^ index;
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return static_cast<uint8_t>(x ^ (x >> 31));
}

/// The bytes of `box` of a tensor of `globalShape`, row-major, as a shard
/// holding it contains them; `salt` varies the contents between runs.
inline std::vector<uint8_t> boxContents(uint32_t tensor,
                                        const std::vector<int64_t> &globalShape,
                                        int64_t elementSize, const Box &box,
                                        uint32_t salt = 0) {
  std::vector<uint8_t> bytes;
  bytes.reserve(static_cast<size_t>(box.volume() * elementSize));
  size_t rank = globalShape.size();
  std::vector<int64_t> index(rank, 0);
  for (int64_t n = 0; n < box.volume(); ++n) {
    uint64_t linear = 0;
    for (size_t d = 0; d < rank; ++d)
      linear = linear * globalShape[d] + box.offset[d] + index[d];
    for (int64_t b = 0; b < elementSize; ++b)
      bytes.push_back(
          contentByte(tensor + salt * 1000, linear * elementSize + b));
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < box.shape[d])
        break;
      index[d] = 0;
    }
  }
  return bytes;
}

/// The runs that move `region` (a box of the tensor) from a buffer holding
/// box `from` to one holding box `to`, starting at the given byte offsets:
/// one level per dimension but the last, whose extent is the run; with
/// `elementRuns`, the last dimension is a level too and runs are single
/// elements. A dense staging buffer is a buffer holding `region` itself.
inline PlanRuns boxRuns(const Box &from, const Box &to, const Box &region,
                        int64_t elementSize, bool elementRuns = false,
                        uint64_t fromBase = 0, uint64_t toBase = 0) {
  size_t rank = region.shape.size();
  auto strides = [&](const Box &box) {
    std::vector<int64_t> stride(rank, elementSize);
    for (size_t d = rank; d-- > 1;)
      stride[d - 1] = stride[d] * box.shape[d];
    return stride;
  };
  std::vector<int64_t> fromStride = strides(from), toStride = strides(to);
  PlanRuns runs;
  runs.fromOffset = fromBase;
  runs.toOffset = toBase;
  for (size_t d = 0; d < rank; ++d) {
    runs.fromOffset += (region.offset[d] - from.offset[d]) * fromStride[d];
    runs.toOffset += (region.offset[d] - to.offset[d]) * toStride[d];
  }
  size_t levels = elementRuns ? rank : rank - 1;
  for (size_t d = 0; d < levels; ++d) {
    runs.count.push_back(region.shape[d]);
    runs.fromStride.push_back(fromStride[d]);
    runs.toStride.push_back(toStride[d]);
  }
  runs.runBytes = static_cast<uint64_t>(
      elementRuns ? elementSize : region.shape[rank - 1] * elementSize);
  return runs;
}

/// One rank's buffers for the bindings the plan gives it, filled or checked
/// against the contents above.
class RankBuffers {
public:
  RankBuffers(m2n_plan_t plan, uint32_t rank, uint32_t salt = 0);

  /// Binds every buffer (NULL for empty shards) except those `skip`
  /// accepts; returns the first failure, or "".
  std::string
  bindAll(m2n_executor_t executor,
          const std::function<bool(const std::string &tensor, m2n_role_t role)>
              &skip = nullptr);

  /// "" when every destination holds its box; else where it differs first.
  std::string checkDestinations() const;

  /// Refills the sources with contents of another salt, in place: the
  /// executor holds their pointers.
  void refill(uint32_t salt);

private:
  struct Buffer {
    std::string tensor;
    uint32_t tensorIndex = 0;
    m2n_role_t role = M2N_ROLE_SOURCE;
    m2n_dtype_t dtype = M2N_DTYPE_U8;
    std::vector<int64_t> globalShape;
    Box box;
    std::vector<uint8_t> bytes;
  };
  std::vector<uint8_t> expected(const Buffer &buffer) const;

  uint32_t rank_;
  uint32_t salt_;
  std::vector<Buffer> buffers_;
};

inline RankBuffers::RankBuffers(m2n_plan_t plan, uint32_t rank, uint32_t salt)
    : rank_(rank), salt_(salt) {
  m2n_plan_rank_info_t info;
  m2n_status_free(m2n_plan_get_rank(plan, rank, &info));
  for (uint32_t i = 0; i < info.binding_count; ++i) {
    m2n_plan_binding_info_t binding;
    m2n_status_free(m2n_plan_get_binding(plan, rank, i, &binding));
    m2n_plan_tensor_info_t tensor;
    m2n_status_free(m2n_plan_get_tensor(plan, binding.tensor, &tensor));
    Buffer buffer;
    buffer.tensor.assign(tensor.name, tensor.name_size);
    buffer.tensorIndex = binding.tensor;
    buffer.role = binding.role;
    buffer.dtype = tensor.dtype;
    buffer.globalShape.assign(tensor.shape, tensor.shape + tensor.rank);
    buffer.box.offset.assign(binding.offset, binding.offset + tensor.rank);
    buffer.box.shape.assign(binding.shape, binding.shape + tensor.rank);
    // Destinations start as garbage that no content byte run matches.
    buffer.bytes.assign(binding.byte_size, 0xee);
    if (buffer.role == M2N_ROLE_SOURCE)
      buffer.bytes = expected(buffer);
    buffers_.push_back(std::move(buffer));
  }
}

inline std::vector<uint8_t> RankBuffers::expected(const Buffer &buffer) const {
  return boxContents(buffer.tensorIndex, buffer.globalShape,
                     m2n_dtype_size(buffer.dtype), buffer.box, salt_);
}

inline std::string RankBuffers::bindAll(
    m2n_executor_t executor,
    const std::function<bool(const std::string &, m2n_role_t)> &skip) {
  std::string failure;
  for (Buffer &buffer : buffers_) {
    if (skip && skip(buffer.tensor, buffer.role))
      continue;
    void *data = buffer.bytes.empty() ? nullptr : buffer.bytes.data();
    m2n_status_t status = m2n_executor_bind(
        executor, buffer.tensor.c_str(), buffer.role, data, buffer.dtype,
        static_cast<uint32_t>(buffer.box.shape.size()),
        buffer.box.shape.data());
    if (status && failure.empty())
      failure = m2n_status_message(status);
    m2n_status_free(status);
  }
  return failure;
}

inline std::string RankBuffers::checkDestinations() const {
  for (const Buffer &buffer : buffers_) {
    if (buffer.role != M2N_ROLE_DESTINATION)
      continue;
    std::vector<uint8_t> want = expected(buffer);
    for (size_t i = 0; i < want.size(); ++i)
      if (buffer.bytes[i] != want[i])
        return "rank " + std::to_string(rank_) + ": tensor \"" + buffer.tensor +
               "\" destination differs at byte " + std::to_string(i) + " of " +
               std::to_string(want.size());
  }
  return "";
}

inline void RankBuffers::refill(uint32_t salt) {
  salt_ = salt;
  for (Buffer &buffer : buffers_) {
    if (buffer.role != M2N_ROLE_SOURCE)
      continue;
    std::vector<uint8_t> contents = expected(buffer);
    std::copy(contents.begin(), contents.end(), buffer.bytes.begin());
  }
}

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

/// "w" F32 [4, 6] in row halves on ranks 0 and 1 (source), whole on ranks 2
/// and 3 (destination). Step 0: ranks 0 and 1 send their rows straight from
/// their sources into ranks 2 and 3 (zero-copy). Step 1: ranks 2 and 3
/// forward what they received to each other, straight from their
/// destination buffers, as a relay does.
inline std::vector<uint8_t> relayPlan(uint64_t stagingBudget = 1 << 20) {
  PlanWriter writer;
  writer.setWorldSize(4);
  writer.setStepCount(2);
  writer.setStagingBudget(stagingBudget);
  uint32_t w = writer.addTensor("w", M2N_DTYPE_F32, {4, 6});
  const uint64_t half = 2 * 6 * 4;
  for (uint32_t sender = 0; sender < 2; ++sender) {
    int64_t row = 2 * sender;
    uint32_t source =
        writer.addBinding(sender, w, M2N_ROLE_SOURCE, {row, 0}, {2, 6});
    writer.step(sender, 0);
    writer.sendDirect(sender, 2 + sender, source, 0, half);
    writer.setTraffic(sender, half, 0);
  }
  for (uint32_t receiver = 2; receiver < 4; ++receiver) {
    uint32_t first = receiver - 2; // the half it gets from its sender
    uint32_t other = 5 - receiver; // the receiver it relays to
    uint32_t whole =
        writer.addBinding(receiver, w, M2N_ROLE_DESTINATION, {0, 0}, {4, 6});
    writer.step(receiver, 0);
    writer.recvDirect(receiver, first, whole, first * half, half);
    writer.step(receiver, 1);
    // Rank 2 sends first, rank 3 receives first: the order within a step
    // must not matter.
    if (receiver == 2) {
      writer.sendDirect(receiver, other, whole, first * half, half);
      writer.recvDirect(receiver, other, whole, (1 - first) * half, half);
    } else {
      writer.recvDirect(receiver, other, whole, (1 - first) * half, half);
      writer.sendDirect(receiver, other, whole, first * half, half);
    }
    writer.setTraffic(receiver, half, 2 * half);
  }
  return writer.finish();
}

/// "x" BF16 [4, 6] whole on rank 0 (source); rank 0 keeps columns 0:3
/// (a local COPY) and rank 1 gets columns 3:6 (PACK, SEND, RECV, UNPACK).
/// Rank 2 holds an empty destination shard, rows 4:4.
inline std::vector<uint8_t> copyAndPackPlan() {
  PlanWriter writer;
  writer.setWorldSize(3);
  writer.setStepCount(1);
  writer.setStagingBudget(1 << 20);
  uint32_t x = writer.addTensor("x", M2N_DTYPE_BF16, {4, 6});
  Box whole{{0, 0}, {4, 6}}, left{{0, 0}, {4, 3}}, right{{0, 3}, {4, 3}};
  uint32_t source = writer.addBinding(0, x, M2N_ROLE_SOURCE, {0, 0}, {4, 6});
  uint32_t kept = writer.addBinding(0, x, M2N_ROLE_DESTINATION, {0, 0}, {4, 3});
  uint32_t got = writer.addBinding(1, x, M2N_ROLE_DESTINATION, {0, 3}, {4, 3});
  writer.addBinding(2, x, M2N_ROLE_DESTINATION, {4, 0}, {0, 6});

  PlanRuns copy = boxRuns(whole, left, left, 2);
  copy.fromBinding = source;
  copy.toBinding = kept;
  writer.copy(0, copy);
  PlanRuns pack = boxRuns(whole, right, right, 2);
  pack.fromBinding = source;
  writer.step(0, 0);
  writer.pack(0, pack);
  writer.send(0, 1, 0, 24);
  writer.setStagingBytes(0, 24);
  writer.setTraffic(0, 24, 0);

  PlanRuns unpack = boxRuns(right, right, right, 2);
  unpack.toBinding = got;
  writer.step(1, 0);
  writer.recv(1, 0, 0, 24);
  writer.unpack(1, unpack);
  writer.setStagingBytes(1, 24);
  writer.setTraffic(1, 0, 24);
  return writer.finish();
}

/// "s" U8 [3, 8] whole on rank 0, whole on rank 1: three steps, one row
/// each, through the same 8 bytes of staging on both sides, so that each
/// step must finish with the buffer before the next reuses it. Rank 2 only
/// watches: it receives row 1 of step 1 too.
inline std::vector<uint8_t> multiStepPlan() {
  PlanWriter writer;
  writer.setWorldSize(3);
  writer.setStepCount(3);
  writer.setStagingBudget(1 << 20);
  uint32_t s = writer.addTensor("s", M2N_DTYPE_U8, {3, 8});
  uint32_t source = writer.addBinding(0, s, M2N_ROLE_SOURCE, {0, 0}, {3, 8});
  uint32_t whole =
      writer.addBinding(1, s, M2N_ROLE_DESTINATION, {0, 0}, {3, 8});
  uint32_t row1 = writer.addBinding(2, s, M2N_ROLE_DESTINATION, {1, 0}, {1, 8});
  for (uint32_t step = 0; step < 3; ++step) {
    PlanRuns pack;
    pack.fromBinding = source;
    pack.fromOffset = 8 * step;
    pack.runBytes = 8;
    writer.step(0, step);
    writer.pack(0, pack);
    writer.send(0, 1, 0, 8);
    if (step == 1)
      writer.send(0, 2, 0, 8);
    PlanRuns unpack;
    unpack.toBinding = whole;
    unpack.toOffset = 8 * step;
    unpack.runBytes = 8;
    writer.step(1, step);
    writer.recv(1, 0, 0, 8);
    writer.unpack(1, unpack);
  }
  writer.step(2, 1);
  writer.recvDirect(2, 0, row1, 0, 8);
  writer.setStagingBytes(0, 8);
  writer.setStagingBytes(1, 8);
  writer.setTraffic(0, 32, 0);
  writer.setTraffic(1, 0, 24);
  writer.setTraffic(2, 0, 8);
  return writer.finish();
}

/// Walks of many levels. "m" I16 [2, 3, 4, 5] whole on rank 0; rank 1 gets
/// the box [0:2, 1:3, 1:4, 2:5], packed with 3 levels and unpacked whole.
/// "e" U8 [3, 3, 3, 3, 3, 3, 3, 4] whole on rank 0, moved element by
/// element (8 levels): rank 0 copies the box [1:3, ..., 1:3] into its
/// destination, and rank 1 gets [0:1, 0:2, 0:1, 0:2, 0:1, 0:2, 0:1, 0:3]
/// through staging.
inline std::vector<uint8_t> stridedPlan() {
  PlanWriter writer;
  writer.setWorldSize(2);
  writer.setStepCount(1);
  writer.setStagingBudget(1 << 20);
  uint32_t m = writer.addTensor("m", M2N_DTYPE_I16, {2, 3, 4, 5});
  std::vector<int64_t> eShape = {3, 3, 3, 3, 3, 3, 3, 4};
  uint32_t e = writer.addTensor("e", M2N_DTYPE_U8, eShape);
  Box mWhole{{0, 0, 0, 0}, {2, 3, 4, 5}}, mBox{{0, 1, 1, 2}, {2, 2, 3, 3}};
  Box eWhole{std::vector<int64_t>(8, 0), eShape};
  Box eUpper{std::vector<int64_t>(8, 1), std::vector<int64_t>(8, 2)};
  Box eLower{std::vector<int64_t>(8, 0), {1, 2, 1, 2, 1, 2, 1, 3}};

  uint32_t mSource =
      writer.addBinding(0, m, M2N_ROLE_SOURCE, mWhole.offset, mWhole.shape);
  uint32_t eSource =
      writer.addBinding(0, e, M2N_ROLE_SOURCE, eWhole.offset, eWhole.shape);
  uint32_t eKept = writer.addBinding(0, e, M2N_ROLE_DESTINATION, eUpper.offset,
                                     eUpper.shape);
  uint32_t mGot =
      writer.addBinding(1, m, M2N_ROLE_DESTINATION, mBox.offset, mBox.shape);
  uint32_t eGot = writer.addBinding(1, e, M2N_ROLE_DESTINATION, eLower.offset,
                                    eLower.shape);

  PlanRuns copy = boxRuns(eWhole, eUpper, eUpper, 1, /*elementRuns=*/true);
  copy.fromBinding = eSource;
  copy.toBinding = eKept;
  writer.copy(0, copy);
  const uint64_t mBytes = 2 * 2 * 3 * 3 * 2, eBytes = 2 * 2 * 2 * 3;
  PlanRuns mPack = boxRuns(mWhole, mBox, mBox, 2);
  mPack.fromBinding = mSource;
  PlanRuns ePack = boxRuns(eWhole, eLower, eLower, 1, true, 0, mBytes);
  ePack.fromBinding = eSource;
  writer.step(0, 0);
  writer.pack(0, mPack);
  writer.pack(0, ePack);
  writer.send(0, 1, 0, mBytes + eBytes);
  writer.setStagingBytes(0, mBytes + eBytes);
  writer.setTraffic(0, mBytes + eBytes, 0);

  PlanRuns mUnpack = boxRuns(mBox, mBox, mBox, 2);
  mUnpack.toBinding = mGot;
  PlanRuns eUnpack = boxRuns(eLower, eLower, eLower, 1, true, mBytes, 0);
  eUnpack.toBinding = eGot;
  writer.step(1, 0);
  writer.recv(1, 0, 0, mBytes + eBytes);
  writer.unpack(1, mUnpack);
  writer.unpack(1, eUnpack);
  writer.setStagingBytes(1, mBytes + eBytes);
  writer.setTraffic(1, 0, mBytes + eBytes);
  return writer.finish();
}

} // namespace m2n::test

#endif // M2N_RUNTIME_TEST_EXECUTOR_TEST_UTIL_H
