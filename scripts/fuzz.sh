#!/usr/bin/env bash
# Builds m2n's fuzzers into build-fuzz/ (or $M2N_FUZZ_BUILD_DIR) and runs
# each for SECONDS (default 60), one after the other: the spec fuzzer, the IR
# fuzzer and the runtime's plan fuzzer. Installs clang and libFuzzer when
# they are missing (as root), as install-deps.sh does for the rest.
#
#   scripts/fuzz.sh [SECONDS] [spec|ir|plan ...]
#
# Each fuzzer keeps what it finds interesting in build-fuzz/corpus/NAME,
# starting from the seeds that fuzz/make_seeds.py collects (and the
# runtime's m2n_plan_seeds writes), and writes a
# crashing input as build-fuzz/findings/NAME/crash-*; the script exits
# non-zero when any fuzzer found something. Replay one with
# `build-fuzz/bin/m2n-spec-fuzzer FILE`.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${M2N_FUZZ_BUILD_DIR:-$top/build-fuzz}
seconds=${1:-60}
shift || true
fuzzers=("$@")
[ ${#fuzzers[@]} -eq 0 ] && fuzzers=(spec ir plan)
llvm=/usr/lib/llvm-22

# The clang of LLVM 22, with libFuzzer and the sanitizer runtimes: clang 14,
# bookworm's default, cannot compile the compiler (lambdas that capture
# structured bindings are C++20 it lacks).
"$top/scripts/install-deps.sh" clang-22 libclang-rt-22-dev

# -O1 keeps the build short and the stacks readable; NDEBUG stays, as the
# system's LLVM was built (M2N_ENABLE_FUZZERS says why). Tests and
# benchmarks are not built.
cmake -S "$top" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DMLIR_DIR="$llvm/lib/cmake/mlir" \
  -DM2N_ENABLE_FUZZERS=ON -DM2N_ENABLE_TESTS=OFF \
  -DM2N_ENABLE_BENCHMARKS=OFF >/dev/null
cmake --build "$build" -j "${M2N_JOBS:-2}" --target \
  m2n-spec-fuzzer m2n-ir-fuzzer m2n_plan_fuzzer m2n_plan_seeds m2n-opt

seeds=$build/seeds
# m2n-opt compiles seeds. Built with ASan against the system's MLIR, it
# needs poisoning by hand off (fuzz/FuzzSupport.cpp says why) and its leaks
# at exit are not findings.
ASAN_OPTIONS=allow_user_poisoning=0:detect_leaks=0 \
  python3 "$top/fuzz/make_seeds.py" "$top" "$seeds" "$build/bin/m2n-opt"
"$build/runtime/fuzz/m2n_plan_seeds" "$seeds/plan" >/dev/null

found=0
for name in "${fuzzers[@]}"; do
  case $name in
    spec) binary=$build/bin/m2n-spec-fuzzer; options=(-max_len=8192) ;;
    ir) binary=$build/bin/m2n-ir-fuzzer; options=(-max_len=8192) ;;
    plan) binary=$build/runtime/fuzz/m2n_plan_fuzzer; options=(-max_len=8192) ;;
    *) echo "error: unknown fuzzer '$name' (spec, ir or plan)" >&2; exit 2 ;;
  esac
  corpus=$build/corpus/$name findings=$build/findings/$name
  mkdir -p "$corpus" "$findings"
  echo "== $name fuzzer, $seconds s"
  # -timeout: an input that runs 10 s is a hang; -rss_limit_mb: one that
  # needs 2 GB is a runaway allocation.
  if ! "$binary" "$corpus" "$seeds/$name" "${options[@]}" \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$findings/" -print_final_stats=1; then
    found=1
  fi
done
exit $found
