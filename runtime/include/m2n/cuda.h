/*===- m2n/cuda.h - CUDA memory and NCCL for the executor ----------*- C -*-===
 *
 * The executor (m2n/executor.h) runs a rank's part of a plan on a GPU when
 * it is created with a CUDA device: its buffers are then device memory, and
 * its work (pack and unpack kernels, the transport's sends and receives) is
 * enqueued on a CUDA stream the caller owns. What is CUDA's own is here:
 * that device, NCCL loading and unique ids, and the nccl transport over a
 * communicator of the caller's or one it creates.
 *
 *   m2n_device_t device;
 *   m2n_cuda_device_create(-1, engine_stream, 0, &device);
 *   m2n_transport_t transport;
 *   m2n_cuda_transport_create_nccl(engine_comm, &transport);
 *   m2n_executor_t exec;
 *   m2n_executor_create(plan, transport, device, &exec);
 *   m2n_device_destroy(device);
 *   m2n_executor_bind(exec, "w", M2N_ROLE_SOURCE, w_ptr, M2N_DTYPE_BF16,
 *                     2, local_shape);
 *   ... bind every shard the rank holds ...
 *   m2n_executor_run(exec);       (enqueues the refit on the stream)
 *   ...
 *   m2n_executor_destroy(exec);
 *   m2n_transport_destroy(transport);
 *
 * All ranks in one process (on one GPU or several) use the sim transport
 * (m2n/transport.h) with CUDA devices instead, one thread per rank.
 *
 * Every call returns an m2n_status_t (m2n/status.h): NULL on success.
 * docs/gpu.md describes stream semantics, NCCL loading, timeouts and CUDA
 * graph capture.
 *
 * Devices: an executor and a transport belong to the CUDA device that is
 * current when they are created (or, for an executor, its device's
 * number); their calls make it current for their own duration and restore
 * the caller's device. An executor and the transport it runs on are used
 * by one thread at a time.
 *
 *===----------------------------------------------------------------------===*/

#ifndef M2N_CUDA_H
#define M2N_CUDA_H

#include "m2n/export.h"

#include "m2n/executor.h"
#include "m2n/status.h"
#include "m2n/transport.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===--- Devices ---------------------------------------------------------===*/

/* Flags of m2n_cuda_device_create. */
#define M2N_CUDA_DEVICE_SYNCHRONIZE 1u /* runs wait until the refit is done */

/* Buffers in the memory of CUDA device `cuda_device` (-1: the current
 * one), work enqueued on `cuda_stream` (a cudaStream_t; NULL is the
 * default stream), for m2n_executor_create. `flags` is 0 or
 * M2N_CUDA_DEVICE_SYNCHRONIZE. UNAVAILABLE without a CUDA device. */
M2N_API m2n_status_t m2n_cuda_device_create(int cuda_device, void *cuda_stream,
                                            uint32_t flags, m2n_device_t *out);

/*===--- NCCL ------------------------------------------------------------===*/

/* NCCL is loaded at run time, never linked: an already loaded libnccl is
 * reused (an engine's, say PyTorch's); else the library named by the
 * environment variable M2N_NCCL_LIBRARY; else "libnccl.so.2" and
 * "libnccl.so" from the loader's search path. UNAVAILABLE, naming what was
 * tried, when none loads. */

/* Loads NCCL and reports its version code (NCCL_VERSION_CODE, e.g. 22809
 * for 2.28.9); `version` may be NULL. */
M2N_API m2n_status_t m2n_cuda_nccl_load(int *version);

#define M2N_CUDA_NCCL_UNIQUE_ID_BYTES 128

/* A new NCCL unique id (ncclGetUniqueId) into `out`, `size` >= 128 bytes.
 * One rank makes it and hands the bytes to all others out of band. */
M2N_API m2n_status_t m2n_cuda_nccl_get_unique_id(void *out, size_t size);

/*===--- The nccl transport ----------------------------------------------===*/

/* A transport over an existing ncclComm_t that the caller keeps owning:
 * plan rank r is communicator rank r. The communicator must outlive the
 * transport. The transport carries CUDA memory only. */
M2N_API m2n_status_t m2n_cuda_transport_create_nccl(void *nccl_comm,
                                                    m2n_transport_t *out);

/* A transport over a communicator it creates and destroys: `nranks` ranks
 * joined by the unique id's M2N_CUDA_NCCL_UNIQUE_ID_BYTES bytes, this one
 * being `rank`, on the current device. Waits for all ranks to join, up to
 * the timeout; the communicator is non-blocking, so that no NCCL call can
 * hang past it. */
M2N_API m2n_status_t m2n_cuda_transport_create_nccl_unique_id(
    const void *unique_id_bytes, int nranks, int rank, m2n_transport_t *out);

/* Over nccl, m2n_transport_set_timeout bounds every host wait on NCCL
 * (joining, the agreement, synchronous runs, destroying); once it passes,
 * the communicator is aborted (ncclCommAbort) and the waiting call returns
 * ABORTED. The default is the environment variable M2N_NCCL_TIMEOUT_SECONDS
 * when set, else 600 seconds. m2n_transport_abort aborts the communicator.
 * Destroy the executors that use a transport before it. */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* M2N_CUDA_H */
