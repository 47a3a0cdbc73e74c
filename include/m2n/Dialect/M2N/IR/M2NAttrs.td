//===- M2NAttrs.td - m2n attributes ------------------------*- tablegen -*-===//

#ifndef M2N_DIALECT_M2N_IR_M2NATTRS_TD
#define M2N_DIALECT_M2N_IR_M2NATTRS_TD

include "m2n/Dialect/M2N/IR/M2NDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

class M2N_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<M2N_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def M2N_PlacementAttr : M2N_Attr<"Placement", "placement"> {
  let summary = "How a tensor lies along one mesh axis: `R` or `S(d)`";
  let description = [{
    `R` replicates the tensor along the mesh axis: every rank of the axis
    holds the same data. `S(d)` splits tensor dimension `d` along the axis
    as `torch.chunk` does: with `n` elements left in dimension `d` and `k`
    ranks on the axis, each piece has `ceil(n / k)` elements, except trailing
    pieces, which may be smaller or empty (10 over 4 gives 3, 3, 3, 1).

    Example:

    ```mlir
    #m2n.placement<R>
    #m2n.placement<S(1)>
    ```
  }];
  let parameters = (ins "int64_t":$dim);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "::m2n::Placement":$placement), [{
      return $_get($_ctxt, placement.dim);
    }]>
  ];
  let extraClassDeclaration = [{
    /// The placement as the layout model represents it.
    ::m2n::Placement getPlacement() const { return {getDim()}; }
    bool isReplicate() const { return getPlacement().isReplicate(); }
  }];
}

def M2N_LayoutAttr : M2N_Attr<"Layout", "layout"> {
  let summary = "A tensor laid out on a mesh: the mesh and one placement per axis";
  let description = [{
    A layout names a `m2n.mesh` and gives one placement per mesh axis, applied
    from axis 0 to the last, as torch DTensor applies them. The rank at mesh
    coordinates `c` holds the box of the tensor that results from splitting
    it by each `S(d)` in turn, at the piece given by `c` on that axis.

    Within a `m2n.reshard` the `#m2n.layout` prefix is omitted.

    Example: a `[10]` tensor on a `2 x 2` mesh with `[S(0), S(0)]` puts rows
    0-2, 3-4, 5-7 and 8-9 on the four ranks.

    ```mlir
    #m2n.layout<@train, [R, S(0)]>
    ```
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$mesh,
                        ArrayRefParameter<"PlacementAttr">:$placements);
  let hasCustomAssemblyFormat = 1;
  let extraClassDeclaration = [{
    /// The placements as the layout model represents them.
    std::vector<::m2n::Placement> getPlacementList() const;
  }];
}

#endif // M2N_DIALECT_M2N_IR_M2NATTRS_TD
