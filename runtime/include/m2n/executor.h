/*===- m2n/executor.h - Executing one rank's part of a plan ---------*- C -*-===
 *
 * Every rank of a refit creates an executor over the same plan and its own
 * transport, binds its buffers (the shards the plan says it holds), and runs
 * it; all ranks run together, as often as the refit repeats:
 *
 *   m2n_executor_t exec = NULL;
 *   m2n_executor_create(plan, transport, NULL, &exec);   (host memory)
 *   int64_t shape[2] = {4096, 1024};
 *   m2n_executor_bind(exec, "w", M2N_ROLE_SOURCE, w, M2N_DTYPE_BF16, 2, shape);
 *   ...one bind per shard the rank holds...
 *   m2n_executor_run(exec);
 *   m2n_executor_destroy(exec);
 *
 * A run first agrees with every peer: if any rank holds a different plan or
 * has a binding left unbound, every rank's run fails (ABORTED, naming the
 * rank and why) before any data moves. Then it executes the rank's
 * instructions as docs/plan-format.md says: its local copies, then, step by
 * step, packs into the staging buffer, the step's sends and receives as one
 * exchange, and unpacks.
 *
 * Where the buffers live is said once, at creation, by a device: NULL for
 * host memory, or a CUDA device and stream (m2n_cuda_device_create in
 * m2n/cuda.h), on which the executor then enqueues its work. Everything
 * else (binding, the agreement, running, the statistics) is the same.
 *
 * Buffers are row-major, holding exactly the shard's box. The executor
 * keeps the pointers until they are bound again or it is destroyed;
 * buffers must not overlap. The plan and the transport must outlive the
 * executor, and an executor is used by one thread at a time.
 *
 * Over an external transport (m2n_transport_create_external) the caller
 * moves the messages itself: m2n_executor_step_next packs a step and hands
 * out its sends and receives, the caller moves them with its own library,
 * and m2n_executor_step_complete unpacks (see below).
 *
 *===----------------------------------------------------------------------===*/

#ifndef M2N_EXECUTOR_H
#define M2N_EXECUTOR_H

#include "m2n/export.h"

#include "m2n/plan.h"
#include "m2n/status.h"
#include "m2n/transport.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct m2n_executor_s *m2n_executor_t;

/* Where an executor's buffers live: NULL is host memory; others come from
 * their own functions (m2n_cuda_device_create). An executor copies what it
 * needs at creation, so one device may serve many executors and be
 * destroyed once they are created. */
typedef struct m2n_device_s *m2n_device_t;

/* Frees `device`; NULL is allowed. */
M2N_API void m2n_device_destroy(m2n_device_t device);

/* What the last completed run did on this rank. */
typedef struct m2n_executor_stats_t {
  uint64_t bytes_sent;     /* SEND and SEND_DIRECT */
  uint64_t bytes_received; /* RECV and RECV_DIRECT */
  uint64_t bytes_copied;   /* COPY: within the rank */
  uint64_t bytes_packed;   /* PACK: bindings into staging */
  uint64_t bytes_unpacked; /* UNPACK: staging into bindings */
  uint64_t messages_sent;
  uint64_t messages_received;
  uint32_t steps;       /* steps in which the rank had work */
  uint32_t runs;        /* runs completed by this executor */
  double seconds;       /* the whole run, agreement included */
  double agree_seconds; /* the agreement alone */
} m2n_executor_stats_t;

/* An executor of `plan` for the transport's rank, its buffers in the
 * memory of `device` (NULL: host memory). The plan's world size must be the
 * transport's, and the transport must carry that memory (mpi carries host
 * memory, nccl device memory, sim and external both). Allocates the rank's
 * staging buffer once. */
M2N_API m2n_status_t m2n_executor_create(m2n_plan_t plan,
                                         m2n_transport_t transport,
                                         m2n_device_t device,
                                         m2n_executor_t *out);

/* Frees `executor`; NULL is allowed. */
M2N_API void m2n_executor_destroy(m2n_executor_t executor);

/* Binds `data` as this rank's shard of `tensor_name` in `role`. The rank
 * must hold such a shard in the plan, and dtype and shape (ndim dimensions:
 * the shard's local shape, not the tensor's) must be the plan's exactly.
 * `data` may be NULL only for an empty shard, and must be memory of the
 * executor's device. Binding again replaces the pointer. A failed bind
 * leaves the shard unbound; the next run then fails on every rank, with
 * this failure in its message. On a CUDA device, binding first waits for
 * the stream's earlier runs. */
M2N_API m2n_status_t m2n_executor_bind(m2n_executor_t executor,
                                       const char *tensor_name, m2n_role_t role,
                                       void *data, m2n_dtype_t dtype,
                                       uint32_t ndim, const int64_t *shape);

