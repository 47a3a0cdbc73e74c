//===- cuda_executor.cpp - One rank's part of a plan on a GPU -------------===//

#include "cuda/cuda_executor.h"

#include <string>

namespace m2n::cuda {
namespace {

m2n_status_t invalid(const std::string &message) {
  return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT, message.c_str());
}

const char *roleName(uint8_t role) {
  return role == M2N_ROLE_SOURCE ? "source" : "destination";
}

std::string shapeText(uint32_t ndim, const int64_t *shape) {
  std::string text = "[";
  for (uint32_t d = 0; d < ndim; ++d)
    text += concat(d ? ", " : "", shape[d]);
  return text + "]";
}

Walk walkOf(const Instruction &inst, uint32_t from, uint32_t to) {
  Walk walk;
  walk.from = from;
  walk.to = to;
  walk.levels = inst.levels;
  walk.fromOffset = inst.runs.from_offset;
  walk.toOffset = inst.runs.to_offset;
  walk.runBytes = inst.runs.run_bytes;
  for (uint32_t l = 0; l < inst.levels; ++l) {
    walk.count[l] = inst.count[l];
    walk.fromStride[l] = inst.fromStride[l];
    walk.toStride[l] = inst.toStride[l];
  }
  return walk;
}

// A step's instructions, before its walks go to the device.
struct PendingStep {
  uint32_t step = 0;
  std::vector<Walk> packs;
  std::vector<Walk> unpacks;
  std::vector<Message> messages;
};

} // namespace

CudaExecutor::CudaExecutor(const LoadedPlan &plan, uint32_t rank,
                           NcclTransport *transport, cudaStream_t stream,
                           int device)
    : plan_(plan), rank_(rank), transport_(transport), stream_(stream),
      device_(device) {}

CudaExecutor::~CudaExecutor() {
  DeviceGuard guard(device_);
  // Earlier runs may still read the tables and write through the bases.
  cudaStreamSynchronize(stream_);
  basesDevice_.reset();
  staging_.reset();
  walks_.reset();
  event_.reset();
}

m2n_status_t CudaExecutor::create(const LoadedPlan &plan, uint32_t rank,
                                  NcclTransport *transport, cudaStream_t stream,
                                  std::unique_ptr<CudaExecutor> *out) {
  if (rank >= plan.worldSize()) {
    std::string message =
        concat("m2n_cuda_executor_create: rank ", rank,
               " is outside the plan's world of ", plan.worldSize());
    return m2n_status_create(M2N_STATUS_NOT_FOUND, message.c_str());
  }
  int device = 0;
  M2N_RETURN_IF_ERROR(currentDevice(&device));
  if (transport && (transport->size() != static_cast<int>(plan.worldSize()) ||
                    transport->rank() != static_cast<int>(rank) ||
                    transport->device() != device))
    return invalid(concat("m2n_cuda_executor_create: the communicator is rank ",
                          transport->rank(), " of ", transport->size(),
                          " on device ", transport->device(),
                          ", the executor is rank ", rank, " of ",
                          plan.worldSize(), " on device ", device,
                          " (plan ranks are communicator ranks)"));
  std::unique_ptr<CudaExecutor> executor(
      new CudaExecutor(plan, rank, transport, stream, device));
  M2N_RETURN_IF_ERROR(executor->build());
  *out = std::move(executor);
  return nullptr;
}

