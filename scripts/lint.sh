#!/usr/bin/env bash
# clang-tidy 22 over the libraries and tools (config: .clang-tidy), using the
# compile commands of build/release. Any warning fails.
#
#   scripts/lint.sh          every check but the static analyzer (CI's, scripts/test.sh): 3 minutes
#   scripts/lint.sh --full   every check: 14 minutes on 2 cores; run before a release and on
#                            what a change touches
#
# clang-tidy 22, not Debian 12's default 14: it matches only the code outside
# system headers, where 14 walked every inline function of CLI11's, NCCL's and
# the standard library's too. The same checks take a third of the time
# (measured 2026-12-01: 3 minutes on 2 cores against 8). The static analyzer
# (clang-analyzer-*) still takes 2 to 8 times a file's other checks.
set -euo pipefail
cd "$(dirname "$0")/.."
checks=(--checks=-clang-analyzer-*)
if [[ ${1:-} == --full ]]; then
  checks=()
elif [[ -n ${1:-} ]]; then
  echo "lint.sh: unknown option '$1' (use --full or nothing)" >&2
  exit 2
fi
tidy=clang-tidy-22
command -v $tidy >/dev/null || { echo "lint: $tidy is not installed (scripts/install-deps.sh)" >&2; exit 1; }
[ -f build/release/compile_commands.json ] || bash scripts/build.sh release >/dev/null
mapfile -t files < <(git ls-files 'lib/*.cpp' 'tools/*.cpp')
# xargs: 123 when some clang-tidy exited non-zero (its findings, printed and caught
# below); above that, one was killed or could not run, and a silent pass would lie.
rc=0
out=$(printf '%s\n' "${files[@]}" | xargs -P "${JOBS:-$(nproc)}" -n 4 $tidy -p build/release --quiet "${checks[@]}" 2>/dev/null) || rc=$?
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
echo "lint: $tidy clean on ${#files[@]} files${checks:+ (the static analyzer off: scripts/lint.sh --full runs it)}"
