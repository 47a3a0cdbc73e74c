/*===- m2n/executor.h - Executing one rank's part of a plan ---------*- C -*-===
 *
 * Every rank of a refit creates an executor over the same plan and its own
 * transport, binds its buffers (the shards the plan says it holds), and runs
 * it; all ranks run together, as often as the refit repeats:
 *
 *   m2n_executor_t exec = NULL;
 *   m2n_executor_create(plan, transport, &exec);
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
 * Buffers are host memory, row-major, holding exactly the shard's box. The
 * executor keeps the pointers until they are bound again or it is
 * destroyed; buffers must not overlap. The plan and the transport must
 * outlive the executor, and an executor is used by one thread at a time.
 *
 *===----------------------------------------------------------------------===*/

#ifndef M2N_EXECUTOR_H
#define M2N_EXECUTOR_H

#include "m2n/plan.h"
#include "m2n/status.h"
#include "m2n/transport.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct m2n_executor_s *m2n_executor_t;

/* What the last completed run did on this rank. */
typedef struct m2n_executor_stats_t {
  uint64_t bytes_sent;           /* SEND and SEND_DIRECT */
  uint64_t bytes_received;       /* RECV and RECV_DIRECT */
  uint64_t bytes_copied;         /* COPY: within the rank */
  uint64_t bytes_packed;         /* PACK: bindings into staging */
  uint64_t bytes_unpacked;       /* UNPACK: staging into bindings */
  uint64_t messages_sent;
  uint64_t messages_received;
  uint32_t steps;                /* steps in which the rank had work */
  uint32_t runs;                 /* runs completed by this executor */
  double seconds;                /* the whole run, agreement included */
  double agree_seconds;          /* the agreement alone */
} m2n_executor_stats_t;

/* An executor of `plan` for the transport's rank. The plan's world size
 * must be the transport's. Allocates the rank's staging buffer once. */
m2n_status_t m2n_executor_create(m2n_plan_t plan, m2n_transport_t transport,
                                 m2n_executor_t *out);

/* Frees `executor`; NULL is allowed. */
void m2n_executor_destroy(m2n_executor_t executor);

/* Binds `data` as this rank's shard of `tensor_name` in `role`. The rank
 * must hold such a shard in the plan, and dtype and shape (ndim dimensions:
 * the shard's local shape, not the tensor's) must be the plan's exactly.
 * `data` may be NULL only for an empty shard. Binding again replaces the
 * pointer. A failed bind leaves the shard unbound; the next run then fails
 * on every rank, with this failure in its message. */
m2n_status_t m2n_executor_bind(m2n_executor_t executor,
                               const char *tensor_name, m2n_role_t role,
                               void *data, m2n_dtype_t dtype, uint32_t ndim,
                               const int64_t *shape);

/* Runs this rank's part; every rank of the plan must run too. A failure of
 * the agreement fails every rank's run; a rank that fails later (or aborts,
 * or times out) fails the runs of the ranks still waiting on it, while
 * ranks whose part was already done return success. */
m2n_status_t m2n_executor_run(m2n_executor_t executor);

/* Called on the thread of m2n_executor_run as the rank begins each step in
 * which it has work, with the step's number, so that a caller can show how
 * far a long refit has come. It runs between the rank's exchanges, so it
 * must return quickly, and it must not call into the executor. */
typedef void (*m2n_executor_step_fn)(void *user_data, uint64_t step);

/* Calls `fn(user_data, step)` as every later run begins each of the rank's
 * steps; a NULL `fn` stops the calls. */
m2n_status_t m2n_executor_set_step_callback(m2n_executor_t executor,
                                            m2n_executor_step_fn fn,
                                            void *user_data);

/* What the last completed run did; all zero before the first. */
m2n_status_t m2n_executor_get_stats(m2n_executor_t executor,
                                    m2n_executor_stats_t *out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* M2N_EXECUTOR_H */
