/*===- m2n/transport.h - How the ranks of a refit reach each other --*- C -*-===
 *
 * A transport is one rank's end of the group of ranks that executes a plan.
 * The executor (m2n/executor.h) uses it for two things: to agree with every
 * peer, before any data moves, that all hold the same plan and are ready,
 * and to exchange each step's messages.
 *
 * Every transport is an m2n_transport_t, created by its own function and
 * destroyed with m2n_transport_destroy:
 *
 *   sim       All ranks in one process, one thread per rank: a "world"
 *             holds them, and each rank's thread takes its transport from
 *             it. Host or CUDA memory (ranks on one GPU or several). For
 *             tests and for single-process tools.
 *   mpi       One process per rank over MPI, host memory. Built when MPI was
 *             found; otherwise m2n_transport_create_mpi returns UNAVAILABLE.
 *   nccl      One process per rank over NCCL, CUDA memory (m2n/cuda.h).
 *   external  The caller moves the messages with its own library, step by
 *             step (m2n_executor_step_next in m2n/executor.h).
 *
 * Failures never hang: when a rank fails, or calls m2n_transport_abort, or
 * waits on a peer for longer than its timeout, every other rank's pending
 * and later calls return M2N_STATUS_ABORTED with a message that names the
 * rank that failed. A transport that has aborted stays aborted; destroy it.
 *
 * Under MPI, a failure leaves messages unfinished: a send cannot be
 * cancelled, and a peer may still read its buffer later. After ABORTED,
 * keep the buffers bound to the executor (and the executor, which holds
 * the staging buffer) alive, and end the job, with MPI_Abort if need be.
 *
 * A transport is used by one thread at a time.
 *
 *===----------------------------------------------------------------------===*/

#ifndef M2N_TRANSPORT_H
#define M2N_TRANSPORT_H

#include "m2n/export.h"

#include "m2n/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct m2n_transport_s *m2n_transport_t;

/* How long a rank waits for its peers, in seconds, unless it is set. */
#define M2N_TRANSPORT_DEFAULT_TIMEOUT_S 60.0

/* Frees `transport`; NULL is allowed. Ranks that still wait on this one
 * time out. */
M2N_API void m2n_transport_destroy(m2n_transport_t transport);

/* The rank of this end and the number of ranks. Either pointer may be
 * NULL. */
M2N_API m2n_status_t m2n_transport_get_rank(m2n_transport_t transport,
                                            int *rank, int *world_size);

/* How long this rank waits for a peer in one agreement or one step before
 * it gives up and aborts the group; 0 waits forever. */
M2N_API m2n_status_t m2n_transport_set_timeout(m2n_transport_t transport,
                                               double seconds);

/* Tells every peer that this rank has failed, for a reason of the caller's
 * (`why` may be NULL): their pending and later calls return ABORTED naming
 * this rank. Use it when a rank cannot go on, so that the others do not wait
 * for it until they time out. */
M2N_API m2n_status_t m2n_transport_abort(m2n_transport_t transport,
                                         const char *why);

/*===----------------------------------------------------------------------===
 * sim: every rank in this process
 *===----------------------------------------------------------------------===*/

typedef struct m2n_sim_world_s *m2n_sim_world_t;

/* A world of `world_size` >= 1 ranks. */
M2N_API m2n_status_t m2n_sim_world_create(int world_size, m2n_sim_world_t *out);

/* Rank `rank`'s transport, to be used by that rank's thread and destroyed
 * with m2n_transport_destroy. A rank has at most one transport at a time.
 * Transports keep the world alive: it may be destroyed first. */
M2N_API m2n_status_t m2n_sim_world_transport(m2n_sim_world_t world, int rank,
                                             m2n_transport_t *out);

/* Frees the caller's handle; NULL is allowed. */
M2N_API void m2n_sim_world_destroy(m2n_sim_world_t world);

/*===----------------------------------------------------------------------===
 * mpi: one process per rank
 *===----------------------------------------------------------------------===*/

/* A transport over `mpi_comm`, a pointer to an MPI_Comm, or NULL for
 * MPI_COMM_WORLD; this rank is its rank in the communicator. MPI must be
 * initialized, and stay so until the transport is destroyed. Collective:
 * every rank of the communicator calls it (the transport works on a
 * duplicate of the communicator, so its messages never meet the caller's).
 * UNAVAILABLE when this build has no MPI. */
M2N_API m2n_status_t m2n_transport_create_mpi(const void *mpi_comm,
                                              m2n_transport_t *out);

/*===----------------------------------------------------------------------===
 * external: the caller moves the messages
 *===----------------------------------------------------------------------===*/

/* Rank `rank`'s end of a group of `world_size` ranks whose messages the
 * caller moves: an executor over it is driven with m2n_executor_step_next
 * and m2n_executor_step_complete instead of m2n_executor_run. It carries
 * host and CUDA memory alike. It reaches no peer itself: its timeout is
 * unused, and m2n_transport_abort fails only this end (its later steps are
 * ABORTED); the caller tells its peers through its own library. */
M2N_API m2n_status_t m2n_transport_create_external(int rank, int world_size,
                                                   m2n_transport_t *out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* M2N_TRANSPORT_H */
