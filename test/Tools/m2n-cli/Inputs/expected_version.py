"""Prints what `m2n --version` should: the versions read off the sources."""

import os
import re
import sys

root = sys.argv[1]
with open(os.path.join(root, "runtime", "CMakeLists.txt")) as f:
    m2n = re.search(r"project\(m2n_runtime VERSION ([0-9.]+)", f.read())[1]
with open(os.path.join(root, "runtime", "include", "m2n",
                       "plan_format.h")) as f:
    header = f.read()
plan = ".".join(re.search(rf"#define M2N_PLAN_VERSION_{part} ([0-9]+)",
                          header)[1] for part in ("MAJOR", "MINOR"))
print(f"m2n {m2n}")
print(f"plan format {plan}")
