#!/usr/bin/env bash
# Configures and builds xtk: scripts/build.sh [release|asan] [TARGET...]
# (default release, every target). release -> build/release (GCC, optimised,
# with tests); asan -> build/asan (clang, ASan+UBSan, -O0 with line tables
# only: the sanitizers' reports keep file:line and the tree compiles fast),
# which also holds the libFuzzer targets (tests/fuzz, scripts/fuzz.sh) on its
# own libraries. Targets limit the build: the tools alone, say
# (scripts/demo.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

kind=${1:-release}
shift || true
targets=()
for t in "$@"; do targets+=(--target "$t"); done
jobs=${JOBS:-$(nproc)}
compiler=()
case "$kind" in
  release) flags=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan)
    flags=(-DCMAKE_BUILD_TYPE=Debug -DXTK_SANITIZE=ON -DXTK_FUZZ=ON -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only)
    compiler=(env CXX=clang++ CC=clang)
    command -v clang++ >/dev/null || { echo "build.sh: the asan tree needs clang++ (scripts/install-deps.sh)" >&2; exit 2; }
    # A tree configured with another compiler (GCC, before 2026-11-29) cannot switch: start it again.
    if [[ -f build/asan/CMakeCache.txt ]] && ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang++' build/asan/CMakeCache.txt; then
      rm -rf build/asan
    fi
    ;;
  *) echo "build.sh: unknown build '$kind' (use release or asan)" >&2; exit 2 ;;
esac
"${compiler[@]}" cmake -S . -B "build/$kind" "${flags[@]}" >/dev/null
cmake --build "build/$kind" -j "$jobs" "${targets[@]}"
