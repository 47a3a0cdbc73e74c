#!/usr/bin/env python3
"""An independent reference for m2n refits, in plain Python.

It shares no code with m2n: it reads the refit spec itself, computes every
rank's shard with its own implementation of torch DTensor's rule, and reads
and writes safetensors files with its own code.

    refit_reference.py fill SPEC DIR [--seed N] [--chunk-bytes N]
        Writes DIR/rank{r}.safetensors for every rank of a source mesh:
        its source shard of every tensor, cut from a full tensor of
        deterministic pseudo-random bytes.
    refit_reference.py check SPEC DIR [--seed N] [--chunk-bytes N]
        Checks DIR/rank{r}.safetensors for every rank of a destination
        mesh: exactly its destination shards, with the bytes cut from the
        same full tensors. Exits 1 and names the first difference.
    refit_reference.py random-spec SEED
        Prints a random small refit spec: meshes of up to 8 ranks a side,
        1-D to 3-D, random placements (nested and uneven), random shapes
        and dtypes, overlapping or colocated rank sets.

Tensors stream through in pieces of --chunk-bytes (16 MiB; a multiple of
4), generated and compared once each, so that memory stays bounded
whatever the model's size; the bytes do not depend on the piece size.
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

# The most bytes of a tensor generated, and compared, at once. A multiple of
# 4: see tensor_chunks.
CHUNK_BYTES = 16 << 20


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


def element_bytes(tensor):
    return DTYPE_BYTES[dtype_of(tensor["dtype"])]


def tensor_chunks(tensor, seed, chunk_bytes):
    """The tensor's bytes, pseudo-random and fixed by its name and the seed,
    as (offset, bytes) pieces of at most chunk_bytes, so that no tensor is
    ever held whole. randbytes draws 32-bit words, so pieces of a multiple of
    4 bytes draw the bytes that one call for the whole tensor would: the data
    does not depend on chunk_bytes."""
    digest = hashlib.sha256(f"{seed}/{tensor['name']}".encode()).digest()
    rng = random.Random(digest)
    total = math.prod(tensor["shape"]) * element_bytes(tensor)
    for start in range(0, total, chunk_bytes):
        yield start, memoryview(rng.randbytes(min(chunk_bytes,
                                                  total - start)))


def box_runs(shape, element, offsets, sizes):
    """The byte ranges (start, length) of a row-major tensor that its box
    (offsets, sizes) covers, in order. The innermost dimensions that the box
    spans whole make one run with the dimension outside them."""
    if 0 in sizes:
        return
    if not shape:
        yield 0, element
        return
    strides = [element] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    inner = len(shape) - 1
    while inner > 0 and sizes[inner] == shape[inner]:
        inner -= 1
    run = sizes[inner] * strides[inner]
    for index in itertools.product(*(range(o, o + s) for o, s in
                                     zip(offsets[:inner], sizes[:inner]))):
        yield sum(i * s for i, s in zip(index, strides)) + \
            offsets[inner] * strides[inner], run


class ShardStream:
    """One shard's bytes, taken from its tensor's chunks as they stream by."""

    def __init__(self, runs):
        self.runs = iter(runs)
        self.run = next(self.runs, None)
        self.position = 0

    def take(self, start, data):
        """The shard's bytes within `data`, the tensor's bytes from `start`,
        joined, and where they begin in the shard. Chunks come in order and
        what lay before `start` was taken from earlier ones, so no run left
        begins before `data` does."""
        first, pieces, end = self.position, [], start + len(data)
        while self.run is not None and self.run[0] < end:
            run_start, length = self.run
            stop = min(run_start + length, end)
            pieces.append(data[run_start - start:stop - start])
            self.position += stop - run_start
            if stop < run_start + length:
                self.run = (stop, run_start + length - stop)
                break
            self.run = next(self.runs, None)
        return first, b"".join(pieces)


class Shard:
    """A tensor's box on one rank."""

    def __init__(self, tensor, offsets, sizes):
        self.tensor, self.offsets, self.sizes = tensor, offsets, sizes
        self.dtype = dtype_of(tensor["dtype"])
        self.bytes = math.prod(sizes) * DTYPE_BYTES[self.dtype]

    def stream(self):
        return ShardStream(box_runs(self.tensor["shape"],
                                    DTYPE_BYTES[self.dtype], self.offsets,
                                    self.sizes))


def shards(spec, side):
    """rank -> the Shards of `side` on the rank, in the spec's order."""
    meshes = {mesh["name"]: mesh for mesh in spec["meshes"]}
    result = {}
    for tensor in spec["tensors"]:
        mesh = meshes[tensor[side]["mesh"]]
        for linear, rank in enumerate(mesh_ranks(mesh)):
            offsets, sizes = shard_box(tensor["shape"], mesh,
                                       tensor[side]["placements"], linear)
            result.setdefault(rank, []).append(Shard(tensor, offsets, sizes))
    return result


def safetensors_header(tensors):
    """tensors: name -> (dtype, shape, byte count). The header, padded, and
    each tensor's offset in the data after it."""
    header, offsets, offset = {}, {}, 0
    for name in sorted(tensors):
        dtype, shape, count = tensors[name]
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + count]}
        offsets[name] = offset
        offset += count
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text, offsets


def write_safetensors(path, tensors):
    """tensors: name -> (dtype, shape, bytes)."""
    header, _ = safetensors_header(
        {name: (dtype, shape, len(data))
         for name, (dtype, shape, data) in tensors.items()})
    with open(path, "wb") as f:
        f.write(header)
        for name in sorted(tensors):
            f.write(tensors[name][2])


