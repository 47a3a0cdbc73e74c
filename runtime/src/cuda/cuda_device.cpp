//===- cuda_device.cpp - Executing in CUDA device memory ------------------===//
//
// The executor's walks as pack/unpack kernels on the caller's stream. At
// load, the rank's walks go to the device once: one batch for the local
// copies, and per step a batch of packs and a batch of unpacks. Walks name
// buffers by index into a small device table of base pointers (the rank's
// bindings, then its staging buffer, allocated once); binding rewrites only
// that table. Runs only enqueue: no allocation, copy from the host or wait.
//
//===----------------------------------------------------------------------===//

#include "cuda/cuda_device.h"

#include "cuda/cuda_util.h"
#include "cuda/pack_kernels.h"

#include "m2n/cuda.h"
#include "device.h"
#include "program.h"

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

namespace m2n::cuda {
namespace {

// A plan's walk as the kernel reads it, its sides named by base index.
Walk kernelWalk(const m2n::Walk &walk, uint32_t from, uint32_t to) {
  Walk out;
  out.from = from;
  out.to = to;
  out.levels = static_cast<uint32_t>(walk.levels.size());
  out.fromOffset = static_cast<uint64_t>(walk.fromOffset);
  out.toOffset = static_cast<uint64_t>(walk.toOffset);
  out.runBytes = walk.runBytes;
  for (uint32_t l = 0; l < out.levels; ++l) {
    out.count[l] = walk.levels[l].count;
    out.fromStride[l] = walk.levels[l].fromStride;
    out.toStride[l] = walk.levels[l].toStride;
  }
  return out;
}

class CudaDevice final : public DeviceImpl {
public:
  CudaDevice(int device, cudaStream_t stream, bool synchronize)
      : device_(device), stream_(stream), synchronize_(synchronize) {}
  ~CudaDevice() override;

  m2n_status_t init();

  MemoryKind memoryKind() const override { return MemoryKind::Cuda; }
  int cudaDevice() const override { return device_; }
  std::string describe() const override {
    return concat("CUDA device ", device_);
  }
  void *stream() const override { return stream_; }
  bool synchronous() const override { return synchronize_; }

  m2n_status_t load(const Program &program, uint32_t bindings,
                    uint64_t stagingBytes) override;
  uint8_t *staging() const override { return staging_.get(); }
  std::string checkBuffer(const void *data) const override;
  m2n_status_t setBuffers(const BufferTable &buffers) override;

  m2n_status_t begin(bool waits) override;
  m2n_status_t copies() override { return launch(copies_, "the local copies"); }
  m2n_status_t packs(size_t index) override {
    return launch(packs_[index], "a step's packs");
  }
  m2n_status_t unpacks(size_t index) override {
    return launch(unpacks_[index], "a step's unpacks");
  }
  m2n_status_t synchronize() override;

  m2n_status_t copy(void *to, const void *from, uint64_t bytes) override;
  m2n_status_t mark() override;
  m2n_status_t waitFor(DeviceImpl &other) override;

  m2n_status_t allocate(uint64_t bytes, uint8_t **out) override;
  m2n_status_t write(uint8_t *to, const void *from, uint64_t bytes) override;
  m2n_status_t read(void *to, const uint8_t *from, uint64_t bytes) override;

private:
  /// Copies `bytes` on the stream and waits for them: what write and read
  /// share.
  m2n_status_t copyAndWait(void *to, const void *from, uint64_t bytes,
                           cudaMemcpyKind kind);

  m2n_status_t launch(const RunsBatch &batch, const char *what);
  m2n_status_t uploadBases();

