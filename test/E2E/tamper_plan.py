"""Changes a plan and recomputes its content hash, as an attacker would.
By default so that it still loads structurally but computes a wrong
refit: the first COPY or UNPACK that writes at a non-zero offset writes at
offset 0 instead (some bytes twice, others never). With --step-count N,
the header claims N steps instead.

    tamper_plan.py IN OUT [--step-count N]
"""
import struct
import sys

FNV_OFFSET, FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3


def content_hash(data):
    """FNV-1a over little-endian 8-byte words, the hash field taken as 0
    (docs/plan-format.md)."""
    padded = bytes(data) + b"\0" * (-len(data) % 8)
    h = FNV_OFFSET
    for word, (value,) in enumerate(struct.iter_unpack("<Q", padded)):
        h = ((h ^ (0 if word == 3 else value)) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def write(data, path):
    struct.pack_into("<Q", data, 24, content_hash(data))
    open(path, "wb").write(data)


def main():
    data = bytearray(open(sys.argv[1], "rb").read())
    if sys.argv[3:4] == ["--step-count"]:
        struct.pack_into("<I", data, 40, int(sys.argv[4]))
        write(data, sys.argv[2])
        return
    world, = struct.unpack_from("<I", data, 32)
    ranks_offset, = struct.unpack_from("<Q", data, 80)
    for rank in range(world):
        offset, size = struct.unpack_from("<QQ", data, ranks_offset + 16 * rank)
        if size == 0:
            continue
        inst_offset, inst_bytes = struct.unpack_from("<QQ", data, offset + 16)
        at, end = offset + inst_offset, offset + inst_offset + inst_bytes
        while at < end:
            opcode, _, record = struct.unpack_from("<HHI", data, at)
            to_offset_at = at + 8 + 16  # after from/to binding and from_offset
            if opcode in (2, 4) and struct.unpack_from("<Q", data, to_offset_at)[0]:
                struct.pack_into("<Q", data, to_offset_at, 0)
                write(data, sys.argv[2])
                return
            at += record
    sys.exit("no COPY or UNPACK at a non-zero offset")


main()