m2n_status_t CudaExecutor::build() {
  M2N_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(
      &smCount_, cudaDevAttrMultiProcessorCount, device_));
  M2N_RETURN_IF_ERROR(event_.create());
  if (const m2n_plan_rank_header_t *header = plan_.rankHeader(rank_)) {
    bindingCount_ = header->binding_count;
    stagingBytes_ = header->staging_bytes;
  }
  const uint32_t staging = bindingCount_;
  M2N_RETURN_IF_ERROR(staging_.allocate(stagingBytes_, "the staging buffer"));
  bases_.assign(bindingCount_ + 1, nullptr);
  bases_[staging] = staging_.get();
  bound_.assign(bindingCount_, false);

  std::vector<Walk> copies;
  std::vector<PendingStep> pending;
  for (const Instruction &inst : plan_.instructions(rank_)) {
    const m2n_plan_runs_t &runs = inst.runs;
    const m2n_plan_transfer_t &transfer = inst.transfer;
    switch (inst.opcode) {
    case M2N_OP_STEP:
      pending.push_back({static_cast<uint32_t>(inst.step), {}, {}, {}});
      break;
    case M2N_OP_COPY:
      copies.push_back(walkOf(inst, runs.from_binding, runs.to_binding));
      break;
    case M2N_OP_PACK:
      pending.back().packs.push_back(walkOf(inst, runs.from_binding, staging));
      break;
    case M2N_OP_UNPACK:
      pending.back().unpacks.push_back(walkOf(inst, staging, runs.to_binding));
      break;
    case M2N_OP_SEND:
    case M2N_OP_RECV:
    case M2N_OP_SEND_DIRECT:
    case M2N_OP_RECV_DIRECT: {
      bool direct = inst.opcode == M2N_OP_SEND_DIRECT ||
                    inst.opcode == M2N_OP_RECV_DIRECT;
      bool send =
          inst.opcode == M2N_OP_SEND || inst.opcode == M2N_OP_SEND_DIRECT;
      pending.back().messages.push_back(
          {send, transfer.peer, direct ? transfer.binding : staging,
           transfer.staging_offset, transfer.bytes});
      break;
    }
    }
  }

  RunsTableBuilder table;
  uint32_t copyBatch = table.addBatch(copies, smCount_);
  std::vector<uint32_t> packBatches, unpackBatches;
  for (const PendingStep &step : pending) {
    packBatches.push_back(table.addBatch(step.packs, smCount_));
    unpackBatches.push_back(table.addBatch(step.unpacks, smCount_));
  }
  M2N_RETURN_IF_ERROR(walks_.allocate(table.image().size(), "the walks"));
  M2N_RETURN_IF_ERROR(
      basesDevice_.allocate(bases_.size() * sizeof(uint8_t *), "the bases"));
  if (!table.image().empty())
    M2N_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(walks_.get(), table.image().data(),
                                             table.image().size(),
                                             cudaMemcpyHostToDevice, stream_));
  copies_ = table.batch(copyBatch, walks_.get());
  for (size_t i = 0; i < pending.size(); ++i) {
    steps_.push_back({pending[i].step,
                      table.batch(packBatches[i], walks_.get()),
                      std::move(pending[i].messages),
                      table.batch(unpackBatches[i], walks_.get())});
  }
  // Waits for the walks too, whose host image goes with `table`.
  return uploadBases();
}

m2n_status_t CudaExecutor::uploadBases() {
  M2N_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(basesDevice_.get(), bases_.data(),
                                           bases_.size() * sizeof(uint8_t *),
                                           cudaMemcpyHostToDevice, stream_));
  return cudaStatus(cudaStreamSynchronize(stream_),
                    "cudaStreamSynchronize after uploading the bases");
}

m2n_status_t CudaExecutor::checkPointer(const void *pointer,
                                        const char *name) const {
  cudaPointerAttributes attributes = {};
  M2N_CUDA_RETURN_IF_ERROR(cudaPointerGetAttributes(&attributes, pointer));
  if (attributes.type == cudaMemoryTypeManaged)
    return nullptr;
  if (attributes.type != cudaMemoryTypeDevice)
    return invalid(concat("m2n_cuda_executor_bind: the buffer of ",
                          quoteName(name), " is not device memory"));
  if (attributes.device != device_)
    return invalid(concat("m2n_cuda_executor_bind: the buffer of ",
                          quoteName(name), " is on device ", attributes.device,
                          ", the executor on device ", device_));
  return nullptr;
}

