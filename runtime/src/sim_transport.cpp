//===- sim_transport.cpp - Every rank in one process, one thread each -----===//
//
// A world is shared state under one mutex: a mailbox per (sender, receiver)
// pair, the agreements in progress, and each rank's published buffers. A
// send is a rendezvous: the sender posts a pointer to its bytes (or, for a
// pulled message, only that it is there) and waits until the receiver has
// copied them, or pulled them from the sender's published buffers, as a
// synchronous host exchange must (the sender reuses its staging buffer in
// the next step, and may write its bindings once its run is over). A rank
// posts all its sends before it waits for any receive, so no order of
// ranks deadlocks.
//
// Each rank waits on a condition variable of its own, and whoever changes
// what a rank waits for wakes that rank alone: with many ranks on few
// cores, waking every rank at every message costs more than the messages.
//
// The first failure (an abort, a timeout, a mismatched message) is the
// world's for good: every waiting and later call returns it.
//
// Ranks may keep their buffers on GPUs (CUDA executors, one stream each).
// The receiver copies on its own device then, after the sender's mark (its
// packs), and the sender's later work waits for the receiver's mark (the
// copy), so that it does not overwrite staging that is still being read.
// For host memory these are a memcpy and nothing.
//
//===----------------------------------------------------------------------===//

#include "transport.h"

#include "plan_internal.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>

namespace m2n {
namespace {

using Clock = std::chrono::steady_clock;
using Deadline = std::optional<Clock::time_point>;
using Lock = std::unique_lock<std::mutex>;

Deadline deadlineAfter(double seconds) {
  if (seconds <= 0)
    return std::nullopt;
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(seconds));
}

std::string rankList(const std::vector<uint32_t> &ranks) {
  std::string text;
  for (uint32_t rank : ranks)
    text += concat(text.empty() ? "" : ", ", rank);
  return text;
}

// The sends of one exchange of one rank; it lives on the sender's stack
// until no receiver touches its bytes any more.
struct SendGroup {
  size_t unfinished = 0; // posted and not yet copied out
  size_t copying = 0;    // being copied by a receiver now
  std::vector<DeviceImpl *> receivers; // that copied, for the sender to wait on
};

// A send waiting in its mailbox, pointing into the sender's buffer unless
// it is pulled.
struct Posted {
  uint64_t step;
  const uint8_t *data;
  uint64_t bytes;
  bool pulled;
  SendGroup *group;
  DeviceImpl *sender;
};

// One agreement: the n-th call of agree on every rank.
struct AgreeRound {
  std::vector<AgreeRecord> records;
  std::vector<bool> arrived;
  uint32_t arrivedCount = 0;
  uint32_t unread = 0; // ranks that have not taken the records yet
};

enum class Wait { Done, Aborted, TimedOut };

} // namespace

class SimWorldState {
public:
  explicit SimWorldState(uint32_t size)
      : size_(size), wake_(size), attached_(size, false), agreeCount_(size, 0),
        mailboxes_(size_t(size) * size), published_(size, nullptr) {}

  uint32_t size() const { return size_; }
  m2n_status_t attach(uint32_t rank);
  void detach(uint32_t rank);
  m2n_status_t agree(uint32_t rank, double timeout, const AgreeRecord &record,
                     std::vector<AgreeRecord> *out);
  m2n_status_t exchange(uint32_t rank, double timeout, uint64_t step,
                        const std::vector<TransferOp> &ops, DeviceImpl &device);
  void abort(uint32_t rank, const std::string &why);
  void publish(uint32_t rank, const BufferTable *buffers);

private:
  template <typename Done>
  Wait waitFor(Lock &lock, uint32_t rank, const Deadline &deadline, Done done);
  void wakeAll();
  void abortLocked(uint32_t rank, const std::string &why);
  m2n_status_t failure() const;
  std::deque<Posted> &mailbox(uint32_t from, uint32_t to) {
    return mailboxes_[size_t(from) * size_ + to];
  }
  m2n_status_t receive(Lock &lock, uint32_t rank, double timeout,
                       const Deadline &deadline, uint64_t step,
                       const TransferOp &op, DeviceImpl &device);
  m2n_status_t deviceFailed(uint32_t rank, m2n_status_t status);
  m2n_status_t awaitSends(Lock &lock, uint32_t rank, double timeout,
                          const Deadline &deadline, uint64_t step,
                          SendGroup &group);
  void withdraw(Lock &lock, uint32_t rank, SendGroup &group);

