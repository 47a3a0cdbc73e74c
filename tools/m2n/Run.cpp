//===- Run.cpp - m2n run: a plan over safetensors files -------------------===//
//
// Rank r reads its source shards from SRC/rank{r}.safetensors and writes its
// destination shards to DST/rank{r}.safetensors. Every input is checked
// before any data moves, and outputs are written through temporary files,
// so after an error no destination file is half written.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "m2n/executor.h"
#include "m2n/plan.h"
#include "m2n/safetensors.h"
#include "m2n/transport.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#ifdef M2N_HAVE_MPI
#include <mpi.h>
#endif

namespace m2n::driver {
namespace {

/// Takes a status's message and frees it; "" for success.
std::string take(m2n_status_t status) {
  std::string message = status ? m2n_status_message(status) : "";
  m2n_status_free(status);
  return message;
}

std::string shapeText(uint32_t ndim, const int64_t *shape) {
  std::string text = "[";
  for (uint32_t d = 0; d < ndim; ++d)
    text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + "]";
}

std::string rankFile(const std::string &dir, uint32_t rank) {
  return dir + "/rank" + std::to_string(rank) + ".safetensors";
}

/// One shard of a rank as the plan describes it.
struct Shard {
  std::string name;
  m2n_role_t role;
  m2n_dtype_t dtype;
  uint32_t ndim;
  int64_t shape[M2N_PLAN_MAX_RANK];
  uint64_t byteSize;
  void *data = nullptr;
};

/// A rank's shards, its loaded input file and its output buffers.
struct RankWork {
  uint32_t rank = 0;
  std::vector<Shard> shards;
  m2n_safetensors_t input = nullptr;
  std::vector<std::vector<uint8_t>> outputs;
  std::string error;

  RankWork() = default;
  RankWork(const RankWork &) = delete;
  ~RankWork() { m2n_safetensors_destroy(input); }

