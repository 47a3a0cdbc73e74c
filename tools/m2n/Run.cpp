//===- Run.cpp - m2n run: a plan over safetensors files -------------------===//
//
// Rank r reads its source shards from SRC/rank{r}.safetensors and writes its
// destination shards to DST/rank{r}.safetensors. Every input is checked
// before any data moves. Outputs are first written beside their names, as
// rank{r}.safetensors.partial, and renamed only once every rank has written
// its own: after an error no destination file is new or changed. A failure
// over MPI aborts the whole job, since a rank that stopped responding would
// keep the others in MPI_Finalize forever.
//
// The GPU backends run the same way with every rank's shards in GPU memory:
// cuda-local puts every rank of this process on GPU 0 (over the sim
// transport), nccl is one process per rank under mpirun, rank r on GPU r mod
// the device count, joined by an NCCL unique id that rank 0 passes over
// MPI. Shards are copied to the GPU before the run and back after it. A
// backend whose GPU or NCCL is missing fails before anything is read or
// written.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Progress.h"

#include "m2n/executor.h"
#include "m2n/plan.h"
#include "m2n/safetensors.h"
#include "m2n/transport.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#ifdef M2N_HAVE_MPI
#include <mpi.h>
#endif

#ifdef M2N_HAVE_CUDA
#include "m2n/cuda.h"

#include <cuda_runtime_api.h>
#endif

