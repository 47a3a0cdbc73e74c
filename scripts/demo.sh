#!/usr/bin/env bash
# Installs what is missing, builds m2n, and runs its main job on the built-in
# example: the refit spec in examples/ is imported and printed as m2n IR.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${M2N_BUILD_DIR:-$top/build}

"$top/scripts/install-deps.sh"
"$top/scripts/build.sh" >/dev/null
"$build/bin/m2n-translate" --import-m2n-spec "$top/examples/llama-mini.json"
