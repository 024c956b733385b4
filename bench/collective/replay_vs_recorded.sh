#!/usr/bin/env bash
# xtk-collective replay against the PyTorch job it replays, on this host's
# GPUs: PAIRS times, record the job afresh
# (scripts/record-trace.py: its iteration time without the profiler, and
# one profiled iteration's execution and Kineto traces), then replay those
# traces with xtk on the same GPUs. The goal (issue 17): a replayed iteration
# within 10 % of the recorded job's, median of the pair ratios.
#
#   bash bench/collective/replay_vs_recorded.sh XTK_COLLECTIVE [OUT]
#
# Environment: JOB (resnet50-ddp, or tp-pp: record-trace.py --job), RECORD_FLAGS
# (more flags for record-trace.py, e.g. "--tp 1 --pp 2"), GPUS (2; tp-pp: its
# tp x pp), PAIRS (5), ITERS (50, replayed iterations), and
# FIXTURE=1 to also replay tests/data/replay/resnet50-ddp (recorded on 2 H200s).
# NCCL: XTK_NCCL_LIB_DIR or torch's. NCCL_NVLS_ENABLE=0 for both.
set -uo pipefail

xtk=${1:?usage: replay_vs_recorded.sh XTK_COLLECTIVE [OUT]}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${2:-$here/results/$(hostname -s)-$(date +%Y%m%d-%H%M%S)-replay}
job=${JOB:-resnet50-ddp}
read -ra record_flags <<< "${RECORD_FLAGS:-}"
default_gpus=2
if [ "$job" = tp-pp ]; then
  tp=2 pp=2
  for ((i = 0; i + 1 < ${#record_flags[@]}; i++)); do
    case ${record_flags[i]} in --tp) tp=${record_flags[i + 1]} ;; --pp) pp=${record_flags[i + 1]} ;; esac
  done
  default_gpus=$((tp * pp))
fi
gpus=${GPUS:-$default_gpus} pairs=${PAIRS:-5} iters=${ITERS:-50}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
nccl_dir=${XTK_NCCL_LIB_DIR:-$(python3 -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib"))' 2>/dev/null)}
if [ -n "$nccl_dir" ] && [ -d "$nccl_dir" ]; then export LD_LIBRARY_PATH=$nccl_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}; fi
{ nvidia-smi -L 2>/dev/null; "$xtk" --version; } > "$out/host.txt"
cat "$out/host.txt"

# One replay of traces DIR/et-rank{rank}.json(.gz) on every GPU; the JSON summary to $2.
replay() {
  local dir=$1 json=$2 ext=json
  [ -e "$dir/et-rank0.json.gz" ] && ext=json.gz
  local pids=()
  for ((r = 0; r < gpus; r++)); do
    local extra=()
    [ "$r" -eq 0 ] && extra=(--json)
    "$xtk" --backend nccl --rank "$r" --world-size "$gpus" --local-rank "$r" --master 127.0.0.1:29650 \
      --timeout 60s "${extra[@]}" replay --trace "$dir/et-rank{rank}.$ext" --kineto "$dir/kineto-rank{rank}.$ext" \
      --iters "$iters" --warmup 5 -o "$json.it-{rank}.csv" --collectives-file "$json.calls-{rank}.csv" \
      > "$json.rank$r.log" 2>&1 &
    pids+=($!)
  done
  local status=0
  for p in "${pids[@]}"; do wait "$p" || status=1; done
  sed -n '/^{/,/^}/p' "$json.rank0.log" > "$json"
  return $status
}

for ((k = 1; k <= pairs; k++)); do
  python3 "$repo/scripts/record-trace.py" "$out/rec$k" --job "$job" --gpus "$gpus" "${record_flags[@]}" > "$out/rec$k.log" 2>&1 ||
    { echo "recording $k failed:"; tail -5 "$out/rec$k.log"; continue; }
  replay "$out/rec$k" "$out/replay$k.json" || { echo "replay $k failed:"; tail -5 "$out/replay$k.json.rank0.log"; }
done
if [ "${FIXTURE:-0}" = 1 ]; then replay "$repo/tests/data/replay/resnet50-ddp" "$out/replay-fixture.json"; fi

python3 - "$out" "$pairs" <<'EOF'
import json, os, statistics, sys
out, pairs = sys.argv[1], int(sys.argv[2])
rows, ratios = [], []
for k in range(1, pairs + 1):
    try:
        rec = json.load(open(f"{out}/rec{k}/recorded.json"))
        rep = json.load(open(f"{out}/replay{k}.json"))["summary"]
    except (OSError, ValueError, KeyError):
        continue
    r = rep["iteration"]["mean_ms"] / rec["iteration_ms_mean"]
    ratios.append(r)
    rows.append(f"| {k} | {rec['iteration_ms_mean']:.2f} | {rep['compute_ms']:.2f} | {rep['iteration']['mean_ms']:.2f} | {r:.3f} |")
lines = [f"GPUs: {open(out + '/host.txt').read().strip().splitlines()[0] if os.path.exists(out + '/host.txt') else '?'}",
         "", "| pair | recorded job (ms) | replayed compute (ms) | replay (ms) | replay / job |", "|---|---|---|---|---|"] + rows
if ratios:
    lines.append("")
    lines.append(f"median replay / job {statistics.median(ratios):.3f} [{min(ratios):.3f}-{max(ratios):.3f}] over {len(ratios)} pairs")
fixture = f"{out}/replay-fixture.json"
if os.path.exists(fixture):
    rep = json.load(open(fixture))["summary"]
    lines.append(f"fixture (recorded on 2 H200, 37.05 ms): replay {rep['iteration']['mean_ms']:.2f} ms")
open(f"{out}/summary.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
