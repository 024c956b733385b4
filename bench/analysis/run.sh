#!/usr/bin/env bash
# `xtk-analyze tables` on a synthetic experiment of 20 steps x 4 models x 10k
# iterations (4 ranks, bottleneck counters at 1 Hz), generated here in a temp
# dir; the goal is under a second. See bench/analysis/README.md.
#
#   bench/analysis/run.sh                                    # the benchmark
#   BENCH_STEPS=3 BENCH_ITERATIONS=200 bench/analysis/run.sh # smoke run: checks the script, numbers mean nothing
#
# Environment: BENCH_STEPS (20), BENCH_ITERATIONS (10000 per rank and step),
# BENCH_RUNS (3 timed runs of each command), BENCH_TMPDIR (default $TMPDIR or
# /tmp; the full experiment is ~300 MB), XTK_ANALYZE (binary; default the
# Release build, built with -j2 when missing), BENCH_PEER=0 skips the pandas peer.
# shellcheck disable=SC2059  # $fmt: one printf format for every table line
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
steps=${BENCH_STEPS:-20}
iterations=${BENCH_ITERATIONS:-10000}
runs=${BENCH_RUNS:-3}
analyze=${XTK_ANALYZE:-$root/build/release/tools/xtk-analyze/xtk-analyze}
timer=/usr/bin/time
goal=1.0  # seconds

for n in "$steps" "$iterations" "$runs"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: BENCH_STEPS, BENCH_ITERATIONS and BENCH_RUNS are positive integers" >&2; exit 2; }
done
((steps >= 2)) || { echo "run.sh: BENCH_STEPS must be 2 or more" >&2; exit 2; }
[[ -x $timer ]] || { echo "run.sh: $timer not found (Debian package 'time')" >&2; exit 2; }
if [[ ! -x $analyze ]]; then
  if [[ -n ${XTK_ANALYZE:-} ]]; then
    echo "run.sh: XTK_ANALYZE=$analyze is not an executable" >&2
    exit 2
  fi
  echo "run.sh: building the Release xtk-analyze in build/release" >&2
  cmake -S "$root" -B "$root/build/release" -DCMAKE_BUILD_TYPE=Release >&2
  cmake --build "$root/build/release" -j2 --target xtk-analyze >&2
fi

tmp=$(mktemp -d "${BENCH_TMPDIR:-${TMPDIR:-/tmp}}/xtk-bench-analysis.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
exp=$tmp/exp

echo "xtk-analyze: $analyze"
echo "experiment: $steps steps x 4 models x $iterations iterations x 4 ranks (bench/analysis/make_experiment.py, seed 1)"
python3 "$root/bench/analysis/make_experiment.py" "$exp" --steps "$steps" --iterations "$iterations"
step_dirs=$(find "$exp" -name run.json | wc -l)
rows=$(find "$exp" -name iterations.csv -exec cat {} + | grep -vc '^[#r]')
bytes=$(du -sb "$exp" | cut -f1)
echo "step directories: $step_dirs, iteration rows: $rows, bytes on disk: $bytes"
echo "machine: $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)"
echo

# measure LABEL CMD...: runs CMD under /usr/bin/time with stdout discarded; sets wall and rss.
measure() {
  local label=$1
  shift
  if ! "$timer" -f '%e %M' -o "$tmp/$label.time" "$@" >/dev/null 2>"$tmp/$label.err"; then
    cat "$tmp/$label.err" >&2
    echo "run.sh: failed: $*" >&2
    exit 1
  fi
  read -r wall rss <"$tmp/$label.time"
}

fmt='%-34s %4s %8s %12s %8s\n'
printf "$fmt" command run wall_s max_rss_kib vs_goal
# row LABEL RUN: one line; vs_goal = goal / wall (>= 1.00 meets the goal of 1 s).
row() {
  awk -v l="$1" -v r="$2" -v w="$wall" -v m="$rss" -v g="$goal" -v fmt="$fmt" 'BEGIN {
    printf fmt, l, r, w, m, (w > 0 ? sprintf("%.2f", g / w) : "inf")
  }'
}

# The first read fills the page cache; every timed run then reads from memory.
measure warm cat "$exp"/*/*/*/*.csv
wall=$wall rss=$rss row "cat (read ceiling, cache warm-up)" 0
for ((r = 1; r <= runs; r++)); do
  measure "tables$r" "$analyze" tables "$exp"
  row "xtk-analyze tables" "$r"
done
for ((r = 1; r <= runs; r++)); do
  measure "csv$r" "$analyze" tables "$exp" -o "$tmp/csv" --json
  row "xtk-analyze tables -o DIR --json" "$r"
done
measure cat cat "$exp"/*/*/*/*.csv
row "cat (read ceiling)" 1
if [[ ${BENCH_PEER:-1} != 0 ]] && /usr/bin/python3 -c 'import pandas' 2>/dev/null; then
  measure pandas /usr/bin/python3 "$root/bench/analysis/pandas_peer.py" "$exp"
  row "pandas peer (table 1 only)" 1
else
  echo "(pandas peer skipped: BENCH_PEER=0 or no python3-pandas)"
fi
