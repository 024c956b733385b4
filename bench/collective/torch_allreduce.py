#!/usr/bin/env python3
"""torch.distributed's NCCL all-reduce timed the way nccl-tests (and xtk-collective sweep) time it.

The peer of `xtk-collective sweep --backend nccl` in bench/collective/run_gpu.sh: same sizes, same
warm-up (w calls at the largest and at the smallest size), one untimed call and a barrier per size,
then n calls back to back on the host clock, averaged over ranks; iteration k works on the k-th slice
of a buffer of the largest size, as nccl-tests and xtk do, so small sizes are not served from L2.
torch's all_reduce is in place: compare it with xtk's in-place column.

  python3 torch_allreduce.py --nprocs 2 -b 32M -e 1G -f 2 --json torch.json         # one host, mp.spawn
  python3 torch_allreduce.py --rank 0 --world-size 2 --master 10.78.0.1:29700 --device 0 ...   # one rank
"""
import argparse
import json
import os
import sys
import time


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text and text[-1].upper() in units:
        return int(float(text[:-1]) * units[text[-1].upper()])
    return int(text)


def sweep_sizes(low, high, factor):
    sizes, size = [], low
    while size <= high:
        sizes.append(size // 4 * 4)
        size *= factor
    return [s for s in sizes if s > 0]


def run(rank, world, device, args):
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(device)
    dist.init_process_group("nccl", init_method=f"tcp://{args.master}", rank=rank, world_size=world,
                            device_id=torch.device("cuda", device))
    sizes = sweep_sizes(parse_size(args.minbytes), parse_size(args.maxbytes), args.stepfactor)
    buffer = torch.ones(sizes[-1] // 4, dtype=torch.float32, device="cuda")

    def call(size, k=0):
        count = size // 4
        slices = max(1, buffer.numel() // count)
        offset = count * (k % slices)
        dist.all_reduce(buffer[offset:offset + count])

    for size in (sizes[-1], sizes[0]):
        for _ in range(args.warmup_iters):
            call(size)
    torch.cuda.synchronize()
    results = []
    for size in sizes:
        call(size)
        torch.cuda.synchronize()
        dist.barrier(device_ids=[device])
        start = time.perf_counter()
        for k in range(args.iters):
            call(size, k)
        torch.cuda.synchronize()
        seconds = torch.tensor([(time.perf_counter() - start) / args.iters], dtype=torch.float64, device="cuda")
        dist.all_reduce(seconds)
        mean = seconds.item() / world
        algbw = size / 1e9 / mean
        busbw = algbw * 2 * (world - 1) / world
        results.append({"size": size, "count": size // 4, "time_us": mean * 1e6, "algbw_gbyte_s": algbw,
                        "busbw_gbyte_s": busbw})
        if rank == 0:
            print(f"{size:12d}  {size // 4:12d}     float     sum  {mean * 1e6:9.1f}  {algbw:7.2f}  {busbw:7.2f}",
                  flush=True)
    if rank == 0:
        nccl = ".".join(str(v) for v in torch.cuda.nccl.version())
        document = {"peer": "torch.distributed all_reduce (NCCL, in place)", "torch": torch.__version__,
                    "nccl": nccl, "ranks": world, "iterations": args.iters, "warmup_iterations": args.warmup_iters,
                    "env": {k: v for k, v in os.environ.items() if k.startswith("NCCL_")}, "results": results}
        if args.json:
            with open(args.json, "w") as out:
                json.dump(document, out, indent=1)
        print(f"# torch {torch.__version__}, NCCL {nccl}, {world} ranks", flush=True)
    dist.destroy_process_group()


def spawned(local_rank, world, args):
    run(local_rank, world, local_rank, args)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-b", "--minbytes", default="32M")
    p.add_argument("-e", "--maxbytes", default="1G")
    p.add_argument("-f", "--stepfactor", type=int, default=2)
    p.add_argument("-n", "--iters", type=int, default=20)
    p.add_argument("-w", "--warmup_iters", type=int, default=5)
    p.add_argument("--json", help="write the results here (rank 0)")
    p.add_argument("--nprocs", type=int, help="spawn this many ranks here, one per GPU")
    p.add_argument("--rank", type=int)
    p.add_argument("--world-size", type=int)
    p.add_argument("--device", type=int, help="this rank's GPU (default: its rank)")
    p.add_argument("--master", default="127.0.0.1:29700", help="rank 0's HOST:PORT for the TCP store")
    args = p.parse_args()
    if args.stepfactor < 2:
        sys.exit("torch_allreduce.py: -f must be at least 2")
    if args.nprocs:
        import torch.multiprocessing as mp
        mp.spawn(spawned, args=(args.nprocs, args), nprocs=args.nprocs, join=True)
    elif args.rank is not None and args.world_size:
        run(args.rank, args.world_size, args.rank if args.device is None else args.device, args)
    else:
        sys.exit("torch_allreduce.py: give --nprocs N, or --rank and --world-size")


if __name__ == "__main__":
    main()
