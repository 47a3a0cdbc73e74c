//===- nccl_loader.cpp - NCCL, loaded at run time -------------------------===//

#include "cuda/nccl_loader.h"

#include "plan_internal.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace m2n::cuda {
namespace {

// Sonames first: the engine's copy is loaded under one of them.
constexpr const char *kDefaultNames[] = {"libnccl.so.2", "libnccl.so"};

// An NCCL already in the process (an engine's), which the GPU path must
// share: its communicators are only valid in that copy.
void *findLoaded(std::string *tried) {
  for (const char *name : kDefaultNames) {
    if (void *handle = dlopen(name, RTLD_NOW | RTLD_NOLOAD))
      return handle;
  }
  *tried += "no libnccl loaded in the process";
  return nullptr;
}

void *openNamed(const char *name, std::string *tried) {
  if (void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL))
    return handle;
  const char *error = dlerror();
  *tried += concat("; ", name, ": ", error ? error : "not found");
  return nullptr;
}

void *openLibrary(std::string *tried) {
  if (void *handle = findLoaded(tried))
    return handle;
  // An explicit choice is not second-guessed with another library.
  if (const char *path = std::getenv("M2N_NCCL_LIBRARY"); path && *path)
    return openNamed(path, tried);
  for (const char *name : kDefaultNames) {
    if (void *handle = openNamed(name, tried))
      return handle;
  }
  return nullptr;
}

template <typename T>
bool resolve(void *handle, const char *name, T *out,
             std::vector<std::string> *missing) {
  *out = reinterpret_cast<T>(dlsym(handle, name));
  if (!*out)
    missing->push_back(name);
  return *out != nullptr;
}

m2n_status_t resolveAll(void *handle, NcclApi *api) {
  std::vector<std::string> missing;
  resolve(handle, "ncclGetVersion", &api->getVersion, &missing);
  resolve(handle, "ncclGetUniqueId", &api->getUniqueId, &missing);
  resolve(handle, "ncclCommInitRankConfig", &api->commInitRankConfig, &missing);
  resolve(handle, "ncclCommFinalize", &api->commFinalize, &missing);
  resolve(handle, "ncclCommDestroy", &api->commDestroy, &missing);
  resolve(handle, "ncclCommAbort", &api->commAbort, &missing);
  resolve(handle, "ncclCommGetAsyncError", &api->commGetAsyncError, &missing);
  resolve(handle, "ncclCommCount", &api->commCount, &missing);
  resolve(handle, "ncclCommUserRank", &api->commUserRank, &missing);
  resolve(handle, "ncclCommCuDevice", &api->commCuDevice, &missing);
  resolve(handle, "ncclGetErrorString", &api->getErrorString, &missing);
  resolve(handle, "ncclGetLastError", &api->getLastError, &missing);
  resolve(handle, "ncclGroupStart", &api->groupStart, &missing);
  resolve(handle, "ncclGroupEnd", &api->groupEnd, &missing);
  resolve(handle, "ncclSend", &api->send, &missing);
  resolve(handle, "ncclRecv", &api->recv, &missing);
  resolve(handle, "ncclAllGather", &api->allGather, &missing);
  if (!missing.empty()) {
    std::string names;
    for (const std::string &name : missing)
      names += (names.empty() ? "" : ", ") + name;
    std::string message = concat("NCCL: the loaded libnccl lacks ", names,
                                 " (m2n needs NCCL 2.14 or newer)");
    return m2n_status_create(M2N_STATUS_UNAVAILABLE, message.c_str());
  }
  if (api->getVersion(&api->version) != ncclSuccess)
    return m2n_status_create(M2N_STATUS_UNAVAILABLE,
                             "NCCL: ncclGetVersion failed");
  return nullptr;
}

} // namespace

m2n_status_t loadNccl(const NcclApi **out) {
  static std::mutex mutex;
  static NcclApi api;
  static bool loaded = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (!loaded) {
    std::string tried;
    void *handle = openLibrary(&tried);
    if (!handle) {
      std::string message = concat("NCCL is not available (", tried,
                                   "); set M2N_NCCL_LIBRARY to libnccl.so.2's "
                                   "path");
      return m2n_status_create(M2N_STATUS_UNAVAILABLE, message.c_str());
    }
    // The library stays loaded for the life of the process: communicators
    // made with it may outlive any one caller.
    M2N_RETURN_IF_ERROR(resolveAll(handle, &api));
    loaded = true;
  }
  *out = &api;
  return nullptr;
}

} // namespace m2n::cuda