  bool hasRole(m2n_role_t role) const {
    return llvm::any_of(shards,
                        [&](const Shard &shard) { return shard.role == role; });
  }
};

std::string readShards(m2n_plan_t plan, RankWork &work) {
  m2n_plan_rank_info_t rankInfo;
  if (std::string error = take(m2n_plan_get_rank(plan, work.rank, &rankInfo));
      !error.empty())
    return error;
  for (uint32_t i = 0; i < rankInfo.binding_count; ++i) {
    m2n_plan_binding_info_t binding;
    m2n_plan_tensor_info_t tensor;
    if (std::string error =
            take(m2n_plan_get_binding(plan, work.rank, i, &binding));
        !error.empty())
      return error;
    if (std::string error =
            take(m2n_plan_get_tensor(plan, binding.tensor, &tensor));
        !error.empty())
      return error;
    Shard &shard = work.shards.emplace_back();
    shard.name.assign(tensor.name, tensor.name_size);
    shard.role = binding.role;
    shard.dtype = tensor.dtype;
    shard.ndim = tensor.rank;
    std::copy(binding.shape, binding.shape + M2N_PLAN_MAX_RANK, shard.shape);
    shard.byteSize = binding.byte_size;
  }
  return "";
}

/// Points every source shard at the rank's input file, checking that it
/// holds each with the right dtype and shape.
std::string loadInputs(const std::string &srcDir, RankWork &work) {
  if (!work.hasRole(M2N_ROLE_SOURCE))
    return "";
  std::string path = rankFile(srcDir, work.rank);
  if (std::string error =
          take(m2n_safetensors_load_file(path.c_str(), &work.input));
      !error.empty())
    return error;
  for (Shard &shard : work.shards) {
    if (shard.role != M2N_ROLE_SOURCE)
      continue;
    m2n_safetensors_tensor_t found;
    if (m2n_status_t status = m2n_safetensors_find_tensor(
            work.input, shard.name.c_str(), &found)) {
      m2n_status_free(status);
      return path + ": tensor \"" + shard.name + "\" is missing; rank " +
             std::to_string(work.rank) + " holds a " +
             m2n_dtype_name(shard.dtype) + " " +
             shapeText(shard.ndim, shard.shape) + " source shard of it";
    }
    bool sameShape = found.ndim == shard.ndim &&
                     std::equal(shard.shape, shard.shape + shard.ndim,
                                found.shape);
    if (found.dtype != shard.dtype || !sameShape)
      return path + ": tensor \"" + shard.name + "\" is " +
             m2n_dtype_name(found.dtype) + " " +
             shapeText(found.ndim, found.shape) + ", but rank " +
             std::to_string(work.rank) + "'s source shard is " +
             m2n_dtype_name(shard.dtype) + " " +
             shapeText(shard.ndim, shard.shape);
    shard.data = const_cast<void *>(found.data);
  }
  return "";
}

void allocateOutputs(RankWork &work) {
  for (Shard &shard : work.shards) {
    if (shard.role != M2N_ROLE_DESTINATION)
      continue;
    work.outputs.emplace_back(shard.byteSize);
    shard.data = work.outputs.back().data();
  }
}

/// Binds the shards that have data and runs the rank's part. The run goes
/// ahead even when a bind failed: its agreement then fails every rank,
/// instead of leaving the others waiting for this one.
std::string execute(m2n_plan_t plan, m2n_transport_t transport,
                    RankWork &work) {
  m2n_executor_t executor = nullptr;
  std::string error = take(m2n_executor_create(plan, transport, &executor));
  if (!error.empty())
    return error;
  for (const Shard &shard : work.shards) {
    if (!shard.data && shard.byteSize > 0)
      continue;
    std::string bindError = take(
        m2n_executor_bind(executor, shard.name.c_str(), shard.role,
                          shard.data, shard.dtype, shard.ndim, shard.shape));
    if (error.empty())
      error = bindError;
  }
  std::string runError = take(m2n_executor_run(executor));
  m2n_executor_destroy(executor);
  return error.empty() ? runError : error;
}

std::string writeOutputs(const std::string &dstDir, const RankWork &work) {
  if (!work.hasRole(M2N_ROLE_DESTINATION))
    return "";
  std::vector<m2n_safetensors_tensor_t> tensors;
  for (const Shard &shard : work.shards) {
    if (shard.role != M2N_ROLE_DESTINATION)
      continue;
    m2n_safetensors_tensor_t &tensor = tensors.emplace_back();
    tensor.name = shard.name.c_str();
    tensor.dtype = shard.dtype;
    tensor.ndim = shard.ndim;
    std::copy(shard.shape, shard.shape + M2N_PLAN_MAX_RANK, tensor.shape);
    tensor.data = shard.data;
    tensor.byte_size = shard.byteSize;
  }
  std::string path = rankFile(dstDir, work.rank);
  return take(m2n_safetensors_write_file(path.c_str(), tensors.data(),
                                         tensors.size(), nullptr, 0));
}

/// Reads the plan's shards for `rank` and its inputs.
std::string prepare(m2n_plan_t plan, const RunOptions &options,
                    RankWork &work) {
  std::string error = readShards(plan, work);
  if (error.empty())
    error = loadInputs(options.srcDir, work);
  if (error.empty())
    allocateOutputs(work);
  return error;
}

/// All ranks on threads of this process; outputs are written only when
/// every rank has succeeded.
int runSim(m2n_plan_t plan, uint32_t worldSize, const RunOptions &options) {
  std::vector<std::unique_ptr<RankWork>> works;
  bool failed = false;
  for (uint32_t rank = 0; rank < worldSize; ++rank) {
    works.push_back(std::make_unique<RankWork>());
    works.back()->rank = rank;
    std::string error = prepare(plan, options, *works.back());
    if (!error.empty()) {
      llvm::errs() << "error: " << error << "\n";
      failed = true;
    }
  }
  if (failed)
    return 1;

  m2n_sim_world_t world = nullptr;
  if (std::string error = take(
          m2n_sim_world_create(static_cast<int>(worldSize), &world));
      !error.empty()) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  std::vector<std::thread> threads;
  for (std::unique_ptr<RankWork> &work : works)
    threads.emplace_back([&, work = work.get()] {
      m2n_transport_t transport = nullptr;
      work->error = take(m2n_sim_world_transport(
          world, static_cast<int>(work->rank), &transport));
      if (work->error.empty())
        work->error = execute(plan, transport, *work);
      m2n_transport_destroy(transport);
    });
  for (std::thread &thread : threads)
    thread.join();
  m2n_sim_world_destroy(world);

  // Every rank reports the same agreed failure; print each message once.
  std::vector<std::string> errors;
  for (const std::unique_ptr<RankWork> &work : works)
    if (!work->error.empty() && !llvm::is_contained(errors, work->error))
      errors.push_back(work->error);
  for (const std::string &error : errors)
    llvm::errs() << "error: " << error << "\n";
  if (!errors.empty())
    return 1;
  for (const std::unique_ptr<RankWork> &work : works)
    if (std::string error = writeOutputs(options.dstDir, *work);
        !error.empty()) {
      llvm::errs() << "error: " << error << "\n";
      return 1;
    }
  return 0;
}

#ifdef M2N_HAVE_MPI
/// This process is one rank; every rank checks its inputs, and the ranks
/// agree before any data moves, so a bad input fails every rank.
int runMpi(m2n_plan_t plan, uint32_t worldSize, const RunOptions &options) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    MPI_Init(nullptr, nullptr);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  RankWork work;
  work.rank = static_cast<uint32_t>(rank);
  std::string error;
  if (static_cast<uint32_t>(size) != worldSize)
    error = "the plan has " + std::to_string(worldSize) +
            " ranks but mpirun started " + std::to_string(size);
  m2n_transport_t transport = nullptr;
  if (error.empty())
    error = take(m2n_transport_create_mpi(nullptr, &transport));
  std::string inputError = error.empty() ? prepare(plan, options, work) : "";
  if (!inputError.empty())
    llvm::errs() << "error: rank " << rank << ": " << inputError << "\n";
  // A rank with a bad input still runs, unbound, so that the agreement
  // fails every rank instead of leaving them waiting.
  if (error.empty())
    error = execute(plan, transport, work);
  if (error.empty())
    error = writeOutputs(options.dstDir, work);
  if (!error.empty() && inputError.empty())
    llvm::errs() << "error: rank " << rank << ": " << error << "\n";
  m2n_transport_destroy(transport);
  MPI_Finalize();
  return error.empty() && inputError.empty() ? 0 : 1;
}
#endif

} // namespace

int run(const RunOptions &options) {
  m2n_plan_t plan = nullptr;
  if (std::string error =
          take(m2n_plan_load_file(options.planPath.c_str(), &plan));
      !error.empty()) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  m2n_plan_info_t info;
  m2n_status_free(m2n_plan_get_info(plan, &info));
  if (std::error_code error =
          llvm::sys::fs::create_directories(options.dstDir)) {
    llvm::errs() << "error: cannot create '" << options.dstDir
                 << "': " << error.message() << "\n";
    m2n_plan_destroy(plan);
    return 1;
  }
  int result = 1;
  if (options.backend == "sim")
    result = runSim(plan, info.world_size, options);
#ifdef M2N_HAVE_MPI
  else if (options.backend == "mpi")
    result = runMpi(plan, info.world_size, options);
#endif
  else
    llvm::errs() << "error: unknown backend '" << options.backend
                 << "'; this m2n has: sim"
#ifdef M2N_HAVE_MPI
                 << ", mpi"
#endif
                 << "\n";
  m2n_plan_destroy(plan);
  return result;
}

} // namespace m2n::driver
