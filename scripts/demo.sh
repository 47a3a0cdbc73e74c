#!/usr/bin/env bash
# Installs what is missing, builds m2n, and runs its main job on the built-in
# example (examples/llama-mini.json, a small Llama-style model trained on a
# 2 x 4 FSDP x TP mesh and served on a 2 x 2 DP x TP mesh): compile the refit
# spec into a plan, write generated source weights for every training rank,
# run the plan with every rank in this process, check every serving rank's
# weights byte for byte against an independent reference, and summarize the
# plan.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${M2N_BUILD_DIR:-$top/build}
spec=$top/examples/llama-mini.json
work=$build/demo

"$top/scripts/install-deps.sh"
"$top/scripts/build.sh" >/dev/null
rm -rf "$work" && mkdir -p "$work"
m2n=$build/bin/m2n
reference=$top/scripts/refit_reference.py

"$m2n" compile "$spec" -o "$work/llama-mini.m2n"
python3 "$reference" fill "$spec" "$work/train"
"$m2n" run "$work/llama-mini.m2n" --backend sim --src "$work/train" --dst "$work/serve"
python3 "$reference" check "$spec" "$work/serve"
echo "Every serving rank holds exactly its shards of every weight."
"$m2n" inspect "$work/llama-mini.m2n"
