#!/usr/bin/env python3
"""Prints xtk-collective's busbw against torch.distributed's per size, and their ratio.

  python3 compare.py xtk_sweep.json torch.json [--min-size 32M] [--goal 0.99]

xtk's in-place column is the like-for-like one (torch's all_reduce is in place); the out-of-place
ratio is printed beside it. Exits 1 when an in-place ratio from --min-size up is below --goal.
"""
import argparse
import json
import sys


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("xtk")
    p.add_argument("torch")
    p.add_argument("--min-size", default="32M")
    p.add_argument("--goal", type=float, default=0.99)
    p.add_argument("--label", default="")
    args = p.parse_args()
    xtk = {r["size"]: r for r in json.load(open(args.xtk))["results"]}
    peer = json.load(open(args.torch))
    low = parse_size(args.min_size)
    print(f"# {args.label} busbw (GB/s): xtk-collective vs {peer['peer']} (torch {peer['torch']}, "
          f"NCCL {peer['nccl']}), {peer['ranks']} ranks")
    print(f"# {'size':>12} {'xtk_oop':>9} {'xtk_ip':>9} {'torch':>9} {'ip/torch':>9} {'oop/torch':>9}")
    worst = None
    for r in peer["results"]:
        x = xtk.get(r["size"])
        if x is None:
            continue
        oop, ip, t = x["out_of_place"]["busbw_gbyte_s"], x["in_place"]["busbw_gbyte_s"], r["busbw_gbyte_s"]
        ratio = ip / t if t > 0 else 0.0
        if r["size"] >= low:
            worst = ratio if worst is None else min(worst, ratio)
        print(f"  {r['size']:12d} {oop:9.2f} {ip:9.2f} {t:9.2f} {ratio:9.3f} {oop / t if t > 0 else 0:9.3f}")
    if worst is None:
        sys.exit("compare.py: no common size")
    verdict = "meets" if worst >= args.goal else "misses"
    print(f"# worst in-place ratio from {args.min_size}: {worst:.3f} ({verdict} the goal {args.goal})")
    sys.exit(0 if worst >= args.goal else 1)


if __name__ == "__main__":
    main()
