#!/usr/bin/env bash
# clang-tidy over the libraries and tools (config: .clang-tidy), using the
# compile commands of build/release. Any warning fails.
#
#   scripts/lint.sh              every check but the static analyzer (CI's, scripts/test.sh)
#   scripts/lint.sh --analyzer   every check, clang-analyzer-* too: about twice as long (some
#                                15 minutes on 2 cores), run before a release and on what a
#                                change touches
set -euo pipefail
cd "$(dirname "$0")/.."
checks=(--checks=-clang-analyzer-*)
if [[ ${1:-} == --analyzer ]]; then
  checks=()
elif [[ -n ${1:-} ]]; then
  echo "lint.sh: unknown option '$1' (use --analyzer or nothing)" >&2
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
echo "lint: clang-tidy clean on ${#files[@]} files${checks:+ (static analyzer off: scripts/lint.sh --analyzer runs it)}"
