//===- nccl_loader.h - NCCL, loaded at run time ------------------*- C++
//-*-===//
//
// The runtime never links libnccl: an engine brings its own NCCL (PyTorch's
// wheel, a system one), and two copies in one process do not mix. The
// loader finds the library with dlopen and resolves the few functions the
// GPU path calls; the types come from nccl.h.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_CUDA_NCCL_LOADER_H
#define M2N_CUDA_NCCL_LOADER_H

#include "m2n/status.h"

#include <nccl.h>

namespace m2n::cuda {

/// The NCCL functions the GPU path uses, resolved from the loaded library.
struct NcclApi {
  decltype(&::ncclGetVersion) getVersion;
  decltype(&::ncclGetUniqueId) getUniqueId;
  decltype(&::ncclCommInitRankConfig) commInitRankConfig;
  decltype(&::ncclCommFinalize) commFinalize;
  decltype(&::ncclCommDestroy) commDestroy;
  decltype(&::ncclCommAbort) commAbort;
  decltype(&::ncclCommGetAsyncError) commGetAsyncError;
  decltype(&::ncclCommCount) commCount;
  decltype(&::ncclCommUserRank) commUserRank;
  decltype(&::ncclCommCuDevice) commCuDevice;
  decltype(&::ncclGetErrorString) getErrorString;
  decltype(&::ncclGetLastError) getLastError;
  decltype(&::ncclGroupStart) groupStart;
  decltype(&::ncclGroupEnd) groupEnd;
  decltype(&::ncclSend) send;
  decltype(&::ncclRecv) recv;
  decltype(&::ncclAllGather) allGather;
  /// The library's NCCL_VERSION_CODE.
  int version;
};

/// The process's NCCL, loaded on first use: a libnccl already in the
/// process, else $M2N_NCCL_LIBRARY, else libnccl.so.2 and libnccl.so from
/// the search path. A failure is UNAVAILABLE with what was tried, and is
/// not remembered, so that a later call may succeed. The table lives as
/// long as the process.
m2n_status_t loadNccl(const NcclApi **out);

} // namespace m2n::cuda

#endif // M2N_CUDA_NCCL_LOADER_H
