#!/usr/bin/env bash
# Prints the path of the virtual environment that the Python package's tests
# run in, creating it first if needed. torch with its CUDA libraries is
# several gigabytes, so the environment is made once per requirements file
# and interpreter (keyed by their hash) and reused by every later test run.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
requirements=$top/python/requirements.txt
python=${M2N_PYTHON:-/usr/bin/python3}
key=$({ cat "$requirements"; "$python" --version; } | sha256sum | cut -c1-16)
env=${M2N_PYTHON_ENV:-${XDG_CACHE_HOME:-$HOME/.cache}/m2n/python-$key}

if [ ! -x "$env/bin/python" ] || [ ! -f "$env/.complete" ]; then
  rm -rf "$env"
  mkdir -p "$(dirname "$env")"
  echo "Creating the Python test environment in $env" >&2
  "$python" -m venv "$env"
  "$env/bin/python" -m pip install -q --upgrade pip >&2
  "$env/bin/python" -m pip install -q -r "$requirements" >&2
  # Written last, so that an interrupted install is redone, not reused.
  touch "$env/.complete"
fi
echo "$env"
