#!/usr/bin/env python3
"""Records a real training job's communication for `xtk-collective replay`.

Runs a PyTorch training job on the GPUs of this host, one process per GPU
(NCCL, synthetic data), and writes into OUT:

  et-rank<R>.json      torch.profiler.ExecutionTraceObserver's trace of the
                       profiled iterations (the collectives, their sizes, data
                       types and process groups)
  kineto-rank<R>.json  the profiler's Kineto trace of the same iterations (GPU
                       kernel times: the compute between the collectives)
  recorded.json        the job's iteration time without the profiler (its
                       slowest rank's), the GPUs, and the torch and NCCL versions

Jobs (--job):
  resnet50-ddp  torchvision's ResNet-50 under DistributedDataParallel, --batch
                images per GPU; 2 GPUs or more
  tp-pp         --pp pipeline stages of --tp tensor-parallel ranks (--tp x --pp
                GPUs, default 2 x 2): each stage holds --layers Megatron-style
                MLP blocks (a column-parallel then a row-parallel linear layer,
                the output all-reduced over the stage's ranks); the activation
                is sent to the next stage and its gradient sent back; the loss
                is all-reduced over every rank. With --tp 1 the all-reduces run
                on one-rank groups (2 GPUs then give a trace with sub-groups
                and sends)

  python3 scripts/record-trace.py OUT [--job resnet50-ddp] [--gpus N] [--iterations 30]
  python3 scripts/record-trace.py OUT --job tp-pp [--tp 2] [--pp 2]

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

try:
    from torch.profiler import ExecutionTraceObserver, ProfilerActivity, profile, schedule
except ImportError:
    raise SystemExit(f"record-trace.py: PyTorch {torch.__version__} has no torch.profiler.ExecutionTraceObserver "
                     "in the format replay reads; use PyTorch 2.1 or later")


def resnet50_ddp(rank, args):
    """DDP's bucketed all-reduces overlapping the backward pass."""
    import torchvision
    from torch.nn.parallel import DistributedDataParallel

    model = DistributedDataParallel(torchvision.models.resnet50().cuda(), device_ids=[rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    images = torch.randn(args.batch, 3, 224, 224, device="cuda")
    labels = torch.randint(0, 1000, (args.batch,), device="cuda")

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(images), labels).backward()
        optimizer.step()

    return step, {"model": "resnet50", "batch_per_gpu": args.batch}


class TensorParallelMlp(torch.nn.Module):
    """One Megatron MLP block's shard: column-parallel up, row-parallel down."""

    def __init__(self, hidden, tp):
        super().__init__()
        self.up = torch.nn.Linear(hidden, 4 * hidden // tp, bias=False)
        self.down = torch.nn.Linear(4 * hidden // tp, hidden, bias=False)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


def tp_pp(rank, args):
    """Tensor parallelism within a stage, pipeline parallelism between stages."""
    tp, pp = args.tp, args.pp
    stage = rank // tp
    # Every rank makes every group, in the same order (c10d's rule).
    tp_groups = [dist.new_group([s * tp + i for i in range(tp)]) for s in range(pp)]
    group = tp_groups[stage]
    blocks = torch.nn.ModuleList(TensorParallelMlp(args.hidden, tp) for _ in range(args.layers)).cuda().bfloat16()
    optimizer = torch.optim.SGD(blocks.parameters(), lr=0.01)
    shape = (args.tokens, args.hidden)
    inputs = torch.randn(shape, device="cuda", dtype=torch.bfloat16)

    def forward(x):
        # The row-parallel outputs are partial sums: all-reduced over the stage
        # outside autograd, so the backward pass can all-reduce in turn.
        saved = []
        for block in blocks:
            partial = block(x)
            out = partial.detach()
            dist.all_reduce(out, group=group)
            out.requires_grad_()
            saved.append((x, partial))
            x = out
        return x, saved

    def backward(saved, grad):
        for x, partial in reversed(saved):
            partial.backward(grad)
            if x.grad is None:
                return None
            # Each rank holds its column shard's part of the input's gradient.
            grad = x.grad
            dist.all_reduce(grad, group=group)
        return grad

    def step():
        optimizer.zero_grad(set_to_none=True)
        x = inputs
        if stage > 0:
            x = torch.empty(shape, device="cuda", dtype=torch.bfloat16)
            dist.recv(x, rank - tp)
            x.requires_grad_()
        y, saved = forward(x)
        if stage < pp - 1:
            dist.send(y, rank + tp)
            grad = torch.empty(shape, device="cuda", dtype=torch.bfloat16)
            dist.recv(grad, rank + tp)
            loss = torch.zeros(1, device="cuda")
        else:
            loss = y.float().pow(2).mean()
            (grad,) = torch.autograd.grad(loss, y)
            loss = loss.detach().reshape(1)
        grad = backward(saved, grad)
        if stage > 0:
            dist.send(grad, rank - tp)
        dist.all_reduce(loss)
        optimizer.step()

    return step, {"model": f"tp{tp}-pp{pp}", "tp": tp, "pp": pp, "hidden": args.hidden, "tokens": args.tokens,
                  "layers_per_stage": args.layers, "dtype": "bfloat16"}


JOBS = {"resnet50-ddp": resnet50_ddp, "tp-pp": tp_pp}


def worker(rank, args):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=args.gpus)
    step, job = JOBS[args.job](rank, args)

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    dist.barrier()
    times_ms = []
    for _ in range(args.iterations):
        start = time.perf_counter()
        step()
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
            step()
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
                    "job": args.job,
                    **job,
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
    parser.add_argument("--job", choices=sorted(JOBS), default="resnet50-ddp")
    parser.add_argument("--gpus", type=int, help="ranks, one per GPU (default: resnet50-ddp every GPU, tp-pp tp x pp)")
    parser.add_argument("--batch", type=int, default=64, help="resnet50-ddp: images per GPU")
    parser.add_argument("--tp", type=int, default=2, help="tp-pp: tensor-parallel ranks per stage")
    parser.add_argument("--pp", type=int, default=2, help="tp-pp: pipeline stages")
    parser.add_argument("--hidden", type=int, default=4096, help="tp-pp: the model's hidden size")
    parser.add_argument("--tokens", type=int, default=4096, help="tp-pp: tokens per iteration (the activation's rows)")
    parser.add_argument("--layers", type=int, default=2, help="tp-pp: MLP blocks per stage")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=30, help="timed iterations without the profiler")
    parser.add_argument("--profiled", type=int, default=1, help="iterations in the traces")
    parser.add_argument("--port", type=int, default=29531)
    args = parser.parse_args()
    available = torch.cuda.device_count()
    if args.job == "tp-pp":
        if args.tp < 1 or args.pp < 2 or (4 * args.hidden) % args.tp:
            parser.error("--tp, --pp: tp-pp needs --tp 1 or more dividing 4 x --hidden, and --pp 2 or more")
        if args.gpus not in (None, args.tp * args.pp):
            parser.error(f"--gpus {args.gpus}: tp-pp runs on --tp x --pp = {args.tp * args.pp} GPUs")
        args.gpus = args.tp * args.pp
    elif args.gpus is None:
        args.gpus = available
    if args.gpus < 2:
        parser.error(f"--gpus {args.gpus}: {args.job} needs at least 2 GPUs to communicate")
    if args.gpus > available:
        parser.error(f"--gpus {args.gpus}: this host has {available} GPUs")
    os.makedirs(args.out, exist_ok=True)
    mp.spawn(worker, args=(args,), nprocs=args.gpus)


if __name__ == "__main__":
    main()
