//===- make_seed_corpus.cpp - Valid plans to start fuzzing from -----------===//
//
// Usage: m2n_plan_seeds DIR. Writes a few plans into DIR (made if need
// be), each the refit of a row-sharded matrix into a column-sharded one plus
// a replicated vector, over worlds where the two meshes are disjoint,
// overlap or coincide, so that together they use every opcode. Every plan is
// loaded back first: a plan the loader rejects is a bug here or there, and
// fails the tool.
//
//===----------------------------------------------------------------------===//

#include "m2n/plan.h"
#include "m2n/plan_writer.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace {

using m2n::PlanRuns;
using m2n::PlanWriter;

struct Refit {
  uint32_t sources;           // ranks 0 .. sources-1 hold row blocks
  uint32_t destinations;      // ranks firstDestination .. hold column blocks
  uint32_t firstDestination;
  m2n_dtype_t dtype;
  int64_t rows;
  int64_t cols;
  uint32_t steps;
};

// Part `index` of `parts` near-equal parts of [0, extent).
std::pair<int64_t, int64_t> split(int64_t extent, uint32_t parts,
                                  uint32_t index) {
  return {extent * index / parts, extent * (index + 1) / parts};
}

struct Transfer {
  bool sends;
  bool direct;
  uint32_t peer;
  uint32_t binding;
  uint64_t offset;
  uint64_t bytes;
};

struct StepWork {
  std::vector<PlanRuns> packs;
  std::vector<Transfer> transfers;
  std::vector<PlanRuns> unpacks;
  uint64_t staging = 0;  // the step's staging cursor
};

struct RankWork {
  std::vector<PlanRuns> copies;
  std::map<uint32_t, StepWork> steps;
  uint32_t weight = 0;  // binding indices
  uint32_t bias = 0;
  uint32_t weightOut = 0;
  uint32_t biasOut = 0;
};

PlanRuns contiguous(uint32_t from, uint64_t fromOffset, uint32_t to,
                    uint64_t toOffset, uint64_t bytes) {
  PlanRuns runs;
  runs.fromBinding = from;
  runs.toBinding = to;
  runs.fromOffset = fromOffset;
  runs.toOffset = toOffset;
  runs.runBytes = bytes;
  return runs;
}

class RefitWriter {
public:
  explicit RefitWriter(const Refit &refit) : refit_(refit) {}

  std::vector<uint8_t> write() {
    world_ = std::max(refit_.sources,
                      refit_.firstDestination + refit_.destinations);
    element_ = m2n_dtype_size(refit_.dtype);
    writer_.setWorldSize(world_);
    writer_.setStepCount(refit_.steps);
    writer_.setStagingBudget(1 << 20);
    addBindings();
    for (uint32_t s = 0; s < refit_.sources; ++s)
      for (uint32_t d = 0; d < refit_.destinations; ++d)
        moveWeightBlock(s, d);
    for (uint32_t d = 0; d < refit_.destinations; ++d)
      moveBias(d);
    emit();
    writer_.setSummary(wire_, local_, messages_, 1000 * messages_,
                       100 * messages_);
    return writer_.finish();
  }

private:
  void addBindings() {
    uint32_t weight = writer_.addTensor("model.weight", refit_.dtype,
                                        {refit_.rows, refit_.cols});
    uint32_t bias = writer_.addTensor("model.bias", refit_.dtype, {refit_.cols});
    for (uint32_t s = 0; s < refit_.sources; ++s) {
      auto [r0, r1] = split(refit_.rows, refit_.sources, s);
      work_[s].weight = writer_.addBinding(s, weight, M2N_ROLE_SOURCE,
                                           {r0, 0}, {r1 - r0, refit_.cols});
      work_[s].bias =
          writer_.addBinding(s, bias, M2N_ROLE_SOURCE, {0}, {refit_.cols});
    }
    for (uint32_t d = 0; d < refit_.destinations; ++d) {
      uint32_t rank = refit_.firstDestination + d;
      auto [c0, c1] = split(refit_.cols, refit_.destinations, d);
      work_[rank].weightOut = writer_.addBinding(
          rank, weight, M2N_ROLE_DESTINATION, {0, c0}, {refit_.rows, c1 - c0});
      work_[rank].biasOut = writer_.addBinding(
          rank, bias, M2N_ROLE_DESTINATION, {c0}, {c1 - c0});
    }
  }

  // Rows of source s that fall in columns of destination d.
  void moveWeightBlock(uint32_t s, uint32_t d) {
    uint32_t sender = s, receiver = refit_.firstDestination + d;
    auto [r0, r1] = split(refit_.rows, refit_.sources, s);
    auto [c0, c1] = split(refit_.cols, refit_.destinations, d);
    int64_t rowBytes = (c1 - c0) * element_;
    uint64_t bytes = uint64_t((r1 - r0) * rowBytes);
    if (bytes == 0)
      return;
    // Sender: rows r0..r1 of its shard, columns c0..c1. Receiver: rows
    // r0..r1 of its shard, which are contiguous there.
    PlanRuns block;
    block.fromOffset = uint64_t(c0 * element_);
    block.runBytes = uint64_t(rowBytes);
    block.count = {r1 - r0};
    block.fromStride = {refit_.cols * element_};
    block.toStride = {rowBytes};
    uint64_t receiverOffset = uint64_t(r0 * rowBytes);
    if (sender == receiver) {
      block.fromBinding = work_[sender].weight;
      block.toBinding = work_[receiver].weightOut;
      block.toOffset = receiverOffset;
      work_[sender].copies.push_back(block);
      local_ += bytes;
      return;
    }
    uint32_t step = s % refit_.steps;
    if (c1 - c0 == refit_.cols) {
      // Whole rows: contiguous on both sides, so zero-copy.
      addTransfer(step, sender, receiver, true, work_[sender].weight, 0,
                  work_[receiver].weightOut, receiverOffset, bytes);
      return;
    }
    StepWork &out = work_[sender].steps[step];
    block.fromBinding = work_[sender].weight;
    block.toOffset = out.staging;
    out.packs.push_back(block);
    StepWork &in = work_[receiver].steps[step];
    uint64_t inOffset = in.staging;
    addTransfer(step, sender, receiver, false, 0, block.toOffset, 0, inOffset,
                bytes);
    in.unpacks.push_back(contiguous(0, inOffset, work_[receiver].weightOut,
                                    receiverOffset, bytes));
  }

