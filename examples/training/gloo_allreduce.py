"""A minimal training job for xtk-run's `[training] command` on CPUs:
torch.distributed over Gloo, each iteration a compute sleep and an all-reduce
of one gradient-sized tensor. The tests run it through the netns testbed; it
is also the smallest example of a script that writes xtk's iterations file.

    command = "python3 examples/training/gloo_allreduce.py --mb 8 --compute-ms 20"
"""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xtk_iterations import IterationLog  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=8, help="gradient size in MB (float32), default 8")
    parser.add_argument("--compute-ms", type=float, default=20, help="compute time per iteration, default 20 ms")
    args = parser.parse_args()

    dist.init_process_group("gloo")
    gradient = torch.ones(int(args.mb * 1e6 / 4), dtype=torch.float32)
    sent = int(2 * (dist.get_world_size() - 1) / dist.get_world_size() * gradient.numel() * 4)

    def step(log=None):
        start_ns, t0 = time.time_ns(), time.monotonic_ns()
        time.sleep(args.compute_ms / 1e3)
        c0 = time.monotonic_ns()
        dist.all_reduce(gradient)
        t1 = time.monotonic_ns()
        if log:
            log.record(start_ns, time.time_ns(), (t1 - t0) / 1e3, (t1 - c0) / 1e3, sent)

    log = IterationLog()
    for _ in range(log.warmup):
        step()
    dist.barrier()
    log.wait_for_start()
    for _ in range(log.iterations):
        step(log)
    log.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
