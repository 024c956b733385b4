#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls exactly this):
# installs dependencies, builds the release and the ASan+UBSan trees, runs every
# test in release (the netns and Slurm integration tests need root) and the unit
# and CLI tests under the sanitizers, checks formatting and clang-tidy, and
# fuzzes the parsers briefly (FUZZ_SECONDS each, default 10).
# Ends with one summary line; exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."

failed=()
step() {
  local name=$1
  shift
  echo "== $name"
  local start=$SECONDS
  if "$@"; then
    echo "-- $name: ok ($((SECONDS - start)) s)"
  else
    echo "-- $name: FAILED ($((SECONDS - start)) s)"
    failed+=("$name")
  fi
}

# ctest_in TREE [ctest args]: every test of a build tree, or those selected,
# two at a time (most wait on timers and namespaces, not on the CPU).
ctest_in() {
  local tree=$1
  shift
  (cd "build/$tree" && ctest -j2 --output-on-failure --timeout 600 "$@")
}

# clang-tidy needs only the release tree's compile commands:
# it runs in the background from then on, at the lowest priority, on the CPU
# the tests and the ASan build leave idle, and is waited for at the end.
lint_log=$(mktemp)
trap 'rm -f "$lint_log"' EXIT
start_lint() {
  nice -n 19 bash scripts/lint.sh >"$lint_log" 2>&1 &
  lint_pid=$!
  lint_started=$SECONDS
}
wait_lint() {
  wait "$lint_pid"
  local status=$?
  cat "$lint_log"
  echo "(clang-tidy ran $((SECONDS - lint_started)) s in all, beside the steps above)"
  return $status
}

format_check() {
  local files
  mapfile -t files < <(git ls-files '*.cpp' '*.hpp' 2>/dev/null || find lib tools tests bench -name '*.[ch]pp')
  clang-format --dry-run --Werror "${files[@]}"
}

step "install dependencies" bash scripts/install-deps.sh || true
if ((${#failed[@]})); then
  echo "xtk tests: FAILED (could not install dependencies)"
  exit 1
fi
step "build release" bash scripts/build.sh release
start_lint
step "all tests (release): unit, CLI, netns and Slurm integration" ctest_in release
step "build asan" bash scripts/build.sh asan unit_and_cli_tests
step "unit and CLI tests (ASan+UBSan)" ctest_in asan -L "unit|cli"
step "clang-format" format_check
export FUZZ_SECONDS=${FUZZ_SECONDS:-10}
step "fuzz parsers (${FUZZ_SECONDS} s each)" bash scripts/fuzz.sh
step "clang-tidy" wait_lint

if ((${#failed[@]})); then
  echo "xtk tests: FAILED: ${failed[*]}"
  exit 1
fi
echo "xtk tests: all passed ($SECONDS s)"
