//===- executor.cpp - Executing one rank's part of a plan -----------------===//
//
// One executor for every kind of memory and transport. It decodes its
// rank's instructions once (program.h) and, over a transport that shares
// the address space in host memory, marks the messages it pulls; its
// device (device.h) runs the walks, in host memory or on a GPU. A loaded
// plan has been validated, so no walk leaves its binding or the staging
// buffer; the executor checks only what the caller supplies: the buffers
// bound to the plan's shards.
//
// A run is the agreement, the local copies, then per step the packs, the
// step's messages and the unpacks. m2n_executor_run does it all over a
// transport that moves messages itself; over an external transport the
// caller drives the same sequence one exchange at a time.
//
//===----------------------------------------------------------------------===//

#include "m2n/executor.h"

#include "plan_internal.h"
#include "program.h"
#include "transport.h"

#include <chrono>
#include <cstdint>
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

// A binding of the rank and the state of its buffer (in the buffer table).
struct Slot {
  const Binding *binding = nullptr;
  bool bound = false;
  std::string bindError; // why its last bind failed
};

m2n_status_t invalid(const std::string &message) {
  return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT, message.c_str());
}

std::string stepName(uint64_t step) {
  return step == M2N_STEP_AGREEMENT ? std::string("the agreement")
                                    : concat("step ", step);
}

} // namespace

class RankExecutor {
public:
  RankExecutor(const LoadedPlan &plan, TransportImpl &transport,
               std::unique_ptr<DeviceImpl> device)
      : plan_(plan), transport_(transport), device_(std::move(device)),
        rank_(transport.rank()),
        pulls_(transport.sharesAddressSpace() &&
               device_->memoryKind() == MemoryKind::Host) {}
  ~RankExecutor();
  RankExecutor(const RankExecutor &) = delete;
  RankExecutor &operator=(const RankExecutor &) = delete;

  m2n_status_t init();
  m2n_status_t bind(const char *tensorName, m2n_role_t role, void *data,
                    m2n_dtype_t dtype, uint32_t ndim, const int64_t *shape);
  m2n_status_t run();
  m2n_status_t stepNext(m2n_exchange_t *out);
  m2n_status_t stepComplete(uint64_t step, uint32_t sendsMoved,
                            uint32_t receivesMoved);
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
  bool mustAgree() const { return !transport_.streamOrdered() || !agreed_; }
  TransferOp transferOp(const Transfer &transfer);
  void collectOps(const StepProgram &step);
  // A device failure in the middle of a run leaves peers waiting: tell
  // them.
  m2n_status_t deviceCall(m2n_status_t status);
  m2n_status_t execute();
  void finishRun(Clock::time_point start, Clock::time_point agreed);
  m2n_status_t beginSteps(m2n_exchange_t *out);
  m2n_status_t completeAgreement();
  /// Ends the step-wise run when `status` is a failure; returns it.
  m2n_status_t endRunIf(m2n_status_t status);
  m2n_status_t stepError(const std::string &message);
  void handOut(uint64_t step, m2n_exchange_t *out);

  const LoadedPlan &plan_;
  TransportImpl &transport_;
  std::unique_ptr<DeviceImpl> device_;
  const uint32_t rank_;
  const bool pulls_; // whether messages may be pulled
  Program program_;
  std::vector<Slot> slots_;
  BufferTable buffers_; // by binding; what peers pull from when pulls_
  std::unordered_map<uint64_t, uint32_t> slotIndex_;
  bool agreed_ = false; // since the last failed bind
  std::vector<TransferOp> ops_; // one step's, reused
  m2n_executor_stats_t planned_ = {};
  m2n_executor_stats_t stats_ = {};
  m2n_executor_step_fn onStep_ = nullptr;
  void *onStepData_ = nullptr;

  // A step-wise run in progress.
  struct StepRun {
    bool active = false;
    bool open = false;     // an exchange handed out, not completed
    uint64_t openStep = 0; // its step
    size_t next = 0;       // the program step to hand out next
    Clock::time_point start, agreed;
  } steps_;
  std::vector<m2n_message_t> sends_, receives_;
  // The agreement's records in the device's memory: rank r's at r * 256.
  uint8_t *notices_ = nullptr;
};

RankExecutor::~RankExecutor() {
  if (pulls_)
    transport_.publishBuffers(nullptr);
}