m2n_status_t CudaExecutor::bind(const char *name, m2n_role_t role,
                                void *pointer, m2n_dtype_t dtype, uint32_t ndim,
                                const int64_t *shape) {
  if (!name)
    return invalid("m2n_cuda_executor_bind: the name is NULL");
  if (role != M2N_ROLE_SOURCE && role != M2N_ROLE_DESTINATION)
    return invalid(concat("m2n_cuda_executor_bind: role ",
                          static_cast<int>(role),
                          " is neither source nor destination"));
  std::optional<uint32_t> tensor = plan_.findTensor(name);
  if (!tensor)
    return m2n_status_create(
        M2N_STATUS_NOT_FOUND,
        concat("m2n_cuda_executor_bind: the plan has no tensor ",
               quoteName(name))
            .c_str());
  uint32_t index = 0;
  while (index < bindingCount_ &&
         (plan_.binding(rank_, index).tensor != *tensor ||
          plan_.binding(rank_, index).role != role))
    ++index;
  if (index == bindingCount_)
    return m2n_status_create(M2N_STATUS_NOT_FOUND,
                             concat("m2n_cuda_executor_bind: rank ", rank_,
                                    " holds no ", roleName(role), " shard of ",
                                    quoteName(name))
                                 .c_str());
  const m2n_plan_tensor_t &info = plan_.tensor(*tensor);
  const Binding &binding = plan_.binding(rank_, index);
  if (dtype != info.dtype)
    return invalid(concat("m2n_cuda_executor_bind: ", quoteName(name), " is ",
                          m2n_dtype_name(static_cast<m2n_dtype_t>(info.dtype)),
                          ", bound as ", m2n_dtype_name(dtype)));
  bool sameShape = ndim == info.rank && (ndim == 0 || shape);
  for (uint32_t d = 0; sameShape && d < ndim; ++d)
    sameShape = shape[d] == binding.shape[d];
  if (!sameShape)
    return invalid(
        concat("m2n_cuda_executor_bind: rank ", rank_, "'s ", roleName(role),
               " shard of ", quoteName(name), " has shape ",
               shapeText(info.rank, binding.shape), ", bound with ",
               shape ? shapeText(ndim, shape) : std::string("no shape")));
  if (!pointer && binding.byte_size > 0)
    return invalid(concat("m2n_cuda_executor_bind: the ", roleName(role),
                          " shard of ", quoteName(name), " holds ",
                          binding.byte_size, " bytes; its buffer is NULL"));
  DeviceGuard guard(device_);
  M2N_RETURN_IF_ERROR(guard.status());
  if (pointer)
    M2N_RETURN_IF_ERROR(checkPointer(pointer, name));
  bases_[index] = static_cast<uint8_t *>(pointer);
  bound_[index] = true;
  return uploadBases();
}

m2n_status_t CudaExecutor::checkBound() const {
  for (uint32_t i = 0; i < bindingCount_; ++i) {
    const Binding &binding = plan_.binding(rank_, i);
    if (bound_[i] || binding.byte_size == 0)
      continue;
    return invalid(concat("rank ", rank_, ": the ", roleName(binding.role),
                          " shard of ",
                          quoteName(plan_.tensorName(binding.tensor)),
                          " is not bound (m2n_cuda_executor_bind)"));
  }
  return nullptr;
}

m2n_status_t CudaExecutor::launch(const RunsBatch &batch, const char *what) {
  uint8_t *const *bases =
      reinterpret_cast<uint8_t *const *>(basesDevice_.get());
  return cudaStatus(launchRuns(batch, bases, smCount_, stream_), what);
}

uint8_t *CudaExecutor::address(const Message &message) const {
  return bases_[message.buffer] + message.offset;
}

m2n_status_t CudaExecutor::run() {
  DeviceGuard guard(device_);
  M2N_RETURN_IF_ERROR(guard.status());
  M2N_RETURN_IF_ERROR(checkBound());
  if (!transport_) {
    if (plan_.worldSize() == 1)
      return runLocalWorld({this});
    return invalid(concat("m2n_cuda_executor_run: rank ", rank_, " of a ",
                          plan_.worldSize(),
                          "-rank plan has no transport; run all ranks "
                          "together with m2n_cuda_local_world_run"));
  }
  bool capturing = false;
  M2N_RETURN_IF_ERROR(isCapturing(stream_, &capturing));
  if (capturing && (!agreed_ || synchronize_))
    return invalid(
        "m2n_cuda_executor_run: cannot be captured into a CUDA graph while "
        "it waits: the first run (which agrees on the plan across ranks) and "
        "runs with M2N_CUDA_OPTION_SYNCHRONIZE wait; run once before "
        "capturing, without synchronizing");
  M2N_RETURN_IF_ERROR(transport_->health());
  if (!agreed_) {
    M2N_RETURN_IF_ERROR(
        transport_->agree(plan_.header().content_hash, stream_));
    agreed_ = true;
  }
  M2N_RETURN_IF_ERROR(runSteps());
  if (!synchronize_)
    return nullptr;
  M2N_CUDA_RETURN_IF_ERROR(cudaEventRecord(event_.get(), stream_));
  return transport_->wait(event_.get(), "the refit");
}