  // Each destination's slice of the bias, from one of the sources.
  void moveBias(uint32_t d) {
    uint32_t sender = d % refit_.sources;
    uint32_t receiver = refit_.firstDestination + d;
    auto [c0, c1] = split(refit_.cols, refit_.destinations, d);
    uint64_t bytes = uint64_t((c1 - c0) * element_);
    uint64_t offset = uint64_t(c0 * element_);
    if (bytes == 0)
      return;
    if (sender == receiver) {
      work_[sender].copies.push_back(contiguous(
          work_[sender].bias, offset, work_[receiver].biasOut, 0, bytes));
      local_ += bytes;
      return;
    }
    addTransfer(sender % refit_.steps, sender, receiver, true,
                work_[sender].bias, offset, work_[receiver].biasOut, 0, bytes);
  }

  // A message; staging offsets advance the step's cursors when not direct.
  void addTransfer(uint32_t step, uint32_t sender, uint32_t receiver,
                   bool direct, uint32_t fromBinding, uint64_t fromOffset,
                   uint32_t toBinding, uint64_t toOffset, uint64_t bytes) {
    StepWork &out = work_[sender].steps[step];
    StepWork &in = work_[receiver].steps[step];
    out.transfers.push_back(
        {true, direct, receiver, fromBinding, fromOffset, bytes});
    in.transfers.push_back({false, direct, sender, toBinding, toOffset, bytes});
    if (!direct) {
      out.staging += bytes;
      in.staging += bytes;
    }
    wire_ += bytes;
    ++messages_;
  }

  void emit() {
    for (auto &[rank, work] : work_) {
      for (const PlanRuns &copy : work.copies)
        writer_.copy(rank, copy);
      uint64_t staging = 0, sent = 0, received = 0;
      for (auto &[step, steps] : work.steps) {
        writer_.step(rank, step);
        for (const PlanRuns &pack : steps.packs)
          writer_.pack(rank, pack);
        for (const Transfer &t : steps.transfers)
          emitTransfer(rank, t);
        for (const PlanRuns &unpack : steps.unpacks)
          writer_.unpack(rank, unpack);
        staging = std::max(staging, steps.staging);
        for (const Transfer &t : steps.transfers)
          (t.sends ? sent : received) += t.bytes;
      }
      writer_.setStagingBytes(rank, staging);
      writer_.setTraffic(rank, sent, received);
    }
  }

  void emitTransfer(uint32_t rank, const Transfer &t) {
    if (t.direct && t.sends)
      writer_.sendDirect(rank, t.peer, t.binding, t.offset, t.bytes);
    else if (t.direct)
      writer_.recvDirect(rank, t.peer, t.binding, t.offset, t.bytes);
    else if (t.sends)
      writer_.send(rank, t.peer, t.offset, t.bytes);
    else
      writer_.recv(rank, t.peer, t.offset, t.bytes);
  }

  Refit refit_;
  PlanWriter writer_;
  uint32_t world_ = 0;
  int64_t element_ = 0;
  std::map<uint32_t, RankWork> work_;
  uint64_t wire_ = 0, local_ = 0, messages_ = 0;
};

bool loads(const std::vector<uint8_t> &plan, const std::string &name) {
  m2n_plan_t loaded = nullptr;
  m2n_status_t status = m2n_plan_load_memory(plan.data(), plan.size(), &loaded);
  if (status) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), m2n_status_message(status));
    m2n_status_free(status);
    return false;
  }
  m2n_plan_destroy(loaded);
  return true;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  std::error_code error;
  std::filesystem::create_directories(argv[1], error);
  if (error) {
    std::fprintf(stderr, "%s: %s\n", argv[1], error.message().c_str());
    return 1;
  }
  const Refit refits[] = {
      {1, 1, 0, M2N_DTYPE_F32, 4, 6, 1},   // one rank: local copies only
      {2, 2, 2, M2N_DTYPE_BF16, 8, 6, 2},  // disjoint meshes
      {2, 3, 1, M2N_DTYPE_F16, 6, 9, 2},   // meshes share rank 1
      {3, 1, 3, M2N_DTYPE_I32, 9, 4, 3},   // whole rows: zero-copy
      {4, 2, 0, M2N_DTYPE_U8, 8, 8, 1},    // destinations inside sources
  };
  int index = 0;
  for (const Refit &refit : refits) {
    std::string name = std::string(argv[1]) + "/seed-" +
                       std::to_string(index++) + ".m2n";
    std::vector<uint8_t> plan = RefitWriter(refit).write();
    if (!loads(plan, name))
      return 1;
    std::ofstream out(name, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char *>(plan.data()),
              static_cast<std::streamsize>(plan.size()));
    if (!out) {
      std::fprintf(stderr, "%s: cannot write\n", name.c_str());
      return 1;
    }
  }
  return 0;
}
