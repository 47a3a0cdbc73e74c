#!/usr/bin/env bash
# Installs what building and testing m2n needs on Debian bookworm, as root,
# and any further packages named as arguments (the fuzz and sanitizer
# builds' compiler). Installs only what is missing, so that a prepared
# machine starts at once.
set -euo pipefail

packages=(
  cmake ninja-build g++ python3 python3-dev python3-venv pkg-config
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libgtest-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin
  "$@"
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "error: missing packages (${missing[*]}); run this script as root to install them" >&2
  exit 1
fi
echo "Installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# MLIR 22 conflicts with MLIR 19's development package.
if dpkg-query -W -f='${Status}' libmlir-19-dev 2>/dev/null | grep -q "install ok installed"; then
  apt-get remove -y -qq libmlir-19-dev
fi
apt-get install -y -qq --no-install-recommends "${missing[@]}"