namespace m2n::driver {
namespace {

/// Takes a status's message and frees it; "" for success.
std::string take(m2n_status_t status) {
  std::string message = status ? m2n_status_message(status) : "";
  m2n_status_free(status);
  return message;
}

/// Prints `message` as one error line in one write: under mpirun every
/// rank's process shares the terminal or pipe, and a line written in pieces
/// interleaves with the others'.
void printError(const std::string &message) {
  llvm::errs() << "error: " + message + "\n";
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

/// Where a rank's output is written until every rank has written its own.
std::string partialFile(const std::string &dir, uint32_t rank) {
  return rankFile(dir, rank) + ".partial";
}

/// Makes the --dst folder, which a run creates only once it has outputs to
/// write: a job that fails before then, even one ended by MPI_Abort, leaves
/// nothing. Returns what went wrong, or "".
std::string makeOutputFolder(const std::string &dir) {
  if (std::error_code error = llvm::sys::fs::create_directories(dir))
    return "cannot create '" + dir + "': " + error.message();
  return "";
}

/// Why the folder `dir` could not be made (its nearest existing ancestor is
/// no folder, or one this process may not write), or "": checked before a
/// run, so that a bad --dst fails at once rather than after the transfer.
std::string cannotMake(const std::string &dir) {
  llvm::SmallString<256> path(dir);
  llvm::sys::fs::make_absolute(path);
  while (!llvm::sys::fs::exists(path) && llvm::sys::path::has_parent_path(path))
    llvm::sys::path::remove_filename(path);
  if (!llvm::sys::fs::is_directory(path))
    return "cannot create '" + dir + "': '" + std::string(path) +
           "' is not a folder";
  if (llvm::sys::fs::access(path, llvm::sys::fs::AccessMode::Write))
    return "cannot create '" + dir + "': '" + std::string(path) +
           "' is not writable";
  return "";
}

/// Removes what runs that were killed left of the outputs of the ranks that
/// `ours` accepts: every DIR/rank{r}.safetensors.* (partial outputs and the
/// safetensors writer's temporary files), which m2n alone names so.
template <typename OursFn> void removeStale(const std::string &dir, OursFn ours) {
  std::error_code error;
  for (llvm::sys::fs::directory_iterator it(dir, error), end;
       !error && it != end; it.increment(error)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    uint32_t rank;
    if (name.consume_front("rank") && !name.consumeInteger(10, rank) &&
        name.consume_front(".safetensors.") && ours(rank))
      llvm::sys::fs::remove(it->path());
  }
}

/// One shard of a rank as the plan describes it.
struct Shard {
  std::string name;
  m2n_role_t role;
  m2n_dtype_t dtype;
  uint32_t ndim;
  int64_t shape[M2N_PLAN_MAX_RANK];
  uint64_t byteSize;
  void *data = nullptr;   // in host memory: the mapped input, or the output
  void *device = nullptr; // its copy in GPU memory, for the GPU backends
};

/// How far a run has come, on the progress line. A rank's position is the
/// step it works on, or the step count once it is done; it has nothing to do
/// in the steps it skips, so every step below the lowest position is done.
class StepProgress {
public:
  /// Over `ranks` ranks, shown as "WHO: step S/N".
  StepProgress(ProgressLine &line, std::string who, uint32_t ranks,
               uint32_t stepCount)
      : line_(line), who_(std::move(who)), positions_(ranks, 0),
        stepCount_(stepCount) {
    show(0);
  }

  /// What a rank's executor reports its steps to.
  struct Rank {
    StepProgress *progress;
    uint32_t index;

    void done() { progress->move(index, progress->stepCount_); }
  };

  /// An m2n_executor_step_fn; `rank` is a Rank.
  static void begins(void *rank, uint64_t step) {
    Rank *r = static_cast<Rank *>(rank);
    r->progress->move(r->index, step);
  }

private:
  void move(uint32_t rank, uint64_t position) {
    std::lock_guard<std::mutex> lock(mutex_);
    uint64_t before = *std::min_element(positions_.begin(), positions_.end());
    positions_[rank] = position;
    uint64_t after = *std::min_element(positions_.begin(), positions_.end());
    if (after != before)
      show(after);
  }
  void show(uint64_t lowest) {
    if (lowest < stepCount_)
      line_.begin(
          llvm::formatv("{0}: step {1}/{2}", who_, lowest + 1, stepCount_));
  }

  ProgressLine &line_;
  std::string who_;
  std::vector<uint64_t> positions_;
  uint32_t stepCount_;
  std::mutex mutex_;
};

/// A rank's shards, its loaded input file and its output buffers.
struct RankWork {
  uint32_t rank = 0;
  std::vector<Shard> shards;
  m2n_safetensors_t input = nullptr;
  /// From malloc: a shard too large to allocate is an error, not an abort.
  std::vector<std::unique_ptr<uint8_t, decltype(&std::free)>> outputs;
  std::string error;
  /// Where its executor reports its steps, if anywhere.
  std::optional<StepProgress::Rank> progress;

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

std::string allocateOutputs(RankWork &work) {
  for (Shard &shard : work.shards) {
    if (shard.role != M2N_ROLE_DESTINATION || shard.byteSize == 0)
      continue;
    void *data = shard.byteSize <= SIZE_MAX
                     ? std::malloc(static_cast<size_t>(shard.byteSize))
                     : nullptr;
    if (!data)
      return "RESOURCE_EXHAUSTED: rank " + std::to_string(work.rank) +
             ": cannot allocate " + std::to_string(shard.byteSize) +
             " bytes for the destination shard of tensor \"" + shard.name +
             "\"";
    work.outputs.emplace_back(static_cast<uint8_t *>(data), &std::free);
    shard.data = data;
  }
  return "";
}

/// Binds the shards that have data and runs the rank's part. The run goes
/// ahead even when a bind failed: its agreement then fails every rank,
/// instead of leaving the others waiting for this one.
std::string execute(m2n_plan_t plan, m2n_transport_t transport,
                    m2n_device_t device, RankWork &work) {
  m2n_executor_t executor = nullptr;
  std::string error =
      take(m2n_executor_create(plan, transport, device, &executor));
  if (!error.empty())
    return error;
  if (work.progress)
    m2n_status_free(m2n_executor_set_step_callback(
        executor, StepProgress::begins, &*work.progress));
  for (const Shard &shard : work.shards) {
    void *data = device ? shard.device : shard.data;
    if (!data && shard.byteSize > 0)
      continue;
    std::string bindError =
        take(m2n_executor_bind(executor, shard.name.c_str(), shard.role, data,
                               shard.dtype, shard.ndim, shard.shape));
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
  std::string path = partialFile(dstDir, work.rank);
  return take(m2n_safetensors_write_file(path.c_str(), tensors.data(),
                                         tensors.size(), nullptr, 0));
}

/// Renames a rank's written output to its name, or on failure removes it.
std::string settleOutput(const std::string &dstDir, const RankWork &work,
                         bool commit) {
  if (!work.hasRole(M2N_ROLE_DESTINATION))
    return "";
  std::string partial = partialFile(dstDir, work.rank);
  if (!commit) {
    llvm::sys::fs::remove(partial);
    return "";
  }
  std::string path = rankFile(dstDir, work.rank);
  if (std::error_code error = llvm::sys::fs::rename(partial, path))
    return "cannot rename '" + partial + "' to '" + path +
           "': " + error.message();
  return "";
}

/// Reads the plan's shards for `rank` and its inputs.
std::string prepare(m2n_plan_t plan, const RunOptions &options,
                    RankWork &work) {
  std::string error = readShards(plan, work);
  if (error.empty())
    error = loadInputs(options.srcDir, work);
  if (error.empty())
    error = allocateOutputs(work);
  return error;
}

/// A rank's shards in GPU memory for the GPU backends: the sources copied
/// in before the run, the destinations copied out into their host buffers
/// after it, on a stream of the rank's own. Made only when the backend's
/// GPU was found (gpuMissing).
class GpuShards {
public:
  GpuShards() = default;
  GpuShards(const GpuShards &) = delete;
  GpuShards &operator=(const GpuShards &) = delete;
  ~GpuShards();

  /// Allocates and fills the rank's shards on GPU `gpu`, and the device
  /// the executor runs on.
  std::string upload(int gpu, RankWork &work);
  m2n_device_t device() const { return device_; }
  /// Waits for the stream and copies the destinations back.
  std::string download(RankWork &work);

private:
  int gpu_ = 0;
  m2n_device_t device_ = nullptr;
  std::vector<void *> buffers_;
#ifdef M2N_HAVE_CUDA
  cudaStream_t stream_ = nullptr;
#endif
};

#ifdef M2N_HAVE_CUDA
/// "" for success, else what failed and CUDA's words for why.
std::string cudaError(cudaError_t error, const std::string &what) {
  if (error == cudaSuccess)
    return "";
  return "CUDA: " + what + " failed: " + cudaGetErrorString(error);
}

GpuShards::~GpuShards() {
  m2n_device_destroy(device_);
  if (buffers_.empty() && !stream_)
    return;
  cudaSetDevice(gpu_);
  for (void *buffer : buffers_)
    cudaFree(buffer);
  if (stream_)
    cudaStreamDestroy(stream_);
}

std::string GpuShards::upload(int gpu, RankWork &work) {
  gpu_ = gpu;
  std::string error = cudaError(cudaSetDevice(gpu), "cudaSetDevice");
  if (error.empty())
    error =
        cudaError(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                  "cudaStreamCreateWithFlags");
  for (Shard &shard : work.shards) {
    if (!error.empty() || shard.byteSize == 0)
      continue;
    error = cudaError(cudaMalloc(&shard.device, shard.byteSize),
                      "cudaMalloc of " + std::to_string(shard.byteSize) +
                          " bytes for tensor \"" + shard.name + "\"");
    if (!error.empty())
      break;
    buffers_.push_back(shard.device);
    if (shard.role == M2N_ROLE_SOURCE)
      error = cudaError(cudaMemcpy(shard.device, shard.data, shard.byteSize,
                                   cudaMemcpyHostToDevice),
                        "copying tensor \"" + shard.name + "\" to the GPU");
  }
  // The runs wait for the refit, within the transport's timeout.
  if (error.empty())
    error = take(m2n_cuda_device_create(gpu, stream_,
                                        M2N_CUDA_DEVICE_SYNCHRONIZE, &device_));
  return error.empty() ? ""
                       : "rank " + std::to_string(work.rank) + ": " + error;
}

std::string GpuShards::download(RankWork &work) {
  std::string error = cudaError(cudaSetDevice(gpu_), "cudaSetDevice");
  if (error.empty())
    error = cudaError(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  for (Shard &shard : work.shards)
    if (error.empty() && shard.role == M2N_ROLE_DESTINATION && shard.device)
      error = cudaError(cudaMemcpy(shard.data, shard.device, shard.byteSize,
                                   cudaMemcpyDeviceToHost),
                        "copying tensor \"" + shard.name + "\" from the GPU");
  return error.empty() ? ""
                       : "rank " + std::to_string(work.rank) + ": " + error;
}
#else
// This m2n has no GPU path: gpuMissing refuses the GPU backends first.
GpuShards::~GpuShards() = default;
std::string GpuShards::upload(int, RankWork &) {
  return "this m2n was built without the GPU path";
}
std::string GpuShards::download(RankWork &) {
  return "this m2n was built without the GPU path";
}
#endif

/// Where the backend keeps the shards while it runs.
enum class Memory { Host, Gpu };

/// Runs the rank's part over `transport`, its shards on GPU `gpu` for
/// Memory::Gpu. A rank whose shards cannot go to the GPU fails its peers
/// at once rather than leave them waiting.
std::string executeRank(m2n_plan_t plan, m2n_transport_t transport,
                        Memory memory, int gpu, RankWork &work) {
  if (memory == Memory::Host)
    return execute(plan, transport, nullptr, work);
  GpuShards shards;
  std::string error = shards.upload(gpu, work);
  if (!error.empty()) {
    m2n_status_free(m2n_transport_abort(transport, error.c_str()));
    return error;
  }
  error = execute(plan, transport, shards.device(), work);
  return error.empty() ? shards.download(work) : error;
}

/// Runs every rank on a thread of its own. Every rank reports the same
/// agreed failure, so each message is returned once.
std::vector<std::string>
executeAll(m2n_plan_t plan, m2n_sim_world_t world, double timeoutSeconds,
           Memory memory, const std::vector<std::unique_ptr<RankWork>> &works) {
  std::vector<std::thread> threads;
  for (const std::unique_ptr<RankWork> &work : works)
    threads.emplace_back([&, work = work.get()] {
      m2n_transport_t transport = nullptr;
      work->error = take(m2n_sim_world_transport(
          world, static_cast<int>(work->rank), &transport));
      if (work->error.empty())
        work->error =
            take(m2n_transport_set_timeout(transport, timeoutSeconds));
      // cuda-local: every rank on GPU 0.
      if (work->error.empty())
        work->error = executeRank(plan, transport, memory, 0, *work);
      m2n_transport_destroy(transport);
      if (work->progress)
        work->progress->done();
    });
  for (std::thread &thread : threads)
    thread.join();
  std::vector<std::string> errors;
  for (const std::unique_ptr<RankWork> &work : works)
    if (!work->error.empty() && !llvm::is_contained(errors, work->error))
      errors.push_back(work->error);
  return errors;
}

/// All ranks on threads of this process, their shards in `memory`;
/// outputs are written only when every rank has succeeded.
int runSim(m2n_plan_t plan, const m2n_plan_info_t &info,
           const RunOptions &options, Memory memory) {
  std::vector<std::unique_ptr<RankWork>> works;
  bool failed = false;
  for (uint32_t rank = 0; rank < info.world_size; ++rank) {
    works.push_back(std::make_unique<RankWork>());
    works.back()->rank = rank;
    std::string error = prepare(plan, options, *works.back());
    if (!error.empty()) {
      printError(error);
      failed = true;
    }
  }
  if (failed)
    return 1;

  m2n_sim_world_t world = nullptr;
  if (std::string error = take(
          m2n_sim_world_create(static_cast<int>(info.world_size), &world));
      !error.empty()) {
    printError(error);
    return 1;
  }
  ProgressLine line(options.progress);
  std::optional<StepProgress> steps;
  if (line.enabled()) {
    steps.emplace(line, "m2n run", info.world_size, info.step_count);
    for (std::unique_ptr<RankWork> &work : works)
      work->progress = StepProgress::Rank{&*steps, work->rank};
  }
  std::vector<std::string> errors =
      executeAll(plan, world, options.timeoutSeconds, memory, works);
  m2n_sim_world_destroy(world);
  if (errors.empty()) {
    line.begin("m2n run: writing the outputs");
    if (std::string error = makeOutputFolder(options.dstDir); !error.empty())
      errors.push_back(error);
  }
  if (errors.empty()) {
    removeStale(options.dstDir,
                [&](uint32_t r) { return r < info.world_size; });
    for (const std::unique_ptr<RankWork> &work : works)
      if (std::string error = writeOutputs(options.dstDir, *work);
          !error.empty()) {
        errors.push_back(error);
        break;
      }
    for (const std::unique_ptr<RankWork> &work : works)
      if (std::string error =
              settleOutput(options.dstDir, *work, errors.empty());
          !error.empty())
        errors.push_back(error);
  }
  line.finish();
  for (const std::string &error : errors)
    printError(error);
  return errors.empty() ? 0 : 1;
}

#ifdef M2N_HAVE_MPI
/// Prints `message` of rank `rank` as one line in one write.
void printRankError(int rank, const std::string &message) {
  printError("rank " + std::to_string(rank) + ": " + message);
}

/// Waits for `request` for up to `seconds` (forever when not positive);
/// false when it did not complete.
bool waitFor(MPI_Request &request, double seconds) {
  auto start = std::chrono::steady_clock::now();
  for (;;) {
    int done = 0;
    if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return false;
    if (done)
      return true;
    std::chrono::duration<double> waited =
        std::chrono::steady_clock::now() - start;
    if (seconds > 0 && waited.count() > seconds)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

/// Whether every rank says `ok`, by an all-reduce that gives up after
/// `seconds`: nullopt when some rank did not answer in time. A blocking
/// collective here would wait forever on a rank that stopped.
std::optional<bool> everyRank(bool ok, double seconds) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Iallreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD,
                     &request) != MPI_SUCCESS ||
      !waitFor(request, seconds))
    return std::nullopt;
  return all != 0;
}

/// Ends the job from a rank whose peers cannot be reached: MPI_Finalize
/// would wait for them forever, MPI_Abort ends every rank.
[[noreturn]] void abortJob(int rank, const std::string &why) {
  printRankError(rank, why + "; aborting the job");
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

#ifdef M2N_HAVE_CUDA
/// This rank's nccl transport, on GPU rank mod the device count (`gpu`):
/// rank 0 makes the NCCL unique id and passes it to every rank over MPI,
/// with a byte that says whether it could.
std::string ncclTransport(int rank, int size, double timeout, int *gpu,
                          m2n_transport_t *out) {
  int count = 0;
  std::string error =
      cudaError(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (error.empty() && count == 0)
    error = "no CUDA device";
  if (error.empty()) {
    *gpu = rank % count;
    error = cudaError(cudaSetDevice(*gpu), "cudaSetDevice");
  }
  unsigned char id[M2N_CUDA_NCCL_UNIQUE_ID_BYTES + 1] = {};
  unsigned char &made = id[M2N_CUDA_NCCL_UNIQUE_ID_BYTES];
  if (rank == 0 && error.empty()) {
    error =
        take(m2n_cuda_nccl_get_unique_id(id, M2N_CUDA_NCCL_UNIQUE_ID_BYTES));
    made = error.empty();
  }
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Ibcast(id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD, &request) !=
          MPI_SUCCESS ||
      !waitFor(request, timeout))
    abortJob(rank, "timed out waiting for rank 0's NCCL unique id");
  if (!error.empty())
    return error;
  if (!made)
    return "rank 0 could not make an NCCL unique id";
  // Joining waits as long as --timeout says, unless the environment says.
  setenv("M2N_NCCL_TIMEOUT_SECONDS", std::to_string(timeout).c_str(), 0);
  return take(m2n_cuda_transport_create_nccl_unique_id(id, size, rank, out));
}
#endif

/// This process is one rank; every rank checks its inputs, and the ranks
/// agree before any data moves, so a bad input fails every rank. They agree
/// again on the outcome before any output takes its name. Every wait has
/// the timeout; a rank that waits past it aborts the job. With `nccl`, the
/// rank's shards are on its GPU and move over NCCL.
int runMpi(m2n_plan_t plan, const m2n_plan_info_t &info,
           const RunOptions &options, bool nccl) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    MPI_Init(nullptr, nullptr);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double timeout = options.timeoutSeconds;
  std::string wait = " after " + std::to_string(timeout) + " s waiting for ";
  RankWork work;
  work.rank = static_cast<uint32_t>(rank);
  std::string error;
  if (static_cast<uint32_t>(size) != info.world_size)
    error = "the plan has " + std::to_string(info.world_size) +
            " ranks but mpirun started " + std::to_string(size);
  // Before the transport's MPI_Comm_dup, a collective without a timeout:
  // every rank must have started, on a plan of this world size.
  std::optional<bool> started = everyRank(error.empty(), timeout);
  if (!started)
    abortJob(rank, "timed out" + wait + "every rank to start");
  if (!*started) {
    printRankError(rank, error.empty() ? "another rank cannot run the plan"
                                       : error);
    MPI_Finalize();
    return 1;
  }
  m2n_transport_t transport = nullptr;
  int gpu = 0;
#ifdef M2N_HAVE_CUDA
  if (nccl)
    error = ncclTransport(rank, size, timeout, &gpu, &transport);
  else
#endif
    error = take(m2n_transport_create_mpi(nullptr, &transport));
  if (error.empty())
    error = take(m2n_transport_set_timeout(transport, timeout));
  std::string inputError = error.empty() ? prepare(plan, options, work) : "";
  if (!inputError.empty())
    printRankError(rank, inputError);
  // This rank's own steps; each process has its own line.
  ProgressLine line(options.progress);
  std::optional<StepProgress> steps;
  if (line.enabled()) {
    steps.emplace(line, "m2n run (rank " + std::to_string(rank) + ")", 1,
                  info.step_count);
    work.progress = StepProgress::Rank{&*steps, 0};
  }
  // Tests stop one rank here, as a rank that stops responding mid-run.
  if (const char *stop = std::getenv("M2N_TEST_STOP_RANK");
      stop && std::to_string(rank) == stop)
    std::raise(SIGSTOP);
  // A rank with a bad input still runs, unbound, so that the agreement
  // fails every rank instead of leaving them waiting.
  if (error.empty())
    error = executeRank(plan, transport, nccl ? Memory::Gpu : Memory::Host,
                        gpu, work);
  if (error.empty()) {
    line.begin("m2n run (rank " + std::to_string(rank) +
               "): writing the outputs");
    error = makeOutputFolder(options.dstDir);
  }
  if (error.empty()) {
    removeStale(options.dstDir, [&](uint32_t r) { return r == work.rank; });
    error = writeOutputs(options.dstDir, work);
  }
  line.finish();
  if (!error.empty() && inputError.empty())
    printRankError(rank, error);
  bool ok = error.empty() && inputError.empty();
  // A failed rank's peers have heard of it and come here at once; a rank
  // that is fine waits as long as the others may take to write.
  std::optional<bool> outcome =
      everyRank(ok, ok ? timeout : std::min(timeout, 10.0));
  if (!outcome) {
    settleOutput(options.dstDir, work, false);
    abortJob(rank, "timed out" + wait + "the other ranks to finish");
  }
  std::string settled = settleOutput(options.dstDir, work, *outcome);
  if (!settled.empty())
    printRankError(rank, settled);
  m2n_transport_destroy(transport);
  MPI_Finalize();
  return *outcome && settled.empty() ? 0 : 1;
}
#endif

/// The backends this m2n has, for messages: "sim, mpi, cuda-local, nccl".
std::string backendList() {
  std::string list = "sim";
#ifdef M2N_HAVE_MPI
  list += ", mpi";
#endif
  list += ", cuda-local";
#ifdef M2N_HAVE_MPI
  list += ", nccl";
#endif
  return list;
}

/// For a GPU backend, what it needs that is missing (the GPU path in this
/// build, a CUDA GPU, NCCL), or "".
std::string gpuMissing(const std::string &backend) {
  if (backend != "cuda-local" && backend != "nccl")
    return "";
  std::string needs = "--backend " + backend + " needs ";
#ifndef M2N_HAVE_CUDA
  return needs + "the GPU path, which this m2n was built without (no CUDA "
                 "toolkit or nccl.h was found when it was built)";
#else
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess || count == 0)
    return needs + "a CUDA GPU, and none is usable (" +
           (error != cudaSuccess ? std::string(cudaGetErrorString(error))
                                 : std::string("no device found")) +
           ")";
  if (backend == "nccl")
    if (std::string why = take(m2n_cuda_nccl_load(nullptr)); !why.empty())
      return needs + "NCCL, which is not available: " + why;
  return "";
#endif
}

/// What is wrong with the command line before anything is read or
/// created, or "".
std::string checkOptions(const RunOptions &options) {
  std::string list = backendList();
  bool known = false;
  for (llvm::StringRef name : llvm::split(list, ", "))
    known = known || name == options.backend;
  if (!known)
    return "unknown backend '" + options.backend + "'; this m2n has: " + list;
  if (std::string missing = gpuMissing(options.backend); !missing.empty())
    return missing;
  if (!(options.timeoutSeconds >= 0))
    return "--timeout must not be negative";
  // Outputs would replace inputs of a colocated plan; equivalent() sees
  // through links, and fails when --dst does not exist yet.
  bool same = false;
  if (!llvm::sys::fs::equivalent(options.srcDir, options.dstDir, same) &&
      same)
    return "--dst '" + options.dstDir + "' is the folder --src '" +
           options.srcDir + "' names; outputs may not overwrite inputs";
  return "";
}

} // namespace

int run(const RunOptions &options) {
  if (std::string error = checkOptions(options); !error.empty()) {
    printError(error);
    return 1;
  }
  m2n_plan_t plan = nullptr;
  if (std::string error = take(m2n_plan_load_file_flags(
          options.planPath.c_str(),
          options.trustPlan ? M2N_PLAN_LOAD_TRUSTED : 0, &plan));
      !error.empty()) {
    printError(error);
    return 1;
  }
  m2n_plan_info_t info;
  m2n_status_free(m2n_plan_get_info(plan, &info));
  // A failed run leaves nothing new, not even the folder it created.
  bool created = !llvm::sys::fs::exists(options.dstDir);
  if (std::string error = cannotMake(options.dstDir); !error.empty()) {
    printError(error);
    m2n_plan_destroy(plan);
    return 1;
  }
  int result = 1;
  if (options.backend == "sim" || options.backend == "cuda-local")
    result = runSim(plan, info, options,
                    options.backend == "sim" ? Memory::Host : Memory::Gpu);
#ifdef M2N_HAVE_MPI
  else
    result = runMpi(plan, info, options, options.backend == "nccl");
#endif
  m2n_plan_destroy(plan);
  // Only once empty: over MPI another rank may have made it, or written to it.
  if (result != 0 && created)
    llvm::sys::fs::remove(options.dstDir, /*IgnoreNonExisting=*/true);
  return result;
}

} // namespace m2n::driver
