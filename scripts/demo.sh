#!/usr/bin/env bash
# xtk's main job on its built-in default: `xtk demo`, the seed's experiment on
# this machine (three Gloo training hosts and a cross-traffic host in network
# namespaces, a 1 Gbit/s bottleneck emulating the seed's 25 Gbit/s cluster,
# consistent vs burst web-search from 0 to 90 %). Installs what it needs and
# builds the tools (not the tests) first. Needs root (namespaces): run it as
# root, or it asks sudo.
#
#   bash scripts/demo.sh [DIR]      # default ./xtk-demo (from where it is run); rerun to resume
set -euo pipefail
out=$(realpath -m "${1:-xtk-demo}")
self=$(realpath "$0")
cd "$(dirname "$self")/.."

if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then exec sudo bash "$self" "$out"; fi
  echo "demo.sh: the demo builds network namespaces and needs root: run it as root" >&2
  exit 1
fi
bash scripts/install-deps.sh
bash scripts/build.sh release xtk xtk-run xtk-gen xtk-server xtk-client xtk-log xtk-collective xtk-analyze xtk-testbed \
  >/dev/null
exec build/release/tools/xtk/xtk demo -o "$out"
