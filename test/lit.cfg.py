# -*- Python -*-
# Configuration for the m2n lit tests.

import os
import shutil
import subprocess
import sys

import lit.formats
from lit.llvm import llvm_config

config.name = "M2N"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.m2n_obj_root, "test")

# FileCheck, not, count and split-file live in LLVM's tool directory only.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.m2n_tools_dir, append_path=True)
llvm_config.use_default_substitutions()

config.substitutions.append(("%m2n_src_root", config.m2n_src_root))
config.substitutions.append(("%python", sys.executable))
# Caps what one allocation may take, whatever the machine. AddressSanitizer
# reserves its shadow memory at start, which a capped address space does
# not leave room for; under it the cap is its allocator's own limit.
if "-fsanitize=address" in config.m2n_cxx_flags:
    config.substitutions.append(("%cap_memory", "export ASAN_OPTIONS="
        "$ASAN_OPTIONS:max_allocation_size_mb=16000:allocator_may_return_null=1"))
else:
    config.substitutions.append(("%cap_memory", "ulimit -v 16000000"))

# The MPI end-to-end tests run where mpirun is.
if shutil.which("mpirun"):
    config.available_features.add("mpi")
# Where an NVIDIA GPU is, the GPU backends run (scripts/gpu-check.sh); the
# tests of their refusal without one do not.
if shutil.which("nvidia-smi") and subprocess.run(
        ["nvidia-smi", "-L"], capture_output=True).returncode == 0:
    config.available_features.add("cuda-gpu")
# Open MPI refuses to run as root unless told, as in containers and CI.
config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
