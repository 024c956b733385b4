#!/usr/bin/env bash
# Packs what bench/collective/run_gpu.sh needs on a GPU host that has no apt and
# no build tools: xtk-collective (built here with NCCL against CUDA 13 / NCCL
# 2.28, the device's versions), `ip` and `tc` for the network-namespace runs,
# every library they load except the GPU driver and NCCL, and this machine's
# dynamic loader, so they run whatever the host's glibc is.
#
#   bash bench/collective/bundle.sh [BUILD_DIR] [OUT]     # default build/release, build/collective-bundle
#
# OUT/bin/xtk-collective, OUT/bin/ip and OUT/bin/tc are wrappers that start the
# real program through OUT/lib's loader with OUT/lib as the library path
# (nothing is put in the environment, so programs that `ip netns exec` starts
# run with the host's own libraries). libnccl and the driver's libcuda come
# from the host: the wrapper searches $XTK_NCCL_LIB_DIR (run_gpu.sh points it
# at torch's NCCL) and $LD_LIBRARY_PATH after OUT/lib, then the host's default
# paths. Carry OUT (about 11 MB) to the GPU host.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/release}
out=${2:-build/collective-bundle}
bin=$build/tools/xtk-collective/xtk-collective
[ -x "$bin" ] || { echo "bundle.sh: $bin not built (scripts/build.sh release)" >&2; exit 1; }
"$bin" backends | grep -qx nccl || { echo "bundle.sh: $bin has no NCCL backend (CUDA and NCCL were not found)" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out/bin" "$out/libexec" "$out/lib"
programs=("$bin" "$(command -v ip)" "$(command -v tc)")
for p in "${programs[@]}"; do
  cp "$(readlink -f "$p")" "$out/libexec/$(basename "$p")"
  # Every library but the GPU driver's, NCCL (the host's, as torch loads it) and the vDSO.
  ldd "$p" | awk '/=> \// {print $3} /^\t\/lib64\// {print $1}' | while read -r lib; do
    case $(basename "$lib") in libnccl.so* | libcuda.so*) continue ;; esac
    cp -n "$(readlink -f "$lib")" "$out/lib/$(basename "$lib")"
  done
done
loader=$(basename "$(ldd "$bin" | awk '/ld-linux/ {print $1}')")
for p in "${programs[@]}"; do
  name=$(basename "$p")
  cat >"$out/bin/$name" <<WRAPPER
#!/bin/sh
here=\$(dirname "\$(readlink -f "\$0")")/..
exec "\$here/lib/$loader" --library-path "\$here/lib\${XTK_NCCL_LIB_DIR:+:\$XTK_NCCL_LIB_DIR}\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" "\$here/libexec/$name" "\$@"
WRAPPER
  chmod +x "$out/bin/$name"
done
"$out/bin/xtk-collective" --version >/dev/null
"$out/bin/ip" -V >/dev/null
echo "bundle.sh: $out ($(du -sh "$out" | cut -f1)): bin/xtk-collective, bin/ip, bin/tc"
