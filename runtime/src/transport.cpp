//===- transport.cpp - What all transports share; their C API -------------===//

#include "transport.h"

#include "plan_internal.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace m2n {

m2n_status_t agreementStatus(const std::vector<AgreeRecord> &records) {
  std::string message;
  auto add = [&](const std::string &problem) {
    if (!message.empty())
      message += "; ";
    message += problem;
  };
  // Rank 0's plan is the reference, so that every rank words it the same.
  uint64_t expected = records.empty() ? 0 : records[0].planHash;
  for (uint32_t rank = 0; rank < records.size(); ++rank) {
    const AgreeRecord &record = records[rank];
    if (record.planHash != expected)
      add(concat("rank ", rank, " holds a different plan than rank 0 (hash ",
                 hex64(record.planHash), " vs ", hex64(expected), ")"));
    else if (!record.ready)
      add(concat("rank ", rank, " is not ready: ", record.why));
  }
  if (message.empty())
    return nullptr;
  return m2n_status_create(M2N_STATUS_ABORTED, message.c_str());
}

AgreeNotice agreeNotice(const AgreeRecord &record) {
  AgreeNotice notice = {};
  notice.planHash = record.planHash;
  notice.ready = record.ready ? 1 : 0;
  std::string fitted = record.why;
  if (fitted.size() > sizeof(notice.text))
    fitted = fitted.substr(0, sizeof(notice.text) - 3) + "...";
  notice.textSize = static_cast<uint32_t>(fitted.size());
  std::memcpy(notice.text, fitted.data(), fitted.size());
  return notice;
}

AgreeRecord agreeRecord(const AgreeNotice &notice) {
  return {notice.planHash, notice.ready != 0,
          std::string(notice.text, std::min<size_t>(notice.textSize,
                                                    sizeof(notice.text)))};
}

std::string formatSeconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g s", seconds);
  return text;
}

std::string failedRankMessage(uint32_t rank, const std::string &why) {
  return concat("rank ", rank, " failed: ", why);
}

} // namespace m2n

namespace {

m2n_status_t nullArgument(const char *function) {
  return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT,
                           m2n::concat(function, ": null argument").c_str());
}

} // namespace

extern "C" {

void m2n_transport_destroy(m2n_transport_t transport) { delete transport; }

m2n_status_t m2n_transport_get_rank(m2n_transport_t transport, int *rank,
                                    int *world_size) {
  if (!transport)
    return nullArgument("m2n_transport_get_rank");
  if (rank)
    *rank = static_cast<int>(transport->impl->rank());
  if (world_size)
    *world_size = static_cast<int>(transport->impl->worldSize());
  return nullptr;
}

m2n_status_t m2n_transport_set_timeout(m2n_transport_t transport,
                                       double seconds) {
  if (!transport)
    return nullArgument("m2n_transport_set_timeout");
  // Negated so that NaN is rejected too.
  if (!(seconds >= 0))
    return m2n_status_create(
        M2N_STATUS_INVALID_ARGUMENT,
        "m2n_transport_set_timeout: the timeout must be >= 0 seconds");
  transport->impl->setTimeout(seconds);
  return nullptr;
}

m2n_status_t m2n_transport_abort(m2n_transport_t transport, const char *why) {
  if (!transport)
    return nullArgument("m2n_transport_abort");
  transport->impl->abort(why && *why ? why : "aborted by the caller");
  return nullptr;
}

m2n_status_t m2n_transport_create_mpi(const void *mpi_comm,
                                      m2n_transport_t *out) {
  if (!out)
    return nullArgument("m2n_transport_create_mpi");
  *out = nullptr;
  // Pieces of 1 GiB stay below MPI's int counts.
  constexpr uint64_t kMaxMessageBytes = uint64_t(1) << 30;
  std::unique_ptr<m2n::TransportImpl> impl;
  M2N_RETURN_IF_ERROR(
      m2n::createMpiTransport(mpi_comm, kMaxMessageBytes, &impl));
  *out = new m2n_transport_s{std::move(impl)};
  return nullptr;
}

} // extern "C"
