#!/usr/bin/env python3
"""Writes broken copies of good inputs for the bad-input tests.

    make_bad_inputs.py SRC PLAN OUT

OUT/missing: rank 1's file removed; OUT/dtype, OUT/shape: rank 0's tensor
"w" with another dtype or shape; OUT/truncated: rank 2's file cut short;
OUT/corrupt.m2n: the plan with one byte flipped.
"""

import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scripts"))
import refit_reference  # noqa: E402


def main(src, plan, out):
    def copy(name):
        shutil.copytree(src, os.path.join(out, name))
        return os.path.join(out, name)

    os.remove(os.path.join(copy("missing"), "rank1.safetensors"))

    tensors = refit_reference.read_safetensors(
        os.path.join(src, "rank0.safetensors"))
    dtype, shape, data = tensors["w"]
    refit_reference.write_safetensors(
        os.path.join(copy("dtype"), "rank0.safetensors"),
        dict(tensors, w=("F16", shape, data[:len(data) // 2])))
    refit_reference.write_safetensors(
        os.path.join(copy("shape"), "rank0.safetensors"),
        dict(tensors, w=(dtype, [shape[0] * 2, shape[1] // 2], data)))

    path = os.path.join(copy("truncated"), "rank2.safetensors")
    with open(path, "rb") as f:
        blob = f.read()
    with open(path, "wb") as f:
        f.write(blob[:-5])

    with open(plan, "rb") as f:
        blob = bytearray(f.read())
    blob[len(blob) // 2] ^= 0xFF
    with open(os.path.join(out, "corrupt.m2n"), "wb") as f:
        f.write(blob)


if __name__ == "__main__":
    main(*sys.argv[1:])
