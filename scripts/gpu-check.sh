#!/usr/bin/env bash
# Checks the runtime's GPU path on a machine with an NVIDIA GPU: builds the
# runtime alone with CUDA, runs its tests (the NCCL ones included), the
# plan files of PLAN_DIR when given, the end-to-end matrix through the
# command line (m2n run --backend cuda-local, and --backend nccl on the
# plans the machine's GPUs can hold one rank per GPU), byte for byte
# against scripts/refit_reference.py, and the pack kernel benchmark, then
# prints a summary. Every phase has a time limit and a failing phase does
# not stop the others; the exit status is 1 if anything failed. Budget:
# about 8 minutes on 16 cores. docs/gpu.md has the details.
#
#   scripts/gpu-check.sh [PLAN_DIR]
#
# Environment: M2N_GPU_BUILD_DIR (default build-gpu-check/ at the top),
# M2N_GPU_ARCH (CUDA architectures, default 90), M2N_NCCL_LIBRARY (a
# libnccl.so.2 to load; found automatically where possible),
# M2N_GTEST_SOURCE (a GoogleTest source tree, for machines without one
# installed; /usr/src/googletest is tried too), M2N_GPU_PYTHON (a Python
# with torch and nanobind for the Python package's GPU tests; default
# python3), M2N_GPU_M2N (an m2n built
# with the GPU path, instead of building one; the build needs LLVM and MLIR
# 22 at /usr/lib/llvm-22 or MLIR_DIR).
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
build=${M2N_GPU_BUILD_DIR:-$top/build-gpu-check}
arch=${M2N_GPU_ARCH:-90}
plans=${1:-}
logs=$build/logs
mkdir -p "$logs"
declare -a results=()
failed=0

say() { printf '== %s\n' "$*"; }

# phase NAME SECONDS COMMAND...: runs COMMAND under a time limit with its
# output in $logs/NAME.log, and records PASS, FAIL or TIMEOUT.
phase() {
  local name=$1 seconds=$2
  shift 2
  say "$name (limit ${seconds}s)"
  local start=$SECONDS
  timeout -k 10 "$seconds" "$@" >"$logs/$name.log" 2>&1
  local rc=$? verdict=PASS
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    verdict=TIMEOUT
  elif [ $rc -ne 0 ]; then
    verdict=FAIL
  fi
  if [ $verdict != PASS ]; then
    failed=1
    tail -n 40 "$logs/$name.log"
  fi
  results+=("$(printf '%-10s %-8s %4ss' "$name" "$verdict" $((SECONDS - start)))")
  return $rc
}

# --- What the machine has ---------------------------------------------------

device=$(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total \
  --format=csv,noheader 2>/dev/null | head -n 1)
say "device: ${device:-unknown (nvidia-smi failed)}"

# nccl.h and libnccl: the CUDA toolkit's, else the NCCL wheel's (PyTorch's).
cmake_args=()
nccl_wheel=$(timeout 20 python3 -c \
  'import importlib.util as u; s = u.find_spec("nvidia.nccl"); print(list(s.submodule_search_locations)[0])' \
  2>/dev/null)
if [ ! -f /usr/local/cuda/include/nccl.h ] && [ -n "$nccl_wheel" ] &&
  [ -f "$nccl_wheel/include/nccl.h" ]; then
  cmake_args+=("-DM2N_NCCL_INCLUDE_DIR=$nccl_wheel/include")
fi
if [ -z "${M2N_NCCL_LIBRARY:-}" ] &&
  ! ldconfig -p 2>/dev/null | grep -q 'libnccl\.so\.2'; then
  for candidate in /usr/local/cuda/lib64/libnccl.so.2 \
    "$nccl_wheel/lib/libnccl.so.2"; do
    if [ -f "$candidate" ]; then
      export M2N_NCCL_LIBRARY=$candidate
      break
    fi
  done
fi
say "NCCL: header ${cmake_args[*]:-from the CUDA toolkit}, library ${M2N_NCCL_LIBRARY:-found by the dynamic loader}"

generator="Unix Makefiles"
command -v ninja >/dev/null 2>&1 && generator=Ninja

