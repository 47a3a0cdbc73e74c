//===- m2n/m2n.hpp - A thin C++ layer over the runtime's C API --*- C++ -*-===//
//
// Owning handles that free what they hold, and a Status that frees its
// message. Nothing throws: calls return a Status, and objects come out
// through pointers, as in the C API.
//
//   m2n::Plan plan;
//   m2n::Status status = m2n::Plan::loadFile("refit.m2n", &plan);
//   if (!status.ok()) { std::cerr << status.toString() << "\n"; return; }
//   m2n::Transport transport;
//   status = m2n::Transport::mpi(nullptr, &transport);
//   m2n::Executor executor;
//   status = m2n::Executor::create(plan, transport, &executor);
//   status = executor.bind("w", M2N_ROLE_SOURCE, w, M2N_DTYPE_BF16, {4, 6});
//   status = executor.run();
//
//===----------------------------------------------------------------------===//

#ifndef M2N_M2N_HPP
#define M2N_M2N_HPP

#include "m2n/executor.h"
#include "m2n/plan.h"
#include "m2n/safetensors.h"
#include "m2n/status.h"
#include "m2n/transport.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace m2n {

namespace detail {

template <typename T, void (*Destroy)(T *)>
struct Deleter {
  void operator()(T *handle) const { Destroy(handle); }
};

/// Owns a C handle: a pointer to an opaque struct freed by Destroy.
template <typename T, void (*Destroy)(T *)>
class Handle {
public:
  T *get() const { return handle_.get(); }
  explicit operator bool() const { return handle_ != nullptr; }
  void reset(T *handle = nullptr) { handle_.reset(handle); }

private:
  std::unique_ptr<T, Deleter<T, Destroy>> handle_;
};

} // namespace detail

/// A status that frees itself; ok() when it holds none.
class Status {
public:
  Status() = default;
  /// Takes ownership of `status`.
  explicit Status(m2n_status_t status) : status_(status) {}

  bool ok() const { return status_ == nullptr; }
  m2n_status_code_t code() const { return m2n_status_code(status_.get()); }
  std::string message() const { return m2n_status_message(status_.get()); }
  /// "OK", or "ABORTED: rank 2 failed: ...".
  std::string toString() const {
    if (ok())
      return "OK";
    return std::string(m2n_status_code_name(code())) + ": " + message();
  }

private:
  struct Free {
    void operator()(m2n_status_s *status) const { m2n_status_free(status); }
  };
  std::unique_ptr<m2n_status_s, Free> status_;
};

class Plan : public detail::Handle<m2n_plan_s, m2n_plan_destroy> {
public:
  static Status loadFile(const std::string &path, Plan *out) {
    m2n_plan_t plan = nullptr;
    Status status(m2n_plan_load_file(path.c_str(), &plan));
    out->reset(plan);
    return status;
  }
  static Status loadMemory(const void *data, size_t size, Plan *out) {
    m2n_plan_t plan = nullptr;
    Status status(m2n_plan_load_memory(data, size, &plan));
    out->reset(plan);
    return status;
  }
  m2n_plan_info_t info() const {
    m2n_plan_info_t info = {};
    // Fails only without a plan, and then leaves it zero.
    m2n_status_free(m2n_plan_get_info(get(), &info));
    return info;
  }
};

class Transport
    : public detail::Handle<m2n_transport_s, m2n_transport_destroy> {
public:
  /// `comm` points to an MPI_Comm, or is null for MPI_COMM_WORLD.
  static Status mpi(const void *comm, Transport *out) {
    m2n_transport_t transport = nullptr;
    Status status(m2n_transport_create_mpi(comm, &transport));
    out->reset(transport);
    return status;
  }
  /// The caller moves the messages (Executor::stepNext).
  static Status external(int rank, int worldSize, Transport *out) {
    m2n_transport_t transport = nullptr;
    Status status(m2n_transport_create_external(rank, worldSize, &transport));
    out->reset(transport);
    return status;
  }
  /// -1 and 0 without a transport.
  int rank() const {
    int rank = -1;
    m2n_status_free(m2n_transport_get_rank(get(), &rank, nullptr));
    return rank;
  }
  int worldSize() const {
    int size = 0;
    m2n_status_free(m2n_transport_get_rank(get(), nullptr, &size));
    return size;
  }
  Status setTimeout(double seconds) {
    return Status(m2n_transport_set_timeout(get(), seconds));
  }
  Status abort(const std::string &why) {
    return Status(m2n_transport_abort(get(), why.c_str()));
  }
};

