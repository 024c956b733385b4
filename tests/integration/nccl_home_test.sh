#!/usr/bin/env bash
# Building on a cluster (V100 nodes included) with its own CUDA and NCCL:
# NCCL in a folder of its own is found through NCCL_HOME, as nccl-tests takes
# it, before the copy beside CUDA; and Volta (sm_70) with CUDA 13, which no
# longer builds for it, stops the configure saying what to load instead.
# Configures only. Exit 77 (skip) without a CUDA toolkit and NCCL here.
#
#   tests/integration/nccl_home_test.sh SOURCE_DIR
set -euo pipefail
src=$1
cuda=${CUDA_HOME:-/usr/local/cuda}
[[ -x $cuda/bin/nvcc ]] || { echo "SKIP: no CUDA toolkit at $cuda (set CUDA_HOME)"; exit 77; }
header=$(find "$cuda/" -name nccl.h -print -quit)
library=$(find "$cuda/" -name 'libnccl.so*' -print -quit)
[[ -n $header && -n $library ]] || { echo "SKIP: no NCCL beside $cuda"; exit 77; }

work=$(mktemp -d /tmp/xtk-nccl-home.XXXXXX)
trap 'rm -rf "$work"' EXIT
home=$work/nccl-2.x
mkdir -p "$home/include" "$home/lib"
cp "$header" "$home/include/"
cp -L "$library" "$home/lib/libnccl.so"

out=$(NCCL_HOME=$home cmake -S "$src" -B "$work/a100" -DXTK_NCCL=ON 2>&1) || {
  echo "FAIL: the configure with NCCL_HOME=$home failed:"; echo "$out"; exit 1; }
grep -q "xtk: NCCL backend: $home/lib/libnccl.so" <<<"$out" || {
  echo "FAIL: NCCL was not taken from NCCL_HOME:"; grep "xtk:" <<<"$out"; exit 1; }
echo "ok: NCCL from NCCL_HOME ($home)"

version=$("$cuda/bin/nvcc" --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
set +e
out=$(NCCL_HOME=$home cmake -S "$src" -B "$work/v100" -DXTK_NCCL=ON -DCMAKE_CUDA_ARCHITECTURES=70 2>&1)
status=$?
set -e
if ((version >= 13)); then
  ((status != 0)) || { echo "FAIL: CUDA $version configured for sm_70"; exit 1; }
  joined=$(tr -s ' \n' '  ' <<<"$out")  # CMake wraps the message
  grep -q "cannot build for sm_70 (V100 is sm_70): use a CUDA 12.x" <<<"$joined" || {
    echo "FAIL: no clear message for sm_70 with CUDA $version:"; echo "$out" | tail -20; exit 1; }
  echo "ok: CUDA $version refuses sm_70 with what to load instead"
else
  ((status == 0)) || { echo "FAIL: CUDA $version did not configure for sm_70:"; echo "$out" | tail -20; exit 1; }
  grep -q "archs 70" <<<"$out" || { echo "FAIL: not configured for sm_70"; exit 1; }
  echo "ok: CUDA $version configures for sm_70"
fi