m2n_status_t CudaExecutor::runSteps() {
  M2N_RETURN_IF_ERROR(launch(copies_, "the local copies"));
  std::vector<Transfer> transfers;
  for (const StepWork &step : steps_) {
    M2N_RETURN_IF_ERROR(launch(step.pack, "a step's packs"));
    transfers.clear();
    for (const Message &message : step.messages)
      transfers.push_back(
          {message.send, message.peer, address(message), message.bytes});
    M2N_RETURN_IF_ERROR(transport_->exchange(transfers, stream_));
    M2N_RETURN_IF_ERROR(launch(step.unpack, "a step's unpacks"));
  }
  return nullptr;
}

} // namespace m2n::cuda

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

using m2n::cuda::CudaExecutor;

namespace {

m2n_status_t nullArgument(const char *what) {
  std::string message = m2n::concat(what, " is NULL");
  return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT, message.c_str());
}

} // namespace

extern "C" {

m2n_status_t m2n_cuda_executor_create(m2n_plan_t plan, uint32_t rank,
                                      m2n_cuda_transport_t transport,
                                      void *cuda_stream,
                                      m2n_cuda_executor_t *out) {
  if (!out)
    return nullArgument("m2n_cuda_executor_create: out");
  *out = nullptr;
  if (!plan)
    return nullArgument("m2n_cuda_executor_create: the plan");
  std::unique_ptr<CudaExecutor> executor;
  M2N_RETURN_IF_ERROR(CudaExecutor::create(
      plan->plan, rank, transport ? transport->nccl.get() : nullptr,
      static_cast<cudaStream_t>(cuda_stream), &executor));
  *out = new m2n_cuda_executor_s{std::move(executor)};
  return nullptr;
}

m2n_status_t m2n_cuda_executor_bind(m2n_cuda_executor_t exec, const char *name,
                                    m2n_role_t role, void *device_ptr,
                                    m2n_dtype_t dtype, uint32_t ndim,
                                    const int64_t *shape) {
  if (!exec)
    return nullArgument("m2n_cuda_executor_bind: the executor");
  return exec->executor->bind(name, role, device_ptr, dtype, ndim, shape);
}

m2n_status_t m2n_cuda_executor_set_option(m2n_cuda_executor_t exec,
                                          m2n_cuda_option_t option,
                                          int64_t value) {
  if (!exec)
    return nullArgument("m2n_cuda_executor_set_option: the executor");
  if (option != M2N_CUDA_OPTION_SYNCHRONIZE || (value != 0 && value != 1)) {
    std::string message =
        m2n::concat("m2n_cuda_executor_set_option: unknown option ",
                    static_cast<int>(option), " or value ", value,
                    " (M2N_CUDA_OPTION_SYNCHRONIZE takes 0 or 1)");
    return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT, message.c_str());
  }
  exec->executor->setSynchronize(value == 1);
  return nullptr;
}

m2n_status_t m2n_cuda_executor_run(m2n_cuda_executor_t exec) {
  if (!exec)
    return nullArgument("m2n_cuda_executor_run: the executor");
  return exec->executor->run();
}

m2n_status_t m2n_cuda_local_world_run(const m2n_cuda_executor_t *executors,
                                      uint32_t count) {
  if (!executors || count == 0)
    return nullArgument("m2n_cuda_local_world_run: the executors");
  std::vector<CudaExecutor *> ranks(count, nullptr);
  for (uint32_t i = 0; i < count; ++i) {
    if (!executors[i])
      return nullArgument("m2n_cuda_local_world_run: an executor");
    CudaExecutor *executor = executors[i]->executor.get();
    uint32_t rank = executor->rank();
    if (rank >= count || ranks[rank]) {
      std::string message = m2n::concat(
          "m2n_cuda_local_world_run: needs one executor per rank of the "
          "plan, got ",
          count, " with rank ", rank, " out of range or repeated");
      return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT, message.c_str());
    }
    ranks[rank] = executor;
  }
  return m2n::cuda::runLocalWorld(ranks);
}

void m2n_cuda_executor_destroy(m2n_cuda_executor_t exec) { delete exec; }

} // extern "C"