class SimWorld : public detail::Handle<m2n_sim_world_s, m2n_sim_world_destroy> {
public:
  static Status create(int worldSize, SimWorld *out) {
    m2n_sim_world_t world = nullptr;
    Status status(m2n_sim_world_create(worldSize, &world));
    out->reset(world);
    return status;
  }
  Status transport(int rank, Transport *out) const {
    m2n_transport_t transport = nullptr;
    Status status(m2n_sim_world_transport(get(), rank, &transport));
    out->reset(transport);
    return status;
  }
};

/// Where an executor's buffers live; an empty Device is host memory.
class Device : public detail::Handle<m2n_device_s, m2n_device_destroy> {};

/// The plan and the transport must outlive the executor.
class Executor : public detail::Handle<m2n_executor_s, m2n_executor_destroy> {
public:
  static Status create(const Plan &plan, const Transport &transport,
                       Executor *out, const Device &device = Device()) {
    m2n_executor_t executor = nullptr;
    Status status(m2n_executor_create(plan.get(), transport.get(),
                                      device.get(), &executor));
    out->reset(executor);
    return status;
  }
  Status bind(const std::string &tensor, m2n_role_t role, void *data,
              m2n_dtype_t dtype, const std::vector<int64_t> &shape) {
    return Status(m2n_executor_bind(get(), tensor.c_str(), role, data, dtype,
                                    static_cast<uint32_t>(shape.size()),
                                    shape.data()));
  }
  Status run() { return Status(m2n_executor_run(get())); }
  Status stepNext(m2n_exchange_t *out) {
    return Status(m2n_executor_step_next(get(), out));
  }
  Status stepComplete(const m2n_exchange_t &exchange) {
    return Status(m2n_executor_step_complete(get(), exchange.step,
                                             exchange.send_count,
                                             exchange.receive_count));
  }
  m2n_executor_stats_t stats() const {
    m2n_executor_stats_t stats = {};
    m2n_status_free(m2n_executor_get_stats(get(), &stats));
    return stats;
  }
};

class Safetensors
    : public detail::Handle<m2n_safetensors_s, m2n_safetensors_destroy> {
public:
  static Status load(const std::string &path, Safetensors *out) {
    m2n_safetensors_t file = nullptr;
    Status status(m2n_safetensors_load_file(path.c_str(), &file));
    out->reset(file);
    return status;
  }
  size_t size() const { return m2n_safetensors_tensor_count(get()); }
  /// Tensor `index` in order of name; index < size().
  m2n_safetensors_tensor_t tensor(size_t index) const {
    m2n_safetensors_tensor_t tensor = {};
    m2n_status_free(m2n_safetensors_get_tensor(get(), index, &tensor));
    return tensor;
  }
  Status find(const std::string &name, m2n_safetensors_tensor_t *out) const {
    return Status(m2n_safetensors_find_tensor(get(), name.c_str(), out));
  }
  static Status write(const std::string &path,
                      const std::vector<m2n_safetensors_tensor_t> &tensors,
                      const std::vector<m2n_safetensors_metadata_t> &metadata =
                          {}) {
    return Status(m2n_safetensors_write_file(path.c_str(), tensors.data(),
                                             tensors.size(), metadata.data(),
                                             metadata.size()));
  }
};

} // namespace m2n

#endif // M2N_M2N_HPP