  const int device_;
  const cudaStream_t stream_;
  const bool synchronize_;
  int smCount_ = 1;
  // Bases of the bindings, then of the staging buffer: host copy and table.
  std::vector<uint8_t *> bases_;
  DeviceBuffer basesDevice_;
  DeviceBuffer staging_;
  DeviceBuffer walks_;
  RunsBatch copies_;
  std::vector<RunsBatch> packs_, unpacks_;
  Event event_; // the latest mark
  std::vector<std::unique_ptr<DeviceBuffer>> scratch_;
};

CudaDevice::~CudaDevice() {
  DeviceGuard guard(device_);
  // Earlier runs may still read the tables and write through the bases.
  cudaStreamSynchronize(stream_);
  basesDevice_.reset();
  staging_.reset();
  walks_.reset();
  event_.reset();
  for (std::unique_ptr<DeviceBuffer> &buffer : scratch_)
    buffer->reset();
}

m2n_status_t CudaDevice::init() {
  DeviceGuard guard(device_);
  M2N_RETURN_IF_ERROR(guard.status());
  M2N_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(
      &smCount_, cudaDevAttrMultiProcessorCount, device_));
  return event_.create();
}

m2n_status_t CudaDevice::load(const Program &program, uint32_t bindings,
                              uint64_t stagingBytes) {
  DeviceGuard guard(device_);
  M2N_RETURN_IF_ERROR(guard.status());
  const uint32_t staging = bindings;
  M2N_RETURN_IF_ERROR(staging_.allocate(stagingBytes, "the staging buffer"));
  bases_.assign(bindings + 1, nullptr);
  bases_[staging] = staging_.get();

  auto batch = [&](RunsTableBuilder &table, const std::vector<m2n::Walk> &walks,
                   bool fromStaging, bool toStaging) {
    std::vector<Walk> kernel;
    for (const m2n::Walk &walk : walks)
      kernel.push_back(kernelWalk(walk,
                                  fromStaging ? staging : walk.fromBinding,
                                  toStaging ? staging : walk.toBinding));
    return table.addBatch(kernel, smCount_);
  };
  RunsTableBuilder table;
  uint32_t copyBatch = batch(table, program.copies, false, false);
  std::vector<uint32_t> packBatches, unpackBatches;
  for (const StepProgram &step : program.steps) {
    packBatches.push_back(batch(table, step.packs, false, true));
    unpackBatches.push_back(batch(table, step.unpacks, true, false));
  }
  M2N_RETURN_IF_ERROR(walks_.allocate(table.image().size(), "the walks"));
  M2N_RETURN_IF_ERROR(
      basesDevice_.allocate(bases_.size() * sizeof(uint8_t *), "the bases"));
  if (!table.image().empty())
    M2N_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(walks_.get(), table.image().data(),
                                             table.image().size(),
                                             cudaMemcpyHostToDevice, stream_));
  copies_ = table.batch(copyBatch, walks_.get());
  for (size_t i = 0; i < program.steps.size(); ++i) {
    packs_.push_back(table.batch(packBatches[i], walks_.get()));
    unpacks_.push_back(table.batch(unpackBatches[i], walks_.get()));
  }
  // Waits for the walks too, whose host image goes with `table`.
  return uploadBases();
}

m2n_status_t CudaDevice::uploadBases() {
  M2N_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(basesDevice_.get(), bases_.data(),
                                           bases_.size() * sizeof(uint8_t *),
                                           cudaMemcpyHostToDevice, stream_));
  return cudaStatus(cudaStreamSynchronize(stream_),
                    "cudaStreamSynchronize after uploading the bases");
}

std::string CudaDevice::checkBuffer(const void *data) const {
  cudaPointerAttributes attributes = {};
  cudaError_t error = cudaPointerGetAttributes(&attributes, data);
  if (error != cudaSuccess)
    return concat("cudaPointerGetAttributes of the buffer failed: ",
                  cudaGetErrorString(error));
  if (attributes.type == cudaMemoryTypeManaged)
    return "";
  if (attributes.type != cudaMemoryTypeDevice)
    return concat("the buffer is not device memory, expected memory of ",
                  describe());
  if (attributes.device != device_)
    return concat("the buffer is on CUDA device ", attributes.device,
                  ", expected ", describe());
  return "";
}

m2n_status_t CudaDevice::setBuffers(const BufferTable &buffers) {
  DeviceGuard guard(device_);
  M2N_RETURN_IF_ERROR(guard.status());
  // No earlier run may see a half-changed table.
  M2N_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  for (size_t i = 0; i < buffers.size(); ++i)
    bases_[i] = buffers[i];
  return uploadBases();
}

m2n_status_t CudaDevice::begin(bool waits) {
  DeviceGuard guard(device_);
  M2N_RETURN_IF_ERROR(guard.status());
  bool capturing = false;
  M2N_RETURN_IF_ERROR(isCapturing(stream_, &capturing));
  if (capturing && waits)
    return m2n_status_create(
        M2N_STATUS_INVALID_ARGUMENT,
        "cannot be captured into a CUDA graph while it waits: the agreement "
        "(on the first run over nccl, every run over other transports) and "
        "runs on a device made with M2N_CUDA_DEVICE_SYNCHRONIZE wait; run "
        "once over nccl before capturing, without synchronizing");
  return nullptr;
}

m2n_status_t CudaDevice::launch(const RunsBatch &batch, const char *what) {
  DeviceGuard guard(device_);
  M2N_RETURN_IF_ERROR(guard.status());
  uint8_t *const *bases =
      reinterpret_cast<uint8_t *const *>(basesDevice_.get());
  return cudaStatus(launchRuns(batch, bases, smCount_, stream_), what);
}

