//===- Module.cpp - m2n._m2n, the native layer of the Python package ------===//
//
// A thin layer over the compiler and the runtime's C API: plans, transports,
// devices and executors as Python objects that own their handles, and the
// compile. Everything Pythonic (layouts from torch, specs, the refit, the
// torch.distributed transport) is the package's Python code over this.
// Calls that can block (compiling, loading and verifying a plan, running,
// the steps, binds that wait for a CUDA stream, creating an MPI transport)
// release the GIL.
//
//===----------------------------------------------------------------------===//

#include "Compile.h"

#include "m2n/executor.h"
#include "m2n/plan.h"
#include "m2n/status.h"
#include "m2n/transport.h"
#ifdef M2N_HAVE_CUDA
#include "m2n/cuda.h"
#endif

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace {

/// m2n.Error, raised for every failed runtime call; its message begins with
/// the status code's name ("ABORTED: ...").
PyObject *errorType = nullptr;

[[noreturn]] void raise(const std::string &message) {
  PyErr_SetString(errorType, message.c_str());
  throw nb::python_error();
}

/// Raises m2n.Error for a failed status, and frees it.
void check(m2n_status_t status) {
  if (!status)
    return;
  std::string message =
      std::string(m2n_status_code_name(m2n_status_code(status))) + ": " +
      m2n_status_message(status);
  m2n_status_free(status);
  raise(message);
}

m2n_dtype_t dtypeNamed(const std::string &name) {
  m2n_dtype_t dtype;
  check(m2n_dtype_from_name(name.c_str(), &dtype));
  return dtype;
}

std::vector<int64_t> dims(const int64_t *values, uint32_t rank) {
  return std::vector<int64_t>(values, values + rank);
}

/// A loaded plan. Its figures come back as plain tuples and dicts, which
/// the package turns into its own objects.
class Plan {
public:
  Plan(nb::bytes bytes, bool trusted) {
    const void *data = bytes.c_str();
    size_t size = bytes.size();
    uint32_t flags = trusted ? M2N_PLAN_LOAD_TRUSTED : 0;
    m2n_status_t status;
    {
      nb::gil_scoped_release release;
      status = m2n_plan_load_memory_flags(data, size, flags, &plan_);
    }
    check(status);
  }
  Plan(const Plan &) = delete;
  Plan &operator=(const Plan &) = delete;
  ~Plan() { m2n_plan_destroy(plan_); }

  m2n_plan_t handle() const { return plan_; }

  nb::dict info() const {
    m2n_plan_info_t info;
    check(m2n_plan_get_info(plan_, &info));
    nb::dict d;
    d["version"] = nb::make_tuple(info.version_major, info.version_minor);
    d["world_size"] = info.world_size;
    d["tensor_count"] = info.tensor_count;
    d["step_count"] = info.step_count;
    d["staging_budget"] = info.staging_budget;
    d["content_hash"] = info.content_hash;
    d["file_size"] = info.file_size;
    d["wire_bytes"] = info.wire_bytes;
    d["local_copy_bytes"] = info.local_copy_bytes;
    d["message_count"] = info.message_count;
    d["predicted_ns"] = info.predicted_ns;
    d["lower_bound_ns"] = info.lower_bound_ns;
    return d;
  }

  /// (name, dtype name, global shape) per tensor, in plan order.
  std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>>
  tensors() const {
    m2n_plan_info_t info;
    check(m2n_plan_get_info(plan_, &info));
    std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>>
        out;
    for (uint32_t i = 0; i < info.tensor_count; ++i) {
      m2n_plan_tensor_info_t t;
      check(m2n_plan_get_tensor(plan_, i, &t));
      out.emplace_back(std::string(t.name, t.name_size),
                       m2n_dtype_name(t.dtype), dims(t.shape, t.rank));
    }
    return out;
  }

  nb::dict rankInfo(uint32_t rank) const {
    m2n_plan_rank_info_t r;
    check(m2n_plan_get_rank(plan_, rank, &r));
    nb::dict d;
    d["binding_count"] = r.binding_count;
    d["instruction_count"] = r.instruction_count;
    d["staging_bytes"] = r.staging_bytes;
    d["send_bytes"] = r.send_bytes;
    d["receive_bytes"] = r.receive_bytes;
    return d;
  }

  /// (tensor index, "src" or "dst", offset, shape, bytes) per shard that
  /// `rank` holds.
  std::vector<std::tuple<uint32_t, std::string, std::vector<int64_t>,
                         std::vector<int64_t>, uint64_t>>
  bindings(uint32_t rank) const {
    m2n_plan_rank_info_t r;
    check(m2n_plan_get_rank(plan_, rank, &r));
    std::vector<std::tuple<uint32_t, std::string, std::vector<int64_t>,
                           std::vector<int64_t>, uint64_t>>
        out;
    for (uint32_t i = 0; i < r.binding_count; ++i) {
      m2n_plan_binding_info_t b;
      check(m2n_plan_get_binding(plan_, rank, i, &b));
      m2n_plan_tensor_info_t t;
      check(m2n_plan_get_tensor(plan_, b.tensor, &t));
      out.emplace_back(b.tensor,
                       b.role == M2N_ROLE_SOURCE ? "src" : "dst",
                       dims(b.offset, t.rank), dims(b.shape, t.rank),
                       b.byte_size);
    }
    return out;
  }

  std::string disassemble(int rank) const {
    char *text = nullptr;
    check(m2n_plan_disassemble(plan_, rank, &text));
    std::string out(text);
    m2n_free(text);
    return out;
  }

private:
  m2n_plan_t plan_ = nullptr;
};

/// One rank's transport.
class Transport {
public:
  explicit Transport(m2n_transport_t transport) : transport_(transport) {}
  Transport(const Transport &) = delete;
  Transport &operator=(const Transport &) = delete;
  ~Transport() { m2n_transport_destroy(transport_); }

  static Transport *external(int rank, int worldSize) {
    m2n_transport_t t = nullptr;
    check(m2n_transport_create_external(rank, worldSize, &t));
    return new Transport(t);
  }

  /// Over the MPI_Comm at `commAddress` (mpi4py's Comm handle address);
  /// collective over the communicator.
  static Transport *mpi(uintptr_t commAddress) {
    m2n_transport_t t = nullptr;
    m2n_status_t status;
    {
      nb::gil_scoped_release release;
      status = m2n_transport_create_mpi(
          reinterpret_cast<const void *>(commAddress), &t);
    }
    check(status);
    return new Transport(t);
  }

#ifdef M2N_HAVE_CUDA
  /// Over the ncclComm_t at `commAddress`, which the caller keeps owning
  /// (a ProcessGroupNCCL's).
  static Transport *nccl(uintptr_t commAddress) {
    m2n_transport_t t = nullptr;
    check(m2n_cuda_transport_create_nccl(
        reinterpret_cast<void *>(commAddress), &t));
    return new Transport(t);
  }
#endif

  m2n_transport_t handle() const { return transport_; }

  std::tuple<int, int> rankAndSize() const {
    int rank = 0, size = 0;
    check(m2n_transport_get_rank(transport_, &rank, &size));
    return {rank, size};
  }
  void setTimeout(double seconds) {
    check(m2n_transport_set_timeout(transport_, seconds));
  }

private:
  m2n_transport_t transport_;
};

/// A world of sim ranks in this process.
class SimWorld {
public:
  explicit SimWorld(int worldSize) {
    check(m2n_sim_world_create(worldSize, &world_));
  }
  SimWorld(const SimWorld &) = delete;
  SimWorld &operator=(const SimWorld &) = delete;
  ~SimWorld() { m2n_sim_world_destroy(world_); }

  Transport *transport(int rank) {
    m2n_transport_t t = nullptr;
    check(m2n_sim_world_transport(world_, rank, &t));
    return new Transport(t);
  }

private:
  m2n_sim_world_t world_ = nullptr;
};

/// Where an executor's buffers live: host memory, or a CUDA device and
/// stream.
class Device {
public:
  Device() = default;
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;
  ~Device() { m2n_device_destroy(device_); }

#ifdef M2N_HAVE_CUDA
  static Device *cuda(int index, uintptr_t stream, bool synchronize) {
    auto *device = new Device();
    m2n_status_t status = m2n_cuda_device_create(
        index, reinterpret_cast<void *>(stream),
        synchronize ? M2N_CUDA_DEVICE_SYNCHRONIZE : 0, &device->device_);
    if (status) {
      delete device;
      check(status);
    }
    device->cudaIndex_ = index;
    return device;
  }
#endif

  m2n_device_t handle() const { return device_; }
  /// -1 for host memory.
  int cudaIndex() const { return cudaIndex_; }

private:
  m2n_device_t device_ = nullptr;
  int cudaIndex_ = -1;
};

using ByteView = nb::ndarray<nb::pytorch, uint8_t, nb::ndim<1>>;
using Messages = std::vector<std::tuple<uint32_t, ByteView>>;

/// An executor of one rank. Over an external transport it hands out each
/// exchange's buffers as uint8 torch tensors that view the executor's
/// memory, valid until the exchange is completed.
class Executor {
public:
  Executor(Plan &plan, Transport &transport, Device *device)
      : cudaIndex_(device ? device->cudaIndex() : -1) {
    check(m2n_executor_create(plan.handle(), transport.handle(),
                              device ? device->handle() : nullptr, &exec_));
  }
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;
  ~Executor() { m2n_executor_destroy(exec_); }

  void bind(const std::string &name, const std::string &role,
            uintptr_t data, const std::string &dtype,
            const std::vector<int64_t> &shape) {
    m2n_role_t r = role == "src" ? M2N_ROLE_SOURCE : M2N_ROLE_DESTINATION;
    m2n_dtype_t d = dtypeNamed(dtype);
    m2n_status_t status;
    {
      nb::gil_scoped_release release;
      status = m2n_executor_bind(exec_, name.c_str(), r,
                                 reinterpret_cast<void *>(data), d,
                                 static_cast<uint32_t>(shape.size()),
                                 shape.data());
    }
    check(status);
  }

  void run() {
    m2n_status_t status;
    {
      nb::gil_scoped_release release;
      status = m2n_executor_run(exec_);
    }
    check(status);
  }

  /// (step, sends, receives) of the next exchange, each message a
  /// (peer, uint8 tensor); None once the run is complete.
  nb::object stepNext(nb::handle owner) {
    m2n_exchange_t x;
    m2n_status_t status;
    {
      nb::gil_scoped_release release;
      status = m2n_executor_step_next(exec_, &x);
    }
    check(status);
    if (x.done)
      return nb::none();
    return nb::make_tuple(x.step, views(x.sends, x.send_count, owner),
                          views(x.receives, x.receive_count, owner));
  }

  void stepComplete(uint64_t step, uint32_t sends, uint32_t receives) {
    m2n_status_t status;
    {
      nb::gil_scoped_release release;
      status = m2n_executor_step_complete(exec_, step, sends, receives);
    }
    check(status);
  }

  nb::dict stats() const {
    m2n_executor_stats_t s;
    check(m2n_executor_get_stats(exec_, &s));
    nb::dict d;
    d["bytes_sent"] = s.bytes_sent;
    d["bytes_received"] = s.bytes_received;
    d["bytes_copied"] = s.bytes_copied;
    d["bytes_packed"] = s.bytes_packed;
    d["bytes_unpacked"] = s.bytes_unpacked;
    d["messages_sent"] = s.messages_sent;
    d["messages_received"] = s.messages_received;
    d["steps"] = s.steps;
    d["runs"] = s.runs;
    d["seconds"] = s.seconds;
    d["agree_seconds"] = s.agree_seconds;
    return d;
  }

private:
  Messages views(const m2n_message_t *messages, uint32_t count,
                 nb::handle owner) const {
    Messages out;
    int deviceType = cudaIndex_ < 0 ? nb::device::cpu::value
                                    : nb::device::cuda::value;
    int deviceId = cudaIndex_ < 0 ? 0 : cudaIndex_;
    for (uint32_t i = 0; i < count; ++i) {
      size_t shape[1] = {static_cast<size_t>(messages[i].bytes)};
      out.emplace_back(messages[i].peer,
                       ByteView(messages[i].data, 1, shape, owner, nullptr,
                                nb::dtype<uint8_t>(), deviceType, deviceId));
    }
    return out;
  }

  m2n_executor_t exec_ = nullptr;
  int cudaIndex_;
};

} // namespace