# GoogleTest: installed, else built from source into the build directory.
tests=ON
gtest_found() {
  [ -f /usr/include/gtest/gtest.h ] || [ -f /usr/local/include/gtest/gtest.h ]
}
if ! gtest_found; then
  source=${M2N_GTEST_SOURCE:-/usr/src/googletest}
  # shellcheck disable=SC2016 # the inner script expands its own arguments
  if [ -f "$source/CMakeLists.txt" ] &&
    phase gtest 120 bash -c 'cmake -S "$1" -B "$2/gtest-build" -G "$3" \
        -DCMAKE_BUILD_TYPE=Release -DBUILD_GMOCK=OFF \
        -DCMAKE_INSTALL_PREFIX="$2/gtest" &&
      cmake --build "$2/gtest-build" -j 16 --target install' \
      _ "$source" "$build" "$generator"; then
    cmake_args+=("-DCMAKE_PREFIX_PATH=$build/gtest")
  else
    say "no GoogleTest: building the benchmark only"
    results+=("$(printf '%-10s %-8s' tests 'FAIL (no GoogleTest)')")
    failed=1
    tests=OFF
  fi
fi

# --- Build, test, measure ---------------------------------------------------

configured=0
phase configure 120 cmake -S "$top/runtime" -B "$build" -G "$generator" \
  -DCMAKE_BUILD_TYPE=Release -DM2N_RUNTIME_ENABLE_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$arch" -DM2N_RUNTIME_ENABLE_TESTS=$tests \
  ${cmake_args[@]+"${cmake_args[@]}"} && configured=1

built=0
if [ $configured = 1 ]; then
  phase build 240 cmake --build "$build" -j 16 && built=1
fi

if [ $built = 1 ] && [ $tests = ON ]; then
  # The plan files run in their own phase below, not here.
  phase ctest 180 env -u M2N_TEST_PLAN_DIR \
    ctest --test-dir "$build" --output-on-failure -j 8 --timeout 120
  if [ -n "$plans" ] && [ -d "$plans" ]; then
    plans=$(cd "$plans" && pwd)
    phase plans 180 env M2N_TEST_PLAN_DIR="$plans" \
      "$build/test/cuda/m2n_cuda_tests" --gtest_filter='PlanFiles.*'
  elif [ -n "$plans" ]; then
    results+=("$(printf '%-10s %-8s' plans "FAIL (no directory $plans)")")
    failed=1
  fi
fi

# The end-to-end matrix through m2n run: an m2n with the GPU path, given or
# built (the m2n target alone, with the same CUDA settings).
m2n=${M2N_GPU_M2N:-}
mlir_dir=${MLIR_DIR:-/usr/lib/llvm-22/lib/cmake/mlir}
if [ -z "$m2n" ] && [ -d "$mlir_dir" ]; then
  phase m2n 300 bash -c 'cmake -S "$1" -B "$2/m2n" -G "$3" \
      -DCMAKE_BUILD_TYPE=Release -DMLIR_DIR="$4" -DM2N_ENABLE_TESTS=OFF \
      -DM2N_RUNTIME_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$5" "${@:6}" &&
    cmake --build "$2/m2n" -j 16 --target m2n' \
    _ "$top" "$build" "$generator" "$mlir_dir" "$arch" \
    ${cmake_args[@]+"${cmake_args[@]}"} && m2n=$build/m2n/bin/m2n
