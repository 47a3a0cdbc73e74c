/*===- m2n/safetensors.h - Reading and writing safetensors files ----*- C -*-===
 *
 * Checkpoints in the safetensors format (https://github.com/huggingface/
 * safetensors): an 8-byte little-endian header length N, N bytes of JSON
 * naming each tensor's dtype, shape and data_offsets within the data that
 * follows, then the data, row-major and little-endian. For offline
 * resharding: load a rank's shards, bind them to an executor, write the
 * results.
 *
 *   m2n_safetensors_t file = NULL;
 *   m2n_safetensors_load_file("rank0.safetensors", &file);
 *   m2n_safetensors_tensor_t w;
 *   m2n_safetensors_find_tensor(file, "w", &w);   (w.data, w.byte_size, ...)
 *   m2n_safetensors_destroy(file);
 *
 * Loading validates the whole header: its JSON (objects, arrays, strings,
 * integers; nothing malformed, no duplicate keys), every dtype, shape and
 * data_offsets, and that the tensors cover the data exactly, without gaps
 * or overlaps, as the format requires. Errors are DATA_LOSS (UNIMPLEMENTED
 * for a dtype m2n does not know, or more than 8 dimensions), NOT_FOUND and
 * IO_ERROR for files, and name the file, the tensor and, in the JSON, the
 * byte offset:
 *
 *   ckpt/rank3.safetensors: tensor "w": data_offsets [0, 80) do not match
 *     shape [4, 6] of F32 (96 bytes expected, 80 given)
 *
 * Writing is atomic: the file appears whole, or an existing one stays as
 * it was.
 *
 *===----------------------------------------------------------------------===*/

#ifndef M2N_SAFETENSORS_H
#define M2N_SAFETENSORS_H

#include "m2n/export.h"

#include "m2n/plan_format.h"
#include "m2n/status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct m2n_safetensors_s *m2n_safetensors_t;

/* A tensor of a file. */
typedef struct m2n_safetensors_tensor_t {
  const char *name; /* NUL-terminated */
  m2n_dtype_t dtype;
  uint32_t ndim;                    /* 0 .. M2N_PLAN_MAX_RANK */
  int64_t shape[M2N_PLAN_MAX_RANK]; /* unused dimensions 0 */
  const void *data;                 /* row-major, little-endian */
  uint64_t byte_size;               /* elements times the dtype's size */
} m2n_safetensors_tensor_t;

/* An entry of the file's "__metadata__": free-form strings. */
typedef struct m2n_safetensors_metadata_t {
  const char *key;
  const char *value;
} m2n_safetensors_metadata_t;

/* Maps the file at `path` read-only and validates it. The file must not
 * change while it is loaded. On failure *out is NULL. */
M2N_API m2n_status_t m2n_safetensors_load_file(const char *path,
                                               m2n_safetensors_t *out);

/* Frees `file` and unmaps it; NULL is allowed. */
M2N_API void m2n_safetensors_destroy(m2n_safetensors_t file);

/* The number of tensors, and of metadata entries; 0 for NULL. */
M2N_API size_t m2n_safetensors_tensor_count(m2n_safetensors_t file);
M2N_API size_t m2n_safetensors_metadata_count(m2n_safetensors_t file);

/* Tensor `index`, in order of name (bytewise); names, shapes and data stay
 * valid until the file is destroyed. NOT_FOUND past the end. */
M2N_API m2n_status_t m2n_safetensors_get_tensor(m2n_safetensors_t file,
                                                size_t index,
                                                m2n_safetensors_tensor_t *out);

/* The tensor named `name`; NOT_FOUND if there is none. */
M2N_API m2n_status_t m2n_safetensors_find_tensor(m2n_safetensors_t file,
                                                 const char *name,
                                                 m2n_safetensors_tensor_t *out);

/* Metadata entry `index`, in order of key. NOT_FOUND past the end. */
M2N_API m2n_status_t m2n_safetensors_get_metadata(
    m2n_safetensors_t file, size_t index, m2n_safetensors_metadata_t *out);

/* Writes `tensors` and `metadata` (either may be empty) to `path`. Names
 * must be unique, non-empty UTF-8 and not "__metadata__"; each byte_size
 * must be the shape's elements times the dtype's size, and data may be NULL
 * only when it is 0. The header lists "__metadata__" first, then the
 * tensors by name, each with its keys sorted, padded with spaces to a
 * multiple of 8 bytes; the data is ordered by dtype size, largest first,
 * then by name, so that every tensor is aligned to its element size.
 *
 * The bytes go to `path`.tmp.<pid>, which is synced and then renamed over
 * `path`; on any failure it is removed and `path` is left as it was. */
M2N_API m2n_status_t m2n_safetensors_write_file(
    const char *path, const m2n_safetensors_tensor_t *tensors,
    size_t tensor_count, const m2n_safetensors_metadata_t *metadata,
    size_t metadata_count);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* M2N_SAFETENSORS_H */