def read_safetensors_header(path):
    """name -> (dtype, shape, (begin, end) in the file)."""
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
    header.pop("__metadata__", None)
    base = 8 + length
    return {name: (info["dtype"], info["shape"],
                   (base + info["data_offsets"][0],
                    base + info["data_offsets"][1]))
            for name, info in header.items()}


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    return {name: (dtype, shape, blob[begin:end])
            for name, (dtype, shape, (begin, end))
            in read_safetensors_header(path).items()}


def rank_path(directory, rank):
    return os.path.join(directory, f"rank{rank}.safetensors")


def fill(spec, directory, seed, chunk_bytes):
    """Writes each rank's header and sizes its file, then streams every
    tensor once into the shards that hold a part of it."""
    os.makedirs(directory, exist_ok=True)
    targets = {}  # tensor name -> [(path, offset of its shard, Shard)]
    for rank, held in shards(spec, "src").items():
        path = rank_path(directory, rank)
        header, offsets = safetensors_header(
            {shard.tensor["name"]: (shard.dtype, shard.sizes, shard.bytes)
             for shard in held})
        with open(path, "wb") as f:
            f.write(header)
            f.truncate(len(header) + sum(shard.bytes for shard in held))
        for shard in held:
            targets.setdefault(shard.tensor["name"], []).append(
                (path, len(header) + offsets[shard.tensor["name"]], shard))
    for tensor in spec["tensors"]:
        streams = [(path, offset, shard.stream())
                   for path, offset, shard in targets.get(tensor["name"], [])]
        for start, data in tensor_chunks(tensor, seed, chunk_bytes):
            for path, offset, stream in streams:
                position, piece = stream.take(start, data)
                if piece:
                    with open(path, "r+b") as f:
                        f.seek(offset + position)
                        f.write(piece)


def check_header(path, got, held):
    """The first problem with the tensors `got` (a rank's file header, None
    if it is missing) as (index in `held`, message), or None."""
    if got is None:
        return -1, f"{path}: missing"
    names = sorted(shard.tensor["name"] for shard in held)
    if sorted(got) != names:
        return -1, f"{path}: holds tensors {sorted(got)}, expected {names}"
    for index, shard in enumerate(held):
        name = shard.tensor["name"]
        dtype, shape, (begin, end) = got[name]
        if (dtype, shape) != (shard.dtype, shard.sizes):
            return index, (f"{path}: tensor {name!r} is {(dtype, shape)}, "
                           f"expected {(shard.dtype, shard.sizes)}")
        if end - begin != shard.bytes:
            return index, (f"{path}: tensor {name!r} holds {end - begin} "
                           f"bytes, expected {shard.bytes}")
    return None


def first_difference(a, b):
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y),
                min(len(a), len(b)))


def check(spec, directory, seed, chunk_bytes):
    """The first problem in rank order, and within a rank in the spec's order
    of tensors, or "". Every tensor streams by once, compared against every
    rank without a problem in an earlier tensor."""
    expected = shards(spec, "dst")
    headers, problems = {}, {}  # rank -> (index of its tensor, message)
    for rank, held in expected.items():
        path = rank_path(directory, rank)
        headers[rank] = read_safetensors_header(path) \
            if os.path.exists(path) else None
        problem = check_header(path, headers[rank], held)
        if problem:
            problems[rank] = problem
    targets = {}  # tensor name -> [(rank, index, Shard)]
    for rank, held in expected.items():
        for index, shard in enumerate(held):
            targets.setdefault(shard.tensor["name"], []).append(
                (rank, index, shard))
    for tensor in spec["tensors"]:
        compared = []
        for rank, index, shard in targets.get(tensor["name"], []):
            if rank in problems and problems[rank][0] <= index:
                continue
            begin = headers[rank][tensor["name"]][2][0]
            compared.append((rank, index, rank_path(directory, rank), begin,
                             shard.stream()))
        for start, data in tensor_chunks(tensor, seed, chunk_bytes):
            for rank, index, path, begin, stream in compared:
                if rank in problems and problems[rank][0] <= index:
                    continue
                position, piece = stream.take(start, data)
                if not piece:
                    continue
                with open(path, "rb") as f:
                    f.seek(begin + position)
                    got = f.read(len(piece))
                if got != piece:
                    first = position + first_difference(got, piece)
                    problems[rank] = (index, f"{path}: tensor "
                                      f"{tensor['name']!r} differs at byte "
                                      f"{first}")
    return problems[min(problems)][1] if problems else ""


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


def option(argv, flag, default):
    return int(argv[argv.index(flag) + 1]) if flag in argv else default


def main(argv):
    if len(argv) >= 2 and argv[0] == "random-spec":
        print(json.dumps(random_spec(int(argv[1])), indent=1))
        return 0
    if len(argv) < 3 or argv[0] not in ("fill", "check"):
        print(__doc__, file=sys.stderr)
        return 2
    seed = option(argv, "--seed", 0)
    chunk_bytes = option(argv, "--chunk-bytes", CHUNK_BYTES)
    if chunk_bytes <= 0 or chunk_bytes % 4:
        print(f"error: --chunk-bytes {chunk_bytes}: expected a positive "
              f"multiple of 4", file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        spec = json.load(f)
    if argv[0] == "fill":
        fill(spec, argv[2], seed, chunk_bytes)
        return 0
    problem = check(spec, argv[2], seed, chunk_bytes)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
