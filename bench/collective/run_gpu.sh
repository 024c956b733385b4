#!/usr/bin/env bash
# The collective harness on a GPU host, against torch.distributed in the same
# call (the issue's device acceptance). Builds nothing: give it an
# xtk-collective built with NCCL (a build tree's binary, or that of a bundle
# from scripts/bundle.sh, after its setup.sh).
#
#   bash bench/collective/run_gpu.sh XTK_COLLECTIVE [OUT]
#
# OUT (default bench/collective/results/<host>-<date>) receives every raw
# output: for each case the xtk sweep (table, JSON, every rank's log), the
# torch.distributed peer (table, JSON) and their ratio; the generated model
# profiles; the train runs (summary, JSON, iterations files).
#
#   1. profiles: gen_profiles.py from torchvision / transformers (no weights)
#   2. NVLink, one process per GPU: xtk sweep vs torch, busbw ratios (goal >= 0.99 from 32 MB)
#   3. NVLink, one process driving every GPU (-g N): xtk sweep vs the same torch run
#   4. train: resnet50 and bert-large profiles, one process per GPU
#   5. NETNS=1: two network namespaces joined by a veth pair, one GPU each, NCCL
#      over sockets (P2P, SHM, IB off), unshaped and with tbf 10 Gbit/s on both
#      ends: xtk sweep vs torch. Needs root and `ip`/`tc` on PATH (the bundle's).
#
# Environment: PARTS (which of profiles, nvlink, train, netns to run; default
# the first three, plus netns with NETNS=1 - a whole run may not fit a 10-minute
# slot, so PARTS=netns runs step 5 alone), GPUS (default: every GPU torch sees),
# MIN_BYTES (32M), MAX_BYTES (1G), ITERS (20), WARMUP (5), TRAIN_ITERS (30),
# NETNS_MAX_BYTES (256M), NETNS_RATE (10gbit), PYTHON (python3), PROFILES (a
# directory of profiles to train with instead of generating them).
# NCCL_NVLS_ENABLE=0 is always set.
set -uo pipefail

xtk=${1:?usage: run_gpu.sh XTK_COLLECTIVE [OUT]}
here=$(cd "$(dirname "$0")" && pwd)
out=${2:-$here/results/$(hostname -s)-$(date +%Y%m%d-%H%M%S)}
python=${PYTHON:-python3}
min=${MIN_BYTES:-32M} max=${MAX_BYTES:-1G} iters=${ITERS:-20} warmup=${WARMUP:-5}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0  # NVLink multicast must stay off on the device machines
gpus=${GPUS:-$($python -c 'import torch; print(torch.cuda.device_count())')}
if ! [[ $gpus =~ ^[0-9]+$ ]] || ((gpus < 2)); then
  echo "run_gpu.sh: needs 2 or more GPUs, torch sees '${gpus}'" >&2
  exit 1
