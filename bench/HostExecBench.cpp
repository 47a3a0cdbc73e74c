//===- HostExecBench.cpp - Executing plans on the host against memcpy -----===//
//
// Compiles 8 -> 8 refits of 256 MiB (training ranks 0-7, serving ranks
// 8-15), runs each plan with every rank on a thread of this process over
// the sim transport, and, in the same iterations, copies as many bytes with
// plain memcpy: one thread per destination rank, one memcpy per destination
// shard into the same buffers, from source buffers of the same sizes. The
// ratio of the two is the executor's efficiency on the host.
//
// Counters: dst_MiB (bytes the destination shards hold), sim_GBps and
// memcpy_GBps (those bytes over each one's time), sim_over_memcpy, and
// copies_per_byte, the bytes the ranks' executors move (packs, receives,
// unpacks, local copies) per destination byte: a message the sim transport
// pulls, or a zero-copy one, is copied once; a packed message that went
// through staging would be copied three times (into the sender's staging,
// across into the receiver's, out into the shard).
//
//===----------------------------------------------------------------------===//

#include "CompiledPlan.h"


#include "m2n/executor.h"
#include "m2n/plan.h"
#include "m2n/transport.h"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace m2n;

namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kRanks = 8;

/// How the serving ranks lay out the training ranks' row shards.
enum class Serving {
  /// The same rows: each slice is one contiguous 32 MiB run, zero-copy.
  Rows,
  /// Column blocks: each slice is 512 runs of 1 KiB, packed.
  Columns,
  /// Rows over 4 tensor-parallel ranks, replicated twice: the destination
  /// shards hold twice the bytes of the source shards.
  Replicas,
};

/// 256 MiB of BF16 matrices, FSDP over ranks 0-7 (rows), to ranks 8-15.
spec::RefitSpec hostRefit(Serving serving) {
  const Placement R = Placement::replicate(), rows = Placement::shard(0),
                  columns = Placement::shard(1);
  spec::RefitSpec spec;
  spec.name = "host";
  spec.meshes.push_back({"train", {kRanks}, {"fsdp"}, {}});
  spec.meshes.push_back(serving == Serving::Replicas
                            ? spec::MeshSpec{"gen", {2, 4}, {"dp", "tp"}, {}}
                            : spec::MeshSpec{"gen", {kRanks}, {"tp"}, {}});
  for (int64_t r = 0; r < 2 * kRanks; ++r)
    spec.meshes[r / kRanks].ranks.push_back(r);
  // One large tensor, so that each rank's slice fills a zero-copy message,
  // or eight of 32 MiB.
  int64_t count = serving == Serving::Rows ? 1 : 8;
  int64_t height = serving == Serving::Rows ? 32768 : 4096;
  for (int64_t i = 0; i < count; ++i) {
    spec::TensorSpec &tensor = spec.tensors.emplace_back();
    tensor.name = "w" + std::to_string(i);
    tensor.dtype = DType::BF16;
    tensor.shape = {height, 4096};
    tensor.src = {"train", {rows}};
    switch (serving) {
    case Serving::Rows:
      tensor.dst = {"gen", {rows}};
      break;
    case Serving::Columns:
      tensor.dst = {"gen", {columns}};
      break;
    case Serving::Replicas:
      tensor.dst = {"gen", {R, rows}};
      break;
    }
  }
  return spec;
}

/// The plan file of `spec`, as `m2n compile` writes it.
std::optional<std::vector<uint8_t>> planFile(const spec::RefitSpec &spec) {
  mlir::FailureOr<bench::Compiled> compiled = bench::compileSpec(spec);
  if (mlir::failed(compiled))
    return std::nullopt;
  return std::move(compiled->refit.bytes);
}

/// Takes a status's message and frees it; "" for success.
std::string take(m2n_status_t status) {
  std::string message = status ? m2n_status_message(status) : "";
  m2n_status_free(status);
  return message;
}

/// A 16-bit tag of a tensor's global element `index`, scrambled so that
/// elements whole rows apart differ.
uint16_t tag(int64_t index) {
  return static_cast<uint16_t>((uint64_t(index) * 0x9E3779B97F4A7C15u) >> 48);
}

/// Calls fn(local, global) for every element of a shard, in row-major
/// order: its index within the shard and within the tensor.
template <typename Fn>
void forEachElement(const m2n_plan_tensor_info_t &tensor,
                    const m2n_plan_binding_info_t &binding, Fn fn) {
  int64_t count = 1;
  for (uint32_t d = 0; d < tensor.rank; ++d)
    count *= binding.shape[d];
  int64_t coord[M2N_PLAN_MAX_RANK] = {};
  for (int64_t local = 0; local < count; ++local) {
    int64_t global = 0;
    for (uint32_t d = 0; d < tensor.rank; ++d)
      global = global * tensor.shape[d] + binding.offset[d] + coord[d];
    fn(local, global);
    for (uint32_t d = tensor.rank; d-- > 0;)
      if (++coord[d] < binding.shape[d])
        break;
      else
        coord[d] = 0;
  }
}

