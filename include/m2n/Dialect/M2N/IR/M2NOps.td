//===- M2NOps.td - m2n operations --------------------------*- tablegen -*-===//

#ifndef M2N_DIALECT_M2N_IR_M2NOPS_TD
#define M2N_DIALECT_M2N_IR_M2NOPS_TD

include "m2n/Dialect/M2N/IR/M2NAttrs.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def M2N_RefitOp : M2N_Op<"refit", [
    IsolatedFromAbove, NoTerminator, SingleBlock, NoRegionArguments,
    Symbol, SymbolTable]> {
  let summary = "A refit: meshes, tensors, and one reshard per tensor";
  let description = [{
    The root of a refit. Its body holds the `m2n.mesh` symbols of both
    sides, one `m2n.tensor` per weight, and the `m2n.reshard` of each tensor.
    One side may use many meshes (one per pipeline stage, a separate expert
    mesh, ...). The ranks of the source and destination meshes may be
    disjoint, overlap, or be the same (training and serving colocated).

    Once scheduled (`m2n-schedule`), `num_steps` gives the number of steps
    that every rank runs and `staging_budget` the staging bytes per rank
    that the schedule keeps within; `schedule_topology` records the
    topology the schedule was made for, in a topology file's keys and
    units, so that m2n-schedule keeps a schedule already made for its own
    budget and topology (m2n-fuse schedules the messages it chooses
    between) rather than making it again.

    The verifier rejects two tensors of one name, a tensor resharded more
    than once (by `m2n.reshard` or `m2n.transfers`), more meshes or tensors
    than a spec may have, tensors that together hold more than 2^63 - 1
    bytes, more than one `m2n.messages`, and a `num_steps` that is not
    positive, exceeds the number of messages (or 1 without any), or that a
    message's step is not below.

    Example:

    ```mlir
    m2n.refit @example {
      m2n.mesh @train shape [2] ranks [0, 1]
      m2n.mesh @gen shape [2] ranks [2, 3]
      %w = m2n.tensor "w" : tensor<8x8xf32>
      m2n.reshard %w from <@train, [S(0)]> to <@gen, [S(1)]> : tensor<8x8xf32>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       OptionalAttr<I64Attr>:$num_steps,
                       OptionalAttr<I64Attr>:$staging_budget,
                       OptionalAttr<DictionaryAttr>:$schedule_topology);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  // After the ops of the body: it reads their names and steps, which their
  // own verifiers make sure are there.
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "::llvm::StringRef":$name)>];
}

def M2N_MeshOp : M2N_Op<"mesh", [
    Symbol, HasParent<"RefitOp">]> {
  let summary = "A device mesh: a row-major grid of ranks";
  let description = [{
    Declares a mesh of the given shape over the given ranks, listed in
    row-major order of the mesh coordinates: the rank at linear index `i` is
    `ranks[i]`. `axes` optionally names the mesh axes.

    The verifier requires 1 to 8 positive mesh dimensions, as many ranks as
    the shape has elements, distinct non-negative ranks, and, when present,
    one distinct non-empty name per axis.

    Example:

    ```mlir
    m2n.mesh @train shape [2, 4] axes ["dp", "tp"] ranks [0, 1, 2, 3, 4, 5, 6, 7]
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       DenseI64ArrayAttr:$shape,
                       OptionalAttr<StrArrayAttr>:$axes,
                       DenseI64ArrayAttr:$ranks);
  let assemblyFormat = [{
    $sym_name `shape` $shape (`axes` $axes^)? `ranks` $ranks attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The mesh as the layout model represents it.
    ::m2n::Mesh getMesh();
  }];
}

def M2N_TensorOp : M2N_Op<"tensor", [
    Pure, HasParent<"RefitOp">,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "A tensor of the refit: its name, element type and global shape";
  let description = [{
    Declares one weight of the refit by its name (as the engines and the
    checkpoint files call it) and its global, unsharded type. The element
    type is one of the dtypes that m2n moves: `bf16`, `f16`, `f32`, `f64`,
    `f8E4M3FN`, `f8E5M2`, `i8`, `ui8`, `i16`, `ui16`, `i32`, `ui32`, `i64`,
    `ui64`, and `i1` for booleans. The shape is static with 0 to 8
    dimensions; a dimension may be 0; the size in bytes fits in 64 bits.
    The name is one that safetensors files can hold: 1 to 4096 bytes, no
    NUL byte, not `__metadata__`.

    Example:

    ```mlir
    %w = m2n.tensor "layers.0.mlp.up.weight" : tensor<14336x4096xbf16>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The tensor's size in bytes, which the verifier proved fits int64_t.
    int64_t byteSize();
  }];
}

def M2N_ReshardOp : M2N_Op<"reshard", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Moves a tensor from a source layout to a destination layout";
  let description = [{
    After the refit, every rank of the destination mesh holds its box of the
    tensor under the destination layout, taken from the ranks that hold it
    under the source layout. The operand is the `m2n.tensor` being moved.

    The verifier requires both meshes to exist, one placement per mesh axis,
    and every sharded dimension within the tensor's rank. Its diagnostics
    name the tensor and the mesh.

    Example:

    ```mlir
    m2n.reshard %w from <@train, [R, S(0)]> to <@gen, [S(0)]> : tensor<14336x4096xbf16>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$tensor,
                       M2N_LayoutAttr:$src,
                       M2N_LayoutAttr:$dst);
  let assemblyFormat = [{
    $tensor `from` $src `to` $dst attr-dict `:` type($tensor)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The m2n.tensor that this reshard moves.
    TensorOp getTensorOp();
  }];
}

def M2N_TransfersOp : M2N_Op<"transfers", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "The slice transfers of tensors that share a decomposition";
  let description = [{
    The decomposed form of the `m2n.reshard`s of one or more tensors that
    share shape, element type, source layout and destination layout: one
    table of slices applies to each of them. `m2n-decompose` creates it;
    the later passes rewrite its slices.

    Each slice moves a box of the tensor (offset:size per dimension, in
    global coordinates) from a sender rank to a receiver rank:

    - `S -> R [box]` is read from the sender's source shard in round 0;
      `S -> S [box]` is a local copy from a rank's source shard into its
      destination shard.
    - `round k` places a slice in relay round `k` (rounds pipeline the
      chunks of a region along a relay chain).
    - `forward` reads the box from the sender's destination shard: bytes
      that reached it in an earlier round, which it relays.
    - `S -> * [box]` is a fan-out slice: one slice to every rank whose
      destination box contains the box, from `S`, or a local copy where
      that rank's own source box contains it. `m2n-decompose` writes them
      for replicated destinations; `m2n-balance` and `m2n-relay` work on
      them, and every other pass first writes out the slices they stand
      for. They are read from a source shard in round 0.

    The slices are one compact table, a row per slice, held as a property
    of the op (not uniqued in the context, and rewritten in place by the
    passes): sender, receiver, origin (0 source, 1 destination), round,
    then the box's offsets and sizes.

    The verifier checks the table's structure (ranks below 2^20, rounds
    below 2^31, boxes within the tensor) and the layouts; `m2n-verify`
    checks that the slices deliver every destination byte exactly once.

    Example:

    ```mlir
    m2n.transfers %a, %b from <@train, [S(0)]> to <@gen, [R]> : tensor<8x6xf32> slices {
      0 -> 2 [0:4, 0:6]
      1 -> 2 [4:4, 0:6]
      2 -> 3 [0:8, 0:6] forward round 1
    }
    m2n.transfers %c from <@train, [S(0)]> to <@gen, [R]> : tensor<8x6xf32> slices {
      0 -> * [0:4, 0:6]
      1 -> * [4:4, 0:6]
    }
    ```
  }];
  let arguments = (ins Variadic<AnyStaticShapeTensor>:$tensors,
                       M2N_LayoutAttr:$src,
                       M2N_LayoutAttr:$dst,
                       IntArrayProp<I64Prop>:$slices);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Columns of a slice row: sender, receiver, origin (0 source, 1
    /// destination), round, then offsets and sizes per tensor dimension.
    static int64_t rowWidth(int64_t tensorRank) { return 4 + 2 * tensorRank; }
    /// The receiver column of a fan-out slice, printed `*`.
    static constexpr int64_t kEveryHolder = -1;
    /// The shared type of the tensors.
    ::mlir::RankedTensorType getTensorType();
  }];
}

