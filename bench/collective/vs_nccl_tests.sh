#!/usr/bin/env bash
# Every collective both tools have, xtk-collective sweep against nccl-tests'
# binaries built from source for this host (peers/nccl-tests, git-ignored;
# README.md says how), in PAIRS interleaved pairs, each pair run in the other
# order than the last. Both drive every GPU from one process (-g GPUS) with the
# same sizes, iterations and warm-up, data checks on; NCCL_NVLS_ENABLE=0.
#
#   bash bench/collective/vs_nccl_tests.sh XTK_COLLECTIVE NCCL_TESTS_BUILD [OUT]
#
# OUT (default results/<host>-<date>-nccl-tests) gets every raw output and
# summary.md, the table of nccl_tests_compare.py. Environment: GPUS (2), PAIRS
# (5), COLLECTIVES (nccl-tests' names, default all seven), MIN_BYTES (32M),
# MAX_BYTES (1G), ITERS (20), WARMUP (5). NCCL: XTK_NCCL_LIB_DIR or torch's, for both.
# BUNDLE: an xtk bundle (scripts/bundle.sh) whose loader and libraries run
# nccl-tests binaries built on another machine, whatever this host's glibc;
# their libcudart goes beside them.
set -uo pipefail

xtk=${1:?usage: vs_nccl_tests.sh XTK_COLLECTIVE NCCL_TESTS_BUILD [OUT]}
nt=${2:?usage: vs_nccl_tests.sh XTK_COLLECTIVE NCCL_TESTS_BUILD [OUT]}
here=$(cd "$(dirname "$0")" && pwd)
out=${3:-$here/results/$(hostname -s)-$(date +%Y%m%d-%H%M%S)-nccl-tests}
gpus=${GPUS:-2} pairs=${PAIRS:-5}
min=${MIN_BYTES:-32M} max=${MAX_BYTES:-1G} iters=${ITERS:-20} warmup=${WARMUP:-5}
collectives=${COLLECTIVES:-all_reduce all_gather broadcast reduce_scatter reduce alltoall sendrecv}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
nccl_dir=${XTK_NCCL_LIB_DIR:-$(python3 -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib"))' 2>/dev/null)}
if [ -n "$nccl_dir" ] && [ -d "$nccl_dir" ]; then export LD_LIBRARY_PATH=$nccl_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}; fi
{
  nvidia-smi -L 2>/dev/null
  "$xtk" --version
  echo "nccl-tests: $nt (its version heads each of its outputs)"
  echo "NCCL for both: ${nccl_dir:-the default search path}"
} > "$out/host.txt"
cat "$out/host.txt"

nt_run=()
if [ -n "${BUNDLE:-}" ]; then
  nt_run=("$BUNDLE/lib/ld-linux-x86-64.so.2" --library-path "$BUNDLE/lib:$nt${nccl_dir:+:$nccl_dir}")
fi
failed=0
run_xtk() {
  "$xtk" sweep -C "$1" -g "$gpus" -b "$min" -e "$max" -f 2 -n "$iters" -w "$warmup" --json \
    > "$out/$1.xtk.$2.json" 2> "$out/$1.xtk.$2.log" || { echo "xtk $1 pair $2 failed" >&2; failed=1; }
}
run_nccl_tests() {
  "${nt_run[@]}" "$nt/${1}_perf" -g "$gpus" -b "$min" -e "$max" -f 2 -n "$iters" -w "$warmup" -c 1 \
    > "$out/$1.nccl-tests.$2.txt" 2>&1 || { echo "nccl-tests $1 pair $2 failed" >&2; failed=1; }
}
for c in $collectives; do
  for p in $(seq 1 "$pairs"); do
    if ((p % 2)); then run_xtk "$c" "$p"; run_nccl_tests "$c" "$p"; else run_nccl_tests "$c" "$p"; run_xtk "$c" "$p"; fi
  done
  echo "$c: $pairs pairs done"
done
python3 "$here/nccl_tests_compare.py" "$out" --pairs "$pairs" --collectives $collectives | tee "$out/summary.md"
exit $((failed || PIPESTATUS[0]))
