//===- refit_builder.h - Plans written message by message -------*- C++ -*-===//
//
// Tests state a refit as shards and messages; RefitBuilder writes the plan
// as the compiler lays one out (lib/Target/PlanBytecode/ExportPlan.cpp):
// a packed message's parts are packed one after another, each rank's sends
// take staging from offset 0 up and its receives follow them, and every
// rank's records of a step go packs, transfers, unpacks.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_RUNTIME_TEST_REFIT_BUILDER_H
#define M2N_RUNTIME_TEST_REFIT_BUILDER_H

#include "executor_test_util.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace m2n::test {

class RefitBuilder {
public:
  /// A box of a tensor that a message carries, read from the sender's
  /// source shard, or from its destination shard when it relays.
  struct Part {
    uint32_t tensor;
    Box region;
    m2n_role_t from = M2N_ROLE_SOURCE;
  };

  explicit RefitBuilder(uint32_t worldSize) : worldSize_(worldSize) {}

  uint32_t tensor(const std::string &name, m2n_dtype_t dtype,
                  std::vector<int64_t> shape) {
    tensors_.push_back({name, dtype, std::move(shape)});
    return static_cast<uint32_t>(tensors_.size() - 1);
  }
  void source(uint32_t rank, uint32_t tensor, Box box) {
    shards_.push_back({rank, tensor, M2N_ROLE_SOURCE, std::move(box)});
  }
  void destination(uint32_t rank, uint32_t tensor, Box box) {
    shards_.push_back({rank, tensor, M2N_ROLE_DESTINATION, std::move(box)});
  }
  /// `region` from the rank's source shard into its destination shard.
  void copy(uint32_t rank, uint32_t tensor, Box region) {
    copies_.push_back({rank, tensor, std::move(region)});
  }
  /// A packed message; parts of no bytes are left out.
  void message(uint32_t step, uint32_t from, uint32_t to,
               std::vector<Part> parts) {
    messages_.push_back({step, from, to, std::move(parts), false});
  }
  /// A zero-copy message: `part` must be contiguous in both shards.
  void directMessage(uint32_t step, uint32_t from, uint32_t to, Part part) {
    messages_.push_back({step, from, to, {std::move(part)}, true});
  }

  std::vector<uint8_t> finish();

private:
  struct Tensor {
    std::string name;
    m2n_dtype_t dtype;
    std::vector<int64_t> shape;
  };
  struct Shard {
    uint32_t rank, tensor;
    m2n_role_t role;
    Box box;
  };
  struct Copy {
    uint32_t rank, tensor;
    Box region;
  };
  struct Message {
    uint32_t step, from, to;
    std::vector<Part> parts;
    bool direct;
  };

  const Shard &shard(uint32_t rank, uint32_t tensor, m2n_role_t role) const {
    return *std::find_if(shards_.begin(), shards_.end(), [&](const Shard &s) {
      return s.rank == rank && s.tensor == tensor && s.role == role;
    });
  }
  int64_t elementBytes(uint32_t tensor) const {
    return m2n_dtype_size(tensors_[tensor].dtype);
  }
  uint64_t bytes(const Part &part) const {
    return uint64_t(part.region.volume() * elementBytes(part.tensor));
  }
  uint64_t bytes(const Message &message) const {
    uint64_t total = 0;
    for (const Part &part : message.parts)
      total += bytes(part);
    return total;
  }
  void emitStep(uint32_t step);

  uint32_t worldSize_;
  std::vector<Tensor> tensors_;
  std::vector<Shard> shards_;
  std::vector<Copy> copies_;
  std::vector<Message> messages_;
  PlanWriter writer_;
  std::map<std::tuple<uint32_t, uint32_t, m2n_role_t>, uint32_t> bindings_;
  std::vector<uint64_t> staging_, sent_, received_;
};

