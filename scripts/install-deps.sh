#!/usr/bin/env bash
# Installs xtk's build and test dependencies from Debian packages (needs root
# or sudo). Quick when everything is already there.
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  libcli11-dev libfmt-dev nlohmann-json3-dev libgtest-dev zlib1g-dev   # zlib: gzip-compressed PyTorch traces
  libseccomp-dev                                    # tests: the tools on a kernel without epoll_pwait2
  clang libclang-rt-14-dev clang-format clang-tidy-22   # fuzzing, formatting, linting (scripts/lint.sh)
  iproute2                                          # network-namespace tests
  libgsl-dev python3-matplotlib python3-pandas      # xtk-analyze fits, analysis/ plots
  libpcap-dev tcpdump tshark iperf3 ethtool         # capture: xtk-log, its tests and bench/capture
  libgloo-dev                                       # xtk-collective's CPU backend (pulls libhiredis-dev)
  libibverbs-dev                                    # the RDMA transport (rdma-core)
  liburing-dev                                      # the flow engine's batched sends (io_uring)
  iperf libtomlplusplus-dev python3                 # bench/flow peers; xtk-run configs
  slurm-wlm munge                                   # the local Slurm cluster of the CI job
  python3-torch patchelf                            # [training] command's test (a Gloo script); scripts/bundle.sh
  openssh-client openssh-server                     # the hosts executor's test (sshd in testbed hosts)
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
# tshark's package asks whether non-root users may capture: answer no, without a prompt.
echo "wireshark-common wireshark-common/install-setuid boolean false" | $sudo debconf-set-selections
# Debian's init scripts would start slurm, munge and sshd at install: forbid that for this install.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
  $sudo chmod +x /usr/sbin/policy-rc.d
  trap '$sudo rm -f /usr/sbin/policy-rc.d' EXIT
fi
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