m2n_status_t CudaDevice::synchronize() {
  DeviceGuard guard(device_);
  M2N_RETURN_IF_ERROR(guard.status());
  return cudaStatus(cudaStreamSynchronize(stream_), "waiting for the refit");
}

m2n_status_t CudaDevice::copy(void *to, const void *from, uint64_t bytes) {
  DeviceGuard guard(device_);
  M2N_RETURN_IF_ERROR(guard.status());
  // Default: the peer's buffer may be on another device.
  return cudaStatus(
      cudaMemcpyAsync(to, from, bytes, cudaMemcpyDefault, stream_),
      "cudaMemcpyAsync of a message");
}

m2n_status_t CudaDevice::mark() {
  DeviceGuard guard(device_);
  M2N_RETURN_IF_ERROR(guard.status());
  return cudaStatus(cudaEventRecord(event_.get(), stream_), "cudaEventRecord");
}

m2n_status_t CudaDevice::waitFor(DeviceImpl &other) {
  // A host peer's work is done once it is posted.
  auto *peer = dynamic_cast<CudaDevice *>(&other);
  if (!peer || peer == this)
    return nullptr;
  DeviceGuard guard(device_);
  M2N_RETURN_IF_ERROR(guard.status());
  return cudaStatus(cudaStreamWaitEvent(stream_, peer->event_.get(), 0),
                    "cudaStreamWaitEvent on a peer's mark");
}

m2n_status_t CudaDevice::allocate(uint64_t bytes, uint8_t **out) {
  DeviceGuard guard(device_);
  M2N_RETURN_IF_ERROR(guard.status());
  scratch_.push_back(std::make_unique<DeviceBuffer>());
  M2N_RETURN_IF_ERROR(scratch_.back()->allocate(bytes, "agreement records"));
  *out = scratch_.back()->get();
  return nullptr;
}

m2n_status_t CudaDevice::copyAndWait(void *to, const void *from,
                                     uint64_t bytes, cudaMemcpyKind kind) {
  DeviceGuard guard(device_);
  M2N_RETURN_IF_ERROR(guard.status());
  M2N_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(to, from, bytes, kind, stream_));
  return cudaStatus(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

m2n_status_t CudaDevice::write(uint8_t *to, const void *from, uint64_t bytes) {
  return copyAndWait(to, from, bytes, cudaMemcpyHostToDevice);
}

m2n_status_t CudaDevice::read(void *to, const uint8_t *from, uint64_t bytes) {
  return copyAndWait(to, from, bytes, cudaMemcpyDeviceToHost);
}

} // namespace

m2n_status_t createCudaDevice(int device, cudaStream_t stream,
                              bool synchronize,
                              std::unique_ptr<DeviceImpl> *out) {
  auto made = std::make_unique<CudaDevice>(device, stream, synchronize);
  M2N_RETURN_IF_ERROR(made->init());
  *out = std::move(made);
  return nullptr;
}

} // namespace m2n::cuda

extern "C" {

m2n_status_t m2n_cuda_device_create(int cuda_device, void *cuda_stream,
                                    uint32_t flags, m2n_device_t *out) {
  if (!out)
    return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT,
                             "m2n_cuda_device_create: out is NULL");
  *out = nullptr;
  if (flags & ~M2N_CUDA_DEVICE_SYNCHRONIZE)
    return m2n_status_create(
        M2N_STATUS_INVALID_ARGUMENT,
        m2n::concat("m2n_cuda_device_create: unknown flags ", flags,
                    " (only M2N_CUDA_DEVICE_SYNCHRONIZE is one)")
            .c_str());
  int current = 0;
  M2N_RETURN_IF_ERROR(m2n::cuda::currentDevice(&current));
  int count = 0;
  M2N_RETURN_IF_ERROR(
      m2n::cuda::cudaStatus(cudaGetDeviceCount(&count), "cudaGetDeviceCount"));
  int device = cuda_device < 0 ? current : cuda_device;
  if (device >= count)
    return m2n_status_create(
        M2N_STATUS_NOT_FOUND,
        m2n::concat("m2n_cuda_device_create: no CUDA device ", device,
                    " (there are ", count, ")")
            .c_str());
  auto stream = static_cast<cudaStream_t>(cuda_stream);
  bool synchronize = flags & M2N_CUDA_DEVICE_SYNCHRONIZE;
  *out = new m2n_device_s{[device, stream, synchronize](
                              std::unique_ptr<m2n::DeviceImpl> *made) {
    return m2n::cuda::createCudaDevice(device, stream, synchronize, made);
  }};
  return nullptr;
}

} // extern "C"
