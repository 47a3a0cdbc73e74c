#!/usr/bin/env bash
# Builds m2n where it is out of date and runs every benchmark, writing each
# one's results into OUT_DIR: refit.json and host-exec.json (Google
# Benchmark's format), layout-sweep.txt and scale.txt (their tables; the
# scale compiles need about 15 GB of memory), and cuda-pack.json (the
# M2N_BENCH line's figures) when the CUDA pack benchmark was built and a GPU
# answers. Arguments after OUT_DIR go to every Google Benchmark binary.
#
#   bench/run.sh OUT_DIR [--benchmark_filter=...]
#
# Environment: M2N_BUILD_DIR (default build/ at the top), M2N_JOBS.
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 OUT_DIR [benchmark flags...]" >&2
  exit 2
fi
top=$(cd "$(dirname "$0")/.." && pwd)
build=${M2N_BUILD_DIR:-$top/build}
out=$1
shift
extra=("$@")
mkdir -p "$out"

if [ -f "$build/build.ninja" ]; then
  cmake --build "$build" -j "${M2N_JOBS:-2}"
else
  M2N_BUILD_DIR=$build "$top/scripts/build.sh"
fi

# gbench NAME MIN_TIME: runs build/bench/m2n-NAME-bench into OUT_DIR/NAME.json.
# The compiler's benchmarks take a second an iteration at scale: one will do.
gbench() {
  echo "== $1"
  "$build/bench/m2n-$1-bench" --benchmark_min_time="$2" \
    --benchmark_out="$out/$1.json" --benchmark_out_format=json "${extra[@]}"
}
gbench refit 0.01
gbench host-exec 0.5
# The layout sweep prints a table of its own, not Google Benchmark's JSON.
echo "== layout-sweep"
"$build/bench/m2n-layout-sweep" | tee "$out/layout-sweep.txt"
echo "== scale"
M2N_BUILD_DIR=$build "$top/bench/scale.sh" | tee "$out/scale.txt"

cuda=$build/runtime/bench/m2n_cuda_pack_bench
if [ -x "$cuda" ]; then
  echo "== cuda-pack"
  # Exit status 2: no CUDA device, nothing to measure.
  status=0
  "$cuda" | tee "$out/cuda-pack.txt" || status=$?
  if [ $status -eq 0 ]; then
    grep '^M2N_BENCH ' "$out/cuda-pack.txt" | awk '{
      printf "{"
      for (i = 2; i <= NF; ++i) {
        split($i, kv, "=")
        printf "%s\"%s\": %s", (i > 2 ? ", " : ""), kv[1], kv[2]
      }
      print "}"
    }' >"$out/cuda-pack.json"
  elif [ $status -ne 2 ]; then
    exit $status
  fi
  rm "$out/cuda-pack.txt"
fi
echo "results in $out"
