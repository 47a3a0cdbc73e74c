//===- refit_cases.cpp - Small refits, planned without the compiler -------===//

#include "refit_cases.h"

#include "m2n/plan.h"
#include "m2n/plan_writer.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace m2n::test {

int64_t Box::volume() const {
  int64_t volume = 1;
  for (int64_t extent : shape)
    volume *= extent;
  return volume;
}

namespace {

// Chunk `index` of `parts` along `dim`, as torch.chunk cuts it.
Box chunkOf(Box box, size_t dim, int64_t parts, int64_t index) {
  int64_t extent = box.shape[dim];
  int64_t size = (extent + parts - 1) / parts;
  int64_t begin = std::min(extent, index * size);
  int64_t end = std::min(extent, begin + size);
  box.offset[dim] += begin;
  box.shape[dim] = end - begin;
  return box;
}

bool intersect(const Box &a, const Box &b, Box *out) {
  *out = a;
  for (size_t d = 0; d < a.shape.size(); ++d) {
    int64_t lo = std::max(a.offset[d], b.offset[d]);
    int64_t hi = std::min(a.offset[d] + a.shape[d], b.offset[d] + b.shape[d]);
    if (hi <= lo)
      return false;
    out->offset[d] = lo;
    out->shape[d] = hi - lo;
  }
  return true;
}

bool sameBox(const Box &a, const Box &b) {
  return a.offset == b.offset && a.shape == b.shape;
}

// `part` as one run in `holder`'s row-major bytes.
bool contiguous(const Box &part, const Box &holder) {
  size_t d = 0;
  while (d < part.shape.size() && part.shape[d] == 1)
    ++d;
  for (size_t inner = d + 1; inner < part.shape.size(); ++inner)
    if (part.shape[inner] != holder.shape[inner])
      return false;
  return true;
}

// Where `part` lies in the row-major bytes of `holder`: its first byte,
// and one stride per dimension but the last, whose rows are the runs.
struct Placement {
  uint64_t offset = 0;
  std::vector<int64_t> strides;
};

Placement place(const Box &part, const Box &holder, int64_t element) {
  size_t n = part.shape.size();
  std::vector<int64_t> strides(n, element);
  for (size_t d = n; d-- > 1;)
    strides[d - 1] = strides[d] * holder.shape[d];
  Placement placement;
  for (size_t d = 0; d < n; ++d)
    placement.offset += (part.offset[d] - holder.offset[d]) * strides[d];
  if (n > 0)
    strides.pop_back();
  placement.strides = strides;
  return placement;
}

PlanRuns runsOf(const Box &part, int64_t element, const Placement &from,
                const Placement &to) {
  PlanRuns runs;
  runs.fromOffset = from.offset;
  runs.toOffset = to.offset;
  size_t n = part.shape.size();
  runs.runBytes = (n ? part.shape[n - 1] : 1) * element;
  for (size_t d = 0; d + 1 < n; ++d) {
    runs.count.push_back(part.shape[d]);
    runs.fromStride.push_back(from.strides[d]);
    runs.toStride.push_back(to.strides[d]);
  }
  return runs;
}

struct Transfer {
  bool send;
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
  uint64_t stagingUsed = 0;
};

struct RankWork {
  std::vector<PlanRuns> copies;
  std::map<uint32_t, StepWork> steps;
  uint64_t staging = 0;
  uint64_t sent = 0;
  uint64_t received = 0;
};

// A shard as a binding: its rank, index and box.
struct Held {
  uint32_t rank;
  uint32_t binding;
  Box box;
};

class Planner {
public:
  explicit Planner(const RefitSpec &spec) : spec_(spec), work_(spec.world) {}

  std::vector<uint8_t> plan() {
    writer_.setWorldSize(spec_.world);
    writer_.setStepCount(spec_.steps);
    writer_.setStagingBudget(uint64_t(1) << 30);
    for (const TensorSpec &tensor : spec_.tensors)
      planTensor(tensor);
    emit();
    return writer_.finish();
  }

private:
  uint64_t reserve(uint32_t rank, uint32_t step, uint64_t bytes) {
    StepWork &work = work_[rank].steps[step];
    uint64_t alignment = spec_.stagingAlignment;
    uint64_t offset =
        (work.stagingUsed + alignment - 1) / alignment * alignment;
    work.stagingUsed = offset + bytes;
    work_[rank].staging = std::max(work_[rank].staging, work.stagingUsed);
    return offset;
  }

