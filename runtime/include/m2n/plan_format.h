/*===- m2n/plan_format.h - The plan bytecode, field by field --------*- C -*-===
 *
 * A compiled refit plan as the runtime reads it. The compiler writes it (see
 * m2n/plan_writer.h); every rank maps the file and reads only the header,
 * the tensor table and its own section. docs/plan-format.md describes the
 * format for readers; this header is its definition.
 *
 * Layout (all integers little-endian; every section starts at a multiple of
 * M2N_PLAN_ALIGNMENT bytes; unused bytes are zero):
 *
 *   m2n_plan_header_t                      at offset 0
 *   string table                           tensor names, not NUL-terminated
 *   m2n_plan_tensor_t[tensor_count]        the tensors of the refit
 *   m2n_plan_rank_entry_t[world_size]      where each rank's section is
 *   rank sections                          one per rank with any work:
 *     m2n_plan_rank_header_t
 *     m2n_plan_binding_t[binding_count]    the shards this rank holds
 *     instructions                         instruction_bytes of records
 *
 * No two sections overlap.
 *
 * Instructions are records of m2n_plan_instruction_t followed by the
 * opcode's operands, each record a multiple of 8 bytes. A rank executes its
 * records in order: its COPYs (local copies) come first, before any
 * M2N_OP_STEP; then each step starts with a STEP record and holds PACKs,
 * then SENDs and RECVs (issued together, in record order, which is the same
 * order on both peers), then UNPACKs. A rank lists only the steps in which
 * it has work, in increasing order. Every COPY, PACK, UNPACK and transfer
 * moves at least one byte.
 *
 * Versions: a reader rejects another major version and accepts any minor
 * one. A newer minor may only add what an older reader can ignore: values
 * in reserved fields and flags, a longer header (header_size), trailing
 * operands in a record (its size), or bytes between a rank's bindings and
 * its instructions (instructions_offset). In the minor versions it knows, a
 * reader requires all of these to be absent or zero.
 *
 *===----------------------------------------------------------------------===*/

#ifndef M2N_PLAN_FORMAT_H
#define M2N_PLAN_FORMAT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define M2N_PLAN_MAGIC "M2NPLAN"       /* 8 bytes with the final NUL */
#define M2N_PLAN_VERSION_MAJOR 2       /* readers reject other majors */
#define M2N_PLAN_VERSION_MINOR 0       /* readers accept any minor */
#define M2N_PLAN_ALIGNMENT 64
#define M2N_PLAN_MAX_RANK 8            /* dimensions of a tensor */
#define M2N_PLAN_MAX_LEVELS 8          /* strided levels of an instruction */

/* Element types, by safetensors name. */
typedef enum m2n_dtype_e {
  M2N_DTYPE_BF16 = 0,
  M2N_DTYPE_F16 = 1,
  M2N_DTYPE_F32 = 2,
  M2N_DTYPE_F64 = 3,
  M2N_DTYPE_F8_E4M3 = 4,
  M2N_DTYPE_F8_E5M2 = 5,
  M2N_DTYPE_I8 = 6,
  M2N_DTYPE_U8 = 7,
  M2N_DTYPE_I16 = 8,
  M2N_DTYPE_U16 = 9,
  M2N_DTYPE_I32 = 10,
  M2N_DTYPE_U32 = 11,
  M2N_DTYPE_I64 = 12,
  M2N_DTYPE_U64 = 13,
  M2N_DTYPE_BOOL = 14,
  M2N_DTYPE_COUNT = 15,
} m2n_dtype_t;

typedef struct m2n_plan_header_t {
  char magic[8];                 /* M2N_PLAN_MAGIC */
  uint16_t version_major;
  uint16_t version_minor;
  uint32_t header_size;          /* sizeof(m2n_plan_header_t) */
  uint64_t file_size;
  /* FNV-1a 64 of the whole file with this field taken as zero. */
  uint64_t content_hash;
  uint32_t world_size;           /* ranks 0 .. world_size-1 */
  uint32_t tensor_count;
  uint32_t step_count;
  uint32_t flags;                /* 0 in version 2.0 */
  uint64_t staging_budget;       /* per rank, as compiled */
  uint64_t strings_offset;
  uint64_t strings_size;
  uint64_t tensors_offset;
  uint64_t ranks_offset;
  /* Summary, for inspection: bytes crossing between ranks, bytes copied
   * within ranks, messages, and the cost model's times in nanoseconds. */
  uint64_t wire_bytes;
  uint64_t local_copy_bytes;
  uint64_t message_count;
  uint64_t predicted_ns;
  uint64_t lower_bound_ns;
  uint8_t reserved[32];
} m2n_plan_header_t;             /* 160 bytes */