  std::mutex mutex_;
  const uint32_t size_;
  std::vector<std::condition_variable> wake_; // by rank
  std::vector<bool> attached_;
  std::vector<uint64_t> agreeCount_;
  std::map<uint64_t, AgreeRound> rounds_;
  std::vector<std::deque<Posted>> mailboxes_;
  std::vector<const BufferTable *> published_;
  std::string failure_; // empty while the world is healthy
};

m2n_status_t SimWorldState::attach(uint32_t rank) {
  Lock lock(mutex_);
  if (attached_[rank])
    return m2n_status_create(
        M2N_STATUS_INVALID_ARGUMENT,
        concat("rank ", rank, " of the sim world already has a transport")
            .c_str());
  attached_[rank] = true;
  return nullptr;
}

void SimWorldState::detach(uint32_t rank) {
  Lock lock(mutex_);
  attached_[rank] = false;
}

template <typename Done>
Wait SimWorldState::waitFor(Lock &lock, uint32_t rank, const Deadline &deadline,
                            Done done) {
  std::condition_variable &wake = wake_[rank];
  for (;;) {
    // Done first: a rank whose part is complete succeeds even if another
    // rank has failed meanwhile.
    if (done())
      return Wait::Done;
    if (!failure_.empty())
      return Wait::Aborted;
    if (!deadline)
      wake.wait(lock);
    else if (wake.wait_until(lock, *deadline) == std::cv_status::timeout &&
             !done() && failure_.empty())
      return Wait::TimedOut;
  }
}

void SimWorldState::wakeAll() {
  for (std::condition_variable &wake : wake_)
    wake.notify_all();
}

void SimWorldState::abortLocked(uint32_t rank, const std::string &why) {
  if (failure_.empty())
    failure_ = failedRankMessage(rank, why);
  wakeAll();
}

void SimWorldState::abort(uint32_t rank, const std::string &why) {
  Lock lock(mutex_);
  abortLocked(rank, why);
}

void SimWorldState::publish(uint32_t rank, const BufferTable *buffers) {
  Lock lock(mutex_);
  published_[rank] = buffers;
}

m2n_status_t SimWorldState::failure() const {
  return m2n_status_create(M2N_STATUS_ABORTED, failure_.c_str());
}

m2n_status_t SimWorldState::agree(uint32_t rank, double timeout,
                                  const AgreeRecord &record,
                                  std::vector<AgreeRecord> *out) {
  Lock lock(mutex_);
  if (!failure_.empty())
    return failure();
  Deadline deadline = deadlineAfter(timeout);
  uint64_t id = agreeCount_[rank]++;
  AgreeRound &round = rounds_[id];
  if (round.records.empty()) {
    round.records.resize(size_);
    round.arrived.resize(size_, false);
    round.unread = size_;
  }
  round.records[rank] = record;
  round.arrived[rank] = true;
  if (++round.arrivedCount == size_)
    wakeAll();

  Wait wait = waitFor(lock, rank, deadline,
                      [&] { return round.arrivedCount == size_; });
  if (wait == Wait::Done) {
    *out = round.records;
    if (--round.unread == 0)
      rounds_.erase(id);
    return nullptr;
  }
  if (wait == Wait::TimedOut) {
    std::vector<uint32_t> missing;
    for (uint32_t peer = 0; peer < size_; ++peer)
      if (!round.arrived[peer])
        missing.push_back(peer);
    abortLocked(rank, concat("timed out after ", formatSeconds(timeout),
                             " in the agreement, waiting for rank ",
                             rankList(missing)));
  }
  return failure();
}

m2n_status_t SimWorldState::deviceFailed(uint32_t rank, m2n_status_t status) {
  abortLocked(rank, m2n_status_message(status));
  m2n_status_free(status);
  return failure();
}

