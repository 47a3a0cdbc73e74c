//===- M2NDialect.td - The m2n dialect ---------------------*- tablegen -*-===//

#ifndef M2N_DIALECT_M2N_IR_M2NDIALECT_TD
#define M2N_DIALECT_M2N_IR_M2NDIALECT_TD

include "mlir/IR/OpBase.td"

def M2N_Dialect : Dialect {
  let name = "m2n";
  let cppNamespace = "::m2n";
  let summary = "Refits: moving tensors between two differently sharded meshes";
  let description = [{
    The `m2n` dialect describes a *refit*: every weight of a model moves from
    the ranks that train it, laid out one way, to the ranks that serve it,
    laid out another. A refit names its device meshes, its tensors, and one
    reshard per tensor from a source layout to a destination layout.

    Layouts follow torch DTensor exactly. A mesh is a row-major grid of
    ranks; a layout gives one placement per mesh axis, either `R`
    (replicated along that axis) or `S(d)` (tensor dimension `d` split along
    that axis as `torch.chunk` splits it, so trailing shards may be smaller or
    empty). Placements apply from mesh axis 0 to the last, and several axes
    may split the same tensor dimension.

    ```mlir
    m2n.refit @example {
      m2n.mesh @train shape [2, 4] axes ["dp", "tp"] ranks [0, 1, 2, 3, 4, 5, 6, 7]
      m2n.mesh @gen shape [4] ranks [8, 9, 10, 11]
      %w = m2n.tensor "layers.0.mlp.up.weight" : tensor<14336x4096xbf16>
      m2n.reshard %w from <@train, [R, S(0)]> to <@gen, [S(0)]> : tensor<14336x4096xbf16>
    }
    ```
  }];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    /// Registers the attributes; defined beside them, where their storage
    /// classes are complete.
    void registerAttributes();
  }];
}

class M2N_Op<string mnemonic, list<Trait> traits = []>
    : Op<M2N_Dialect, mnemonic, traits>;

#endif // M2N_DIALECT_M2N_IR_M2NDIALECT_TD