typedef struct m2n_plan_tensor_t {
  uint32_t name_offset;          /* into the string table */
  uint32_t name_size;
  uint8_t dtype;                 /* m2n_dtype_t */
  uint8_t rank;                  /* 0 .. M2N_PLAN_MAX_RANK */
  uint8_t reserved[6];
  int64_t shape[M2N_PLAN_MAX_RANK]; /* global shape; unused dims 0 */
} m2n_plan_tensor_t;             /* 80 bytes */

typedef struct m2n_plan_rank_entry_t {
  uint64_t offset;               /* of the rank's section; 0 if none */
  uint64_t size;                 /* of the section, unpadded; 0 if none */
} m2n_plan_rank_entry_t;         /* 16 bytes */

/* A rank's section: this header, box_count boxes, binding_count bindings,
 * then the instructions. */
typedef struct m2n_plan_rank_header_t {
  uint32_t rank;
  uint32_t binding_count;
  uint32_t instruction_count;
  uint32_t box_count;
  /* From the start of the section; a multiple of 8, right after the
   * bindings. The section ends with the instructions. */
  uint64_t instructions_offset;
  uint64_t instruction_bytes;
  /* The staging buffer this rank needs: one buffer, reused by every step. */
  uint64_t staging_bytes;
  /* Bytes of its SEND and SEND_DIRECT records, and of its RECV and
   * RECV_DIRECT records: the traffic to and from other ranks. */
  uint64_t send_bytes;
  uint64_t receive_bytes;
  uint64_t reserved1;
} m2n_plan_rank_header_t;        /* 64 bytes */

typedef enum m2n_role_e {
  M2N_ROLE_SOURCE = 1,           /* the shard the rank holds before */
  M2N_ROLE_DESTINATION = 2,      /* the shard the rank holds after */
} m2n_role_t;

/* A box of global tensor coordinates, [offset, offset + shape), which the
 * bindings of a rank name by index: a model's tensors of one shape and
 * layout share their boxes, so a rank lists each box once. Dimensions from
 * a binding's tensor's rank on are 0. */
typedef struct m2n_plan_box_t {
  int64_t offset[M2N_PLAN_MAX_RANK];
  int64_t shape[M2N_PLAN_MAX_RANK];
} m2n_plan_box_t;                /* 128 bytes */

/* A shard of a tensor that the rank holds: a row-major buffer of box `box`
 * of the rank's box table, byte_size bytes (the box's volume times the
 * dtype's size). Destination shards may be empty; every destination shard
 * of the rank has a binding, and a rank has at most one binding per
 * (tensor, role). */
typedef struct m2n_plan_binding_t {
  uint32_t tensor;               /* index into the tensor table */
  uint8_t role;                  /* m2n_role_t */
  uint8_t reserved[3];
  uint32_t box;                  /* index into the rank's boxes */
  uint32_t reserved2;
  uint64_t byte_size;
} m2n_plan_binding_t;            /* 24 bytes */

typedef enum m2n_opcode_e {
  /* Starts step `operand` (steps come in order 0 .. step_count-1). */
  M2N_OP_STEP = 1,
  /* Copies runs from a source binding into a destination binding. */
  M2N_OP_COPY = 2,
  /* Gathers runs of a binding into the staging buffer. */
  M2N_OP_PACK = 3,
  /* Scatters the staging buffer into runs of a binding. */
  M2N_OP_UNPACK = 4,
  /* Sends or receives bytes of the staging buffer. */
  M2N_OP_SEND = 5,
  M2N_OP_RECV = 6,
  /* Sends or receives bytes of a binding directly (zero-copy). */
  M2N_OP_SEND_DIRECT = 7,
  M2N_OP_RECV_DIRECT = 8,
} m2n_opcode_t;

typedef struct m2n_plan_instruction_t {
  uint16_t opcode;               /* m2n_opcode_t */
  /* Strided levels, 0 .. M2N_PLAN_MAX_LEVELS, for COPY, PACK and UNPACK;
   * 0 for the other opcodes. */
  uint16_t levels;
  uint32_t size;                 /* bytes of the record, a multiple of 8 */
} m2n_plan_instruction_t;        /* 8 bytes, then the operands */

