#!/usr/bin/env bash
# xtk's main job on its built-in default. For now: the seed's two web-search
# cross-traffic schedules (consistent and 1 ms-at-3x-every-10 ms burst) at
# 80 % of a 25 Gbit/s link, written to DIR (default ./xtk-demo) and inspected.
# Installs what it needs and builds first.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-xtk-demo}
bash scripts/install-deps.sh
bash scripts/build.sh release >/dev/null
gen=build/release/tools/xtk-gen/xtk-gen
mkdir -p "$out"

common=(--cdf web-search --link 25G --load 80% --duration 10s --seed 1 --src h0 --dst h1)
echo "== consistent web-search (Poisson arrivals) -> $out/consistent.csv"
"$gen" --profile consistent "${common[@]}" -o "$out/consistent.csv" --inspect
echo
echo "== burst web-search (1 ms at 3x the mean every 10 ms) -> $out/burst.csv"
"$gen" --profile burst "${common[@]}" -o "$out/burst.csv" --inspect
