#!/usr/bin/env bash
# Compiles refits of 1,000 to 4,000 ranks with `m2n compile` and prints, per
# refit, the wall time, the peak memory (GNU time's maximum resident set),
# the plan's size in all and per rank, and the plan's predicted time over
# its lower bound.
#
#   bench/scale.sh [OUT_DIR]        # OUT_DIR (default: a temporary folder)
#                                   # keeps the specs and plans
#
# Environment: M2N_BUILD_DIR (default build/ at the top), M2N_SCALE_REFITS
# ("model|train|gen" entries separated by spaces; default below).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${M2N_BUILD_DIR:-$top/build}
m2n=$build/bin/m2n
if [ ! -x "$m2n" ]; then
  echo "$0: $m2n is not built" >&2
  exit 2
fi
if [ ! -x /usr/bin/time ]; then
  echo "$0: GNU time (/usr/bin/time) is needed for the peak memory" >&2
  exit 2
fi
if [ $# -ge 1 ]; then
  out=$1
  mkdir -p "$out"
else
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi

refits=${M2N_SCALE_REFITS:-"kimi-k2|pp8,ep128|dp8,ep64 deepseek-v3|fsdp1024|dp16,ep64 deepseek-v3|fsdp2048|dp32,ep64"}

printf '%-12s %-12s %-11s %6s %8s %9s %9s %10s %8s\n' \
  model train gen ranks compile_s peak_MB plan_MB MB_per_rank ratio
for refit in $refits; do
  IFS='|' read -r model train gen <<<"$refit"
  name=$model-$train-$gen
  "$m2n" spec --model "$model" --train "$train" --gen "$gen" -o "$out/$name.json"
  /usr/bin/time -f '%e %M' -o "$out/$name.time" \
    "$m2n" compile "$out/$name.json" -o "$out/$name.m2n"
  read -r seconds kilobytes <"$out/$name.time"
  # Into a file: head closing the pipe early would fail the pipeline.
  "$m2n" inspect "$out/$name.m2n" >"$out/$name.summary"
  summary=$(head -3 "$out/$name.summary")
  ranks=$(sed -n '1s/.*: \([0-9]*\) ranks.*/\1/p' <<<"$summary")
  ratio=$(sed -n '3s/.*(\([0-9.]*\)x).*/\1/p' <<<"$summary")
  bytes=$(stat -c %s "$out/$name.m2n")
  awk -v m="$model" -v t="$train" -v g="$gen" -v r="$ranks" -v s="$seconds" \
    -v k="$kilobytes" -v b="$bytes" -v q="$ratio" 'BEGIN {
      printf "%-12s %-12s %-11s %6d %8.1f %9.0f %9.1f %10.3f %8s\n",
        m, t, g, r, s, k / 1024, b / 1e6, b / 1e6 / r, q
    }'
  # Keep only the figures when the folder is temporary: plans are large.
  [ $# -ge 1 ] || rm -f "$out/$name.m2n" "$out/$name.summary"
done
