//===- device.h - Where an executor's memory lives -------------*- C++ -*-===//
//
// One executor (executor.cpp) runs a rank's part of a plan whatever memory
// its buffers are in: it decodes the instructions, checks the bindings,
// agrees with the peers and drives the steps. What depends on the memory
// sits behind this interface, as a HAL puts host and GPU behind one device:
//
//   host  walks run with memcpy on the calling thread (host_device.cpp);
//   cuda  walks run as pack/unpack kernels on the caller's CUDA stream,
//         their tables uploaded once (cuda/cuda_device.cpp).
//
// Every call is ordered after the previous ones: a host device completes
// each before returning, a CUDA device enqueues it on its stream. Ordering
// between the devices of two ranks of one process (the sim world) goes
// through mark and waitFor.
//
// The public handle m2n_device_t is a recipe for a DeviceImpl: each executor
// makes its own from it, so that one handle serves many executors.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_DEVICE_H
#define M2N_DEVICE_H

#include "m2n/executor.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace m2n {

struct Program;

/// Where the buffers of an executor live.
enum class MemoryKind { Host, Cuda };

/// A rank's bound buffers by binding index, as the executor keeps them and
/// publishes them to the peers that pull from it.
using BufferTable = std::vector<uint8_t *>;

class DeviceImpl {
public:
  virtual ~DeviceImpl() = default;

  virtual MemoryKind memoryKind() const = 0;
  /// For messages: "host memory", "CUDA device 0".
  virtual std::string describe() const = 0;
  /// The CUDA device's number; -1 for the host.
  virtual int cudaDevice() const { return -1; }
  /// The CUDA stream the work goes on; null for the host.
  virtual void *stream() const { return nullptr; }
  /// Whether a run waits until its work is done before it returns.
  virtual bool synchronous() const { return true; }

  /// Takes the rank's program, which outlives the device, and `bindings`,
  /// its number of bindings: allocates `stagingBytes` of staging and
  /// prepares the walks.
  virtual m2n_status_t load(const Program &program, uint32_t bindings,
                            uint64_t stagingBytes) = 0;
  virtual uint8_t *staging() const = 0;

  /// "" when `data` is memory this device may bind, else what is wrong
  /// with it ("is not device memory").
  virtual std::string checkBuffer(const void *data) const = 0;
  /// The bound buffers, after a bind changed them. The device keeps a
  /// pointer to the table, which outlives it.
  virtual m2n_status_t setBuffers(const BufferTable &buffers) = 0;

  /// A run or step-wise exchange begins; `waits` when it will wait on the
  /// host, which a stream being captured into a CUDA graph cannot.
  virtual m2n_status_t begin(bool waits) {
    (void)waits;
    return nullptr;
  }
  /// The local copies; step `index`'s packs or unpacks (an index into
  /// the program's steps).
  virtual m2n_status_t copies() = 0;
  virtual m2n_status_t packs(size_t index) = 0;
  virtual m2n_status_t unpacks(size_t index) = 0;
  /// Waits for all work so far.
  virtual m2n_status_t synchronize() { return nullptr; }

  /// `bytes` from `from` (a peer's memory in this process) to `to`.
  virtual m2n_status_t copy(void *to, const void *from, uint64_t bytes) = 0;
  /// Marks the work so far, for another device's waitFor.
  virtual m2n_status_t mark() { return nullptr; }
  /// Later work waits for `other`'s latest mark.
  virtual m2n_status_t waitFor(DeviceImpl &other) {
    (void)other;
    return nullptr;
  }

  /// Memory of this device for small records (the step-wise agreement),
  /// `bytes` of it, kept until the device goes; and copies of host bytes
  /// into it and out of it, complete when they return.
  virtual m2n_status_t allocate(uint64_t bytes, uint8_t **out) = 0;
  virtual m2n_status_t write(uint8_t *to, const void *from,
                             uint64_t bytes) = 0;
  virtual m2n_status_t read(void *to, const uint8_t *from, uint64_t bytes) = 0;
};

/// A device of host memory.
std::unique_ptr<DeviceImpl> createHostDevice();

} // namespace m2n

/// The C handle: how to make a device for each executor.
struct m2n_device_s {
  std::function<m2n_status_t(std::unique_ptr<m2n::DeviceImpl> *)> make;
};

#endif // M2N_DEVICE_H
