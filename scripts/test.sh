#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls exactly this):
# installs dependencies, builds the release and the ASan+UBSan trees, runs the
# unit and CLI tests in both, checks formatting and clang-tidy, and fuzzes the
# parsers briefly.
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

ctest_in() { (cd "build/$1" && ctest --output-on-failure --timeout 600); }

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
step "unit and CLI tests (release)" ctest_in release
step "build asan" bash scripts/build.sh asan
step "unit and CLI tests (ASan+UBSan)" ctest_in asan
step "clang-format" format_check
step "clang-tidy" bash scripts/lint.sh
step "fuzz parsers (${FUZZ_SECONDS:-30} s each)" bash scripts/fuzz.sh

if ((${#failed[@]})); then
  echo "xtk tests: FAILED: ${failed[*]}"
  exit 1
fi
echo "xtk tests: all passed ($SECONDS s)"
