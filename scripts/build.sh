#!/usr/bin/env bash
# Configures and builds m2n into $M2N_BUILD_DIR (default: build/ at the top).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${M2N_BUILD_DIR:-$top/build}
llvm=/usr/lib/llvm-22
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache
            -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi

cmake -S "$top" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DMLIR_DIR="$llvm/lib/cmake/mlir" \
  -DLLVM_EXTERNAL_LIT="$llvm/bin/lit" \
  "${launcher[@]}" "$@"
cmake --build "$build" -j "${M2N_JOBS:-2}"