inline std::vector<uint8_t> RefitBuilder::finish() {
  uint32_t steps = 0;
  for (Message &message : messages_) {
    steps = std::max(steps, message.step + 1);
    message.parts.erase(
        std::remove_if(message.parts.begin(), message.parts.end(),
                       [&](const Part &part) { return bytes(part) == 0; }),
        message.parts.end());
  }
  writer_.setWorldSize(worldSize_);
  writer_.setStepCount(steps);
  writer_.setStagingBudget(1 << 20);
  for (const Tensor &tensor : tensors_)
    writer_.addTensor(tensor.name, tensor.dtype, tensor.shape);
  for (const Shard &s : shards_)
    bindings_[{s.rank, s.tensor, s.role}] =
        writer_.addBinding(s.rank, s.tensor, s.role, s.box.offset, s.box.shape);
  for (const Copy &copy : copies_) {
    const Shard &from = shard(copy.rank, copy.tensor, M2N_ROLE_SOURCE);
    const Shard &to = shard(copy.rank, copy.tensor, M2N_ROLE_DESTINATION);
    PlanRuns runs =
        boxRuns(from.box, to.box, copy.region, elementBytes(copy.tensor));
    runs.fromBinding = bindings_[{copy.rank, copy.tensor, from.role}];
    runs.toBinding = bindings_[{copy.rank, copy.tensor, to.role}];
    writer_.copy(copy.rank, runs);
  }
  staging_.assign(worldSize_, 0);
  sent_.assign(worldSize_, 0);
  received_.assign(worldSize_, 0);
  for (uint32_t step = 0; step < steps; ++step)
    emitStep(step);
  for (uint32_t rank = 0; rank < worldSize_; ++rank) {
    writer_.setStagingBytes(rank, staging_[rank]);
    writer_.setTraffic(rank, sent_[rank], received_[rank]);
  }
  return writer_.finish();
}

inline void RefitBuilder::emitStep(uint32_t step) {
  std::vector<const Message *> messages;
  for (const Message &message : messages_)
    if (message.step == step)
      messages.push_back(&message);
  // Staging: each rank's packed sends from 0 up, then its receives.
  std::vector<uint64_t> sendEnd(worldSize_, 0), receiveEnd(worldSize_, 0);
  std::map<const Message *, std::pair<uint64_t, uint64_t>> offsets;
  for (const Message *message : messages)
    if (!message->direct) {
      offsets[message].first = sendEnd[message->from];
      sendEnd[message->from] += bytes(*message);
    }
  for (const Message *message : messages)
    if (!message->direct) {
      offsets[message].second = sendEnd[message->to] + receiveEnd[message->to];
      receiveEnd[message->to] += bytes(*message);
    }
  for (uint32_t rank = 0; rank < worldSize_; ++rank) {
    auto mine = [&](const Message *m) {
      return m->from == rank || m->to == rank;
    };
    if (std::none_of(messages.begin(), messages.end(), mine))
      continue;
    staging_[rank] = std::max(staging_[rank], sendEnd[rank] + receiveEnd[rank]);
    writer_.step(rank, step);
    for (const Message *message : messages) {
      if (message->from != rank || message->direct)
        continue;
      uint64_t at = offsets[message].first;
      for (const Part &part : message->parts) {
        const Shard &from = shard(rank, part.tensor, part.from);
        PlanRuns pack = boxRuns(from.box, part.region, part.region,
                                elementBytes(part.tensor), false, 0, at);
        pack.fromBinding = bindings_[{rank, part.tensor, part.from}];
        writer_.pack(rank, pack);
        at += bytes(part);
      }
    }
    for (const Message *message : messages) {
      if (!mine(message))
        continue;
      bool sends = message->from == rank;
      uint32_t peer = sends ? message->to : message->from;
      uint64_t size = bytes(*message);
      (sends ? sent_ : received_)[rank] += size;
      if (!message->direct) {
        uint64_t at = sends ? offsets[message].first : offsets[message].second;
        if (sends)
          writer_.send(rank, peer, at, size);
        else
          writer_.recv(rank, peer, at, size);
        continue;
      }
      const Part &part = message->parts.front();
      const Shard &from = shard(message->from, part.tensor, part.from);
      const Shard &to = shard(message->to, part.tensor, M2N_ROLE_DESTINATION);
      PlanRuns where =
          boxRuns(from.box, to.box, part.region, elementBytes(part.tensor));
      if (sends)
        writer_.sendDirect(rank, peer,
                           bindings_[{rank, part.tensor, part.from}],
                           where.fromOffset, size);
      else
        writer_.recvDirect(rank, peer,
                           bindings_[{rank, part.tensor, M2N_ROLE_DESTINATION}],
                           where.toOffset, size);
    }
    for (const Message *message : messages) {
      if (message->to != rank || message->direct)
        continue;
      uint64_t at = offsets[message].second;
      for (const Part &part : message->parts) {
        const Shard &to = shard(rank, part.tensor, M2N_ROLE_DESTINATION);
        PlanRuns unpack = boxRuns(part.region, to.box, part.region,
                                  elementBytes(part.tensor), false, at, 0);
        unpack.toBinding = bindings_[{rank, part.tensor, M2N_ROLE_DESTINATION}];
        writer_.unpack(rank, unpack);
        at += bytes(part);
      }
    }
  }
}

} // namespace m2n::test

#endif // M2N_RUNTIME_TEST_REFIT_BUILDER_H
