#!/usr/bin/env python3
"""An independent reference for m2n refits, in plain Python.

It shares no code with m2n: it reads the refit spec itself, computes every
rank's shard with its own implementation of torch DTensor's rule, and reads
and writes safetensors files with its own code.

    refit_reference.py fill SPEC DIR [--seed N]
        Writes DIR/rank{r}.safetensors for every rank of a source mesh:
        its source shard of every tensor, cut from a full tensor of
        deterministic pseudo-random bytes.
    refit_reference.py check SPEC DIR [--seed N]
        Checks DIR/rank{r}.safetensors for every rank of a destination
        mesh: exactly its destination shards, with the bytes cut from the
        same full tensors. Exits 1 and names the first difference.
    refit_reference.py random-spec SEED
        Prints a random small refit spec: meshes of up to 8 ranks a side,
        1-D to 3-D, random placements (nested and uneven), random shapes
        and dtypes, overlapping or colocated rank sets.
"""

import hashlib
import itertools
import json
import math
import os
import random
import re
import struct
import sys

DTYPE_BYTES = {
    "BF16": 2, "F16": 2, "F32": 4, "F64": 8, "F8_E4M3": 1, "F8_E5M2": 1,
    "I8": 1, "U8": 1, "I16": 2, "U16": 2, "I32": 4, "U32": 4, "I64": 8,
    "U64": 8, "BOOL": 1,
}
TORCH_DTYPES = {
    "bfloat16": "BF16", "float16": "F16", "half": "F16", "float32": "F32",
    "float": "F32", "float64": "F64", "double": "F64",
    "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2", "int8": "I8",
    "uint8": "U8", "int16": "I16", "short": "I16", "uint16": "U16",
    "int32": "I32", "int": "I32", "uint32": "U32", "int64": "I64",
    "long": "I64", "uint64": "U64", "bool": "BOOL",
}
SHORT_DTYPES = {
    "bf16": "BF16", "fp16": "F16", "fp32": "F32", "fp64": "F64",
    "fp8_e4m3": "F8_E4M3", "fp8_e5m2": "F8_E5M2",
}
# Every spelling the spec format takes, lower-cased, as it ignores case;
# "torch." goes before torch's names only.
DTYPE_NAMES = {**{name.lower(): name for name in DTYPE_BYTES},
               **TORCH_DTYPES, **SHORT_DTYPES,
               **{"torch." + name: dtype
                  for name, dtype in TORCH_DTYPES.items()}}


def dtype_of(name):
    return DTYPE_NAMES[name.lower()]


def placement_of(text):
    """None for replicate, else the sharded dimension."""
    text = text.replace(" ", "")
    if text in ("R", "Replicate()"):
        return None
    match = re.fullmatch(r"(?:S|Shard)\((?:dim=)?(\d+)\)", text)
    return int(match.group(1))


def mesh_ranks(mesh):
    size = math.prod(mesh["shape"])
    ranks = mesh["ranks"]
    return list(range(ranks["start"], ranks["start"] + size)) \
        if isinstance(ranks, dict) else list(ranks)


def chunk(n, k, i):
    """torch.chunk's piece i of n elements split k ways: (offset, size)."""
    c = -(-n // k)
    begin = min(i * c, n)
    return begin, max(0, min((i + 1) * c, n) - begin)


def shard_box(shape, mesh, placements, linear):
    """DTensor's box for the rank at linear index `linear` of the mesh."""
    coords, rest = [], linear
    for extent in reversed(mesh["shape"]):
        coords.append(rest % extent)
        rest //= extent
    coords.reverse()
    offsets, sizes = [0] * len(shape), list(shape)
    for axis, placement in enumerate(placements):
        dim = placement_of(placement)
        if dim is None:
            continue
        begin, size = chunk(sizes[dim], mesh["shape"][axis], coords[axis])
        offsets[dim] += begin
        sizes[dim] = size
    return offsets, sizes


def full_tensor(tensor, seed):
    """The tensor's bytes: pseudo-random, fixed by its name and the seed."""
    digest = hashlib.sha256(f"{seed}/{tensor['name']}".encode()).digest()
    count = math.prod(tensor["shape"]) * DTYPE_BYTES[dtype_of(tensor["dtype"])]
    return random.Random(digest).randbytes(count)


def cut(data, shape, element, offsets, sizes):
    """The bytes of the box (offsets, sizes) of a row-major tensor."""
    if 0 in sizes:
        return b""
    if not shape:
        return bytes(data)
    strides = [element] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    run = sizes[-1] * element
    out = bytearray()
    for index in itertools.product(*(range(o, o + s) for o, s in
                                     zip(offsets[:-1], sizes[:-1]))):
        start = sum(i * s for i, s in zip(index, strides)) + \
            offsets[-1] * element
        out += data[start:start + run]
    return bytes(out)


def write_safetensors(path, tensors):
    """tensors: name -> (dtype, shape, bytes)."""
    header, offset = {}, 0
    for name in sorted(tensors):
        dtype, shape, data = tensors[name]
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for name in sorted(tensors):
            f.write(tensors[name][2])


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (length,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + length])
    header.pop("__metadata__", None)
    base = 8 + length
    return {name: (info["dtype"], info["shape"],
                   blob[base + info["data_offsets"][0]:
                        base + info["data_offsets"][1]])
            for name, info in header.items()}


