#!/usr/bin/env bash
# clang-tidy over the libraries and tools (config: .clang-tidy), using the
# compile commands of build/release. Any warning fails.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/release/compile_commands.json ] || bash scripts/build.sh release >/dev/null
mapfile -t files < <(git ls-files 'lib/*.cpp' 'tools/*.cpp')
out=$(printf '%s\n' "${files[@]}" | xargs -P "${JOBS:-$(nproc)}" -n 4 clang-tidy -p build/release --quiet 2>/dev/null || true)
if grep -qE '(warning|error):' <<<"$out"; then
  echo "$out"
  echo "lint: clang-tidy found the warnings above"
  exit 1
fi
echo "lint: clang-tidy clean on ${#files[@]} files"
