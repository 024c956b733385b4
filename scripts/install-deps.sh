#!/usr/bin/env bash
# Installs xtk's build and test dependencies from Debian packages (needs root
# or sudo). Quick when everything is already there.
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  libcli11-dev libfmt-dev nlohmann-json3-dev libgtest-dev
  clang libclang-rt-14-dev clang-format clang-tidy   # fuzzing, formatting, linting
  iproute2                                          # network-namespace tests
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
