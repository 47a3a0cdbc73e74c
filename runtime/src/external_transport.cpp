//===- external_transport.cpp - The caller moves the messages -------------===//
//
// An external transport moves nothing: the executor hands each exchange to
// the caller (m2n_executor_step_next), agreement included, so that an
// engine's own library (torch.distributed, UCX) carries it. What is left
// here is the rank, the group's size and this end's failure.
//
//===----------------------------------------------------------------------===//

#include "transport.h"

#include "plan_internal.h"

namespace m2n {
namespace {

class ExternalTransport final : public TransportImpl {
public:
  ExternalTransport(uint32_t rank, uint32_t size) : rank_(rank), size_(size) {}

  uint32_t rank() const override { return rank_; }
  uint32_t worldSize() const override { return size_; }
  const char *name() const override { return "external"; }
  std::string cannotCarry(const DeviceImpl &) const override { return ""; }
  bool external() const override { return true; }
  void setTimeout(double) override {}

  // The executor never calls these over an external transport; they say
  // so rather than pretend to have moved anything.
  m2n_status_t agree(uint64_t, bool, const std::string &,
                     DeviceImpl &) override {
    return unsupported();
  }
  m2n_status_t exchange(uint64_t, const std::vector<TransferOp> &,
                        DeviceImpl &) override {
    return unsupported();
  }

  void abort(const std::string &why) override {
    if (failure_.empty())
      failure_ = failedRankMessage(rank_, why);
  }
  m2n_status_t health() override {
    if (failure_.empty())
      return nullptr;
    return m2n_status_create(M2N_STATUS_ABORTED, failure_.c_str());
  }

private:
  static m2n_status_t unsupported() {
    return m2n_status_create(M2N_STATUS_INTERNAL,
                             "the external transport moves no messages");
  }

  uint32_t rank_;
  uint32_t size_;
  std::string failure_;
};

} // namespace
} // namespace m2n

extern "C" {

m2n_status_t m2n_transport_create_external(int rank, int world_size,
                                           m2n_transport_t *out) {
  if (!out)
    return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT,
                             "m2n_transport_create_external: out is null");
  *out = nullptr;
  if (world_size < 1 || rank < 0 || rank >= world_size)
    return m2n_status_create(
        M2N_STATUS_INVALID_ARGUMENT,
        m2n::concat("m2n_transport_create_external: rank ", rank,
                    " is not in a group of ", world_size, " ranks")
            .c_str());
  *out = new m2n_transport_s{std::make_unique<m2n::ExternalTransport>(
      static_cast<uint32_t>(rank), static_cast<uint32_t>(world_size))};
  return nullptr;
}

} // extern "C"