def M2N_MessagesOp : M2N_Op<"messages", [HasParent<"RefitOp">]> {
  let summary = "The refit's messages, one row each";
  let description = [{
    The slices fused into messages (`m2n-fuse`) and placed in steps
    (`m2n-schedule`): one row per message from a sender rank to a receiver
    rank. Each part `gG sS mB..E` is slice `S` of the `G`-th
    `m2n.transfers` of the refit, for that op's tensors `B` to `E - 1`.
    The parts are packed one after another into a staging buffer on the
    sender and unpacked on the receiver; a `zero_copy` message has one part,
    contiguous on both sides, and moves straight between the tensors.

    A refit has at most one `m2n.messages`. A real model's plan has
    millions of messages, so they are two compact tables, like the slices
    of `m2n.transfers`, rather than an op each: `table` holds a row of six
    values per message (step, sender, receiver, bytes, zero-copy flag,
    number of parts), `parts` four per part (group, slice, first member,
    end of members), the messages' parts one after another. Both are
    properties, which are the op's own and not uniqued in the context.

    The verifier checks each row: ranks below 2^20 and distinct, a
    non-negative step and byte count, at least one part (exactly one when
    zero-copy), and non-empty member ranges; the refit checks the steps
    against `num_steps`, and reading the plan checks that the parts name
    slices and members that exist.

    Example:

    ```mlir
    m2n.messages {
      step 0 : 0 -> 2 bytes 192 parts [g0 s0 m0..2]
      step 1 : 2 -> 3 bytes 67108864 zero_copy parts [g1 s4 m0..1]
    }
    ```
  }];
  let arguments = (ins IntArrayProp<I64Prop>:$table,
                       IntArrayProp<I64Prop>:$parts);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Columns of a message row.
    enum Column : int64_t {
      kStep, kSender, kReceiver, kBytes, kZeroCopy, kPartCount, kRowWidth
    };
    /// Columns of a part: group, slice, first member, end of members.
    static constexpr int64_t kPartWidth = 4;
    /// The number of messages (rows of the table).
    int64_t getNumMessages() { return getTable().size() / kRowWidth; }
  }];
}

#endif // M2N_DIALECT_M2N_IR_M2NOPS_TD
