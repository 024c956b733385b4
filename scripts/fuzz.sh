#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) in the clang sanitizer tree
# (scripts/build.sh asan: ASan+UBSan, -O0) and runs each one for a while from a
# copy of its seed corpus.
#
#   scripts/fuzz.sh                  # every target in `all` below, 30 s each
#   FUZZ_SECONDS=300 scripts/fuzz.sh fuzz_cdf
#
# Prints "fuzz <name>: <runs> runs, ok" per target. On a crash it prints the
# sanitizer report, the crash file's path (kept in a temp dir, never in the
# repo) and how to replay it, and exits 1. Build: build/asan, -j${FUZZ_JOBS:-2}.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${FUZZ_SECONDS:-30}
jobs=${FUZZ_JOBS:-2}
build=$root/build/asan
all=(fuzz_cdf fuzz_schedule fuzz_run_files fuzz_dissector fuzz_replay_trace fuzz_experiment_config fuzz_model_profile fuzz_hosts_file)
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${all[@]}")

if ! [[ $seconds =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: FUZZ_SECONDS must be a positive whole number of seconds, not '$seconds'" >&2
  exit 2
fi
for t in "${targets[@]}"; do
  if [[ " ${all[*]} " != *" $t "* ]]; then
    echo "fuzz.sh: unknown target '$t' (${all[*]})" >&2
    exit 2
  fi
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/xtk-fuzz.XXXXXX")
keep=0
trap '[[ $keep == 1 ]] || rm -rf "$tmp"' EXIT

if ! JOBS=$jobs bash "$root/scripts/build.sh" asan "${targets[@]}" >"$tmp/build.log" 2>&1; then
  cat "$tmp/build.log" >&2
  echo "fuzz.sh: building ${targets[*]} in $build failed" >&2
  exit 2
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

failed=0
for name in "${targets[@]}"; do
  work=$tmp/$name
  mkdir -p "$work/corpus" "$work/artifacts"
  cp "$root/tests/fuzz/corpus/${name#fuzz_}/." "$work/corpus/" -R
  # The shipped configs and profiles seed their readers' corpora where they are kept.
  [[ $name != fuzz_experiment_config ]] || cp "$root"/configs/experiments/*.toml "$work/corpus/"
  [[ $name != fuzz_model_profile ]] || cp "$root"/configs/models/*.csv "$work/corpus/"
  bin=$build/tests/fuzz/$name
  rc=0
  # cwd is the temp dir so nothing libFuzzer writes can land in the repo.
  (cd "$work" && "$bin" -max_total_time="$seconds" -max_len=4096 -timeout=10 -print_final_stats=1 \
      -artifact_prefix="$work/artifacts/" "$work/corpus" >"$work/log" 2>&1) || rc=$?
  runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$work/log" | tail -n 1)
  if [[ $rc == 0 && -n $runs ]]; then
    echo "fuzz $name: $runs runs, ok"
    continue
  fi
  failed=1
  keep=1
  crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$work/log" | tail -n 1)
  # The report without libFuzzer's progress lines ("#1234 NEW ...").
  grep -v -e '^#[0-9]' -e '^INFO: ' -e 'NEW_FUNC' "$work/log" | tail -n 60
  echo "fuzz $name: FAILED (exit $rc)${crash:+, crash file: $crash}"
  [[ -z $crash ]] || echo "  replay: $bin $crash"
  echo "  full log: $work/log"
done
exit $failed
