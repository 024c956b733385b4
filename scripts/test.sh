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

# ctest_in TREE [ctest args]: every test of a build tree, or those selected.
ctest_in() {
  local tree=$1
  shift
  (cd "build/$tree" && ctest --output-on-failure --timeout 600 "$@")
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
step "all tests (release): unit, CLI, netns and Slurm integration" ctest_in release
step "build asan" bash scripts/build.sh asan unit_and_cli_tests
step "unit and CLI tests (ASan+UBSan)" ctest_in asan -L "unit|cli"
step "clang-format" format_check
step "clang-tidy" bash scripts/lint.sh
export FUZZ_SECONDS=${FUZZ_SECONDS:-10}
step "fuzz parsers (${FUZZ_SECONDS} s each)" bash scripts/fuzz.sh

if ((${#failed[@]})); then
  echo "xtk tests: FAILED: ${failed[*]}"
  exit 1
fi
echo "xtk tests: all passed ($SECONDS s)"