m2n_status_t SimWorldState::exchange(uint32_t rank, double timeout,
                                     uint64_t step,
                                     const std::vector<TransferOp> &ops,
                                     DeviceImpl &device) {
  // What the sends read is ready once the work so far is.
  m2n_status_t marked = device.mark();
  Lock lock(mutex_);
  if (!failure_.empty()) {
    m2n_status_free(marked);
    return failure();
  }
  if (marked)
    return deviceFailed(rank, marked);
  Deadline deadline = deadlineAfter(timeout);
  SendGroup group;
  for (const TransferOp &op : ops) {
    if (op.kind != TransferOp::Send)
      continue;
    mailbox(rank, op.peer)
        .push_back({step, static_cast<const uint8_t *>(op.data), op.bytes,
                    op.pulled, &group, &device});
    ++group.unfinished;
    wake_[op.peer].notify_all();
  }

  m2n_status_t status = nullptr;
  for (const TransferOp &op : ops) {
    if (op.kind != TransferOp::Receive)
      continue;
    status = receive(lock, rank, timeout, deadline, step, op, device);
    if (status)
      break;
  }
  if (!status)
    status = awaitSends(lock, rank, timeout, deadline, step, group);
  if (status) {
    withdraw(lock, rank, group);
    return status;
  }
  lock.unlock();
  // No receiver touches the group any more. The next step may overwrite
  // what they copied once their copies are done.
  for (DeviceImpl *receiver : group.receivers)
    if (m2n_status_t waited = device.waitFor(*receiver)) {
      lock.lock();
      return deviceFailed(rank, waited);
    }
  return nullptr;
}

m2n_status_t SimWorldState::receive(Lock &lock, uint32_t rank, double timeout,
                                    const Deadline &deadline, uint64_t step,
                                    const TransferOp &op, DeviceImpl &device) {
  std::deque<Posted> &box = mailbox(op.peer, rank);
  Wait wait = waitFor(lock, rank, deadline, [&] { return !box.empty(); });
  if (wait == Wait::TimedOut)
    abortLocked(rank,
                concat("timed out after ", formatSeconds(timeout), " in step ",
                       step, ", waiting for rank ", op.peer, " to send"));
  if (wait != Wait::Done)
    return failure();

  Posted posted = box.front();
  box.pop_front();
  // Left unfinished, so that the sender fails too.
  if (posted.step != step || posted.bytes != op.bytes) {
    abortLocked(rank, concat("in step ", step, " it expects ", op.bytes,
                             " bytes from rank ", op.peer, ", which sends ",
                             posted.bytes, " bytes in step ", posted.step));
    return failure();
  }
  if (posted.pulled != op.pulled) {
    abortLocked(
        rank, concat("in step ", step, " it ", op.pulled ? "pulls" : "expects",
                     " the ", op.bytes, " bytes from rank ", op.peer,
                     op.pulled ? ", which sends them through staging"
                               : " through staging, which sends them to "
                                 "be pulled"));
    return failure();
  }
  // Copy without the lock, so that ranks copy in parallel; the sender waits
  // for `copying` before its bytes may go. Published tables are read under
  // the lock: both ranks published theirs before their runs' agreement.
  ++posted.group->copying;
  const BufferTable *from = published_[op.peer], *to = published_[rank];
  lock.unlock();
  m2n_status_t status = nullptr;
  if (op.pulled) {
    for (const Walk &walk : *op.walks)
      runWalk(walk, (*from)[walk.fromBinding], (*to)[walk.toBinding]);
  } else {
    status = device.waitFor(*posted.sender);
    if (!status)
      status = device.copy(op.data, posted.data, op.bytes);
    if (!status)
      status = device.mark();
  }
  lock.lock();
  posted.group->receivers.push_back(&device);
  --posted.group->copying;
  --posted.group->unfinished;
  wake_[op.peer].notify_all(); // the sender
  if (status)
    return deviceFailed(rank, status);
  return nullptr;
}

