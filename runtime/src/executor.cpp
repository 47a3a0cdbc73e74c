//===- executor.cpp - Executing one rank's part of a plan -----------------===//
//
// The executor decodes its rank's instructions once (program.h) and, over a
// transport that shares the address space, marks the messages it pulls. A
// loaded plan has been validated, so no walk leaves its binding or the
// staging buffer; the executor checks only what the caller supplies: the
// buffers bound to the plan's shards.
//
//===----------------------------------------------------------------------===//

#include "m2n/executor.h"

#include "plan_internal.h"
#include "program.h"
#include "transport.h"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>

namespace m2n {
namespace {

using Clock = std::chrono::steady_clock;

// What a run moves is fixed by the program; only the times are measured.
// Pulled messages count as sent and received, and their bytes neither as
// packed nor as unpacked: they never pass through staging.
m2n_executor_stats_t plannedStats(const Program &program) {
  m2n_executor_stats_t stats = {};
  for (const Walk &copy : program.copies)
    stats.bytes_copied += copy.bytes();
  for (const StepProgram &step : program.steps) {
    ++stats.steps;
    for (const Walk &pack : step.packs)
      stats.bytes_packed += pack.bytes();
    for (const Walk &unpack : step.unpacks)
      stats.bytes_unpacked += unpack.bytes();
    for (const Transfer &transfer : step.transfers) {
      (transfer.send ? stats.bytes_sent : stats.bytes_received) +=
          transfer.bytes;
      ++(transfer.send ? stats.messages_sent : stats.messages_received);
    }
  }
  return stats;
}

std::string shapeText(uint32_t ndim, const int64_t *shape) {
  std::string text = "[";
  for (uint32_t i = 0; i < ndim; ++i)
    text += concat(i ? ", " : "", shape[i]);
  return text + "]";
}

const char *roleName(m2n_role_t role) {
  return role == M2N_ROLE_SOURCE ? "source" : "destination";
}

struct FreeDeleter {
  void operator()(uint8_t *data) const { std::free(data); }
};

// A binding of the rank and the state of its buffer (in the buffer table).
struct Slot {
  const Binding *binding = nullptr;
  bool bound = false;
  std::string bindError; // why its last bind failed
};

} // namespace

class RankExecutor {
public:
  RankExecutor(const LoadedPlan &plan, TransportImpl &transport)
      : plan_(plan), transport_(transport), rank_(transport.rank()),
        pulls_(transport.sharesAddressSpace()) {}
  ~RankExecutor();
  RankExecutor(const RankExecutor &) = delete;
  RankExecutor &operator=(const RankExecutor &) = delete;

  m2n_status_t init();
  m2n_status_t bind(const char *tensorName, m2n_role_t role, void *data,
                    m2n_dtype_t dtype, uint32_t ndim, const int64_t *shape);
  m2n_status_t run();
  void setStepCallback(m2n_executor_step_fn fn, void *userData) {
    onStep_ = fn;
    onStepData_ = userData;
  }
  const m2n_executor_stats_t &stats() const { return stats_; }

private:
  static uint64_t slotKey(uint32_t tensor, m2n_role_t role) {
    return uint64_t(tensor) << 8 | uint64_t(role);
  }
  std::string slotName(const Slot &slot) const;
  m2n_status_t checkBuffer(Slot &slot, void *data, m2n_dtype_t dtype,
                           uint32_t ndim, const int64_t *shape);
  std::string unboundReason() const;
  TransferOp transferOp(const Transfer &transfer);
  m2n_status_t execute();

