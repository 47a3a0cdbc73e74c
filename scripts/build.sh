#!/usr/bin/env bash
# Configures and builds m2n into $M2N_BUILD_DIR (default: build/ at the top).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${M2N_BUILD_DIR:-$top/build}
llvm=/usr/lib/llvm-22

cmake -S "$top" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DMLIR_DIR="$llvm/lib/cmake/mlir" \
  -DLLVM_EXTERNAL_LIT="$llvm/bin/lit" \
  "$@"
cmake --build "$build" -j "${M2N_JOBS:-2}"
