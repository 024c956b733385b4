#!/usr/bin/env python3
"""Records a real training job's communication for `xtk-collective replay`.

Runs PyTorch's DDP ResNet-50 (synthetic ImageNet batches, NCCL) on the GPUs of
this host, one process per GPU, and writes into OUT:

  et-rank<R>.json      torch.profiler.ExecutionTraceObserver's trace of the
                       profiled iterations (the collectives, their sizes, data
                       types and process groups)
  kineto-rank<R>.json  the profiler's Kineto trace of the same iterations (GPU
                       kernel times: the compute between the collectives)
  recorded.json        the job's iteration time without the profiler, the
                       GPUs, and the torch and NCCL versions

  python3 scripts/record-ddp-trace.py OUT [--gpus 2] [--batch 64] [--iterations 30]

Set NCCL_* variables as the replay will run (for example NCCL_NVLS_ENABLE=0).
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torchvision
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ExecutionTraceObserver, ProfilerActivity, profile, schedule


def train_step(model, optimizer, loss_fn, images, labels):
    optimizer.zero_grad(set_to_none=True)
    loss_fn(model(images), labels).backward()
    optimizer.step()


def worker(rank, args):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    dist.init_process_group("nccl", rank=rank, world_size=args.gpus)
    torch.cuda.set_device(rank)
    model = DistributedDataParallel(torchvision.models.resnet50().cuda(), device_ids=[rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    images = torch.randn(args.batch, 3, 224, 224, device="cuda")
    labels = torch.randint(0, 1000, (args.batch,), device="cuda")

    for _ in range(args.warmup):
        train_step(model, optimizer, loss_fn, images, labels)
    torch.cuda.synchronize()
    dist.barrier()
    times_ms = []
    for _ in range(args.iterations):
        start = time.perf_counter()
        train_step(model, optimizer, loss_fn, images, labels)
        torch.cuda.synchronize()
        times_ms.append((time.perf_counter() - start) * 1e3)

    et = ExecutionTraceObserver().register_callback(os.path.join(args.out, f"et-rank{rank}.json"))
    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
        schedule=schedule(wait=1, warmup=1, active=args.profiled),
        execution_trace_observer=et,
        on_trace_ready=lambda p: p.export_chrome_trace(os.path.join(args.out, f"kineto-rank{rank}.json")),
    ) as prof:
        for _ in range(2 + args.profiled):
            train_step(model, optimizer, loss_fn, images, labels)
            torch.cuda.synchronize()
            prof.step()
    et.unregister_callback()

    gathered = [None] * args.gpus
    dist.all_gather_object(gathered, times_ms)
    if rank == 0:
        # The job's iteration time is its slowest rank's.
        per_iteration = [max(t) for t in zip(*gathered)]
        with open(os.path.join(args.out, "recorded.json"), "w") as f:
            json.dump(
                {
                    "model": "resnet50",
                    "batch_per_gpu": args.batch,
                    "ranks": args.gpus,
                    "gpu": torch.cuda.get_device_name(0),
                    "torch": torch.__version__,
                    "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                    "iterations": args.iterations,
                    "iteration_ms_mean": statistics.mean(per_iteration),
                    "iteration_ms_median": statistics.median(per_iteration),
                    "iteration_ms": per_iteration,
                    "profiled_iterations": args.profiled,
                    "nccl_env": {k: v for k, v in os.environ.items() if k.startswith("NCCL_")},
                },
                f,
                indent=1,
            )
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--gpus", type=int, default=torch.cuda.device_count())
    parser.add_argument("--batch", type=int, default=64, help="images per GPU")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=30, help="timed iterations without the profiler")
    parser.add_argument("--profiled", type=int, default=1, help="iterations in the traces")
    parser.add_argument("--port", type=int, default=29531)
    args = parser.parse_args()
    if args.gpus < 2:
        parser.error("--gpus: DDP needs at least 2 GPUs to communicate")
    os.makedirs(args.out, exist_ok=True)
    mp.spawn(worker, args=(args,), nprocs=args.gpus)


if __name__ == "__main__":
    main()
