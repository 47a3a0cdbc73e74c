//===- host_device.cpp - Executing in host memory -------------------------===//
//
// Every walk runs on the calling thread as it comes (walk.h picks memcpy or
// streaming stores), so every call is complete when it returns and there
// is nothing to order between devices.
//
//===----------------------------------------------------------------------===//

#include "device.h"

#include "plan_internal.h"
#include "program.h"

#include <cstdlib>
#include <cstring>

namespace m2n {
namespace {

struct FreeDeleter {
  void operator()(uint8_t *data) const { std::free(data); }
};

class HostDevice final : public DeviceImpl {
public:
  MemoryKind memoryKind() const override { return MemoryKind::Host; }
  std::string describe() const override { return "host memory"; }

  m2n_status_t load(const Program &program, uint32_t,
                    uint64_t stagingBytes) override {
    program_ = &program;
    if (stagingBytes == 0)
      return nullptr;
    // Whole cache lines, as aligned_alloc wants a multiple of the alignment;
    // a size too large to round is one that cannot be allocated anyway.
    uint64_t rounded = (stagingBytes + 63) / 64 * 64;
    if (rounded >= stagingBytes && rounded <= SIZE_MAX)
      staging_.reset(static_cast<uint8_t *>(
          std::aligned_alloc(64, static_cast<size_t>(rounded))));
    if (!staging_)
      return m2n_status_create(
          M2N_STATUS_RESOURCE_EXHAUSTED,
          concat("cannot allocate ", stagingBytes, " bytes of staging")
              .c_str());
    return nullptr;
  }
  uint8_t *staging() const override { return staging_.get(); }

  std::string checkBuffer(const void *) const override { return ""; }
  m2n_status_t setBuffers(const BufferTable &buffers) override {
    buffers_ = &buffers;
    return nullptr;
  }

  m2n_status_t copies() override {
    for (const Walk &copy : program_->copies)
      runWalk(copy, buffer(copy.fromBinding), buffer(copy.toBinding));
    return nullptr;
  }
  m2n_status_t packs(size_t index) override {
    for (const Walk &pack : program_->steps[index].packs)
      runWalk(pack, buffer(pack.fromBinding), staging_.get());
    return nullptr;
  }
  m2n_status_t unpacks(size_t index) override {
    for (const Walk &unpack : program_->steps[index].unpacks)
      runWalk(unpack, staging_.get(), buffer(unpack.toBinding));
    return nullptr;
  }

  m2n_status_t copy(void *to, const void *from, uint64_t bytes) override {
    std::memcpy(to, from, bytes);
    return nullptr;
  }

  m2n_status_t allocate(uint64_t bytes, uint8_t **out) override {
    scratch_.emplace_back(bytes);
    *out = scratch_.back().data();
    return nullptr;
  }
  m2n_status_t write(uint8_t *to, const void *from, uint64_t bytes) override {
    std::memcpy(to, from, bytes);
    return nullptr;
  }
  m2n_status_t read(void *to, const uint8_t *from, uint64_t bytes) override {
    std::memcpy(to, from, bytes);
    return nullptr;
  }

private:
  uint8_t *buffer(uint32_t binding) const { return (*buffers_)[binding]; }

  const Program *program_ = nullptr;
  const BufferTable *buffers_ = nullptr;
  std::unique_ptr<uint8_t, FreeDeleter> staging_;
  std::vector<std::vector<uint8_t>> scratch_;
};

} // namespace

std::unique_ptr<DeviceImpl> createHostDevice() {
  return std::make_unique<HostDevice>();
}

} // namespace m2n