  // Moves `part` from `from`'s buffer to `to`'s in `step`.
  void message(const Box &part, int64_t element, const Held &from,
               const Held &to, uint32_t step) {
    uint64_t bytes = part.volume() * element;
    uint32_t mode = modes_++ % 4;
    bool sendDirect =
        spec_.direct && (mode == 1 || mode == 3) && contiguous(part, from.box);
    bool recvDirect =
        spec_.direct && (mode == 2 || mode == 3) && contiguous(part, to.box);
    Placement inSender = place(part, from.box, element);
    Placement inReceiver = place(part, to.box, element);
    StepWork &sender = work_[from.rank].steps[step];
    if (sendDirect) {
      sender.transfers.push_back(
          {true, true, to.rank, from.binding, inSender.offset, bytes});
    } else {
      Placement staged = place(part, part, element);
      staged.offset = reserve(from.rank, step, bytes);
      PlanRuns pack = runsOf(part, element, inSender, staged);
      pack.fromBinding = from.binding;
      sender.packs.push_back(pack);
      sender.transfers.push_back(
          {true, false, to.rank, 0, staged.offset, bytes});
    }
    StepWork &receiver = work_[to.rank].steps[step];
    if (recvDirect) {
      receiver.transfers.push_back(
          {false, true, from.rank, to.binding, inReceiver.offset, bytes});
    } else {
      Placement staged = place(part, part, element);
      staged.offset = reserve(to.rank, step, bytes);
      PlanRuns unpack = runsOf(part, element, staged, inReceiver);
      unpack.toBinding = to.binding;
      receiver.transfers.push_back(
          {false, false, from.rank, 0, staged.offset, bytes});
      receiver.unpacks.push_back(unpack);
    }
    work_[from.rank].sent += bytes;
    work_[to.rank].received += bytes;
  }

  void copy(const Box &part, int64_t element, const Held &from,
            const Held &to) {
    PlanRuns runs = runsOf(part, element, place(part, from.box, element),
                           place(part, to.box, element));
    runs.fromBinding = from.binding;
    runs.toBinding = to.binding;
    work_[to.rank].copies.push_back(runs);
  }

  std::vector<Held> bind(uint32_t tensor, const std::vector<Shard> &shards,
                         m2n_role_t role) {
    std::vector<Held> held;
    for (const Shard &shard : shards)
      held.push_back({shard.rank,
                      writer_.addBinding(shard.rank, tensor, role,
                                         shard.box.offset, shard.box.shape),
                      shard.box});
    return held;
  }

  // Fills `to` with every source box it overlaps; `relayFrom`, when set,
  // is the first holder of the same box, which sends in the last step.
  void deliver(const std::vector<std::vector<Held>> &sourceGroups,
               int64_t element, const Held &to, const Held *relayFrom) {
    uint32_t primarySteps = spec_.relay ? spec_.steps - 1 : spec_.steps;
    for (const std::vector<Held> &holders : sourceGroups) {
      Box part;
      if (!intersect(holders[0].box, to.box, &part))
        continue;
      auto own = std::find_if(holders.begin(), holders.end(),
                              [&](const Held &h) { return h.rank == to.rank; });
      if (own != holders.end()) {
        copy(part, element, *own, to);
      } else if (relayFrom) {
        message(part, element, *relayFrom, to, spec_.steps - 1);
      } else {
        const Held &from = holders[(to.rank + messages_) % holders.size()];
        message(part, element, from, to, messages_++ % primarySteps);
      }
    }
  }