/* Runs this rank's part; every rank of the plan must run too. A failure of
 * the agreement fails every rank's run; a rank that fails later (or aborts,
 * or times out) fails the runs of the ranks still waiting on it, while
 * ranks whose part was already done return success. On a CUDA device the
 * run is enqueued on the device's stream, and returns before it is done
 * unless the device synchronizes (M2N_CUDA_DEVICE_SYNCHRONIZE). Not for an
 * external transport's executor, which runs step by step (below). */
M2N_API m2n_status_t m2n_executor_run(m2n_executor_t executor);

/* Called on the thread of m2n_executor_run as the rank begins each step in
 * which it has work, with the step's number, so that a caller can show how
 * far a long refit has come. It runs between the rank's exchanges, so it
 * must return quickly, and it must not call into the executor. */
typedef void (*m2n_executor_step_fn)(void *user_data, uint64_t step);

/* Calls `fn(user_data, step)` as every later run begins each of the rank's
 * steps; a NULL `fn` stops the calls. */
M2N_API m2n_status_t m2n_executor_set_step_callback(m2n_executor_t executor,
                                                    m2n_executor_step_fn fn,
                                                    void *user_data);

/* What the last completed run did; all zero before the first. */
M2N_API m2n_status_t m2n_executor_get_stats(m2n_executor_t executor,
                                            m2n_executor_stats_t *out);

/*===----------------------------------------------------------------------===
 * Step by step, over an external transport
 *
 * The caller's own library moves the messages (torch.distributed, UCX, an
 * RDMA engine). A run is a sequence of exchanges, each handed out whole:
 *
 *   m2n_exchange_t x;
 *   for (;;) {
 *     m2n_executor_step_next(exec, &x);        packs x's step
 *     if (x.done) break;                       the run is complete
 *     ...post every send and receive of x as one batch, wait for all...
 *     m2n_executor_step_complete(exec, x.step, x.send_count,
 *                                x.receive_count);   unpacks
 *   }
 *
 * The first exchange of every run is the agreement (step
 * M2N_STEP_AGREEMENT): each rank sends a record of
 * M2N_AGREEMENT_RECORD_BYTES to every peer and receives one from each;
 * completing it checks, as m2n_executor_run does, that every rank holds the
 * same plan and is ready, and fails with ABORTED naming each rank that is
 * not, on every rank alike, before any data moves. Then come the steps in
 * which the rank has work, in order.
 *
 * Messages between two ranks match in order: the k-th send of rank a to
 * rank b in an exchange is the k-th receive of b from a, of the same size.
 * Every buffer is memory of the executor's device. On a CUDA device the
 * packs of a step are enqueued on the device's stream: the caller's sends
 * must be ordered after the stream's work (post them on that stream, or
 * wait for it), and its receives must be complete, or enqueued on that
 * stream, when it completes the step; the unpacks follow on the stream.
 * The agreement's completion waits for the stream.
 *
 * Bad use fails with INVALID_ARGUMENT and ends the run (the next
 * m2n_executor_step_next begins a new one, with its agreement): asking for
 * the next exchange while one is open, completing another step than the
 * open one, or completing with fewer sends or receives moved than handed
 * out.
 *===----------------------------------------------------------------------===*/

/* The step number of the agreement exchange. */
#define M2N_STEP_AGREEMENT UINT64_MAX
/* The size of each agreement message. */
#define M2N_AGREEMENT_RECORD_BYTES 256

/* One message of an exchange: `bytes` at `data`, to or from rank `peer`. */
typedef struct m2n_message_t {
  uint32_t peer;
  void *data;
  uint64_t bytes;
} m2n_message_t;

/* One exchange: a step's sends and receives, each in record order. The
 * arrays and buffers stay valid until the exchange is completed. */
typedef struct m2n_exchange_t {
  uint64_t step; /* the plan's step, or M2N_STEP_AGREEMENT */
  int done;      /* 1: the run is complete; nothing else is set */
  uint32_t send_count;
  uint32_t receive_count;
  const m2n_message_t *sends;
  const m2n_message_t *receives;
} m2n_exchange_t;

/* Begins the run if none is in progress (the agreement comes first), else
 * packs the next step with work; or, after the last, sets `done`, ends the
 * run and records its statistics. */
M2N_API m2n_status_t m2n_executor_step_next(m2n_executor_t executor,
                                            m2n_exchange_t *out);

/* Completes the open exchange, step `step`, once the caller has moved
 * `sends_moved` of its sends and `receives_moved` of its receives (all of
 * them): checks the agreement, or unpacks the step. */
M2N_API m2n_status_t m2n_executor_step_complete(m2n_executor_t executor,
                                                uint64_t step,
                                                uint32_t sends_moved,
                                                uint32_t receives_moved);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* M2N_EXECUTOR_H */
