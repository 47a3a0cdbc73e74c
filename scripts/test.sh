#!/usr/bin/env bash
# Installs what is missing, builds m2n, and runs every test: the lit suite,
# the unit tests, the docs check, the Python package's pytest suite (in a
# virtual environment made once and reused, scripts/python-env.sh), and the
# runtime built on its own.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${M2N_BUILD_DIR:-$top/build}

"$top/scripts/install-deps.sh"
python_env=$("$top/scripts/python-env.sh")
"$top/scripts/build.sh" -DM2N_ENABLE_PYTHON=ON -DPython_EXECUTABLE="$python_env/bin/python"
# The runtime is a project of its own, with no MLIR: build it alone too.
cmake -S "$top/runtime" -B "$build/runtime-standalone" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build/runtime-standalone" -j "${M2N_JOBS:-2}"
(cd "$build/runtime-standalone" && ctest --output-on-failure)
cd "$build" && ctest --output-on-failure
