//===- wrapped_transports.h - Transports that alter another -----*- C++ -*-===//

#ifndef M2N_RUNTIME_TEST_WRAPPED_TRANSPORTS_H
#define M2N_RUNTIME_TEST_WRAPPED_TRANSPORTS_H

#include "transport.h"

#include <memory>
#include <string>
#include <vector>

namespace m2n::test {

/// Forwards everything to the transport it wraps.
class WrappedTransport : public TransportImpl {
public:
  explicit WrappedTransport(std::unique_ptr<TransportImpl> inner)
      : inner_(std::move(inner)) {}
  uint32_t rank() const override { return inner_->rank(); }
  uint32_t worldSize() const override { return inner_->worldSize(); }
  const char *name() const override { return inner_->name(); }
  std::string cannotCarry(const DeviceImpl &device) const override {
    return inner_->cannotCarry(device);
  }
  bool sharesAddressSpace() const override {
    return inner_->sharesAddressSpace();
  }
  void publishBuffers(const BufferTable *buffers) override {
    inner_->publishBuffers(buffers);
  }
  void setTimeout(double seconds) override { inner_->setTimeout(seconds); }
  m2n_status_t agree(uint64_t hash, bool ready, const std::string &why,
                     DeviceImpl &device) override {
    return inner_->agree(hash, ready, why, device);
  }
  m2n_status_t exchange(uint64_t step, const std::vector<TransferOp> &ops,
                        DeviceImpl &device) override {
    return inner_->exchange(step, ops, device);
  }
  void abort(const std::string &why) override { inner_->abort(why); }

protected:
  std::unique_ptr<TransportImpl> inner_;
};

/// Fails its rank's exchange in one step, as a broken link would, telling
/// the peers.
class FailingTransport final : public WrappedTransport {
public:
  FailingTransport(std::unique_ptr<TransportImpl> inner, uint64_t failStep)
      : WrappedTransport(std::move(inner)), failStep_(failStep) {}
  m2n_status_t exchange(uint64_t step, const std::vector<TransferOp> &ops,
                        DeviceImpl &device) override {
    if (step != failStep_)
      return inner_->exchange(step, ops, device);
    inner_->abort("injected failure");
    return m2n_status_create(M2N_STATUS_ABORTED, "injected failure");
  }

private:
  uint64_t failStep_;
};

/// Hides that its ranks share an address space, so that the executor
/// keeps every message on the staged path, as over MPI.
class StagedTransport final : public WrappedTransport {
public:
  using WrappedTransport::WrappedTransport;
  bool sharesAddressSpace() const override { return false; }
};

/// Makes `transport` fail its exchange of step `failStep`.
inline void failAtStep(m2n_transport_t transport, uint64_t failStep) {
  transport->impl =
      std::make_unique<FailingTransport>(std::move(transport->impl), failStep);
}

/// Makes `transport` stage every message.
inline void stageOnly(m2n_transport_t transport) {
  transport->impl =
      std::make_unique<StagedTransport>(std::move(transport->impl));
}

} // namespace m2n::test

#endif // M2N_RUNTIME_TEST_WRAPPED_TRANSPORTS_H
