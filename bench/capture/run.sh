#!/usr/bin/env bash
# Capture benchmarks: every ratio issue 4 asks for, in one run (see bench/capture/README.md).
#
#   bench/capture/run.sh                                           # the real run (root, ~9 min)
#   BENCH_SECONDS=1 BENCH_SYNTH_PACKETS=20000 bench/capture/run.sh  # smoke: checks the script, numbers mean nothing
#
# 1. capture drops: xtk-log capture vs tcpdump, same snaplen and buffer, on the receiver of
#    iperf3 -P 4 in a two-host netns testbed with offloads off (MTU-size frames);
# 2. trace analysis: xtk-analyze trace --bin 1ms vs tshark -q -z io,stat,0.001, plain and with
#    --disable-protocol eth, on the same files: the capture of 1 (real traffic, few flows) and a
#    synthetic file with many flows;
# 3. counter sampler: interval error p99 and CPU at 1 kHz, idle and under iperf3 load, with every
#    sysfs statistic of the interface and with four of them; under load also with --fifo, and
#    with --fifo --spin (precision bought with CPU); beside each, the floor: a bare sleep loop
#    (sleep_floor.c) that reads nothing.
#
# Environment: BENCH_SECONDS (each capture and sampler run, default 10), BENCH_SYNTH_PACKETS
# (default 2000000), BENCH_SYNTH_FLOWS (default 10000), BENCH_SNAPLENS (default "128 65535"),
# BENCH_BUFFER (default 256MiB), BENCH_TMPDIR (default $TMPDIR or /tmp), XTK_BUILD (the Release
# build tree, default build/release; built if its tools are missing).
# shellcheck disable=SC2059  # $fmt: one printf format per table
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
seconds=${BENCH_SECONDS:-10}
synth_packets=${BENCH_SYNTH_PACKETS:-2000000}
synth_flows=${BENCH_SYNTH_FLOWS:-10000}
read -r -a snaplens <<<"${BENCH_SNAPLENS:-128 65535}"
buffer=${BENCH_BUFFER:-256MiB}
build=${XTK_BUILD:-$root/build/release}
timer=/usr/bin/time
log=$build/tools/xtk-log/xtk-log
analyze=$build/tools/xtk-analyze/xtk-analyze
testbed=$build/tools/xtk-testbed/xtk-testbed
name=benchcap$$

[[ $(id -u) == 0 ]] || { echo "run.sh: needs root (network namespaces, packet capture)" >&2; exit 2; }
for tool in "$timer" tcpdump tshark iperf3 ethtool python3 cc; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool not found (scripts/install-deps.sh installs it)" >&2; exit 2; }
done
if [[ ! -x $log || ! -x $analyze || ! -x $testbed ]]; then
  echo "run.sh: building xtk-log, xtk-analyze and xtk-testbed in $build" >&2
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DXTK_TESTS=OFF >&2
  cmake --build "$build" -j2 --target xtk-log xtk-analyze xtk-testbed >&2
fi

tmp=$(mktemp -d "${BENCH_TMPDIR:-${TMPDIR:-/tmp}}/xtk-bench-capture.XXXXXX")
cleanup() {
  "$testbed" down "$name" >/dev/null 2>&1 || true  # stops everything still running in it
  rm -rf "$tmp"
}
trap cleanup EXIT
h0=xtk-$name-h0
h1=xtk-$name-h1
in_h0() { ip netns exec "$h0" "$@"; }
in_h1() { ip netns exec "$h1" "$@"; }

