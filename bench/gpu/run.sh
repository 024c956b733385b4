#!/usr/bin/env bash
# xtk-run on a GPU host, from a bundle (scripts/bundle.sh), as root:
#
#   bash bench/gpu/run.sh BUNDLE OUT check        # bench/gpu/check.toml; then the same with P2P/SHM on, one host id (must fail)
#   bash bench/gpu/run.sh BUNDLE OUT experiment   # configs/experiments/gpu-netns.toml
#   bash bench/gpu/run.sh BUNDLE OUT shared       # its ResNet-50 half with both ranks on GPU 0, twice
#   bash bench/gpu/run.sh BUNDLE OUT spread [SEED]  # the ResNet-50 half, 3 repetitions (new draws) and the point over them;
#                                                 # a GPU per rank where the host has two, else both on GPU 0
#   bash bench/gpu/run.sh BUNDLE OUT fidelity     # DDP ResNet-50 vs the emulator at its compute time
#   bash bench/gpu/run.sh BUNDLE OUT sockets      # bench/gpu/sockets.toml: NCCL's socket defaults, then 2 x 4 sockets
#
# Each run's directory (tables, plots, step logs) lands in OUT. NCCL_NVLS_ENABLE=0 throughout.
set -euo pipefail
bundle=$(cd "$1" && pwd)
out=$2
what=$3
mkdir -p "$out"
sh "$bundle/setup.sh"
export PATH=$bundle/bin:$PATH NCCL_NVLS_ENABLE=0
nvidia-smi -L

case $what in
check)
  xtk-run bench/gpu/check.toml -o "$out/check" || echo "check: xtk-run exited $?"
  # NCCL let onto the host's own paths: each must fail the step, by NCCL's report of its connections.
  # One NCCL_HOSTID for both ranks undoes xtk-run's per-host ids, which alone keep NCCL off P2P and
  # SHM (docs/experiments.md); needs a GPU per rank (on one, NCCL refuses the duplicate GPU).
  variants=(
    'p2p-shm|NCCL_HOSTID = "one", NCCL_P2P_DISABLE = "0", NCCL_SHM_DISABLE = "0"'
    'p2p-ipc|NCCL_HOSTID = "one", NCCL_P2P_DISABLE = "0", NCCL_SHM_DISABLE = "0", NCCL_CUMEM_ENABLE = "0"'
    'shm|NCCL_HOSTID = "one", NCCL_SHM_DISABLE = "0"'
  )
  for v in "${variants[@]}"; do
    name=${v%%|*}
    sed "s/^startup = \"5s\"/&\nenv = { ${v#*|} }/; s/^loads = .*/loads = [0.0]/" bench/gpu/check.toml >"$out/check-$name.toml"
    xtk-run "$out/check-$name.toml" -o "$out/check-$name" --no-analysis || echo "check-$name: xtk-run exited $? (expected 1)"
  done
  ;;
experiment)
  xtk-run configs/experiments/gpu-netns.toml -o "$out/gpu-netns" || echo "gpu-netns: xtk-run exited $?"
  ;;
shared | spread)
  # One GPU: both ranks on it, each its own testbed host to NCCL (NCCL_HOSTID).
  sed 's/^models = .*/models = ["resnet50"]/; s/^ranks = 2 .*/ranks = 2\ngpus = [0, 0]/; s/^name = .*/name = "gpu-netns-shared"/' \
    configs/experiments/gpu-netns.toml >"$out/gpu-netns-shared.toml"
  if [ "$what" = spread ]; then
    config=$out/gpu-netns-shared.toml
    if [ "$(nvidia-smi -L | grep -c '^GPU ')" -ge 2 ]; then
      config=$out/gpu-netns-resnet50.toml
      sed 's/^models = .*/models = ["resnet50"]/; s/^name = .*/name = "gpu-netns-resnet50"/' \
        configs/experiments/gpu-netns.toml >"$config"
    fi
    # Every step of each repetition draws new cross traffic; xtk-run ends with xtk-analyze spread.
    sed -i "s/^seed = .*/seed = ${4:-1}\nrepetitions = 3/" "$config"
    xtk-run "$config" -o "$out/spread" || echo "spread: xtk-run exited $?"
  else
    for k in 1 2; do
      xtk-run "$out/gpu-netns-shared.toml" -o "$out/shared-$k" || echo "shared-$k: xtk-run exited $?"
    done
  fi
  ;;
fidelity)
  # The example's compute time alone on one GPU, then the emulator at that compute time.
  compute_ms=$(python3 examples/training/ddp_resnet50.py --batch 64 --compute-only | tee /dev/stderr |
    sed -n 's/.*compute_ms=\([0-9.]*\).*/\1/p')
  profile_ms=$(sed -n 's/^# compute_ms=//p' configs/models/resnet50.csv)
  scale=$(python3 -c "print($compute_ms / $profile_ms)")
  sed "s/^name = .*/name = \"emulator-fidelity\"/; s/^command = .*/compute_scale = $scale/" \
    bench/gpu/ddp-fidelity.toml >"$out/emulator-fidelity.toml"
  xtk-run bench/gpu/ddp-fidelity.toml -o "$out/ddp" || echo "ddp: xtk-run exited $?"
  xtk-run "$out/emulator-fidelity.toml" -o "$out/emulator" || echo "emulator: xtk-run exited $?"
  ;;
sockets)
  xtk-run bench/gpu/sockets.toml -o "$out/sockets-default" || echo "sockets-default: xtk-run exited $?"
  sed 's/^startup = "5s"/&\nenv = { NCCL_SOCKET_NTHREADS = "2", NCCL_NSOCKS_PERTHREAD = "4" }/; s/^name = .*/name = "gpu-sockets-8"/' \
    bench/gpu/sockets.toml >"$out/sockets-8.toml"
  xtk-run "$out/sockets-8.toml" -o "$out/sockets-8" || echo "sockets-8: xtk-run exited $?"
  ;;
*)
  echo "run.sh: unknown run '$what' (check, experiment, shared, spread, fidelity or sockets)" >&2
  exit 2
  ;;
esac