/// A shard the plan gives a rank, and its buffer. The benchmark's tensors
/// are BF16: each element holds the tag of its global index.
struct Shard {
  std::string name;
  m2n_plan_tensor_info_t tensor;
  m2n_plan_binding_info_t binding;
  std::vector<uint16_t> data;
};

/// Every rank of a plan in this process: its shards, its end of a sim
/// world and its executor.
class SimRefit {
public:
  /// Loads the plan, gives every rank its shards, sources filled with
  /// their tags, and binds them; error() says what failed.
  explicit SimRefit(const std::vector<uint8_t> &file);
  SimRefit(const SimRefit &) = delete;
  ~SimRefit();

  const std::string &error() const { return error_; }
  /// Runs every rank on a thread of its own and returns the wall time;
  /// sets error() when a rank fails.
  double run();
  /// The first destination element that does not hold its tag, or "".
  std::string check() const;
  /// Every destination shard's buffer and bytes, by rank.
  std::vector<std::vector<std::pair<void *, size_t>>> destinations();
  uint64_t destinationBytes() const;
  /// Bytes the executors moved in their last run: packs, receives,
  /// unpacks and local copies.
  uint64_t bytesMoved() const;
  const m2n_plan_info_t &info() const { return info_; }

private:
  struct Rank {
    std::vector<Shard> shards;
    m2n_transport_t transport = nullptr;
    m2n_executor_t executor = nullptr;
  };
  std::string addShards(uint32_t rank);
  std::string bind(Rank &rank);

  m2n_plan_t plan_ = nullptr;
  m2n_plan_info_t info_ = {};
  m2n_sim_world_t world_ = nullptr;
  std::vector<Rank> ranks_;
  std::string error_;
};

SimRefit::SimRefit(const std::vector<uint8_t> &file) {
  // Compiled and verified in this process: the load-time proof is not what
  // the benchmark measures.
  error_ = take(m2n_plan_load_memory_flags(file.data(), file.size(),
                                           M2N_PLAN_LOAD_TRUSTED, &plan_));
  if (error_.empty())
    error_ = take(m2n_plan_get_info(plan_, &info_));
  if (error_.empty())
    error_ = take(m2n_sim_world_create(int(info_.world_size), &world_));
  ranks_.resize(info_.world_size);
  for (uint32_t r = 0; error_.empty() && r < info_.world_size; ++r) {
    error_ = addShards(r);
    if (error_.empty())
      error_ =
          take(m2n_sim_world_transport(world_, int(r), &ranks_[r].transport));
    if (error_.empty())
      error_ = take(
          m2n_executor_create(plan_, ranks_[r].transport, nullptr,
                              &ranks_[r].executor));
    if (error_.empty())
      error_ = bind(ranks_[r]);
  }
}

SimRefit::~SimRefit() {
  for (Rank &rank : ranks_) {
    m2n_executor_destroy(rank.executor);
    m2n_transport_destroy(rank.transport);
  }
  m2n_sim_world_destroy(world_);
  m2n_plan_destroy(plan_);
}

std::string SimRefit::addShards(uint32_t rank) {
  m2n_plan_rank_info_t rankInfo;
  std::string error = take(m2n_plan_get_rank(plan_, rank, &rankInfo));
  for (uint32_t i = 0; error.empty() && i < rankInfo.binding_count; ++i) {
    Shard &shard = ranks_[rank].shards.emplace_back();
    error = take(m2n_plan_get_binding(plan_, rank, i, &shard.binding));
    if (error.empty())
      error =
          take(m2n_plan_get_tensor(plan_, shard.binding.tensor, &shard.tensor));
    if (!error.empty())
      break;
    if (m2n_dtype_size(shard.tensor.dtype) != sizeof(uint16_t))
      return "the benchmark's tensors are BF16";
    shard.name.assign(shard.tensor.name, shard.tensor.name_size);
    shard.data.resize(shard.binding.byte_size / sizeof(uint16_t));
    if (shard.binding.role == M2N_ROLE_SOURCE)
      forEachElement(shard.tensor, shard.binding,
                     [&](int64_t local, int64_t global) {
                       shard.data[local] = tag(global);
                     });
  }
  return error;
}

std::string SimRefit::bind(Rank &rank) {
  for (Shard &shard : rank.shards) {
    std::string error = take(
        m2n_executor_bind(rank.executor, shard.name.c_str(), shard.binding.role,
                          shard.data.data(), shard.tensor.dtype,
                          shard.tensor.rank, shard.binding.shape));
    if (!error.empty())
      return error;
  }
  return "";
}

double SimRefit::run() {
  std::vector<std::string> errors(ranks_.size());
  Clock::time_point start = Clock::now();
  std::vector<std::thread> threads;
  for (size_t r = 0; r < ranks_.size(); ++r)
    threads.emplace_back(
        [&, r] { errors[r] = take(m2n_executor_run(ranks_[r].executor)); });
  for (std::thread &thread : threads)
    thread.join();
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (const std::string &error : errors)
    if (!error.empty() && error_.empty())
      error_ = error;
  return seconds;
}

