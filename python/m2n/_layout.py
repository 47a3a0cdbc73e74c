"""Layouts: meshes, placements and tensor layouts, from torch or plain values.

A layout says which box of a tensor each rank holds, with torch DTensor's
semantics (docs/layout.md): mesh coordinates are row-major, placements apply
from mesh axis 0 on, and a sharded dimension is split as ``torch.chunk``
splits it. Ranks are those of the process group that runs the refit.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Optional, Sequence, Tuple

from . import _m2n

# torch's dtypes by m2n's (safetensors') names, for torch_dtype; torch is
# imported only when a torch object is converted, so that specs and plans
# work without it.
_TORCH_DTYPES = {
    "BF16": "bfloat16",
    "F16": "float16",
    "F32": "float32",
    "F64": "float64",
    "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2",
    "I8": "int8",
    "U8": "uint8",
    "I16": "int16",
    "U16": "uint16",
    "I32": "int32",
    "U32": "uint32",
    "I64": "int64",
    "U64": "uint64",
    "BOOL": "bool",
}


def dtype_name(dtype: Any) -> str:
    """m2n's name of a dtype given as a torch dtype or any name that specs
    accept ("bf16", "bfloat16", "BF16")."""
    if isinstance(dtype, str):
        return _m2n.dtype_name(dtype)
    # Specs take torch's names too.
    try:
        return _m2n.dtype_name(str(dtype).removeprefix("torch."))
    except ValueError:
        raise ValueError(f"dtype {dtype} has no m2n equivalent") from None


def torch_dtype(name: str):
    """The torch dtype of m2n's dtype `name`."""
    import torch

    return getattr(torch, _TORCH_DTYPES[dtype_name(name)])


@dataclasses.dataclass(frozen=True)
class Mesh:
    """A device mesh: its shape, and the rank at each row-major coordinate."""

    shape: Tuple[int, ...]
    ranks: Tuple[int, ...]
    axes: Optional[Tuple[str, ...]] = None

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))
        object.__setattr__(self, "ranks", tuple(int(r) for r in self.ranks))
        if self.axes is not None:
            object.__setattr__(self, "axes", tuple(self.axes))
        size = 1
        for s in self.shape:
            size *= s
        if len(self.ranks) != size:
            raise ValueError(f"mesh shape {list(self.shape)} needs {size} ranks, got {len(self.ranks)}")

    @classmethod
    def from_ranks(cls, ranks: Sequence[int], axes: Optional[Sequence[str]] = None) -> "Mesh":
        """A 1-D mesh over `ranks`."""
        return cls((len(ranks),), tuple(ranks), tuple(axes) if axes else None)

    @classmethod
    def from_device_mesh(cls, device_mesh, process_group=None) -> "Mesh":
        """The mesh of a torch DeviceMesh, its ranks those of `process_group`
        (default: the default group, whose ranks DeviceMesh holds)."""
        ranks = [int(r) for r in device_mesh.mesh.flatten().tolist()]
        if process_group is not None:
            import torch.distributed as dist

            ranks = [dist.get_group_rank(process_group, r) for r in ranks]
        names = getattr(device_mesh, "mesh_dim_names", None)
        return cls(tuple(device_mesh.mesh.shape), tuple(ranks), tuple(names) if names else None)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def to_json(self, name: str) -> dict:
        out: dict = {"name": name, "shape": list(self.shape)}
        if self.axes is not None:
            out["axes"] = list(self.axes)
        out["ranks"] = list(self.ranks)
        return out


def as_mesh(mesh, process_group=None) -> Mesh:
    """A Mesh from a Mesh, a torch DeviceMesh, or a list of ranks."""
    if isinstance(mesh, Mesh):
        return mesh
    if hasattr(mesh, "mesh") and hasattr(mesh, "device_type"):
        return Mesh.from_device_mesh(mesh, process_group)
    if isinstance(mesh, (list, tuple, range)):
        return Mesh.from_ranks(list(mesh))
    raise TypeError(f"expected an m2n.Mesh, a DeviceMesh or a list of ranks, got {type(mesh).__name__}")


def placement(p: Any, ndim: int, what: str) -> str:
    """The spec's spelling of one placement: "R" or "S(d)". `what` names the
    parameter in errors; `ndim` is the tensor's rank, for negative dims."""
    if isinstance(p, str):
        try:
            return _m2n.placement(p)
        except ValueError as error:
            raise ValueError(f"{what}: {error}") from None
    kind = type(p).__name__
    # _StridedShard subclasses Shard: check it first.
    if kind == "_StridedShard":
        raise ValueError(
            f"{what}: _StridedShard placements (FSDP over TP's strided shards) are not supported; "
            "give the parameter as plain Shard placements"
        )
    if kind in ("Partial", "_Partial"):
        raise ValueError(f"{what}: Partial placements hold partial sums, not shards; reduce the parameter first")
    if kind == "Replicate":
        return "R"
    if kind == "Shard":
        dim = p.dim + ndim if p.dim < 0 else p.dim
        return f"S({dim})"
    raise ValueError(f"{what}: unsupported placement {p!r}")


def placements(ps: Iterable[Any], mesh: Mesh, ndim: int, what: str) -> Tuple[str, ...]:
    """Every placement of a layout, one per mesh axis."""
    if not isinstance(ps, (list, tuple)):
        ps = [ps]
    out = tuple(placement(p, ndim, f"{what}: placements[{i}]") for i, p in enumerate(ps))
    if len(out) != mesh.ndim:
        raise ValueError(f"{what}: {len(out)} placements for a {mesh.ndim}-D mesh")
    return out


@dataclasses.dataclass(frozen=True)
class TensorLayout:
    """One side's metadata of one tensor: what that side holds and how.
    Plain values only, so that it pickles and crosses a process group."""

    dtype: str
    shape: Tuple[int, ...]
    mesh: Mesh
    placements: Tuple[str, ...]

    @classmethod
    def make(cls, dtype, shape, mesh, ps, *, name: str = "tensor", process_group=None) -> "TensorLayout":
        """A layout from torch or plain values; `name` names it in errors."""
        mesh = as_mesh(mesh, process_group)
        shape = tuple(int(s) for s in shape)
        return cls(dtype_name(dtype), shape, mesh, placements(ps, mesh, len(shape), name))

    @classmethod
    def of_dtensor(cls, tensor, *, name: str = "tensor", process_group=None) -> "TensorLayout":
        """The layout of a torch DTensor."""
        return cls.make(
            tensor.dtype,
            tensor.shape,
            tensor.device_mesh,
            tensor.placements,
            name=name,
            process_group=process_group,
        )


def layouts(source, process_group=None) -> dict:
    """Each DTensor's layout by name, from a module (its parameters and
    buffers) or a mapping of names to DTensors: what one side of a refit
    holds. A tensor that is not a DTensor is refused, naming it."""
    if hasattr(source, "named_parameters"):
        items = list(source.named_parameters()) + list(source.named_buffers())
    else:
        items = list(source.items())
    out = {}
    for name, tensor in items:
        if not hasattr(tensor, "device_mesh"):
            raise ValueError(
                f"parameter {name!r} is not a DTensor; give its layout as m2n.TensorLayout (a mesh and placements)"
            )
        out[name] = TensorLayout.of_dtensor(tensor, name=f"parameter {name!r}", process_group=process_group)
    return out
