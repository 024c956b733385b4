#!/usr/bin/env bash
# The Slurm CI job: a real Slurm cluster on this machine (scripts/slurm-local.sh:
# munge, slurmctld, three emulated nodes), `sbatch --wait` of
# slurm/cross-traffic.sbatch with a small Gloo experiment, then the
# experiment directory and its tables are checked. The daemons are stopped
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