  const LoadedPlan &plan_;
  TransportImpl &transport_;
  const uint32_t rank_;
  const bool pulls_; // whether messages may be pulled
  Program program_;
  std::vector<Slot> slots_;
  BufferTable buffers_; // by binding, what peers pull from when pulls_
  std::unordered_map<uint64_t, uint32_t> slotIndex_;
  std::unique_ptr<uint8_t, FreeDeleter> staging_;
  std::vector<TransferOp> ops_; // one step's, reused
  m2n_executor_stats_t planned_ = {};
  m2n_executor_stats_t stats_ = {};
  m2n_executor_step_fn onStep_ = nullptr;
  void *onStepData_ = nullptr;
};

RankExecutor::~RankExecutor() {
  if (pulls_)
    transport_.publishBuffers(nullptr);
}

m2n_status_t RankExecutor::init() {
  const m2n_plan_rank_header_t *section = plan_.rankHeader(rank_);
  if (!section)
    return nullptr;
  for (uint32_t i = 0; i < section->binding_count; ++i) {
    Slot slot;
    slot.binding = &plan_.binding(rank_, i);
    slotIndex_.emplace(slotKey(slot.binding->tensor,
                               static_cast<m2n_role_t>(slot.binding->role)),
                       i);
    slots_.push_back(std::move(slot));
  }
  buffers_.assign(slots_.size(), nullptr);
  program_ = decodeProgram(plan_, rank_);
  if (pulls_)
    pullMessages(plan_, rank_, &program_);
  planned_ = plannedStats(program_);
  uint64_t staging = section->staging_bytes;
  if (staging != 0) {
    // Whole cache lines, as aligned_alloc wants a multiple of the alignment;
    // a size too large to round is one that cannot be allocated anyway.
    uint64_t rounded = (staging + 63) / 64 * 64;
    if (rounded >= staging && rounded <= SIZE_MAX)
      staging_.reset(static_cast<uint8_t *>(
          std::aligned_alloc(64, static_cast<size_t>(rounded))));
    if (!staging_) {
      std::string why =
          concat("rank ", rank_, ": cannot allocate ", staging,
                 " bytes of staging");
      // The peers would otherwise wait for this rank until they time out.
      transport_.abort(why);
      return m2n_status_create(M2N_STATUS_RESOURCE_EXHAUSTED, why.c_str());
    }
  }
  return nullptr;
}

std::string RankExecutor::slotName(const Slot &slot) const {
  return concat("tensor ", quoteName(plan_.tensorName(slot.binding->tensor)),
                " ", roleName(static_cast<m2n_role_t>(slot.binding->role)));
}

m2n_status_t RankExecutor::bind(const char *tensorName, m2n_role_t role,
                                void *data, m2n_dtype_t dtype, uint32_t ndim,
                                const int64_t *shape) {
  if (role != M2N_ROLE_SOURCE && role != M2N_ROLE_DESTINATION)
    return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT,
                             concat("m2n_executor_bind: role ", int(role),
                                    " is neither source nor destination")
                                 .c_str());
  if (ndim > M2N_PLAN_MAX_RANK || (ndim != 0 && !shape))
    return m2n_status_create(
        M2N_STATUS_INVALID_ARGUMENT,
        concat("m2n_executor_bind: tensor ", quoteName(tensorName), ": ",
               ndim > M2N_PLAN_MAX_RANK ? "more than 8 dimensions"
                                        : "shape is null")
            .c_str());
  std::optional<uint32_t> tensor = plan_.findTensor(tensorName);
  if (!tensor)
    return m2n_status_create(
        M2N_STATUS_NOT_FOUND,
        concat("m2n_executor_bind: the plan has no tensor ",
               quoteName(tensorName))
            .c_str());
  auto found = slotIndex_.find(slotKey(*tensor, role));
  if (found == slotIndex_.end())
    return m2n_status_create(
        M2N_STATUS_NOT_FOUND,
        concat("m2n_executor_bind: tensor ", quoteName(tensorName), ": rank ",
               rank_, " holds no ", roleName(role), " shard of it in the plan")
            .c_str());
  Slot &slot = slots_[found->second];
  uint8_t *&buffer = buffers_[found->second];
  if (m2n_status_t status = checkBuffer(slot, data, dtype, ndim, shape)) {
    slot.bound = false;
    buffer = nullptr;
    slot.bindError = m2n_status_message(status);
    return status;
  }
  slot.bound = true;
  buffer = static_cast<uint8_t *>(data);
  slot.bindError.clear();
  return nullptr;
}

m2n_status_t RankExecutor::checkBuffer(Slot &slot, void *data,
                                       m2n_dtype_t dtype, uint32_t ndim,
                                       const int64_t *shape) {
  const m2n_plan_tensor_t &tensor = plan_.tensor(slot.binding->tensor);
  auto error = [&](const std::string &what) {
    return m2n_status_create(
        M2N_STATUS_INVALID_ARGUMENT,
        concat(slotName(slot), " on rank ", rank_, ": ", what).c_str());
  };
  auto expectedDtype = static_cast<m2n_dtype_t>(tensor.dtype);
  if (dtype != expectedDtype)
    return error(concat("dtype ", m2n_dtype_name(dtype), ", expected ",
                        m2n_dtype_name(expectedDtype)));
  bool sameShape = ndim == tensor.rank;
  for (uint32_t i = 0; sameShape && i < ndim; ++i)
    sameShape = shape[i] == slot.binding->shape[i];
  if (!sameShape)
    return error(concat("shape ", shapeText(ndim, shape), ", expected ",
                        shapeText(tensor.rank, slot.binding->shape)));
  if (!data && slot.binding->byte_size != 0)
    return error(concat("data is null, expected a buffer of ",
                        slot.binding->byte_size, " bytes"));
  return nullptr;
}

std::string RankExecutor::unboundReason() const {
  std::string reason;
  size_t others = 0;
  for (const Slot &slot : slots_) {
    if (slot.bound)
      continue;
    if (!reason.empty()) {
      ++others;
      continue;
    }
    reason = concat(slotName(slot), " is not bound");
    if (!slot.bindError.empty())
      reason += concat(" (its bind failed: ", slot.bindError, ")");
  }
  if (others != 0)
    reason += concat(", nor ", others,
                     others == 1 ? " other shard" : " other shards");
  return reason;
}