def shards(spec, side, seed):
    """rank -> name -> (dtype, shape, bytes) of every shard of `side`."""
    meshes = {mesh["name"]: mesh for mesh in spec["meshes"]}
    result = {}
    for tensor in spec["tensors"]:
        dtype = dtype_of(tensor["dtype"])
        data = full_tensor(tensor, seed)
        mesh = meshes[tensor[side]["mesh"]]
        for linear, rank in enumerate(mesh_ranks(mesh)):
            offsets, sizes = shard_box(tensor["shape"], mesh,
                                       tensor[side]["placements"], linear)
            result.setdefault(rank, {})[tensor["name"]] = (
                dtype, sizes, cut(data, tensor["shape"], DTYPE_BYTES[dtype],
                                  offsets, sizes))
    return result


def fill(spec, directory, seed):
    os.makedirs(directory, exist_ok=True)
    for rank, tensors in shards(spec, "src", seed).items():
        write_safetensors(os.path.join(directory, f"rank{rank}.safetensors"),
                          tensors)


def check(spec, directory, seed):
    for rank, expected in sorted(shards(spec, "dst", seed).items()):
        path = os.path.join(directory, f"rank{rank}.safetensors")
        if not os.path.exists(path):
            return f"{path}: missing"
        got = read_safetensors(path)
        if sorted(got) != sorted(expected):
            return (f"{path}: holds tensors {sorted(got)}, expected "
                    f"{sorted(expected)}")
        for name, (dtype, shape, data) in expected.items():
            if got[name][:2] != (dtype, shape):
                return (f"{path}: tensor {name!r} is {got[name][:2]}, "
                        f"expected {(dtype, shape)}")
            if got[name][2] != data:
                first = next(i for i, (a, b) in
                             enumerate(zip(got[name][2], data)) if a != b)
                return f"{path}: tensor {name!r} differs at byte {first}"
    return ""


def random_spec(seed):
    rng = random.Random(seed)

    def mesh(name, start_pool):
        ndim = rng.randint(1, 3)
        shape = [rng.randint(1, 3) for _ in range(ndim)]
        while math.prod(shape) > 8:
            shape[rng.randrange(ndim)] = 1
        ranks = rng.sample(start_pool, math.prod(shape))
        return {"name": name, "shape": shape, "ranks": ranks}

    pool = list(range(12))
    src = mesh("src", pool)
    # Colocated, overlapping or disjoint destination ranks.
    dst = mesh("dst", pool if rng.random() < 0.7 else list(range(12, 24)))
    tensors = []
    for t in range(rng.randint(1, 4)):
        ndim = rng.randint(1, 3)
        shape = [rng.randint(0, 9) if rng.random() < 0.1 else
                 rng.randint(1, 9) for _ in range(ndim)]

        def placements(m):
            return ["R" if rng.random() < 0.4 else f"S({rng.randrange(ndim)})"
                    for _ in m["shape"]]

        tensor = {"name": f"t{t}", "dtype": rng.choice(
            sorted(DTYPE_BYTES)), "shape": shape,
            "src": {"mesh": "src", "placements": placements(src)},
            "dst": {"mesh": "dst", "placements": placements(dst)}}
        tensors.append(tensor)
        # Layers: tensors alike but for their names, which plans move
        # together.
        if rng.random() < 0.3:
            for layer in range(rng.randint(1, 3)):
                tensors.append(dict(tensor, name=f"t{t}.layer{layer}"))
    return {"m2n_spec": 1, "name": f"random_{seed}",
            "meshes": [src, dst], "tensors": tensors}


def main(argv):
    if len(argv) >= 2 and argv[0] == "random-spec":
        print(json.dumps(random_spec(int(argv[1])), indent=1))
        return 0
    if len(argv) < 3 or argv[0] not in ("fill", "check"):
        print(__doc__, file=sys.stderr)
        return 2
    seed = int(argv[argv.index("--seed") + 1]) if "--seed" in argv else 0
    with open(argv[1]) as f:
        spec = json.load(f)
    if argv[0] == "fill":
        fill(spec, argv[2], seed)
        return 0
    problem = check(spec, argv[2], seed)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