  void planTensor(const TensorSpec &spec) {
    uint32_t tensor = writer_.addTensor(spec.name, spec.dtype, spec.shape);
    int64_t element = m2n_dtype_size(spec.dtype);
    std::vector<Held> sources = bind(tensor, spec.src, M2N_ROLE_SOURCE);
    std::vector<Held> destinations =
        bind(tensor, spec.dst, M2N_ROLE_DESTINATION);
    // Replicas of one box form a group; distinct boxes do not overlap.
    std::vector<std::vector<Held>> groups;
    for (const Held &source : sources) {
      if (source.box.volume() == 0)
        continue;
      auto group = std::find_if(groups.begin(), groups.end(), [&](auto &g) {
        return sameBox(g[0].box, source.box);
      });
      if (group == groups.end())
        groups.push_back({source});
      else
        group->push_back(source);
    }
    for (size_t i = 0; i < destinations.size(); ++i) {
      const Held &to = destinations[i];
      if (to.box.volume() == 0)
        continue;
      const Held *first = nullptr;
      for (size_t j = 0; spec_.relay && j < i && !first; ++j)
        if (sameBox(destinations[j].box, to.box))
          first = &destinations[j];
      deliver(groups, element, to, first);
    }
  }

  void emit() {
    for (uint32_t rank = 0; rank < spec_.world; ++rank) {
      RankWork &work = work_[rank];
      for (const PlanRuns &runs : work.copies)
        writer_.copy(rank, runs);
      for (auto &[step, stepWork] : work.steps) {
        writer_.step(rank, step);
        for (const PlanRuns &runs : stepWork.packs)
          writer_.pack(rank, runs);
        for (const Transfer &t : stepWork.transfers) {
          if (t.send && t.direct)
            writer_.sendDirect(rank, t.peer, t.binding, t.offset, t.bytes);
          else if (t.send)
            writer_.send(rank, t.peer, t.offset, t.bytes);
          else if (t.direct)
            writer_.recvDirect(rank, t.peer, t.binding, t.offset, t.bytes);
          else
            writer_.recv(rank, t.peer, t.offset, t.bytes);
        }
        for (const PlanRuns &runs : stepWork.unpacks)
          writer_.unpack(rank, runs);
      }
      writer_.setStagingBytes(rank, work.staging);
      writer_.setTraffic(rank, work.sent, work.received);
    }
  }

  const RefitSpec &spec_;
  PlanWriter writer_;
  std::vector<RankWork> work_;
  uint32_t messages_ = 0;
  uint32_t modes_ = 0;
};

TensorSpec tensor(std::string name, m2n_dtype_t dtype,
                  std::vector<int64_t> shape, std::vector<Shard> src,
                  std::vector<Shard> dst) {
  return {std::move(name), dtype, std::move(shape), std::move(src),
          std::move(dst)};
}

} // namespace

std::vector<Shard> layout(const std::vector<int64_t> &shape,
                          const std::vector<int64_t> &meshShape,
                          const std::vector<int> &placements,
                          uint32_t firstRank) {
  int64_t ranks = 1;
  for (int64_t extent : meshShape)
    ranks *= extent;
  std::vector<Shard> shards;
  for (int64_t linear = 0; linear < ranks; ++linear) {
    // Row-major mesh coordinates of `linear`.
    std::vector<int64_t> coord(meshShape.size());
    int64_t rest = linear;
    for (size_t a = meshShape.size(); a-- > 0;) {
      coord[a] = rest % meshShape[a];
      rest /= meshShape[a];
    }
    Box box{std::vector<int64_t>(shape.size(), 0), shape};
    for (size_t a = 0; a < meshShape.size(); ++a)
      if (placements[a] != kReplicate)
        box = chunkOf(box, placements[a], meshShape[a], coord[a]);
    shards.push_back({firstRank + static_cast<uint32_t>(linear), box});
  }
  return shards;
}

void PrintTo(const RefitSpec &spec, std::ostream *out) { *out << spec.name; }

std::vector<uint8_t> planRefit(const RefitSpec &spec) {
  return Planner(spec).plan();
}