# json FILE EXPR: a value from the JSON line in FILE (python3 expression on `j`).
json() { python3 -c "import json,sys
for line in open(sys.argv[1]):
    if line.startswith('{'): j = json.loads(line); break
print($2)" "$1"; }
# ratio A B [DIGITS]: A / B, or n/a.
ratio() { awk -v a="$1" -v b="$2" -v d="${3:-2}" 'BEGIN { if (b > 0) printf "%.*f", d, a / b; else printf "n/a" }'; }

echo "xtk capture benchmarks: $(date -u +%FT%TZ), $(nproc) CPUs, kernel $(uname -r)"
echo "xtk-log: $log"
echo "peers: $(tcpdump --version 2>&1 | head -n 1); $(tshark --version | head -n 1); $(iperf3 --version | head -n 1)"
echo "scratch: $tmp"
"$testbed" up "$name" --hosts 2 --no-offloads >/dev/null
in_h1 iperf3 -s -D -p 5201 --pidfile "$tmp/iperf3.pid"
sleep 0.5

# --- 1. capture drops -------------------------------------------------------
echo
echo "== 1. capture drops: iperf3 -c 10.77.0.2 -P 4 -t $seconds from h0, capture on h1 eth0, buffer $buffer, offloads off"
fmt='%-8s %8s %10s %12s %12s %10s %10s %12s\n'
printf "$fmt" tool snaplen iperf_gbps received dropped drop_pct captured vs_tcpdump
buffer_bytes=$(python3 - "$buffer" <<'EOF'
import re, sys
m = re.fullmatch(r"(\d+)(KiB|MiB|GiB)?", sys.argv[1])
if not m: sys.exit("BENCH_BUFFER: give e.g. 256MiB")
print(int(m.group(1)) * {None: 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[m.group(2)])
EOF
)
buffer_kib=$((buffer_bytes / 1024))

# iperf_run LABEL: iperf3 -P 4 from h0; prints its receiver Gbit/s.
iperf_run() {
  in_h0 iperf3 -c 10.77.0.2 -p 5201 -P 4 -t "$seconds" -J >"$tmp/$1.iperf.json"
  python3 -c "import json; print('%.2f' % (json.load(open('$tmp/$1.iperf.json'))['end']['sum_received']['bits_per_second'] / 1e9))"
}

declare -A drop_pct
for snaplen in "${snaplens[@]}"; do
  # xtk-log capture
  # Started without a shell function in between: $! must be the capture itself (ip netns exec execs it).
  ip netns exec "$h1" "$log" capture -i eth0 -s "$snaplen" -B "$buffer" -o "$tmp/xtk-$snaplen.pcap" --stats-every 0 \
    --json >"$tmp/xtk-$snaplen.json" 2>"$tmp/xtk-$snaplen.err" &
  pid=$!
  sleep 0.5
  gbps=$(iperf_run "xtk-$snaplen")
  kill -INT "$pid"
  wait "$pid" || { cat "$tmp/xtk-$snaplen.err" >&2; echo "run.sh: xtk-log capture failed" >&2; exit 1; }
  received=$(json "$tmp/xtk-$snaplen.json" "j['interfaces'][0]['received']")
  dropped=$(json "$tmp/xtk-$snaplen.json" "j['interfaces'][0]['dropped']")
  captured=$(json "$tmp/xtk-$snaplen.json" "j['interfaces'][0]['packets']")
  drop_pct[xtk-$snaplen]=$(awk -v d="$dropped" -v r="$received" 'BEGIN { printf "%.3f", (r > 0 ? 100 * d / r : 0) }')
  xtk_row=("xtk-log" "$snaplen" "$gbps" "$received" "$dropped" "${drop_pct[xtk-$snaplen]}" "$captured")

  # tcpdump, same snaplen and buffer (-B is KiB)
  ip netns exec "$h1" tcpdump -i eth0 -n -s "$snaplen" -B "$buffer_kib" -w "$tmp/tcpdump-$snaplen.pcap" \
    2>"$tmp/tcpdump-$snaplen.err" &
  pid=$!
  sleep 1
  gbps_t=$(iperf_run "tcpdump-$snaplen")
  kill -INT "$pid"
  wait "$pid" || true
  t_captured=$(sed -n 's/^\([0-9]*\) packets captured$/\1/p' "$tmp/tcpdump-$snaplen.err")
  t_received=$(sed -n 's/^\([0-9]*\) packets received by filter$/\1/p' "$tmp/tcpdump-$snaplen.err")
  t_dropped=$(sed -n 's/^\([0-9]*\) packets dropped by kernel$/\1/p' "$tmp/tcpdump-$snaplen.err")
  [[ -n $t_received && -n $t_dropped ]] || { cat "$tmp/tcpdump-$snaplen.err" >&2; echo "run.sh: no tcpdump counts" >&2; exit 1; }
  drop_pct[tcpdump-$snaplen]=$(awk -v d="$t_dropped" -v r="$t_received" 'BEGIN { printf "%.3f", (r > 0 ? 100 * d / r : 0) }')
  # vs_tcpdump: xtk-log's drop share over tcpdump's (below 1 is better; 0 when xtk-log drops nothing).
  printf "$fmt" "${xtk_row[@]}" "$(ratio "${drop_pct[xtk-$snaplen]}" "${drop_pct[tcpdump-$snaplen]}" 3)"
  printf "$fmt" tcpdump "$snaplen" "$gbps_t" "$t_received" "$t_dropped" "${drop_pct[tcpdump-$snaplen]}" "$t_captured" 1
  [[ $snaplen == "${snaplens[0]}" ]] || rm -f "$tmp/xtk-$snaplen.pcap"
  rm -f "$tmp/tcpdump-$snaplen.pcap"
done

# --- 2. trace analysis ------------------------------------------------------
echo
echo "== 2. trace analysis: packets/s, xtk best of 5 (files in page cache); per_core = packets / (user + sys)"
python3 - "$tmp/synthetic.pcap" "$synth_packets" "$synth_flows" <<'EOF'
# Synthetic capture: Ethernet/IPv4/TCP, 1514-byte frames kept to 128 bytes,
# round-robin over N flows, one packet per microsecond, nanosecond stamps.
import struct, sys
path, packets, flows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
frames = []
for f in range(flows):
    eth = bytes.fromhex("020000000002" "020000000001" "0800")
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 1500, 0, 0x4000, 64, 6, 0,
                     bytes([10, 1, (f >> 8) & 255, f & 255]), bytes([10, 2, 0, 1]))
    tcp = struct.pack("!HHIIBBHHH", 10000 + f % 50000, 7000, 1, 0, 0x50, 0x10, 65535, 0, 0)
    frames.append((eth + ip + tcp).ljust(128, b"\0"))
with open(path, "wb") as out:
    out.write(struct.pack("<IHHiIII", 0xa1b23c4d, 2, 4, 0, 0, 128, 1))
    t0 = 1764126000 * 10**9
    record = struct.Struct("<IIII")
    chunk = []
    for i in range(packets):
        t = t0 + i * 1000
        chunk.append(record.pack(t // 10**9, t % 10**9, 128, 1514) + frames[i % flows])
        if len(chunk) == 65536:
            out.write(b"".join(chunk))
            chunk = []
    out.write(b"".join(chunk))
EOF

# timed LABEL CMD...: one run; sets wall (s, from the shell's microsecond clock: /usr/bin/time
# rounds to 10 ms, too coarse for a 0.1 s run) and cpu (user + sys, from /usr/bin/time).
timed() {
  local label=$1 start u s
  shift
  start=$EPOCHREALTIME
  "$timer" -f '%U %S' -o "$tmp/$label.time" "$@" >/dev/null 2>"$tmp/$label.err" ||
    { cat "$tmp/$label.err" >&2; echo "run.sh: failed: $*" >&2; exit 1; }
  wall=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.4f", b - a }')
  read -r u s <"$tmp/$label.time"
  cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
}
# best_of5 LABEL CMD...: the fastest of five runs (wall and its cpu).
best_of5() {
  local best="" best_cpu=""
  for _ in 1 2 3 4 5; do
    timed "$@"
    if [[ -z $best ]] || awk -v a="$wall" -v b="$best" 'BEGIN { exit !(a < b) }'; then
      best=$wall
      best_cpu=$cpu
    fi
  done
  wall=$best
  cpu=$best_cpu
}
# once LABEL CMD...: one timed run (tshark is too slow to repeat).
once() { timed "$@"; }

fmt='%-34s %-44s %10s %8s %8s %14s %14s\n'
printf "$fmt" file tool packets wall_s cpu_s packets_per_s per_core_pps
goal=10000000
for f in "$tmp/xtk-${snaplens[0]}.pcap" "$tmp/synthetic.pcap"; do
  label=$(basename "$f" .pcap)
  packets=$("$analyze" trace "$f" --json | python3 -c "import json,sys; print(json.load(sys.stdin)['summary']['packets_read'])")
  cat "$f" >/dev/null  # into the page cache
  # Per-flow bins of every 1 ms written (to /dev/null), the flow table and summary printed.
  best_of5 "xtk-$label" "$analyze" trace "$f" --bin 1ms -o /dev/null
  xtk_pps=$(ratio "$packets" "$wall" 0)
  xtk_core=$(ratio "$packets" "$cpu" 0)
  printf "$fmt" "$label" "xtk-analyze trace --bin 1ms -o /dev/null" "$packets" "$wall" "$cpu" "$xtk_pps" "$xtk_core"
  once "tshark-$label" tshark -n -q -z io,stat,0.001 -r "$f"
  plain_pps=$(ratio "$packets" "$wall" 0)
  printf "$fmt" "" "tshark -n -q -z io,stat,0.001" "$packets" "$wall" "$cpu" "$plain_pps" "$(ratio "$packets" "$cpu" 0)"
  once "tuned-$label" tshark -n -q -z io,stat,0.001 --disable-protocol eth -r "$f"
  tuned_pps=$(ratio "$packets" "$wall" 0)
  printf "$fmt" "" "tshark ... --disable-protocol eth" "$packets" "$wall" "$cpu" "$tuned_pps" "$(ratio "$packets" "$cpu" 0)"
  echo "  ratios ($label): xtk vs tshark $(ratio "$xtk_pps" "$plain_pps" 1)x, vs tuned tshark $(ratio "$xtk_pps" "$tuned_pps" 1)x (goal >= 20x); per core vs 10M/s goal $(ratio "$xtk_core" "$goal" 2)"
done

# --- 3. counter sampler -------------------------------------------------------
few=net:eth0=rx_bytes,tx_bytes,rx_packets,tx_packets
echo
echo "== 3. counter sampler: xtk-log counters --period 1ms -t $seconds in h0 (goal: p99 |interval - 1ms| <= 20 us, CPU <= 2 %)"
echo "   sources: 'all' = net:eth0 (all 24 statistics, one netlink request), 'few' = $few"
fmt='%-42s %9s %8s %11s %16s %16s %7s %6s %8s\n'
printf "$fmt" condition counters samples err_p99_us interval_p99_us interval_max_us missed slow cpu_pct
# sampler LABEL SOURCE [OPTIONS...]: one run, one table line.
sampler() {
  local label=$1 source=$2
  shift 2
  in_h0 "$log" counters -s "$source" --period 1ms -t "$seconds" -o /dev/null --json "$@" >"$tmp/sampler.json"
  printf "$fmt" "$label" \
    "$(json "$tmp/sampler.json" "j['counters']")" "$(json "$tmp/sampler.json" "j['samples']")" \
    "$(json "$tmp/sampler.json" "'%.1f' % (j['error_p99_ns'] / 1e3)")" \
    "$(json "$tmp/sampler.json" "'%.1f' % (j['interval_p99_ns'] / 1e3)")" \
    "$(json "$tmp/sampler.json" "'%.1f' % (j['interval_max_ns'] / 1e3)")" \
    "$(json "$tmp/sampler.json" "j['missed_deadlines']")" "$(json "$tmp/sampler.json" "j['slow_samples']")" \
    "$(json "$tmp/sampler.json" "'%.2f' % j['cpu_percent']")"
}
# floor LABEL [fifo]: the bare sleep loop (sleep_floor.c), the best any sleeping sampler can do here.
cc -O2 -o "$tmp/sleep_floor" "$root/bench/capture/sleep_floor.c"
floor() {
  local label=$1
  shift
  in_h0 "$tmp/sleep_floor" "$seconds" "$@" >"$tmp/floor.json"
  printf "$fmt" "$label" 0 "$((seconds * 1000))" "$(json "$tmp/floor.json" "'%.1f' % (j['error_p99_ns'] / 1e3)")" \
    - - - - "$(json "$tmp/floor.json" "'%.2f' % j['cpu_percent']")"
}
# The tuned configuration: the sampler pinned off CPU 0 (where the bench's other work lands when it
# is confined), SCHED_FIFO, 10 us of spin, and idle CPUs kept polling (PM QoS) so that no wake-up
# pays the exit from the VM's halt.
tuned=(--cpu 1 --fifo 50 --spin 10us --cpu-wake-latency 0)
floor_tuned=(--cpu 1 --fifo --spin 10 --cpu-wake-latency 0)
floor "idle, floor (sleep only)"
sampler "idle, all" net:eth0
sampler "idle, few" "$few"
floor "idle, floor, tuned" "${floor_tuned[@]}"
sampler "idle, few, tuned" "$few" "${tuned[@]}"
sampler "idle, all, tuned" net:eth0 "${tuned[@]}"
ip netns exec "$h0" iperf3 -c 10.77.0.2 -p 5201 -P 4 -t $((9 * seconds + 4)) >/dev/null &
load=$!
sleep 1
floor "iperf3 -P 4, floor (sleep only)"
sampler "iperf3 -P 4, all" net:eth0
sampler "iperf3 -P 4, few" "$few"
floor "iperf3 -P 4, floor, SCHED_FIFO" --fifo
sampler "iperf3 -P 4, few, --fifo 50" "$few" --fifo 50
sampler "iperf3 -P 4, few, --fifo 50 --spin 200us" "$few" --fifo 50 --spin 200us
floor "iperf3 -P 4, floor, tuned" "${floor_tuned[@]}"
sampler "iperf3 -P 4, few, tuned" "$few" "${tuned[@]}"
sampler "iperf3 -P 4, all, tuned" net:eth0 "${tuned[@]}"
wait "$load" || true
# The load kept off the sampler's CPU, as on a host whose sampler has a core of its own: iperf3 on
# CPU 0 and the testbed's receive processing steered there (RPS, xtk-testbed --net-cpus 0).
"$testbed" up "$name" --hosts 2 --no-offloads --net-cpus 0 >/dev/null
# A fresh pidfile: iperf3 will not start while the old one names a PID that is still being reaped.
in_h1 iperf3 -s -D -p 5201 --pidfile "$tmp/iperf3-confined.pid"
for _ in $(seq 50); do in_h1 ss -ltn | grep -q ':5201 ' && break; sleep 0.1; done
in_h1 ss -ltn | grep -q ':5201 ' || { echo "run.sh: iperf3 server did not start in h1" >&2; exit 1; }
ip netns exec "$h0" taskset -c 0 iperf3 -c 10.77.0.2 -p 5201 -P 4 -t $((3 * seconds + 4)) >/dev/null &
load=$!
sleep 1
floor "iperf3 -P 4 on CPU 0, floor, tuned" "${floor_tuned[@]}"
sampler "iperf3 -P 4 on CPU 0, few, tuned" "$few" "${tuned[@]}"
sampler "iperf3 -P 4 on CPU 0, all, tuned" net:eth0 "${tuned[@]}"
wait "$load" || true
echo
echo "run.sh: done"
