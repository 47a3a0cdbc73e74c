/*===- m2n/cuda.h - Executing plans on NVIDIA GPUs -------------------*- C
 *-*-===
 *
 * Each rank of a refit runs its part of a loaded plan (m2n/plan.h) on the
 * GPU, on a CUDA stream the caller owns: an inference engine passes its own
 * stream and, through a transport, its own NCCL communicator.
 *
 *   m2n_cuda_transport_t transport;
 *   m2n_cuda_transport_create_nccl(engine_comm, &transport);
 *   m2n_cuda_executor_t exec;
 *   m2n_cuda_executor_create(plan, my_rank, transport, engine_stream, &exec);
 *   m2n_cuda_executor_bind(exec, "w", M2N_ROLE_SOURCE, w_ptr, M2N_DTYPE_BF16,
 *                          2, local_shape);
 *   ... bind every shard the rank holds ...
 *   m2n_cuda_executor_run(exec);       (enqueues the refit on the stream)
 *   ...
 *   m2n_cuda_executor_destroy(exec);
 *   m2n_cuda_transport_destroy(transport);
 *
 * Every call returns an m2n_status_t (m2n/status.h): NULL on success.
 * docs/gpu.md describes stream semantics, NCCL loading, timeouts and CUDA
 * graph capture.
 *
 * Devices: an executor and a transport belong to the CUDA device that is
 * current when they are created; the calls below make it current for their
 * own duration and restore the caller's device. Objects of this header are
 * not thread-safe: one thread at a time may use an executor and the
 * transports it runs on.
 *
 *===----------------------------------------------------------------------===*/

#ifndef M2N_CUDA_H
#define M2N_CUDA_H

#include "m2n/plan.h"
#include "m2n/status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct m2n_cuda_transport_s *m2n_cuda_transport_t;
typedef struct m2n_cuda_executor_s *m2n_cuda_executor_t;

/*===--- NCCL ------------------------------------------------------------===*/

/* NCCL is loaded at run time, never linked: an already loaded libnccl is
 * reused (an engine's, say PyTorch's); else the library named by the
 * environment variable M2N_NCCL_LIBRARY; else "libnccl.so.2" and
 * "libnccl.so" from the loader's search path. UNAVAILABLE, naming what was
 * tried, when none loads. */

/* Loads NCCL and reports its version code (NCCL_VERSION_CODE, e.g. 22809
 * for 2.28.9); `version` may be NULL. */
m2n_status_t m2n_cuda_nccl_load(int *version);

#define M2N_CUDA_NCCL_UNIQUE_ID_BYTES 128

/* A new NCCL unique id (ncclGetUniqueId) into `out`, `size` >= 128 bytes.
 * One rank makes it and hands the bytes to all others out of band. */
m2n_status_t m2n_cuda_nccl_get_unique_id(void *out, size_t size);

/*===--- Transports -------------------------------------------------------===*/

/* A transport over an existing ncclComm_t that the caller keeps owning:
 * plan rank r is communicator rank r, and the communicator has exactly the
 * plan's world size. The communicator must outlive the transport. */
m2n_status_t m2n_cuda_transport_create_nccl(void *nccl_comm,
                                            m2n_cuda_transport_t *out);

/* A transport over a communicator it creates and destroys: `nranks` ranks
 * joined by the unique id's M2N_CUDA_NCCL_UNIQUE_ID_BYTES bytes, this one
 * being `rank`, on the current device. Waits for all ranks to join, up to
 * the timeout (below); the communicator is non-blocking, so that no NCCL
 * call can hang past it. */
m2n_status_t
m2n_cuda_transport_create_nccl_unique_id(const void *unique_id_bytes,
                                         int nranks, int rank,
                                         m2n_cuda_transport_t *out);

/* How long a host wait on NCCL may last before the communicator is aborted
 * (ncclCommAbort) and the waiting call returns ABORTED: joining, the first
 * run's agreement, synchronous runs, destroying. 0 waits forever. The
 * default is the environment variable M2N_NCCL_TIMEOUT_SECONDS when set,
 * else 600 seconds. */
m2n_status_t m2n_cuda_transport_set_timeout_ms(m2n_cuda_transport_t transport,
                                               int64_t milliseconds);

/* Frees the transport, destroying the communicator if it created it; NULL
 * is allowed. Destroy the executors that use it first. */
void m2n_cuda_transport_destroy(m2n_cuda_transport_t transport);

/*===--- Executors --------------------------------------------------------===*/

/* An executor for `rank` of `plan`, enqueueing on `cuda_stream` (a
 * cudaStream_t; NULL is the default stream). `plan` must outlive it.
 * `transport` carries the rank's messages; NULL means the local world: all
 * ranks of the plan in this process, run together by
 * m2n_cuda_local_world_run (a one-rank plan may also use
 * m2n_cuda_executor_run). Allocates the rank's staging buffer and its
 * instruction tables on the device, once. */
m2n_status_t m2n_cuda_executor_create(m2n_plan_t plan, uint32_t rank,
                                      m2n_cuda_transport_t transport,
                                      void *cuda_stream,
                                      m2n_cuda_executor_t *out);

/* Binds the shard of tensor `name` that the rank holds in `role` to device
 * memory at `device_ptr`: `dtype` and the local shape (`ndim` dimensions
 * at `shape`) must be the plan's, and the buffer row-major and dense. NULL
 * is allowed for an empty shard only. Binding waits for the executor's
 * stream to finish earlier runs, so that none of them sees the change;
 * graphs captured before a rebinding keep the old pointers. */
m2n_status_t m2n_cuda_executor_bind(m2n_cuda_executor_t exec, const char *name,
                                    m2n_role_t role, void *device_ptr,
                                    m2n_dtype_t dtype, uint32_t ndim,
                                    const int64_t *shape);

typedef enum m2n_cuda_option_e {
  /* 0 (default): run only enqueues the refit on the stream. 1: run also
   * waits for it to finish (within the transport's timeout for NCCL). */
  M2N_CUDA_OPTION_SYNCHRONIZE = 1,
} m2n_cuda_option_t;

m2n_status_t m2n_cuda_executor_set_option(m2n_cuda_executor_t exec,
                                          m2n_cuda_option_t option,
                                          int64_t value);

/* Enqueues the rank's refit on its stream: the local copies, then per step
 * the packs, the step's sends and receives, and the unpacks. Every shard
 * the rank holds must be bound. Every rank of the plan's world must run,
 * ranks without work included: the first run checks across ranks that all
 * run the same plan (a mismatch fails every rank with ABORTED), and waits
 * for that agreement. Later runs without M2N_CUDA_OPTION_SYNCHRONIZE
 * neither allocate nor wait, and may be captured into a CUDA graph. */
m2n_status_t m2n_cuda_executor_run(m2n_cuda_executor_t exec);

/* Runs every rank of a local world: `count` executors created with a NULL
 * transport, one per rank of the same plan, in any order, on one device.
 * Each rank's work goes on its own stream; streams synchronise with events
 * and messages are device-to-device copies. To capture the whole refit into
 * a CUDA graph, capture on the stream of rank 0's executor. */
m2n_status_t m2n_cuda_local_world_run(const m2n_cuda_executor_t *executors,
                                      uint32_t count);

/* Frees the executor's device memory; NULL is allowed. Waits for its
 * stream's earlier work first. */
void m2n_cuda_executor_destroy(m2n_cuda_executor_t exec);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* M2N_CUDA_H */