TransferOp RankExecutor::transferOp(const Transfer &transfer) {
  TransferOp op;
  op.kind = transfer.send ? TransferOp::Send : TransferOp::Receive;
  op.peer = transfer.peer;
  op.bytes = transfer.bytes;
  if (transfer.pulled) {
    op.pulled = true;
    op.walks = &transfer.pull;
    return op;
  }
  uint8_t *base = transfer.direct ? buffers_[transfer.binding] : staging_.get();
  op.data = base + transfer.offset;
  return op;
}

m2n_status_t RankExecutor::run() {
  auto start = Clock::now();
  // Before the agreement, which no peer passes before this rank arrives:
  // no peer pulls from this rank before it.
  if (pulls_)
    transport_.publishBuffers(&buffers_);
  std::string why = unboundReason();
  M2N_RETURN_IF_ERROR(
      transport_.agree(plan_.header().content_hash, why.empty(), why));
  auto agreed = Clock::now();
  M2N_RETURN_IF_ERROR(execute());
  auto end = Clock::now();
  uint32_t runs = stats_.runs + 1;
  stats_ = planned_;
  stats_.runs = runs;
  stats_.seconds = std::chrono::duration<double>(end - start).count();
  stats_.agree_seconds = std::chrono::duration<double>(agreed - start).count();
  return nullptr;
}

m2n_status_t RankExecutor::execute() {
  for (const Walk &copy : program_.copies)
    runWalk(copy, buffers_[copy.fromBinding], buffers_[copy.toBinding]);
  for (const StepProgram &step : program_.steps) {
    if (onStep_)
      onStep_(onStepData_, step.step);
    for (const Walk &pack : step.packs)
      runWalk(pack, buffers_[pack.fromBinding], staging_.get());
    ops_.clear();
    for (const Transfer &transfer : step.transfers)
      ops_.push_back(transferOp(transfer));
    // A failed exchange has already told the peers.
    if (!ops_.empty())
      M2N_RETURN_IF_ERROR(transport_.exchange(step.step, ops_, nullptr));
    for (const Walk &unpack : step.unpacks)
      runWalk(unpack, staging_.get(), buffers_[unpack.toBinding]);
  }
  return nullptr;
}

} // namespace m2n

struct m2n_executor_s {
  m2n::RankExecutor executor;
};

namespace {

m2n_status_t nullArgument(const char *function) {
  return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT,
                           m2n::concat(function, ": null argument").c_str());
}

} // namespace

extern "C" {

m2n_status_t m2n_executor_create(m2n_plan_t plan, m2n_transport_t transport,
                                 m2n_executor_t *out) {
  if (!out)
    return nullArgument("m2n_executor_create");
  *out = nullptr;
  if (!plan || !transport)
    return nullArgument("m2n_executor_create");
  m2n::TransportImpl &impl = *transport->impl;
  if (impl.memoryKind() != m2n::MemoryKind::Host)
    return m2n_status_create(
        M2N_STATUS_UNIMPLEMENTED,
        "m2n_executor_create: the executor runs on host memory only");
  uint32_t planWorld = plan->plan.worldSize();
  if (planWorld != impl.worldSize())
    return m2n_status_create(
        M2N_STATUS_INVALID_ARGUMENT,
        m2n::concat("m2n_executor_create: ", plan->plan.source(),
                    " is a plan for ", planWorld,
                    " ranks, but the transport's group has ", impl.worldSize())
            .c_str());
  std::unique_ptr<m2n_executor_s> executor(
      new m2n_executor_s{m2n::RankExecutor(plan->plan, impl)});
  M2N_RETURN_IF_ERROR(executor->executor.init());
  *out = executor.release();
  return nullptr;
}

void m2n_executor_destroy(m2n_executor_t executor) { delete executor; }

m2n_status_t m2n_executor_bind(m2n_executor_t executor, const char *tensor_name,
                               m2n_role_t role, void *data, m2n_dtype_t dtype,
                               uint32_t ndim, const int64_t *shape) {
  if (!executor || !tensor_name)
    return nullArgument("m2n_executor_bind");
  return executor->executor.bind(tensor_name, role, data, dtype, ndim, shape);
}

m2n_status_t m2n_executor_run(m2n_executor_t executor) {
  if (!executor)
    return nullArgument("m2n_executor_run");
  return executor->executor.run();
}

m2n_status_t m2n_executor_set_step_callback(m2n_executor_t executor,
                                            m2n_executor_step_fn fn,
                                            void *user_data) {
  if (!executor)
    return nullArgument("m2n_executor_set_step_callback");
  executor->executor.setStepCallback(fn, user_data);
  return nullptr;
}

m2n_status_t m2n_executor_get_stats(m2n_executor_t executor,
                                    m2n_executor_stats_t *out) {
  if (!executor || !out)
    return nullArgument("m2n_executor_get_stats");
  *out = executor->executor.stats();
  return nullptr;
}

} // extern "C"
