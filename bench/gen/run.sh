#!/usr/bin/env bash
# Generator throughput and memory: xtk-gen writing the google-rpc CDF,
# consistent (Poisson) profile, one source at 100 Gbit/s, for a short and a
# long duration, to a file and to /dev/null. See bench/gen/README.md.
#
#   bench/gen/run.sh                        # 2s and 8s (~8.6M and ~35M flows)
#   BENCH_DURATIONS="20ms 80ms" bench/gen/run.sh   # smoke run
#
# Environment: BENCH_DURATIONS (two or more, shortest first; the RSS ratio is
# last / first), BENCH_TMPDIR (where the schedule file goes; default $TMPDIR
# or /tmp; it needs ~1 GB for 8s), XTK_GEN (binary; default the Release build).
# shellcheck disable=SC2059  # $fmt: one printf format for every table line
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
read -r -a durations <<<"${BENCH_DURATIONS:-2s 8s}"
goal=10000000  # flows/s
gen=${XTK_GEN:-$root/build/release/tools/xtk-gen/xtk-gen}
timer=/usr/bin/time

if [[ ${#durations[@]} -lt 2 ]]; then
  echo "run.sh: BENCH_DURATIONS needs two durations or more (short first), got '${durations[*]}'" >&2
  exit 2
fi
[[ -x $timer ]] || { echo "run.sh: $timer not found (Debian package 'time')" >&2; exit 2; }
if [[ ! -x $gen ]]; then
  if [[ -n ${XTK_GEN:-} ]]; then
    echo "run.sh: XTK_GEN=$gen is not an executable" >&2
    exit 2
  fi
  echo "run.sh: building the Release xtk-gen in build/release" >&2
  cmake -S "$root" -B "$root/build/release" -DCMAKE_BUILD_TYPE=Release -DXTK_TESTS=OFF >&2
  cmake --build "$root/build/release" -j2 --target xtk-gen >&2
fi

tmp=$(mktemp -d "${BENCH_TMPDIR:-${TMPDIR:-/tmp}}/xtk-bench-gen.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
out=$tmp/schedule.csv

# measure LABEL CMD...: runs CMD under /usr/bin/time; sets wall and rss, and
# keeps CMD's stderr in $tmp/LABEL.err.
measure() {
  local label=$1
  shift
  if ! "$timer" -f '%e %M' -o "$tmp/$label.time" "$@" 2>"$tmp/$label.err"; then
    cat "$tmp/$label.err" >&2
    echo "run.sh: failed: $*" >&2
    exit 1
  fi
  read -r wall rss <"$tmp/$label.time"
}

# flows_in FILE: the flow count from xtk-gen's "wrote N flows, ..." line.
flows_in() {
  local n
  n=$(sed -n 's/.*wrote \([0-9]*\) flows,.*/\1/p' "$1" | tail -n 1)
  [[ -n $n ]] || { cat "$1" >&2; echo "run.sh: no 'wrote N flows' line from xtk-gen" >&2; exit 1; }
  echo "$n"
}

echo "xtk-gen: $gen"
echo "workload: --profile consistent --cdf google-rpc --load 100G --link 100G --seed 1, one source"
echo "peer: head -c <same bytes> /dev/zero > file (the disk's raw write ceiling for the same bytes), same run"
echo "scratch: $tmp"
echo
fmt='%-8s %-9s %10s %12s %8s %12s %12s %8s %8s\n'
printf "$fmt" duration output flows bytes wall_s flows_per_s max_rss_kib vs_goal vs_peer

# row DURATION OUTPUT WALL RSS FLOWS BYTES PEER_WALL: one table line.
# vs_goal: flows/s over the goal (>= 1 meets it). vs_peer: xtk-gen's wall
# time over the raw write's for the same bytes (1.0 = as fast as the disk).
row() {
  awk -v d="$1" -v o="$2" -v w="$3" -v r="$4" -v f="$5" -v b="$6" -v p="$7" -v g="$goal" -v fmt="$fmt" 'BEGIN {
    fps = w > 0 ? sprintf("%.0f", f / w) : "n/a"
    vg = w > 0 ? sprintf("%.2f", f / w / g) : "n/a"
    vp = (p == "-") ? "-" : (p > 0 ? sprintf("%.2f", w / p) : "n/a")
    printf fmt, d, o, f, b, w, fps, r, vg, vp
  }'
}

declare -A rss_of
for d in "${durations[@]}"; do
  args=(--profile consistent --cdf google-rpc --load 100G --link 100G --seed 1 -t "$d")

  measure "gen-file-$d" "$gen" "${args[@]}" -o "$out"
  flows=$(flows_in "$tmp/gen-file-$d.err")
  bytes=$(stat -c %s "$out")
  gen_wall=$wall gen_rss=$rss
  rm -f "$out"

  # shellcheck disable=SC2016  # $1 and $2 are the inner shell's
  measure "peer-$d" sh -c 'head -c "$1" /dev/zero >"$2"' sh "$bytes" "$out"
  peer_wall=$wall
  rm -f "$out"

  row "$d" file "$gen_wall" "$gen_rss" "$flows" "$bytes" "$peer_wall"
  printf "$fmt" "$d" "peer-file" - "$bytes" "$peer_wall" - "$rss" - -

  measure "gen-null-$d" "$gen" "${args[@]}" -o /dev/null
  null_flows=$(flows_in "$tmp/gen-null-$d.err")
  row "$d" /dev/null "$wall" "$rss" "$null_flows" - -

  rss_of["file-$d"]=$gen_rss
  rss_of["null-$d"]=$rss
done

short=${durations[0]}
long=${durations[${#durations[@]} - 1]}
echo
for o in file null; do
  awk -v s="${rss_of[$o-$short]}" -v l="${rss_of[$o-$long]}" -v o="$o" -v a="$short" -v b="$long" 'BEGIN {
    printf "max RSS %s/%s (%s): %d / %d KiB = %.2f (constant memory: ~1.00)\n", b, a, (o == "file" ? "to a file" : "to /dev/null"), l, s, l / s
  }'
done
