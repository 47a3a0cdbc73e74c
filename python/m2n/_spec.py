"""m2n.RefitSpec: the JSON refit spec (docs/spec-format.md) as Python objects."""

from __future__ import annotations

import dataclasses
import json
from typing import Dict, List, Mapping, Tuple

from . import _m2n
from ._layout import Mesh, TensorLayout


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    """One tensor of a spec: its dtype and global shape, and the mesh (by
    name) and placements it has before (src) and after (dst) the refit."""

    name: str
    dtype: str
    shape: Tuple[int, ...]
    src_mesh: str
    src_placements: Tuple[str, ...]
    dst_mesh: str
    dst_placements: Tuple[str, ...]


class RefitSpec:
    """A refit spec. ``to_json`` writes it exactly as m2n writes specs (the
    canonical form), and ``from_json(spec.to_json())`` gives it back equal;
    every spec is checked by m2n's own parser, whose errors name the mesh or
    tensor at fault."""

    def __init__(self, meshes: Mapping[str, Mesh], tensors: List[TensorSpec], name: str = "refit"):
        self.name = name
        self.meshes: Dict[str, Mesh] = dict(meshes)
        self.tensors: List[TensorSpec] = list(tensors)
        # Parsing the canonical text checks the whole spec at once.
        self._json = _m2n.canonical_spec(json.dumps(self._as_dict()), name)

    @classmethod
    def from_json(cls, text: str, source: str = "<spec>") -> "RefitSpec":
        """A spec from its JSON text; `source` names it in errors."""
        spec = json.loads(_m2n.canonical_spec(text, source))
        meshes = {m["name"]: _mesh_from_json(m) for m in spec["meshes"]}
        tensors = [
            TensorSpec(
                t["name"],
                t["dtype"],
                tuple(t["shape"]),
                t["src"]["mesh"],
                tuple(t["src"]["placements"]),
                t["dst"]["mesh"],
                tuple(t["dst"]["placements"]),
            )
            for t in spec["tensors"]
        ]
        return cls(meshes, tensors, spec.get("name", "refit"))

    @classmethod
    def load(cls, path) -> "RefitSpec":
        with open(path, encoding="utf-8") as f:
            return cls.from_json(f.read(), str(path))

    @classmethod
    def from_layouts(
        cls,
        src: Mapping[str, TensorLayout],
        dst: Mapping[str, TensorLayout],
        name: str = "refit",
        world_size: int = 0,
    ) -> "RefitSpec":
        """The refit of every tensor from its `src` layout to its `dst`
        layout: each side's metadata by tensor name (m2n.layouts gives a
        module's). Both sides must name the same tensors, with the same dtype
        and global shape. With `world_size` (the size of the group that runs
        it), ranks above the meshes' take part holding nothing: a mesh of
        their own, "idle", that no tensor uses."""
        missing = sorted(set(src) ^ set(dst))
        if missing:
            side = "destination" if missing[0] in src else "source"
            raise ValueError(f"tensor {missing[0]!r} has no {side} layout" + _and_more(missing))
        meshes: Dict[Mesh, str] = {}

        def mesh_name(mesh: Mesh, side: str) -> str:
            if mesh not in meshes:
                meshes[mesh] = f"{side}{sum(n.startswith(side) for n in meshes.values())}"
            return meshes[mesh]

        tensors = []
        for tensor, s in src.items():
            d = dst[tensor]
            if (s.dtype, s.shape) != (d.dtype, d.shape):
                raise ValueError(
                    f"tensor {tensor!r}: the source holds {s.dtype} {list(s.shape)}, "
                    f"the destination {d.dtype} {list(d.shape)}"
                )
            tensors.append(
                TensorSpec(
                    tensor,
                    s.dtype,
                    s.shape,
                    mesh_name(s.mesh, "src"),
                    s.placements,
                    mesh_name(d.mesh, "dst"),
                    d.placements,
                )
            )
        named = {n: m for m, n in meshes.items()}
        highest = max((max(m.ranks) for m in named.values()), default=-1)
        if world_size > highest + 1:
            named["idle"] = Mesh.from_ranks(range(highest + 1, world_size))
        return cls(named, tensors, name)

    def to_json(self) -> str:
        return self._json

    def save(self, path) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self._json)

    @property
    def world_size(self) -> int:
        """One more than the highest rank of any mesh."""
        return 1 + max(max(m.ranks) for m in self.meshes.values())

    def _as_dict(self) -> dict:
        return {
            "m2n_spec": 1,
            "name": self.name,
            "meshes": [m.to_json(n) for n, m in self.meshes.items()],
            "tensors": [
                {
                    "name": t.name,
                    "dtype": t.dtype,
                    "shape": list(t.shape),
                    "src": {"mesh": t.src_mesh, "placements": list(t.src_placements)},
                    "dst": {"mesh": t.dst_mesh, "placements": list(t.dst_placements)},
                }
                for t in self.tensors
            ],
        }

    def __eq__(self, other) -> bool:
        return isinstance(other, RefitSpec) and self._json == other._json

    def __hash__(self) -> int:
        return hash(self._json)

    def __repr__(self) -> str:
        return f"RefitSpec({self.name!r}, {len(self.meshes)} meshes, {len(self.tensors)} tensors)"


def _mesh_from_json(m: dict) -> Mesh:
    size = 1
    for s in m["shape"]:
        size *= s
    ranks = m["ranks"]
    if isinstance(ranks, dict):
        ranks = range(ranks["start"], ranks["start"] + size)
    axes = m.get("axes")
    return Mesh(tuple(m["shape"]), tuple(ranks), tuple(axes) if axes else None)


def _and_more(names: List[str]) -> str:
    return f" (and {len(names) - 1} more)" if len(names) > 1 else ""
