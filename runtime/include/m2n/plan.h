/*===- m2n/plan.h - Loading and inspecting compiled plans -----------*- C -*-===
 *
 * A plan is the compiler's output (m2n/plan_format.h). Loading validates
 * the whole file, so that a loaded plan can be executed without further
 * checks: no instruction of a loaded plan reads or writes outside its
 * bindings or its rank's staging buffer, and the ranks agree on every
 * message. A loaded plan is immutable and may be read from many threads.
 *
 *   m2n_plan_t plan = NULL;
 *   m2n_status_t status = m2n_plan_load_file("refit.m2n", &plan);
 *   if (status) { report it; m2n_status_free(status); return; }
 *   m2n_plan_info_t info;
 *   m2n_plan_get_info(plan, &info);
 *   ...
 *   m2n_plan_destroy(plan);
 *
 * Errors are DATA_LOSS for a truncated, corrupted or inconsistent plan,
 * UNIMPLEMENTED for another major version of the format, INVALID_ARGUMENT
 * for something that is not a plan (or a bad argument), NOT_FOUND and
 * IO_ERROR for files; messages name the file (or "<memory>") and the byte
 * offset of what is wrong.
 *
 *===----------------------------------------------------------------------===*/

#ifndef M2N_PLAN_H
#define M2N_PLAN_H

#include "m2n/export.h"

#include "m2n/plan_format.h"
#include "m2n/status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct m2n_plan_s *m2n_plan_t;

/* The plan as a whole: its header. */
typedef struct m2n_plan_info_t {
  uint16_t version_major;
  uint16_t version_minor;
  uint32_t world_size;
  uint32_t tensor_count;
  uint32_t step_count;
  uint64_t staging_budget;
  uint64_t content_hash;
  uint64_t file_size;
  /* The compiler's summary; see m2n_plan_header_t. */
  uint64_t wire_bytes;
  uint64_t local_copy_bytes;
  uint64_t message_count;
  uint64_t predicted_ns;
  uint64_t lower_bound_ns;
} m2n_plan_info_t;

typedef struct m2n_plan_tensor_info_t {
  /* Not NUL-terminated; valid until the plan is destroyed. */
  const char *name;
  size_t name_size;
  m2n_dtype_t dtype;
  uint32_t rank;                    /* dimensions */
  int64_t shape[M2N_PLAN_MAX_RANK]; /* unused dimensions 0 */
} m2n_plan_tensor_info_t;

/* A rank's share of the plan; all zero for a rank without work. */
typedef struct m2n_plan_rank_info_t {
  uint32_t binding_count;
  uint32_t instruction_count;
  uint64_t staging_bytes;
  uint64_t send_bytes;
  uint64_t receive_bytes;
} m2n_plan_rank_info_t;

/* A shard of a tensor that a rank holds: the box [offset, offset + shape)
 * of the tensor, as a row-major buffer of byte_size bytes. */
typedef struct m2n_plan_binding_info_t {
  uint32_t tensor;
  m2n_role_t role;
  uint64_t byte_size;
  int64_t offset[M2N_PLAN_MAX_RANK]; /* unused dimensions 0 */
  int64_t shape[M2N_PLAN_MAX_RANK];
} m2n_plan_binding_info_t;

/* Maps the file at `path` read-only and validates it. The file must not
 * change while the plan is loaded. On failure *out is NULL. */
M2N_API m2n_status_t m2n_plan_load_file(const char *path, m2n_plan_t *out);

/* Copies `size` bytes at `data` and validates them; `data` may be freed
 * once this returns. On failure *out is NULL. */
M2N_API m2n_status_t m2n_plan_load_memory(const void *data, size_t size,
                                          m2n_plan_t *out);

/* Loading checks the file's structure, so that running it stays within
 * its buffers, and then proves what it computes: every destination byte
 * written exactly once with the right element, from data its sender holds
 * or received in an earlier step, within the staging budget (DATA_LOSS
 * otherwise). M2N_PLAN_LOAD_TRUSTED skips the proof, for a plan that this
 * process compiled and the compiler verified; the structural checks always
 * run. */
#define M2N_PLAN_LOAD_TRUSTED 1u

/* m2n_plan_load_file and m2n_plan_load_memory with `flags`, 0 or
 * M2N_PLAN_LOAD_TRUSTED; INVALID_ARGUMENT for any other bit. */
M2N_API m2n_status_t m2n_plan_load_file_flags(const char *path, uint32_t flags,
                                              m2n_plan_t *out);
M2N_API m2n_status_t m2n_plan_load_memory_flags(const void *data, size_t size,
                                                uint32_t flags,
                                                m2n_plan_t *out);

/* Frees `plan` and unmaps its file; NULL is allowed. */
M2N_API void m2n_plan_destroy(m2n_plan_t plan);

M2N_API m2n_status_t m2n_plan_get_info(m2n_plan_t plan, m2n_plan_info_t *out);

/* NOT_FOUND when `index` >= tensor_count. */
M2N_API m2n_status_t m2n_plan_get_tensor(m2n_plan_t plan, uint32_t index,
                                         m2n_plan_tensor_info_t *out);

/* NOT_FOUND when `rank` >= world_size. */
M2N_API m2n_status_t m2n_plan_get_rank(m2n_plan_t plan, uint32_t rank,
                                       m2n_plan_rank_info_t *out);

/* NOT_FOUND when `rank` or `index` is out of range. */
M2N_API m2n_status_t m2n_plan_get_binding(m2n_plan_t plan, uint32_t rank,
                                          uint32_t index,
                                          m2n_plan_binding_info_t *out);

/* The index of the tensor named `name` (NUL-terminated); NOT_FOUND if
 * there is none. */
M2N_API m2n_status_t m2n_plan_find_tensor(m2n_plan_t plan, const char *name,
                                          uint32_t *index);

/* The plan as text (docs/plan-format.md gives the format): the header and
 * tensors, then every rank with work when `rank` is -1, or only `rank`.
 * The caller frees *text with m2n_free. */
M2N_API m2n_status_t m2n_plan_disassemble(m2n_plan_t plan, int rank,
                                          char **text);

/* Frees memory that the runtime returned; NULL is allowed. */
M2N_API void m2n_free(void *pointer);

/* The safetensors name of `dtype` ("BF16", "F32", ...); "UNKNOWN" for a
 * value that is not a dtype. */
M2N_API const char *m2n_dtype_name(m2n_dtype_t dtype);

/* Bytes per element of `dtype`; 0 for a value that is not a dtype. */
M2N_API int64_t m2n_dtype_size(m2n_dtype_t dtype);

/* The dtype with safetensors name `name`; INVALID_ARGUMENT if none. */
M2N_API m2n_status_t m2n_dtype_from_name(const char *name, m2n_dtype_t *out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* M2N_PLAN_H */
