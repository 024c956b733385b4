"""PyTorch DDP training of torchvision's ResNet-50 on synthetic data, one
process per rank, as xtk-run launches it with `[training] command`:

    command = "python3 examples/training/ddp_resnet50.py --batch 64"

Nothing is downloaded: the weights start random and the images are one random
batch, reused. Each iteration is forward, backward (DDP all-reduces the
gradients in buckets while it runs) and an SGD step, timed with the GPU
synchronised. `--compute-only` runs the same steps without DDP on one rank and
prints the mean compute time, for `xtk-collective train --compute`.
"""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xtk_iterations import IterationLog  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=64, help="images per rank and iteration (default 64)")
    parser.add_argument("--bucket-mb", type=float, default=25, help="DDP bucket_cap_mb (default 25, PyTorch's)")
    parser.add_argument("--compute-only", action="store_true",
                        help="no DDP: time forward+backward+step alone and print the mean in ms")
    args = parser.parse_args()

    cuda = torch.cuda.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    # Under CUDA_VISIBLE_DEVICES (xtk-run's `gpus`, srun --gpus-per-task) a rank may see one GPU only.
    device = torch.device(f"cuda:{local_rank % torch.cuda.device_count()}" if cuda else "cpu")
    if cuda:
        torch.cuda.set_device(device)
    torch.backends.cudnn.benchmark = True

    model = torchvision.models.resnet50().to(device)
    images = torch.randn(args.batch, 3, 224, 224, device=device)
    labels = torch.randint(0, 1000, (args.batch,), device=device)
    loss_fn = torch.nn.CrossEntropyLoss()

    def sync():
        if cuda:
            torch.cuda.synchronize(device)

    if args.compute_only:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        times = []
        for i in range(30):
            sync()
            t0 = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            loss_fn(model(images), labels).backward()
            optimizer.step()
            sync()
            if i >= 10:
                times.append(time.perf_counter() - t0)
        print(f"compute_ms={1e3 * sum(times) / len(times):.2f} batch={args.batch} device={device}")
        return

    backend = os.environ.get("XTK_BACKEND") or ("nccl" if cuda else "gloo")
    dist.init_process_group(backend)
    ddp = torch.nn.parallel.DistributedDataParallel(
        model, device_ids=[device.index] if cuda else None, bucket_cap_mb=args.bucket_mb)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss_fn(ddp(images), labels).backward()
        optimizer.step()
        sync()

    log = IterationLog(header={"batch": str(args.batch), "bucket_mb": f"{args.bucket_mb:g}"})
    for _ in range(log.warmup):
        step()
    dist.barrier()
    log.wait_for_start()
    for _ in range(log.iterations):
        with log.iteration():
            step()
    log.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