fi
# The NCCL that torch loads, so both sides run the same library build.
nccl_dir=$($python -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib"))' 2>/dev/null)
if [ -n "$nccl_dir" ] && [ -d "$nccl_dir" ]; then
  export XTK_NCCL_LIB_DIR=$nccl_dir LD_LIBRARY_PATH=$nccl_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
port=$((29600 + RANDOM % 2000))
failed=()
parts=${PARTS:-profiles nvlink train$([ "${NETNS:-0}" = 1 ] && echo " netns")}
part() { [[ " $parts " == *" $1 "* ]]; }
profiles=${PROFILES:-$out/models}

echo "run_gpu.sh: $gpus GPUs, $min..$max, -n $iters -w $warmup, parts: $parts; results in $out"
{
  nvidia-smi -L 2>/dev/null
  nvidia-smi topo -m 2>/dev/null
  "$xtk" --version
  $python -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'
  echo "NCCL library for both: ${XTK_NCCL_LIB_DIR:-the default search path}"
} >"$out/host.txt" 2>&1

# xtk_sweep NAME NPROCS MASTER ARGS...: NPROCS ranks on this host, rank r on GPU r;
# with $ns set, rank r runs in network namespace $ns$r.
xtk_sweep() {
  local name=$1 nprocs=$2 master=$3
  shift 3
  local pids=() r
  for ((r = 0; r < nprocs; r++)); do
    local prefix=() log=$out/$name.rank$r.log
    [ -n "${ns:-}" ] && prefix=(ip netns exec "$ns$r")
    if ((r == 0)); then  # rank 0 prints the results: --json makes them the JSON document
      "${prefix[@]}" "$xtk" sweep --backend nccl --rank "$r" --world-size "$nprocs" --local-rank "$r" \
        --master "$master:$port" "$@" --json >"$out/$name.json" 2>"$log" &
    else
      "${prefix[@]}" "$xtk" sweep --backend nccl --rank "$r" --world-size "$nprocs" --local-rank "$r" \
        --master "$master:$port" "$@" >"$log" 2>&1 &
    fi
    pids+=($!)
  done
  local status=0
  for p in "${pids[@]}"; do wait "$p" || status=1; done
  port=$((port + 1))
  cp "$out/$name.rank0.log" "$out/$name.txt"
  ((status == 0)) || { echo "run_gpu.sh: $name failed (see $out/$name.rank*.log)"; failed+=("$name"); }
  return $status
}

compare() {  # NAME XTK_JSON TORCH_JSON
  $python "$here/compare.py" --label "$1" "$2" "$3" | tee "$out/$1.ratio.txt" || true
}

# 1. Model profiles.
if part profiles; then
  $python "$here/gen_profiles.py" --out "$profiles" >"$out/gen_profiles.txt" 2>&1 || failed+=(gen_profiles)
  cat "$out/gen_profiles.txt"
fi

# 2. and 3. NVLink.
sweep=(-b "$min" -e "$max" -f 2 -n "$iters" -w "$warmup")
if part nvlink; then
  $python "$here/torch_allreduce.py" --nprocs "$gpus" "${sweep[@]}" --master "127.0.0.1:$((port + 1000))" \
    --json "$out/nvlink_torch.json" >"$out/nvlink_torch.txt" 2>&1 || failed+=(nvlink_torch)
  xtk_sweep nvlink_xtk "$gpus" 127.0.0.1 "${sweep[@]}" && compare nvlink "$out/nvlink_xtk.json" "$out/nvlink_torch.json"
  if "$xtk" sweep --backend nccl -g "$gpus" --master "127.0.0.1:$port" "${sweep[@]}" --json \
    >"$out/nvlink_xtk_g.json" 2>"$out/nvlink_xtk_g.txt"; then
    compare nvlink-g "$out/nvlink_xtk_g.json" "$out/nvlink_torch.json"
  else
    failed+=(nvlink_xtk_g)
  fi
  port=$((port + 1))
fi

# 4. Training emulation.
part train && for model in resnet50 bert-large; do
  profile=$profiles/$model.csv
  [ -f "$profile" ] || profile=$model  # configs/models/$model.csv when it ships
  pids=()
  for ((r = 0; r < gpus; r++)); do
    # Rank 0 prints the results: --json makes them the JSON document.
    if ((r == 0)); then
      "$xtk" train --backend nccl --model "$profile" --iters "${TRAIN_ITERS:-30}" --rank "$r" --world-size "$gpus" \
        --local-rank "$r" --master "127.0.0.1:$port" -o "$out/train_$model.iterations-{rank}.csv" --json \
        >"$out/train_$model.json" 2>"$out/train_$model.rank$r.log" &
    else
      "$xtk" train --backend nccl --model "$profile" --iters "${TRAIN_ITERS:-30}" --rank "$r" --world-size "$gpus" \
        --local-rank "$r" --master "127.0.0.1:$port" -o "$out/train_$model.iterations-{rank}.csv" \
        >"$out/train_$model.rank$r.log" 2>&1 &
    fi
    pids+=($!)
  done
  status=0
  for p in "${pids[@]}"; do wait "$p" || status=1; done
  port=$((port + 1))
  cat "$out/train_$model.rank0.log"
  ((status == 0)) || failed+=("train_$model")
done

# 5. Two namespaces, NCCL over sockets on a veth pair.
if part netns; then
  netns_max=${NETNS_MAX_BYTES:-256M}
  nsweep=(-b "$min" -e "$netns_max" -f 2 -n "$iters" -w "$warmup")
  for r in 0 1; do ip netns del "xcn$r" 2>/dev/null; ip netns add "xcn$r"; done
  ip link add xcv0 netns xcn0 type veth peer name xcv1 netns xcn1
  for r in 0 1; do
    ip -n "xcn$r" addr add "10.78.0.$((r + 1))/24" dev "xcv$r"
    ip -n "xcn$r" link set lo up
    ip -n "xcn$r" link set "xcv$r" up
  done
  export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=xcv
  ns=xcn
  for shape in none "${NETNS_RATE:-10gbit}"; do
    if [ "$shape" != none ]; then
      for r in 0 1; do
        ip netns exec "xcn$r" tc qdisc replace dev "xcv$r" root tbf rate "$shape" burst 16mb latency 20ms
      done
    fi
    name=netns_$shape
    pids=()
    for r in 0 1; do
      ip netns exec "xcn$r" "$python" "$here/torch_allreduce.py" --rank "$r" --world-size 2 --device "$r" \
        --master "10.78.0.1:$((port + 1000))" "${nsweep[@]}" --json "$out/${name}_torch.json" \
        >"$out/${name}_torch.rank$r.log" 2>&1 &
      pids+=($!)
    done
    status=0
    for p in "${pids[@]}"; do wait "$p" || status=1; done
    ((status == 0)) || failed+=("${name}_torch")
    cp "$out/${name}_torch.rank0.log" "$out/${name}_torch.txt" 2>/dev/null
    xtk_sweep "${name}_xtk" 2 10.78.0.1 "${nsweep[@]}" &&
      compare "$name" "$out/${name}_xtk.json" "$out/${name}_torch.json"
  done
  ns=
  for r in 0 1; do ip netns del "xcn$r"; done
fi

echo "run_gpu.sh: raw outputs in $out"
if ((${#failed[@]} > 0)); then
  echo "run_gpu.sh: failed: ${failed[*]}"
  exit 1
fi