fi
if [ -n "$m2n" ] && [ -x "$m2n" ]; then
  e2e=$build/e2e
  mkdir -p "$e2e/bin"
  ln -sf "$m2n" "$e2e/bin/m2n"
  phase cuda-local 150 env PATH="$e2e/bin:$PATH" python3 \
    "$top/test/E2E/refit_e2e.py" --backend cuda-local --work "$e2e/local" \
    "$top"/test/E2E/Inputs/*.json
  # NCCL takes one rank per GPU: the specs of no more ranks than GPUs.
  gpus=$(timeout 20 nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  nccl_specs=()
  for spec in "$top"/test/E2E/Inputs/*.json "$top/scripts/gpu-check-one-rank.json"; do
    ranks=$(python3 -c 'import json, sys
spec = json.load(open(sys.argv[1]))
def ranks(mesh):
    r = mesh["ranks"]
    n = 1
    for extent in mesh["shape"]:
        n *= extent
    return r if isinstance(r, list) else range(r["start"], r["start"] + n)
print(max(max(ranks(m)) for m in spec["meshes"]) + 1)' "$spec")
    [ "$ranks" -le "${gpus:-0}" ] && nccl_specs+=("$spec")
  done
  if ! command -v mpirun >/dev/null 2>&1; then
    results+=("$(printf '%-10s %-8s' nccl 'SKIP (no mpirun)')")
  elif [ ${#nccl_specs[@]} -eq 0 ]; then
    results+=("$(printf '%-10s %-8s' nccl "SKIP (no spec fits ${gpus:-0} GPUs)")")
  else
    phase nccl 150 env PATH="$e2e/bin:$PATH" python3 \
      "$top/test/E2E/refit_e2e.py" --backend nccl --work "$e2e/nccl" \
      "${nccl_specs[@]}"
  fi
else
  results+=("$(printf '%-10s %-8s' e2e 'FAIL (no m2n with the GPU path: set M2N_GPU_M2N, or install LLVM and MLIR 22)')")
  failed=1
fi

# The Python package's GPU tests (python/tests/test_gpu.py): its extension
# built beside that m2n, run with a Python that has torch and nanobind.
python=${M2N_GPU_PYTHON:-python3}
if [ -d "$build/m2n" ] &&
  timeout 60 "$python" -c 'import torch, nanobind' >/dev/null 2>&1; then
  phase python 400 bash -c 'cmake "$1/m2n" -DM2N_ENABLE_PYTHON=ON \
      -DPython_EXECUTABLE="$(command -v "$2")" &&
    cmake --build "$1/m2n" -j 16 --target _m2n m2n-python-package &&
    PYTHONPATH="$1/m2n/python" M2N_BUILD_DIR="$1/m2n" "$2" -m pytest -q -rs \
      "$3/python/tests/test_gpu.py"' _ "$build" "$python" "$top"
else
  results+=("$(printf '%-10s %-8s' python 'SKIP (no m2n build, or no Python with torch and nanobind: set M2N_GPU_PYTHON)')")
fi

if [ $built = 1 ]; then
  phase bench 90 "$build/bench/m2n_cuda_pack_bench" 1
fi

# --- Summary ----------------------------------------------------------------

echo
say "summary"
echo "device: ${device:-unknown}"
for result in "${results[@]}"; do echo "  $result"; done
if [ -f "$logs/ctest.log" ]; then
  grep -E 'tests passed|tests failed' "$logs/ctest.log" | sed 's/^/  ctest: /'
  # On a GPU machine only device-free tests should skip.
  sed -n '/The following tests did not run/,/^$/p' "$logs/ctest.log" |
    sed 's/^/  /'
  grep -E '^ *[0-9]+ - .*(Failed|Timeout)' "$logs/ctest.log" | sed 's/^/  /'
  grep -E 'Test +#[0-9]+: Nccl' "$logs/ctest.log" | sed 's/^ */  /'
fi
if [ -f "$logs/plans.log" ]; then
  echo "  plan files: $(grep -c '^M2N_PLAN .* PASS' "$logs/plans.log") passed," \
    "$(grep -c '^M2N_PLAN .* FAIL' "$logs/plans.log") failed," \
    "$(grep -c '^M2N_PLAN .* SKIP' "$logs/plans.log") skipped"
  grep -E '^M2N_PLAN .* (FAIL|SKIP)' "$logs/plans.log" | sed 's/^/    /'
fi
for backend in cuda-local nccl; do
  if [ -f "$logs/$backend.log" ]; then
    echo "  $backend: $(grep -E 'refits right' "$logs/$backend.log")"
    grep -E '^FAIL' "$logs/$backend.log" | sed 's/^/    /'
  fi
done
if [ -f "$logs/bench.log" ]; then
  grep -vE '^M2N_BENCH' "$logs/bench.log" | sed 's/^/  /'
  grep -E '^M2N_BENCH' "$logs/bench.log" | sed 's/^/  /'
fi
echo "logs: $logs"
if [ $failed = 0 ]; then say "ALL PASSED"; else say "SOMETHING FAILED"; fi
exit $failed
