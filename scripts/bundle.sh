#!/usr/bin/env bash
# Packs every xtk tool, with `ip` and `tc` for the netns testbed, for a host
# that has no apt and no build tools (a GPU machine): the programs, every
# library they load except the GPU driver's and NCCL, this machine's dynamic
# loader (so they run whatever the host's glibc is), patchelf, the shipped
# configs and analysis/plot.py.
#
#   bash scripts/bundle.sh [BUILD_DIR] [OUT]      # default build/release, build/bundle
#   # on the host, wherever OUT lies (again after moving it):
#   sh OUT/setup.sh && export PATH=$PWD/OUT/bin:$PATH
#
# setup.sh points each program's interpreter and RPATH at OUT/lib (absolute
# paths, so /proc/self/exe stays the tool and it finds its siblings and
# OUT/share/xtk), and adds the host's libnccl directory (XTK_NCCL_LIB_DIR, else
# PyTorch's, else /usr/local/cuda/lib64, else /usr/lib/x86_64-linux-gnu) to
# xtk-collective's RPATH. Build with NCCL (CUDA and NCCL
# found) for GPU runs; the bundle says which backends it has.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
out=${2:-build/bundle}
tools=(xtk xtk-run xtk-collective xtk-client xtk-server xtk-gen xtk-log xtk-analyze xtk-testbed)
programs=()
for t in "${tools[@]}"; do
  [ -x "$build/tools/$t/$t" ] || { echo "bundle.sh: $build/tools/$t/$t not built (scripts/build.sh release)" >&2; exit 1; }
  programs+=("$build/tools/$t/$t")
done
for p in ip tc; do
  command -v "$p" >/dev/null || { echo "bundle.sh: '$p' not found (apt install iproute2)" >&2; exit 1; }
  programs+=("$(command -v "$p")")
done
patchelf=$(command -v patchelf) || { echo "bundle.sh: patchelf not found (apt install patchelf)" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/libexec" "$out/share/xtk/analysis"
copy_libraries() {
  # Every library but the GPU driver's, NCCL (the host's, as PyTorch loads it) and the vDSO.
  ldd "$1" | awk '/=> \// {print $3} /^\t\/lib64\// {print $1}' | while read -r lib; do
    case $(basename "$lib") in libnccl.so* | libcuda.so*) continue ;; esac
    cp -n "$(readlink -f "$lib")" "$out/lib/$(basename "$lib")"
  done
}
for p in "${programs[@]}"; do
  cp "$(readlink -f "$p")" "$out/bin/$(basename "$p")"
  copy_libraries "$p"
done
cp "$(readlink -f "$patchelf")" "$out/libexec/patchelf"
copy_libraries "$patchelf"
cp -r configs/. "$out/share/xtk/"
cp analysis/plot.py "$out/share/xtk/analysis/"
loader=$(basename "$(ldd "$build/tools/xtk-run/xtk-run" | awk '/ld-linux/ {print $1}')")

cat >"$out/setup.sh" <<SETUP
#!/bin/sh
# Makes this xtk bundle runnable where it lies (run again after moving it).
set -e
here=\$(cd "\$(dirname "\$0")" && pwd)
loader=\$here/lib/$loader
patch() { "\$loader" --library-path "\$here/lib" "\$here/libexec/patchelf" --force-rpath --set-interpreter "\$loader" --set-rpath "\$1" "\$2"; }
# NCCL: PyTorch's (what a DDP job loads), else CUDA's, else the system's.
nccl=\${XTK_NCCL_LIB_DIR:-}
if [ -z "\$nccl" ]; then
  nccl=\$(python3 -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib"))' 2>/dev/null || true)
fi
for d in "\$nccl" /usr/local/cuda/lib64 /usr/lib/x86_64-linux-gnu; do
  if [ -n "\$d" ] && ls "\$d"/libnccl.so* >/dev/null 2>&1; then nccl=\$d; break; fi
  nccl=
done
for f in "\$here"/bin/*; do
  if [ "\$(basename "\$f")" = xtk-collective ] && [ -n "\$nccl" ]; then patch "\$here/lib:\$nccl" "\$f"; else patch "\$here/lib" "\$f"; fi
done
echo "xtk bundle in \$here: \$("\$here/bin/xtk-run" --version); backends: \$("\$here/bin/xtk-collective" backends | tr '\n' ' ')"
echo "NCCL: \${nccl:-not found (GPU runs need libnccl.so.2: set XTK_NCCL_LIB_DIR and run setup.sh again)}"
echo "use: export PATH=\$here/bin:\\\$PATH"
SETUP
chmod +x "$out/setup.sh"
sh "$out/setup.sh" >/dev/null
"$out/bin/ip" -V >/dev/null
echo "bundle.sh: $out ($(du -sh "$out" | cut -f1)): ${tools[*]} ip tc; on the host: sh $out/setup.sh"
