/*===- m2n/status.h - Status codes and messages of the runtime ------*- C -*-===
 *
 * Every call of the m2n runtime returns an m2n_status_t. NULL means success,
 * so the common path allocates nothing; any other value carries a code and a
 * message, and the caller owns it and frees it with m2n_status_free.
 *
 *===----------------------------------------------------------------------===*/

#ifndef M2N_STATUS_H
#define M2N_STATUS_H

#include "m2n/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum m2n_status_code_e {
  M2N_STATUS_OK = 0,
  /* A caller's argument is wrong: a null pointer, a bad name or shape. */
  M2N_STATUS_INVALID_ARGUMENT = 1,
  /* Something named does not exist: a file, a tensor, a rank. */
  M2N_STATUS_NOT_FOUND = 2,
  /* A plan or data file is truncated, corrupted or of another format. */
  M2N_STATUS_DATA_LOSS = 3,
  /* A version or feature this build does not support. */
  M2N_STATUS_UNIMPLEMENTED = 4,
  /* A library or device that is needed is not there (NCCL, a GPU). */
  M2N_STATUS_UNAVAILABLE = 5,
  /* The ranks disagree, or a peer failed or timed out. */
  M2N_STATUS_ABORTED = 6,
  /* Memory could not be allocated. */
  M2N_STATUS_RESOURCE_EXHAUSTED = 7,
  /* Reading or writing a file failed. */
  M2N_STATUS_IO_ERROR = 8,
  /* A bug in m2n. */
  M2N_STATUS_INTERNAL = 9,
} m2n_status_code_t;

typedef struct m2n_status_s *m2n_status_t;

/* A status with `code` and a copy of `message`. M2N_STATUS_OK gives NULL.
 * If memory runs out the result is a preallocated status that carries the
 * code M2N_STATUS_RESOURCE_EXHAUSTED; freeing it is harmless. */
M2N_API m2n_status_t m2n_status_create(m2n_status_code_t code,
                                       const char *message);

/* The code of `status`; M2N_STATUS_OK for NULL. */
M2N_API m2n_status_code_t m2n_status_code(m2n_status_t status);

/* The message of `status`; "" for NULL. Valid until the status is freed. */
M2N_API const char *m2n_status_message(m2n_status_t status);

/* Frees `status`; NULL is allowed. */
M2N_API void m2n_status_free(m2n_status_t status);

/* The name of `code`: "OK", "INVALID_ARGUMENT", ...; "UNKNOWN" otherwise. */
M2N_API const char *m2n_status_code_name(m2n_status_code_t code);

/* The runtime's version. Any pointer may be NULL. */
M2N_API void m2n_version(int *major, int *minor, int *patch);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* M2N_STATUS_H */
