"""The layouts that the multi-process tests move, shared by the pytest
side (which names the cases) and the workers (which run them).

Each case is one tensor's refit: its global shape and dtype, and on each side
a mesh (shape and global ranks, row-major) with its placements, as torch
DTensor spells them; the job's process group is ranks 0 .. world - 1.
"""

import dataclasses
from typing import Tuple


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    world: int
    shape: Tuple[int, ...]
    dtype: str
    src_mesh: Tuple[int, ...]
    src_ranks: Tuple[int, ...]
    src: Tuple[str, ...]
    dst_mesh: Tuple[int, ...]
    dst_ranks: Tuple[int, ...]
    dst: Tuple[str, ...]


def _r(start, stop):
    return tuple(range(start, stop))


CASES = [
    # Disjoint sides, uneven shards.
    Case("disjoint-2x2-to-4", 8, (10, 7), "float32", (2, 2), _r(0, 4), ("S(0)", "S(1)"), (4,), _r(4, 8), ("S(1)",)),
    # Overlapping rank sets.
    Case("overlap-2x3-to-4", 6, (9, 4), "bfloat16", (2, 3), _r(0, 6), ("R", "S(0)"), (4,), _r(2, 6), ("S(0)",)),
    # Identical rank sets, colocated.
    Case("identical-4-to-2x2", 4, (6, 6), "int64", (4,), _r(0, 4), ("S(0)",), (2, 2), _r(0, 4), ("S(1)", "R")),
    # torch.chunk leaves the last shards empty: 3 rows over 4 and 5 ranks.
    Case("empty-shards", 9, (3, 5), "float16", (4,), _r(0, 4), ("S(0)",), (5,), _r(4, 9), ("S(0)",)),
    # Several mesh axes on one tensor dimension, on both sides.
    Case("axes-on-one-dim", 8, (13, 6), "float16", (2, 2), _r(0, 4), ("S(0)", "S(0)"), (2, 2), _r(4, 8),
         ("S(1)", "S(1)")),
    # 1-D to 4-D.
    Case("1d-to-4d", 16, (17, 10), "uint8", (16,), _r(0, 16), ("S(0)",), (2, 2, 2, 2), _r(0, 16),
         ("S(0)", "R", "S(1)", "S(0)")),
    # 4-D to 1-D, the destination's ranks out of order.
    Case("4d-to-1d-permuted", 16, (9, 11), "int32", (2, 2, 2, 2), _r(0, 16), ("S(0)", "S(1)", "S(0)", "R"), (4,),
         (13, 2, 7, 0), ("S(1)",)),
    # 3-D to 2-D over a 3-D tensor.
    Case("3d-to-2d", 16, (5, 4, 6), "float64", (2, 2, 2), _r(0, 8), ("S(2)", "R", "S(0)"), (2, 4), _r(8, 16),
         ("S(1)", "S(2)")),
    # Fully replicated on both sides.
    Case("replicated", 5, (4, 3), "bool", (2,), _r(0, 2), ("R",), (3,), _r(2, 5), ("R",)),
    # Ranks of the group on neither side: they take part and hold nothing.
    Case("bystanders", 6, (8, 4), "float32", (2,), (0, 1), ("S(0)",), (2,), (3, 4), ("S(1)",)),
    # A scalar.
    Case("scalar", 4, (), "float64", (2,), _r(0, 2), ("R",), (2,), _r(2, 4), ("R",)),
    # Every element of a dimension of size 1 on one rank, the others empty.
    Case("size-one-dim", 6, (1, 8), "int8", (3,), _r(0, 3), ("S(0)",), (3,), _r(3, 6), ("S(1)",)),
    # A tensor with no elements at all.
    Case("no-elements", 4, (0, 4), "float32", (2,), _r(0, 2), ("S(0)",), (2,), _r(2, 4), ("S(1)",)),
    # 8-bit floats and unsigned words.
    Case("fp8-e4m3", 8, (12, 4), "float8_e4m3fn", (2, 2), _r(0, 4), ("S(1)", "S(0)"), (4,), _r(4, 8), ("S(0)",)),
    Case("fp8-e5m2", 4, (7,), "float8_e5m2", (4,), _r(0, 4), ("S(0)",), (2,), _r(0, 2), ("R",)),
    Case("uint16", 4, (6, 3), "uint16", (2,), _r(0, 2), ("S(0)",), (2,), _r(2, 4), ("S(0)",)),
    Case("uint32", 4, (6, 3), "uint32", (2,), _r(2, 4), ("S(1)",), (4,), _r(0, 4), ("S(0)",)),
    Case("uint64", 4, (5, 3), "uint64", (4,), _r(0, 4), ("S(0)",), (2,), _r(1, 3), ("S(1)",)),
    Case("int16", 4, (5, 3), "int16", (2, 2), _r(0, 4), ("S(0)", "S(1)"), (1,), (3,), ("R",)),
]

# Dtypes that every Refit case also moves, beside its own: the whole model
# fused into one plan, several tensors per message.
EXTRA_DTYPES = ("bfloat16", "int32", "bool")
