#!/usr/bin/env bash
# The Slurm CI job: a real Slurm cluster on this machine (scripts/slurm-local.sh:
# munge, slurmctld, three emulated nodes) and `sbatch --wait` of every script
# in slurm/: cross-traffic.sbatch with a small Gloo experiment (the experiment
# directory and its tables are checked), allreduce.sbatch over Gloo (its
# table), capture.sbatch around a short command (a counter file per node, and
# the samplers stopped when the command ends). The daemons are stopped
# whatever happens. Exit 77 (skip) without root or Slurm.
#
#   tests/integration/slurm_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
[[ $(id -u) == 0 ]] || { echo "SKIP: the local Slurm cluster needs root"; exit 77; }
command -v slurmctld >/dev/null || { echo "SKIP: slurm-wlm is not installed (scripts/install-deps.sh)"; exit 77; }

work=$(mktemp -d /tmp/xtk-slurm-test.XXXXXX)
cleanup() {
  bash "$src/scripts/slurm-local.sh" down "$work/slurm" || true
  rm -rf "$work"
}
trap cleanup EXIT
eval "$(bash "$src/scripts/slurm-local.sh" up "$work/slurm")"

mkdir -p "$work/bin"
for tool in xtk-run xtk-gen xtk-server xtk-client xtk-log xtk-collective xtk-analyze; do
  ln -s "$build/tools/$tool/$tool" "$work/bin/$tool"
done
cat >"$work/exp.toml" <<CONF
[experiment]
name = "slurm-ci"
executor = "slurm"
link = "1G"
step_timeout = "120s"
[training]
backend = "gloo"
model = "$src/tests/data/collective/tiny-mlp.csv"
ranks = 2
iterations = 3
warmup = 0
timeout = "30s"
[cross_traffic]
profiles = ["consistent"]
loads = [0.0, 0.3]
warmup = "500ms"
[capture]
counter_period = "1ms"
CONF

status=0
sbatch --wait --nodes=3 -o "$work/job.out" --export="ALL,XTK_BIN_DIR=$work/bin" \
  "$src/slurm/cross-traffic.sbatch" "$work/exp.toml" -o "$work/exp" -q || status=$?
cat "$work/job.out"
if ((status != 0)); then
  echo "FAIL: the job exited $status"
  tail -n 20 "$work/slurm/slurmctld.log" || true
  exit 1
fi
for step in none/step00 consistent/step01; do
  run_json="$work/exp/tiny-mlp/$step/run.json"
  [[ -f $run_json ]] || { echo "FAIL: no $run_json"; exit 1; }
  grep -q '"status": "ok"' "$run_json" || { echo "FAIL: $run_json is not ok"; cat "$run_json"; exit 1; }
  grep -q '"executor": "slurm"' "$run_json" || { echo "FAIL: $run_json was not run by the slurm executor"; exit 1; }
done
[[ -s $work/exp/tables/iteration_time.csv ]] || { echo "FAIL: no tables"; exit 1; }
grep -q "Iteration time per cross-traffic step" "$work/job.out" || { echo "FAIL: the tables were not printed"; exit 1; }
echo "PASS: the Slurm job ran both steps and printed the tables"

# allreduce.sbatch: the sweep's flags reach xtk-collective as separate words.
status=0
timeout 300 sbatch --wait --nodes=2 -o "$work/allreduce.out" --export="ALL,XTK_BIN_DIR=$work/bin,BACKEND=gloo" \
  "$src/slurm/allreduce.sbatch" -b 8 -e 32K -f 8 -n 2 -w 1 || status=$?
cat "$work/allreduce.out"
((status == 0)) || { echo "FAIL: allreduce.sbatch exited $status"; exit 1; }
grep -q "# Out of bounds values : 0 OK" "$work/allreduce.out" || { echo "FAIL: no correct sweep"; exit 1; }
rows=$(grep -cE '^ +[0-9]+ +[0-9]+ +float +sum' "$work/allreduce.out" || true)
((rows == 5)) || { echo "FAIL: $rows sweep rows, expected 5 (8 B to 32 KiB by 8)"; exit 1; }
echo "PASS: allreduce.sbatch swept 5 sizes over Gloo on 2 nodes"

# capture.sbatch: one counter file per node, and the job ends with the command.
status=0
began=$(date +%s)
timeout 120 sbatch --wait --nodes=2 -o "$work/capture.out" \
  --export="ALL,XTK_BIN_DIR=$work/bin,OUT=$work/cap,IFACE=lo,PERIOD=10ms" \
  "$src/slurm/capture.sbatch" -- sleep 2 || status=$?
cat "$work/capture.out"
((status == 0)) || { echo "FAIL: capture.sbatch exited $status"; exit 1; }
took=$(($(date +%s) - began))
((took < 60)) || { echo "FAIL: capture.sbatch took $took s for a 2 s command (samplers not stopped?)"; exit 1; }
files=("$work"/cap/counters-*.csv)
((${#files[@]} == 2)) || { echo "FAIL: ${#files[@]} counter files, expected one per node: ${files[*]}"; exit 1; }
for f in "${files[@]}"; do
  head -n 1 "$f" | grep -q '^# xtk-counters$' || { echo "FAIL: $f is not a counter file"; exit 1; }
  lines=$(wc -l <"$f")
  ((lines > 100)) || { echo "FAIL: $f has $lines lines for 2 s at 10 ms"; exit 1; }
done
grep -q "the command exited 0" "$work/capture.out" || { echo "FAIL: no end line"; exit 1; }
echo "PASS: capture.sbatch wrote a counter file per node and ended $took s after a 2 s command"
