//===- status.cpp - Status codes and messages of the runtime --------------===//

#include "m2n/status.h"

#include <cstdlib>
#include <cstring>
#include <new>

struct m2n_status_s {
  m2n_status_code_t code;
  char *message;
};

namespace {

// Returned when a status itself cannot be allocated; never freed.
m2n_status_s outOfMemory{M2N_STATUS_RESOURCE_EXHAUSTED,
                         const_cast<char *>("out of memory")};

} // namespace

extern "C" {

m2n_status_t m2n_status_create(m2n_status_code_t code, const char *message) {
  if (code == M2N_STATUS_OK)
    return nullptr;
  auto *status = new (std::nothrow) m2n_status_s{code, nullptr};
  if (!status)
    return &outOfMemory;
  const char *text = message ? message : "";
  status->message = static_cast<char *>(std::malloc(std::strlen(text) + 1));
  if (!status->message) {
    delete status;
    return &outOfMemory;
  }
  std::strcpy(status->message, text);
  return status;
}

m2n_status_code_t m2n_status_code(m2n_status_t status) {
  return status ? status->code : M2N_STATUS_OK;
}

const char *m2n_status_message(m2n_status_t status) {
  return status ? status->message : "";
}

void m2n_status_free(m2n_status_t status) {
  if (!status || status == &outOfMemory)
    return;
  std::free(status->message);
  delete status;
}

const char *m2n_status_code_name(m2n_status_code_t code) {
  switch (code) {
  case M2N_STATUS_OK:
    return "OK";
  case M2N_STATUS_INVALID_ARGUMENT:
    return "INVALID_ARGUMENT";
  case M2N_STATUS_NOT_FOUND:
    return "NOT_FOUND";
  case M2N_STATUS_DATA_LOSS:
    return "DATA_LOSS";
  case M2N_STATUS_UNIMPLEMENTED:
    return "UNIMPLEMENTED";
  case M2N_STATUS_UNAVAILABLE:
    return "UNAVAILABLE";
  case M2N_STATUS_ABORTED:
    return "ABORTED";
  case M2N_STATUS_RESOURCE_EXHAUSTED:
    return "RESOURCE_EXHAUSTED";
  case M2N_STATUS_IO_ERROR:
    return "IO_ERROR";
  case M2N_STATUS_INTERNAL:
    return "INTERNAL";
  }
  return "UNKNOWN";
}

void m2n_version(int *major, int *minor, int *patch) {
  if (major)
    *major = M2N_VERSION_MAJOR;
  if (minor)
    *minor = M2N_VERSION_MINOR;
  if (patch)
    *patch = M2N_VERSION_PATCH;
}

} // extern "C"
