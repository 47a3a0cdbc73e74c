//===- failing_transport.h - A transport that breaks on purpose -*- C++ -*-===//

#ifndef M2N_RUNTIME_TEST_FAILING_TRANSPORT_H
#define M2N_RUNTIME_TEST_FAILING_TRANSPORT_H

#include "transport.h"

#include <memory>
#include <string>
#include <vector>

namespace m2n::test {

/// Fails its rank's exchange in one step, as a broken link would, telling
/// the peers.
class FailingTransport final : public TransportImpl {
public:
  FailingTransport(std::unique_ptr<TransportImpl> inner, uint64_t failStep)
      : inner_(std::move(inner)), failStep_(failStep) {}
  uint32_t rank() const override { return inner_->rank(); }
  uint32_t worldSize() const override { return inner_->worldSize(); }
  void setTimeout(double seconds) override { inner_->setTimeout(seconds); }
  m2n_status_t agree(uint64_t hash, bool ready,
                     const std::string &why) override {
    return inner_->agree(hash, ready, why);
  }
  m2n_status_t exchange(uint64_t step, const std::vector<TransferOp> &ops,
                        void *stream) override {
    if (step != failStep_)
      return inner_->exchange(step, ops, stream);
    inner_->abort("injected failure");
    return m2n_status_create(M2N_STATUS_ABORTED, "injected failure");
  }
  void abort(const std::string &why) override { inner_->abort(why); }

private:
  std::unique_ptr<TransportImpl> inner_;
  uint64_t failStep_;
};

/// Makes `transport` fail its exchange of step `failStep`.
inline void failAtStep(m2n_transport_t transport, uint64_t failStep) {
  transport->impl = std::make_unique<FailingTransport>(
      std::move(transport->impl), failStep);
}

} // namespace m2n::test

#endif // M2N_RUNTIME_TEST_FAILING_TRANSPORT_H
