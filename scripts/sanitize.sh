#!/usr/bin/env bash
# Builds m2n with sanitizers and runs its tests, each build in a folder of
# its own beside build/ (or under $M2N_SANITIZE_DIR):
#
#   build-asan-runtime  the runtime alone, ASan + UBSan, its tests with MPI
#   build-tsan-runtime  the runtime alone, TSan, its tests without MPI (the
#                       sim transport's threads are what TSan checks)
#   build-asan          everything, ASan + UBSan: unit tests and lit tests
#
#   scripts/sanitize.sh [runtime|all]   (default: all)
#
# Any report fails the run: sanitizers do not recover. Installs clang and
# its sanitizer runtimes when missing (as root), as install-deps.sh does.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
root=${M2N_SANITIZE_DIR:-$top}
scope=${1:-all}
jobs=${M2N_JOBS:-2}
llvm=/usr/lib/llvm-22
case $scope in runtime|all) ;; *) echo "usage: $0 [runtime|all]" >&2; exit 2 ;; esac

"$top/scripts/install-deps.sh" clang-22 libclang-rt-22-dev

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}

# configure DIR SOURCE SANITIZERS OPTIMIZE [CMAKE ARGS...]: frame pointers
# kept for the reports, libstdc++'s bounds checks on.
configure() {
  local dir=$1 source=$2 sanitizers=$3 optimize=$4
  shift 4
  local flags="-fsanitize=$sanitizers -fno-sanitize-recover=all -fno-omit-frame-pointer -D_GLIBCXX_ASSERTIONS"
  cmake -S "$source" -B "$dir" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="$optimize" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$optimize" \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=$sanitizers" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=$sanitizers" \
    -DM2N_RUNTIME_ENABLE_CUDA=OFF "$@" >/dev/null
}

# run NAME DIR: builds DIR and runs its tests, timing both.
run() {
  local name=$1 dir=$2 start=$SECONDS
  echo "== $name: building"
  cmake --build "$dir" -j "$jobs"
  echo "== $name: testing"
  (cd "$dir" && ctest --output-on-failure -E '^mpi-executor$')
  # Open MPI's own allocations outlive MPI_Finalize, and a test keeps the
  # buffers of a failed exchange that MPI may still read: what LSan finds
  # there is not m2n's. Everything else is still checked.
  (cd "$dir" && ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 \
    ctest --output-on-failure -R '^mpi-executor$')
  echo "== $name: passed in $((SECONDS - start)) s"
}

# The runtime uses no LLVM: its assertions are on (no NDEBUG).
configure "$root/build-asan-runtime" "$top/runtime" address,undefined "-O1 -g"
run "runtime, ASan + UBSan" "$root/build-asan-runtime"
configure "$root/build-tsan-runtime" "$top/runtime" thread "-O1 -g" \
  -DM2N_RUNTIME_ENABLE_MPI=OFF
run "runtime, TSan" "$root/build-tsan-runtime"
if [ "$scope" = all ]; then
  # NDEBUG as the system's LLVM and MLIR were built: their headers change
  # classes by it; m2n's own assertions on all the same (M2N_ASSERT).
  # Their BumpPtrAllocator, inlined into m2n's instrumented code, poisons
  # memory their uninstrumented code hands out unpoisoned, so poisoning by
  # hand is off. The tools leave their IR to the end of
  # the process on purpose (erasing it would outlast the work), so leaks
  # are not looked for.
  export ASAN_OPTIONS=$ASAN_OPTIONS:allow_user_poisoning=0:detect_leaks=0
  configure "$root/build-asan" "$top" address,undefined \
    "-O1 -g -DNDEBUG -DM2N_ENABLE_ASSERTIONS" \
    -DMLIR_DIR="$llvm/lib/cmake/mlir" -DLLVM_EXTERNAL_LIT="$llvm/bin/lit"
  run "everything, ASan + UBSan" "$root/build-asan"
fi