std::vector<RefitSpec> refitCases() {
  const int R = kReplicate;
  std::vector<RefitSpec> cases;
  auto add = [&](std::string name, uint32_t world,
                 std::vector<TensorSpec> tensors) -> RefitSpec & {
    RefitSpec spec;
    spec.name = std::move(name);
    spec.world = world;
    spec.tensors = std::move(tensors);
    cases.push_back(spec);
    return cases.back();
  };

  add("Replicated", 5,
      {tensor("w", M2N_DTYPE_F32, {6, 10}, layout({6, 10}, {2}, {R}, 0),
              layout({6, 10}, {3}, {R}, 2))});
  add("RowsToUnevenColumns", 5,
      {tensor("w", M2N_DTYPE_BF16, {8, 7}, layout({8, 7}, {2}, {0}, 0),
              layout({8, 7}, {3}, {1}, 2))});
  add("TwoDimensionalMeshes", 10,
      {tensor("w", M2N_DTYPE_F32, {12, 10}, layout({12, 10}, {2, 2}, {0, 1}, 0),
              layout({12, 10}, {2, 3}, {1, 0}, 4))})
      .steps = 3;
  add("UnevenBytes", 7,
      {tensor("w", M2N_DTYPE_U8, {1001}, layout({1001}, {3}, {0}, 0),
              layout({1001}, {4}, {0}, 3))})
      .stagingAlignment = 1;
  add("ThreeDimensions", 8,
      {tensor("w", M2N_DTYPE_F16, {4, 6, 10}, layout({4, 6, 10}, {2}, {1}, 0),
              layout({4, 6, 10}, {2, 3}, {0, 2}, 2))});
  // Rows split twice over one dimension (S(0), S(0)), leaving a source
  // and a destination shard empty.
  add("NestedAndEmptyShards", 8,
      {tensor("w", M2N_DTYPE_I32, {3, 9}, layout({3, 9}, {2, 2}, {0, 0}, 0),
              layout({3, 9}, {4}, {0}, 4))});
  add("Colocated", 4,
      {tensor("w", M2N_DTYPE_BF16, {16, 12}, layout({16, 12}, {4}, {0}, 0),
              layout({16, 12}, {2, 2}, {1, R}, 0))});
  RefitSpec &relay =
      add("Relay", 5,
          {tensor("w", M2N_DTYPE_F64, {10, 6}, layout({10, 6}, {1}, {R}, 0),
                  layout({10, 6}, {4}, {R}, 1)),
           tensor("v", M2N_DTYPE_BF16, {9, 5}, layout({9, 5}, {1}, {R}, 0),
                  layout({9, 5}, {2, 2}, {1, R}, 1))});
  relay.relay = true;
  relay.steps = 3;
  add("Scalar", 3,
      {tensor("s", M2N_DTYPE_I64, {}, layout({}, {1}, {R}, 0),
              layout({}, {2}, {R}, 1))});

  // A small model: several tensors, dtypes and layouts in one plan.
  std::vector<TensorSpec> model = {
      tensor("embed", M2N_DTYPE_BF16, {50, 16}, layout({50, 16}, {2}, {0}, 0),
             layout({50, 16}, {4}, {1}, 2)),
      tensor("up", M2N_DTYPE_BF16, {16, 40}, layout({16, 40}, {2}, {1}, 0),
             layout({16, 40}, {2, 2}, {0, 1}, 2)),
      tensor("bias", M2N_DTYPE_F32, {40}, layout({40}, {2}, {R}, 0),
             layout({40}, {4}, {0}, 2)),
      tensor("norm", M2N_DTYPE_F32, {16}, layout({16}, {2}, {R}, 0),
             layout({16}, {4}, {R}, 2)),
      tensor("step", M2N_DTYPE_I64, {}, layout({}, {1}, {R}, 0),
             layout({}, {6}, {R}, 0))};
  RefitSpec &staged = add("ModelStaged", 6, model);
  staged.direct = false;
  staged.steps = 4;
  staged.stagingAlignment = 1;
  add("ModelDirect", 6, model).steps = 4;

  // Long runs (512 B to 8 KiB) that fill many tiles.
  add("LongRuns", 6,
      {tensor("a", M2N_DTYPE_BF16, {512, 1024},
              layout({512, 1024}, {2}, {0}, 0),
              layout({512, 1024}, {4}, {1}, 2)),
       tensor("b", M2N_DTYPE_F32, {256, 4096}, layout({256, 4096}, {2}, {1}, 0),
              layout({256, 4096}, {4}, {0}, 2))})
      .steps = 2;
  return cases;
}

} // namespace m2n::test
