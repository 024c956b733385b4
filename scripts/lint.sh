#!/usr/bin/env bash
# clang-tidy over the libraries and tools (config: .clang-tidy), using the
# compile commands of build/release. Any warning fails.
#
#   scripts/lint.sh          every check but the two slowest (CI's, scripts/test.sh): 8 minutes
#                            on 2 cores, against 10 with the second
#   scripts/lint.sh --full   every check: about twice as long again, run before a release and
#                            on what a change touches
#
# The two slowest: the static analyzer (clang-analyzer-*), and
# performance-unnecessary-value-param, which clang-tidy 14 runs over every
# inline function of the headers too (CLI11's, NCCL's, where it reports
# nothing): 10 of a CLI11 user's 21 s, 7 of a collective's 11 s, a quarter of
# the lint's CPU time in all (measured 2026-12-01).
set -euo pipefail
cd "$(dirname "$0")/.."
checks=(--checks=-clang-analyzer-*,-performance-unnecessary-value-param)
if [[ ${1:-} == --full ]]; then
  checks=()
elif [[ -n ${1:-} ]]; then
  echo "lint.sh: unknown option '$1' (use --full or nothing)" >&2
  exit 2
fi
command -v clang-tidy >/dev/null || { echo "lint: clang-tidy is not installed (scripts/install-deps.sh)" >&2; exit 1; }
[ -f build/release/compile_commands.json ] || bash scripts/build.sh release >/dev/null
mapfile -t files < <(git ls-files 'lib/*.cpp' 'tools/*.cpp')
# xargs: 123 when some clang-tidy exited non-zero (its findings, printed and caught
# below); above that, one was killed or could not run, and a silent pass would lie.
rc=0
out=$(printf '%s\n' "${files[@]}" | xargs -P "${JOBS:-$(nproc)}" -n 4 clang-tidy -p build/release --quiet "${checks[@]}" 2>/dev/null) || rc=$?
if ((rc > 123)); then
  echo "$out"
  echo "lint: clang-tidy did not run to its end (xargs exit status $rc)"
  exit 1
fi
if grep -qE '(warning|error):' <<<"$out"; then
  echo "$out"
  echo "lint: clang-tidy found the warnings above"
  exit 1
fi
echo "lint: clang-tidy clean on ${#files[@]} files${checks:+ (the static analyzer and performance-unnecessary-value-param off: scripts/lint.sh --full runs them)}"