/* M2N_OP_STEP */
typedef struct m2n_plan_step_t {
  uint64_t step;
} m2n_plan_step_t;

/* M2N_OP_SEND, M2N_OP_RECV: `bytes` at `staging_offset` to or from `peer`.
 * M2N_OP_SEND_DIRECT, M2N_OP_RECV_DIRECT: `bytes` at byte offset
 * `staging_offset` of binding `binding`; RECV_DIRECT receives only into
 * destination bindings. `peer` is another rank. Within a step, the k-th
 * SEND or SEND_DIRECT of rank a to rank b carries as many bytes as the k-th
 * RECV or RECV_DIRECT of rank b from rank a, and none is left unmatched. */
typedef struct m2n_plan_transfer_t {
  uint32_t peer;
  uint32_t binding;              /* DIRECT only; else 0 */
  uint64_t staging_offset;
  uint64_t bytes;
} m2n_plan_transfer_t;

/* M2N_OP_COPY, M2N_OP_PACK, M2N_OP_UNPACK: a box as strided runs, walked
 * in the same order on both sides, for each of `members` >= 1 tensors that
 * share a shape and layouts: member m reads binding from_binding + m and
 * writes binding to_binding + m (where a side is a binding), at the same
 * offsets, and its staging side starts m times the walk's bytes (run_bytes
 * times every count) after the first member's, so that the members sit one
 * after another in staging. A model's layers repeat the same tensors, and
 * one record then serves all of them. For level i (outermost first) the walk
 * repeats count[i] >= 1 times, advancing the `from` side by from_stride[i]
 * and the `to` side by to_stride[i] bytes (signed); innermost, one
 * contiguous run of run_bytes >= 1 moves. For PACK the `to` side is the
 * staging buffer, for UNPACK the `from` side is; a staging side's strides
 * are those of a dense packing (the innermost stride is run_bytes, each
 * outer one count times the next inner one). COPY reads a source binding
 * and writes a destination binding, moving at most the destination's
 * byte_size; UNPACK writes only destination bindings. The record is this
 * struct, then count[levels], from_stride[levels] and to_stride[levels] as
 * int64_t. */
typedef struct m2n_plan_runs_t {
  uint32_t from_binding;         /* COPY, PACK; else 0 */
  uint32_t to_binding;           /* COPY, UNPACK; else 0 */
  uint64_t from_offset;          /* bytes into the from side */
  uint64_t to_offset;            /* bytes into the to side */
  uint64_t run_bytes;
  uint32_t members;              /* >= 1 */
  uint32_t reserved;             /* 0 in version 2.0 */
} m2n_plan_runs_t;

/* The sizes above are the format; C and C++ builds must agree on them. */
#ifdef __cplusplus
#define M2N_PLAN_STATIC_ASSERT static_assert
#else
#define M2N_PLAN_STATIC_ASSERT _Static_assert
#endif
M2N_PLAN_STATIC_ASSERT(sizeof(m2n_plan_header_t) == 160, "header size");
M2N_PLAN_STATIC_ASSERT(sizeof(m2n_plan_tensor_t) == 80, "tensor size");
M2N_PLAN_STATIC_ASSERT(sizeof(m2n_plan_rank_entry_t) == 16, "entry size");
M2N_PLAN_STATIC_ASSERT(sizeof(m2n_plan_rank_header_t) == 64, "rank size");
M2N_PLAN_STATIC_ASSERT(sizeof(m2n_plan_box_t) == 128, "box size");
M2N_PLAN_STATIC_ASSERT(sizeof(m2n_plan_binding_t) == 24, "binding size");
M2N_PLAN_STATIC_ASSERT(sizeof(m2n_plan_instruction_t) == 8, "record size");
M2N_PLAN_STATIC_ASSERT(sizeof(m2n_plan_step_t) == 8, "step size");
M2N_PLAN_STATIC_ASSERT(sizeof(m2n_plan_transfer_t) == 24, "transfer size");
M2N_PLAN_STATIC_ASSERT(sizeof(m2n_plan_runs_t) == 40, "runs size");
#undef M2N_PLAN_STATIC_ASSERT

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* M2N_PLAN_FORMAT_H */