std::string SimRefit::check() const {
  for (const Rank &rank : ranks_)
    for (const Shard &shard : rank.shards) {
      if (shard.binding.role != M2N_ROLE_DESTINATION)
        continue;
      std::string wrong;
      forEachElement(shard.tensor, shard.binding,
                     [&](int64_t local, int64_t global) {
                       if (wrong.empty() && shard.data[local] != tag(global))
                         wrong = shard.name + ": element " +
                                 std::to_string(global) + " is wrong";
                     });
      if (!wrong.empty())
        return wrong;
    }
  return "";
}

std::vector<std::vector<std::pair<void *, size_t>>> SimRefit::destinations() {
  std::vector<std::vector<std::pair<void *, size_t>>> result;
  for (Rank &rank : ranks_) {
    std::vector<std::pair<void *, size_t>> buffers;
    for (Shard &shard : rank.shards)
      if (shard.binding.role == M2N_ROLE_DESTINATION)
        buffers.emplace_back(shard.data.data(), shard.binding.byte_size);
    if (!buffers.empty())
      result.push_back(std::move(buffers));
  }
  return result;
}

uint64_t SimRefit::destinationBytes() const {
  uint64_t bytes = 0;
  for (const Rank &rank : ranks_)
    for (const Shard &shard : rank.shards)
      if (shard.binding.role == M2N_ROLE_DESTINATION)
        bytes += shard.binding.byte_size;
  return bytes;
}

uint64_t SimRefit::bytesMoved() const {
  uint64_t bytes = 0;
  for (const Rank &rank : ranks_) {
    m2n_executor_stats_t stats;
    if (take(m2n_executor_get_stats(rank.executor, &stats)).empty())
      bytes += stats.bytes_packed + stats.bytes_received +
               stats.bytes_unpacked + stats.bytes_copied;
  }
  return bytes;
}

/// The memcpy ceiling: every destination buffer filled by one memcpy from
/// a source buffer of its size, each destination rank on a thread.
class MemcpyRefit {
public:
  explicit MemcpyRefit(
      std::vector<std::vector<std::pair<void *, size_t>>> destinations)
      : destinations_(std::move(destinations)) {
    for (const auto &buffers : destinations_)
      for (const auto &buffer : buffers)
        sources_.emplace_back(buffer.second, uint8_t(1));
  }

  /// Copies every buffer once and returns the wall time.
  double run() {
    Clock::time_point start = Clock::now();
    std::vector<std::thread> threads;
    size_t first = 0;
    for (const auto &buffers : destinations_) {
      threads.emplace_back([&, first] {
        for (size_t i = 0; i < buffers.size(); ++i)
          std::memcpy(buffers[i].first, sources_[first + i].data(),
                      buffers[i].second);
      });
      first += buffers.size();
    }
    for (std::thread &thread : threads)
      thread.join();
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

private:
  std::vector<std::vector<std::pair<void *, size_t>>> destinations_;
  /// One per destination buffer, in the order of destinations_.
  std::vector<std::vector<uint8_t>> sources_;
};

void BM_HostExec(benchmark::State &state, Serving serving) {
  std::optional<std::vector<uint8_t>> file = planFile(hostRefit(serving));
  if (!file) {
    state.SkipWithError("compilation failed");
    return;
  }
  SimRefit sim(*file);
  // A first run, checked element by element, also faults the pages in.
  if (sim.error().empty())
    sim.run();
  std::string error = sim.error().empty() ? sim.check() : sim.error();
  if (!error.empty()) {
    state.SkipWithError(error.c_str());
    return;
  }
  MemcpyRefit memcpyRefit(sim.destinations());
  memcpyRefit.run();

  // Interleaved, so that both see the same load of a shared machine.
  double simSeconds = 0, memcpySeconds = 0;
  for (auto _ : state) {
    double seconds = sim.run();
    if (!sim.error().empty()) {
      state.SkipWithError(sim.error().c_str());
      break;
    }
    state.SetIterationTime(seconds);
    simSeconds += seconds;
    memcpySeconds += memcpyRefit.run();
  }
  double bytes = double(sim.destinationBytes()) * state.iterations();
  state.SetBytesProcessed(int64_t(bytes));
  state.counters["dst_MiB"] = sim.destinationBytes() / double(1 << 20);
  state.counters["messages"] = sim.info().message_count;
  state.counters["steps"] = sim.info().step_count;
  state.counters["copies_per_byte"] =
      double(sim.bytesMoved()) / sim.destinationBytes();
  state.counters["sim_GBps"] = bytes / simSeconds / 1e9;
  state.counters["memcpy_GBps"] = bytes / memcpySeconds / 1e9;
  state.counters["sim_over_memcpy"] = memcpySeconds / simSeconds;
}

} // namespace

BENCHMARK_CAPTURE(BM_HostExec, rows, Serving::Rows)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();
BENCHMARK_CAPTURE(BM_HostExec, columns, Serving::Columns)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();
BENCHMARK_CAPTURE(BM_HostExec, replicas, Serving::Replicas)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();

BENCHMARK_MAIN();