m2n_status_t SimWorldState::awaitSends(Lock &lock, uint32_t rank,
                                       double timeout, const Deadline &deadline,
                                       uint64_t step, SendGroup &group) {
  Wait wait =
      waitFor(lock, rank, deadline, [&] { return group.unfinished == 0; });
  if (wait == Wait::Done)
    return nullptr;
  if (wait == Wait::TimedOut) {
    std::vector<uint32_t> peers;
    for (uint32_t peer = 0; peer < size_; ++peer)
      for (const Posted &posted : mailbox(rank, peer))
        if (posted.group == &group && (peers.empty() || peers.back() != peer))
          peers.push_back(peer);
    abortLocked(rank, concat("timed out after ", formatSeconds(timeout),
                             " in step ", step, ", waiting for rank ",
                             rankList(peers), " to receive"));
  }
  return failure();
}

void SimWorldState::withdraw(Lock &lock, uint32_t rank, SendGroup &group) {
  for (uint32_t peer = 0; peer < size_; ++peer) {
    std::deque<Posted> &box = mailbox(rank, peer);
    box.erase(std::remove_if(
                  box.begin(), box.end(),
                  [&](const Posted &posted) { return posted.group == &group; }),
              box.end());
  }
  // Copies in progress finish without waiting on anything.
  wake_[rank].wait(lock, [&] { return group.copying == 0; });
}

namespace {

class SimTransport final : public TransportImpl {
public:
  SimTransport(std::shared_ptr<SimWorldState> world, uint32_t rank)
      : world_(std::move(world)), rank_(rank) {}
  ~SimTransport() override { world_->detach(rank_); }

  uint32_t rank() const override { return rank_; }
  uint32_t worldSize() const override { return world_->size(); }
  const char *name() const override { return "sim"; }
  std::string cannotCarry(const DeviceImpl &) const override { return ""; }
  bool sharesAddressSpace() const override { return true; }
  void publishBuffers(const BufferTable *buffers) override {
    world_->publish(rank_, buffers);
  }
  void setTimeout(double seconds) override { timeout_ = seconds; }

  m2n_status_t agree(uint64_t planHash, bool ready, const std::string &why,
                     DeviceImpl &) override {
    std::vector<AgreeRecord> records;
    M2N_RETURN_IF_ERROR(
        world_->agree(rank_, timeout_, {planHash, ready, why}, &records));
    return agreementStatus(records);
  }

  m2n_status_t exchange(uint64_t step, const std::vector<TransferOp> &ops,
                        DeviceImpl &device) override {
    return world_->exchange(rank_, timeout_, step, ops, device);
  }

  void abort(const std::string &why) override { world_->abort(rank_, why); }

private:
  std::shared_ptr<SimWorldState> world_;
  uint32_t rank_;
  double timeout_ = M2N_TRANSPORT_DEFAULT_TIMEOUT_S;
};

} // namespace
} // namespace m2n

struct m2n_sim_world_s {
  std::shared_ptr<m2n::SimWorldState> world;
};

extern "C" {

m2n_status_t m2n_sim_world_create(int world_size, m2n_sim_world_t *out) {
  if (!out)
    return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT,
                             "m2n_sim_world_create: out is null");
  *out = nullptr;
  if (world_size < 1)
    return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT,
                             m2n::concat("m2n_sim_world_create: world size ",
                                         world_size, " is not at least 1")
                                 .c_str());
  *out = new m2n_sim_world_s{
      std::make_shared<m2n::SimWorldState>(static_cast<uint32_t>(world_size))};
  return nullptr;
}

m2n_status_t m2n_sim_world_transport(m2n_sim_world_t world, int rank,
                                     m2n_transport_t *out) {
  if (!world || !out)
    return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT,
                             "m2n_sim_world_transport: null argument");
  *out = nullptr;
  if (rank < 0 || static_cast<uint32_t>(rank) >= world->world->size())
    return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT,
                             m2n::concat("m2n_sim_world_transport: no rank ",
                                         rank, " in a world of ",
                                         world->world->size())
                                 .c_str());
  M2N_RETURN_IF_ERROR(world->world->attach(static_cast<uint32_t>(rank)));
  *out = new m2n_transport_s{std::make_unique<m2n::SimTransport>(
      world->world, static_cast<uint32_t>(rank))};
  return nullptr;
}

void m2n_sim_world_destroy(m2n_sim_world_t world) { delete world; }

} // extern "C"