m2n_status_t RankExecutor::init() {
  const m2n_plan_rank_header_t *section = plan_.rankHeader(rank_);
  uint32_t bindings = section ? section->binding_count : 0;
  for (uint32_t i = 0; i < bindings; ++i) {
    Slot slot;
    slot.binding = &plan_.binding(rank_, i);
    slotIndex_.emplace(slotKey(slot.binding->tensor,
                               static_cast<m2n_role_t>(slot.binding->role)),
                       i);
    slots_.push_back(std::move(slot));
  }
  buffers_.assign(slots_.size(), nullptr);
  if (section) {
    program_ = decodeProgram(plan_, rank_);
    if (pulls_)
      pullMessages(plan_, rank_, &program_);
  }
  planned_ = plannedStats(program_);
  if (m2n_status_t status = device_->load(program_, bindings,
                                          section ? section->staging_bytes
                                                  : 0)) {
    std::string why = concat("rank ", rank_, ": ", m2n_status_message(status));
    m2n_status_code_t code = m2n_status_code(status);
    m2n_status_free(status);
    // The peers would otherwise wait for this rank until they time out.
    transport_.abort(why);
    return m2n_status_create(code, why.c_str());
  }
  return device_->setBuffers(buffers_);
}

std::string RankExecutor::slotName(const Slot &slot) const {
  return concat("tensor ", quoteName(plan_.tensorName(slot.binding->tensor)),
                " ", roleName(static_cast<m2n_role_t>(slot.binding->role)));
}

m2n_status_t RankExecutor::bind(const char *tensorName, m2n_role_t role,
                                void *data, m2n_dtype_t dtype, uint32_t ndim,
                                const int64_t *shape) {
  if (steps_.active)
    return invalid(concat("m2n_executor_bind: tensor ", quoteName(tensorName),
                          ": a step-wise run is in progress; bind before "
                          "its first m2n_executor_step_next or after its "
                          "last"));
  if (role != M2N_ROLE_SOURCE && role != M2N_ROLE_DESTINATION)
    return invalid(concat("m2n_executor_bind: role ", int(role),
                          " is neither source nor destination"));
  if (ndim > M2N_PLAN_MAX_RANK || (ndim != 0 && !shape))
    return invalid(concat("m2n_executor_bind: tensor ", quoteName(tensorName),
                          ": ",
                          ndim > M2N_PLAN_MAX_RANK ? "more than 8 dimensions"
                                                   : "shape is null"));
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
  m2n_status_t status = checkBuffer(slot, data, dtype, ndim, shape);
  if (!status) {
    buffer = static_cast<uint8_t *>(data);
    status = device_->setBuffers(buffers_);
  }
  if (status) {
    slot.bound = false;
    buffer = nullptr;
    slot.bindError = m2n_status_message(status);
    // The peers must hear of it: the next run agrees again.
    agreed_ = false;
    m2n_status_free(device_->setBuffers(buffers_));
    return status;
  }
  slot.bound = true;
  slot.bindError.clear();
  return nullptr;
}