NB_MODULE(_m2n, m) {
  m.doc() = "The native layer of m2n: the compiler and the runtime.";
  static nb::object error = nb::steal(PyErr_NewExceptionWithDoc(
      "m2n.Error", "A call of the m2n runtime or compiler failed.",
      PyExc_RuntimeError, nullptr));
  errorType = error.ptr();
  m.attr("Error") = error;
#ifdef M2N_HAVE_CUDA
  m.attr("HAVE_CUDA") = true;
#else
  m.attr("HAVE_CUDA") = false;
#endif

  m.def(
      "compile",
      [](const std::string &spec, const std::string &name,
         int64_t bucketBytes, int64_t stagingBytes,
         const std::string &topology, bool relay, bool exchange) {
        m2n::CompilePipelineOptions options;
        options.bucketBytes = bucketBytes;
        options.stagingBytes = stagingBytes;
        options.topology = topology;
        options.relay = relay;
        options.relayExchange = exchange;
        m2n::python::CompileResult result;
        {
          nb::gil_scoped_release release;
          result = m2n::python::compileSpec(spec, name, options);
        }
        if (!result.error.empty())
          raise(result.error);
        return nb::bytes(reinterpret_cast<const char *>(result.plan.data()),
                         result.plan.size());
      },
      "spec"_a, "name"_a, "bucket_bytes"_a, "staging_bytes"_a, "topology"_a,
      "relay"_a, "exchange"_a);
  m.def(
      "canonical_spec",
      [](const std::string &spec, const std::string &name) {
        std::string error;
        std::string text = m2n::python::canonicalSpec(spec, name, error);
        if (!error.empty())
          throw nb::value_error(error.c_str());
        return text;
      },
      "spec"_a, "name"_a);
  m.def(
      "dtype_name",
      [](const std::string &name) {
        std::string canonical = m2n::python::canonicalDType(name);
        if (canonical.empty())
          throw nb::value_error(("unknown dtype '" + name + "'").c_str());
        return canonical;
      },
      "name"_a);
  m.def(
      "placement",
      [](const std::string &text) {
        std::string canonical = m2n::python::canonicalPlacement(text);
        if (canonical.empty())
          throw nb::value_error(("invalid placement '" + text +
                                 "' (expected 'R', 'S(d)', 'Replicate()' or "
                                 "'Shard(dim=d)')")
                                    .c_str());
        return canonical;
      },
      "text"_a);


  nb::class_<Plan>(m, "Plan")
      .def(nb::init<nb::bytes, bool>(), "data"_a, "trusted"_a = false)
      .def("info", &Plan::info)
      .def("tensors", &Plan::tensors)
      .def("rank_info", &Plan::rankInfo, "rank"_a)
      .def("bindings", &Plan::bindings, "rank"_a)
      .def("disassemble", &Plan::disassemble, "rank"_a = -1);

  nb::class_<Transport>(m, "Transport")
      .def_static("external", &Transport::external, "rank"_a, "world_size"_a)
      .def_static("mpi", &Transport::mpi, "comm_address"_a)
#ifdef M2N_HAVE_CUDA
      .def_static("nccl", &Transport::nccl, "comm_address"_a)
#endif
      .def_prop_ro("rank",
                   [](const Transport &t) { return std::get<0>(t.rankAndSize()); })
      .def_prop_ro("world_size",
                   [](const Transport &t) { return std::get<1>(t.rankAndSize()); })
      .def("set_timeout", &Transport::setTimeout, "seconds"_a);

  nb::class_<SimWorld>(m, "SimWorld")
      .def(nb::init<int>(), "world_size"_a)
      .def("transport", &SimWorld::transport, "rank"_a);

  nb::class_<Device>(m, "Device")
#ifdef M2N_HAVE_CUDA
      .def_static("cuda", &Device::cuda, "index"_a, "stream"_a,
                  "synchronize"_a = false)
#endif
      .def_prop_ro("cuda_index", &Device::cudaIndex);

  // The executor keeps its plan and transport alive; it copies what it
  // needs of the device.
  nb::class_<Executor>(m, "Executor")
      .def(nb::init<Plan &, Transport &, Device *>(), "plan"_a,
           "transport"_a, "device"_a = nb::none(), nb::keep_alive<1, 2>(),
           nb::keep_alive<1, 3>())
      .def("bind", &Executor::bind, "name"_a, "role"_a, "data"_a, "dtype"_a,
           "shape"_a)
      .def("run", &Executor::run)
      .def(
          "step_next",
          [](nb::handle self) {
            return nb::cast<Executor &>(self).stepNext(self);
          })
      .def("step_complete", &Executor::stepComplete, "step"_a, "sends"_a,
           "receives"_a)
      .def("stats", &Executor::stats);
}
