"""flip_byte.py FILE TENSOR INDEX: flips the low bit of byte INDEX of
TENSOR's data in the safetensors FILE, in place."""

import json
import struct
import sys

path, name, index = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(path, "r+b") as f:
    (length,) = struct.unpack("<Q", f.read(8))
    begin, end = json.loads(f.read(length))[name]["data_offsets"]
    position = 8 + length + begin + (index if index >= 0 else end - begin +
                                     index)
    f.seek(position)
    byte = f.read(1)[0]
    f.seek(position)
    f.write(bytes([byte ^ 1]))
