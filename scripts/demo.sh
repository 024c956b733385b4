#!/usr/bin/env bash
# xtk's main job on its built-in default: `xtk demo`, the seed's experiment on
# this machine (three Gloo training hosts and a cross-traffic host in network
# namespaces, a 1 Gbit/s bottleneck, consistent vs burst web-search from 0 to
# 90 %). Installs what it needs and builds first. Needs root (namespaces).
#
#   sudo bash scripts/demo.sh [DIR]      # default ./xtk-demo; rerun to resume
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-xtk-demo}
bash scripts/install-deps.sh
bash scripts/build.sh release >/dev/null
exec build/release/tools/xtk/xtk demo -o "$out"