m2n_status_t RankExecutor::checkBuffer(Slot &slot, void *data,
                                       m2n_dtype_t dtype, uint32_t ndim,
                                       const int64_t *shape) {
  const m2n_plan_tensor_t &tensor = plan_.tensor(slot.binding->tensor);
  auto error = [&](const std::string &what) {
    return invalid(concat(slotName(slot), " on rank ", rank_, ": ", what));
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
  if (data) {
    std::string problem = device_->checkBuffer(data);
    if (!problem.empty())
      return error(problem);
  }
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
  uint8_t *base =
      transfer.direct ? buffers_[transfer.binding] : device_->staging();
  op.data = base + transfer.offset;
  return op;
}

void RankExecutor::collectOps(const StepProgram &step) {
  ops_.clear();
  for (const Transfer &transfer : step.transfers)
    ops_.push_back(transferOp(transfer));
}

m2n_status_t RankExecutor::deviceCall(m2n_status_t status) {
  if (status)
    transport_.abort(concat("rank ", rank_, ": ", m2n_status_message(status)));
  return status;
}

void RankExecutor::finishRun(Clock::time_point start,
                             Clock::time_point agreed) {
  auto end = Clock::now();
  uint32_t runs = stats_.runs + 1;
  stats_ = planned_;
  stats_.runs = runs;
  stats_.seconds = std::chrono::duration<double>(end - start).count();
  stats_.agree_seconds = std::chrono::duration<double>(agreed - start).count();
}

m2n_status_t RankExecutor::run() {
  if (transport_.external())
    return invalid("m2n_executor_run: the executor's transport is external, "
                   "so the caller moves the messages: drive it with "
                   "m2n_executor_step_next and m2n_executor_step_complete");
  auto start = Clock::now();
  M2N_RETURN_IF_ERROR(transport_.health());
  bool agree = mustAgree();
  M2N_RETURN_IF_ERROR(device_->begin(agree || device_->synchronous()));
  if (agree) {
    // Before the agreement, which no peer passes before this rank arrives:
    // no peer pulls from this rank before it.
    if (pulls_)
      transport_.publishBuffers(&buffers_);
    std::string why = unboundReason();
    M2N_RETURN_IF_ERROR(transport_.agree(plan_.header().content_hash,
                                         why.empty(), why, *device_));
    agreed_ = true;
  }
  auto agreed = Clock::now();
  M2N_RETURN_IF_ERROR(execute());
  finishRun(start, agreed);
  return nullptr;
}

m2n_status_t RankExecutor::execute() {
  M2N_RETURN_IF_ERROR(deviceCall(device_->copies()));
  for (size_t i = 0; i < program_.steps.size(); ++i) {
    const StepProgram &step = program_.steps[i];
    if (onStep_)
      onStep_(onStepData_, step.step);
    M2N_RETURN_IF_ERROR(deviceCall(device_->packs(i)));
    collectOps(step);
    // A failed exchange has already told the peers.
    if (!ops_.empty())
      M2N_RETURN_IF_ERROR(transport_.exchange(step.step, ops_, *device_));
    M2N_RETURN_IF_ERROR(deviceCall(device_->unpacks(i)));
  }
  if (device_->synchronous())
    return transport_.synchronize(*device_);
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Step by step
//===----------------------------------------------------------------------===//

m2n_status_t RankExecutor::endRunIf(m2n_status_t status) {
  // The run is over; the next step_next begins another, agreement first.
  if (status)
    steps_ = StepRun();
  return status;
}

m2n_status_t RankExecutor::stepError(const std::string &message) {
  return endRunIf(invalid(message));
}

void RankExecutor::handOut(uint64_t step, m2n_exchange_t *out) {
  steps_.open = true;
  steps_.openStep = step;
  out->step = step;
  out->send_count = static_cast<uint32_t>(sends_.size());
  out->receive_count = static_cast<uint32_t>(receives_.size());
  out->sends = sends_.data();
  out->receives = receives_.data();
}

// The agreement as an exchange: this rank's notice to every peer, and
// every peer's into its slot.
m2n_status_t RankExecutor::beginSteps(m2n_exchange_t *out) {
  M2N_RETURN_IF_ERROR(device_->begin(/*waits=*/true));
  const uint32_t world = plan_.worldSize();
  const uint64_t size = sizeof(AgreeNotice);
  if (!notices_)
    M2N_RETURN_IF_ERROR(device_->allocate(world * size, &notices_));
  std::string why = unboundReason();
  AgreeNotice mine =
      agreeNotice({plan_.header().content_hash, why.empty(), why});
  M2N_RETURN_IF_ERROR(device_->write(notices_ + rank_ * size, &mine, size));
  sends_.clear();
  receives_.clear();
  for (uint32_t peer = 0; peer < world; ++peer) {
    if (peer == rank_)
      continue;
    sends_.push_back({peer, notices_ + rank_ * size, size});
    receives_.push_back({peer, notices_ + peer * size, size});
  }
  steps_ = StepRun();
  steps_.active = true;
  steps_.start = Clock::now();
  handOut(M2N_STEP_AGREEMENT, out);
  return nullptr;
}

m2n_status_t RankExecutor::stepNext(m2n_exchange_t *out) {
  *out = m2n_exchange_t{};
  if (!transport_.external())
    return invalid(concat("m2n_executor_step_next: the executor's transport "
                          "is ",
                          transport_.name(),
                          ", which moves the messages itself: use "
                          "m2n_executor_run (only an external transport's "
                          "executor runs step by step)"));
  M2N_RETURN_IF_ERROR(transport_.health());
  if (steps_.open)
    return stepError(concat("m2n_executor_step_next: ",
                            stepName(steps_.openStep),
                            " is still open: complete it with "
                            "m2n_executor_step_complete before the next"));
  if (!steps_.active)
    return beginSteps(out);
  if (steps_.next == program_.steps.size()) {
    M2N_RETURN_IF_ERROR(
        endRunIf(device_->synchronous() ? device_->synchronize() : nullptr));
    finishRun(steps_.start, steps_.agreed);
    steps_ = StepRun();
    out->done = 1;
    return nullptr;
  }
  const StepProgram &step = program_.steps[steps_.next];
  if (onStep_)
    onStep_(onStepData_, step.step);
  M2N_RETURN_IF_ERROR(endRunIf(device_->packs(steps_.next)));
  collectOps(step);
  sends_.clear();
  receives_.clear();
  for (const TransferOp &op : ops_)
    (op.kind == TransferOp::Send ? sends_ : receives_)
        .push_back({op.peer, op.data, op.bytes});
  handOut(step.step, out);
  return nullptr;
}

m2n_status_t RankExecutor::completeAgreement() {
  const uint32_t world = plan_.worldSize();
  std::vector<AgreeNotice> notices(world);
  M2N_RETURN_IF_ERROR(
      device_->read(notices.data(), notices_, world * sizeof(AgreeNotice)));
  std::vector<AgreeRecord> records;
  for (const AgreeNotice &notice : notices)
    records.push_back(agreeRecord(notice));
  M2N_RETURN_IF_ERROR(agreementStatus(records));
  steps_.agreed = Clock::now();
  return device_->copies();
}

m2n_status_t RankExecutor::stepComplete(uint64_t step, uint32_t sendsMoved,
                                        uint32_t receivesMoved) {
  if (!steps_.open)
    return stepError(concat("m2n_executor_step_complete: ", stepName(step),
                            " is not open: no exchange was handed out "
                            "(m2n_executor_step_next) since the last was "
                            "completed"));
  if (step != steps_.openStep)
    return stepError(concat("m2n_executor_step_complete: ", stepName(step),
                            " is out of order: the open exchange is ",
                            stepName(steps_.openStep)));
  if (sendsMoved != sends_.size() || receivesMoved != receives_.size())
    return stepError(concat(
        "m2n_executor_step_complete: ", stepName(step), " of rank ", rank_,
        ": ", sendsMoved, " of ", sends_.size(), " sends and ", receivesMoved,
        " of ", receives_.size(),
        " receives moved; every message must be moved before its step "
        "completes"));
  steps_.open = false;
  return endRunIf(step == M2N_STEP_AGREEMENT ? completeAgreement()
                                             : device_->unpacks(steps_.next++));
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

void m2n_device_destroy(m2n_device_t device) { delete device; }

m2n_status_t m2n_executor_create(m2n_plan_t plan, m2n_transport_t transport,
                                 m2n_device_t device, m2n_executor_t *out) {
  if (!out)
    return nullArgument("m2n_executor_create");
  *out = nullptr;
  if (!plan || !transport)
    return nullArgument("m2n_executor_create");
  m2n::TransportImpl &impl = *transport->impl;
  uint32_t planWorld = plan->plan.worldSize();
  if (planWorld != impl.worldSize())
    return m2n_status_create(
        M2N_STATUS_INVALID_ARGUMENT,
        m2n::concat("m2n_executor_create: ", plan->plan.source(),
                    " is a plan for ", planWorld,
                    " ranks, but the transport's group has ", impl.worldSize())
            .c_str());
  std::unique_ptr<m2n::DeviceImpl> memory;
  if (device)
    M2N_RETURN_IF_ERROR(device->make(&memory));
  else
    memory = m2n::createHostDevice();
  std::string refused = impl.cannotCarry(*memory);
  if (!refused.empty())
    return m2n_status_create(
        M2N_STATUS_INVALID_ARGUMENT,
        m2n::concat("m2n_executor_create: ", refused).c_str());
  std::unique_ptr<m2n_executor_s> executor(new m2n_executor_s{
      m2n::RankExecutor(plan->plan, impl, std::move(memory))});
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

m2n_status_t m2n_executor_step_next(m2n_executor_t executor,
                                    m2n_exchange_t *out) {
  if (!executor || !out)
    return nullArgument("m2n_executor_step_next");
  return executor->executor.stepNext(out);
}

m2n_status_t m2n_executor_step_complete(m2n_executor_t executor,
                                        uint64_t step, uint32_t sends_moved,
                                        uint32_t receives_moved) {
  if (!executor)
    return nullArgument("m2n_executor_step_complete");
  return executor->executor.stepComplete(step, sends_moved, receives_moved);
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
