#!/usr/bin/env python3
"""Writes a synthetic experiment directory in the run-directory format
(docs/run-directory.md): models x profiles x cross-traffic steps, each step
with its iterations, bottleneck counters and, on request, trace bins, plus a
collective sweep for the busbw plot. Standard library only.

Iteration times follow the seed's shape, t = A exp(B / (C - BW)), flat at
first and then rising steeply, with noise that grows with congestion; burst
cross traffic is made a little worse than consistent traffic at the same load.

  make_experiment.py OUT --steps 20 --iterations 10000        # the benchmark
  make_experiment.py OUT --steps 12 --iterations 300 --profiles consistent,burst --trace-steps 2
"""
import argparse
import json
import math
import os
import random
import zlib

# name, params, zero-load iteration time (us): the seed's four models on 4 x 25G.
MODELS = [
    ("resnet50", 25_557_032, 180_000),
    ("vgg16", 138_357_544, 620_000),
    ("densenet161", 28_681_000, 400_000),
    ("bert-large", 336_226_108, 950_000),
]
REALTIME0 = 1_764_000_000_000_000_000
MONO_OFFSET = 1_700_000_000_000_000_000


def iteration_time(base_us, load, capacity, b, rng, burst):
    """Mean from the seed's form, normalised so that t(0) = base."""
    available = max(capacity - load, 0.05 * capacity)
    mean = base_us * math.exp(b / available - b / capacity)
    cv = 0.01 + 0.04 * load / capacity + (0.03 if burst else 0.0)
    t = mean * (1 + rng.gauss(0, cv))
    if burst and rng.random() < 0.01 + 0.03 * load / capacity:  # a burst window hits an all-reduce
        t *= 1.3 + 0.5 * rng.random()
    return max(t, 0.5 * base_us)


def write_step(path, model, params, base_us, profile, index, load, args, rng, trace):
    os.makedirs(path, exist_ok=True)
    capacity = args.capacity_gbps * 1e9
    burst = profile == "burst"
    b = args.b_gbps * 1e9 * (1.15 if burst else 1.0)
    ranks = args.ranks
    per_rank = 2 * (ranks - 1) * params * 4 // ranks
    start0 = REALTIME0 + zlib.crc32(f"{model}/{profile}/{index}".encode()) % 10**6 * 10**9
    lines = ["# xtk-iterations", "# format_version=1", "rank,iter,start_ns,end_ns,iter_us,comm_us,bytes"]
    times = [iteration_time(base_us, load, capacity, b, rng, burst) for _ in range(args.iterations)]
    t = start0
    starts = []
    for us in times:
        starts.append(t)
        t += int(us * 1000)
    window = (start0, t)
    for rank in range(ranks):
        skew = 1 - 0.002 * rank
        for i, us in enumerate(times):
            r_us = us * skew
            lines.append(f"{rank},{i},{starts[i]},{starts[i] + int(r_us * 1000)},{r_us:.1f},{r_us * 0.35:.1f},{per_rank}")
    with open(os.path.join(path, "iterations.csv"), "w") as f:
        f.write("\n".join(lines) + "\n")

    files = {"iterations": "iterations.csv"}
    if profile != "none":
        # Bottleneck counter: the cross traffic's bytes, sampled every interval.
        interval = int(args.counter_interval_s * 1e9)
        lines = ["# xtk-counters", "# format_version=1", "t_ns,realtime_ns,source,name,value,slow"]
        value = 0
        s = window[0] - interval
        while s <= window[1] + interval:
            lines.append(f"{s - MONO_OFFSET},{s},net:eth0,tx_bytes,{value},0")
            value += int(load * (1 + rng.gauss(0, 0.01)) * interval / 8e9)
            s += interval
        with open(os.path.join(path, "counters.csv"), "w") as f:
            f.write("\n".join(lines) + "\n")
        files["counters"] = "counters.csv"
    if trace:
        files["trace_bins"] = {"cross": "cross_bins.csv", "training": "training_bins.csv"}
        write_trace(path, window, load, burst, per_rank, times, rng)

    run = {"format_version": 1, "step": index, "model": model, "ranks": ranks,
           "cross_traffic": {"profile": profile, "load_bps": load, "cdf": "web-search"},
           "link_bps": capacity,
           "bottleneck": {"host": "10.0.0.1", "source": "net:eth0", "counter": "tx_bytes", "link_bps": capacity},
           "files": files, "generator": "bench/analysis/make_experiment.py"}
    with open(os.path.join(path, "run.json"), "w") as f:
        json.dump(run, f, indent=2)
        f.write("\n")


def write_trace(path, window, load, burst, per_rank, times, rng):
    """1 ms bins over the first 2 s, in two files as `xtk-analyze trace` writes
    them with a filter on the cross-traffic port and its negation: four cross
    flows from node0 to a sink, and the ring's traffic (node0 -> node1 ->
    node2 -> node3 -> node0), which runs in the communication phase of each
    iteration."""
    bin_ns = 1_000_000
    end = min(window[1], window[0] + 2_000_000_000)
    head = ["# xtk-trace-bins", "# format_version=1", f"# bin_ns={bin_ns}", "bin_start_ns,flow,src,dst,bytes,packets"]
    cross_lines, training_lines = list(head), list(head)
    # Iteration phases: the last 35 % of each iteration carries its all-reduce.
    phases = []
    t = window[0]
    for us in times:
        d = int(us * 1000)
        phases.append((t + int(d * 0.65), t + d))
        t += d
        if t > end:
            break
    phase = 0
    b = window[0] // bin_ns * bin_ns  # bins are epoch-aligned
    while b < end:
        k = (b - window[0]) // bin_ns
        in_burst = burst and k % 10 == 0
        rate = load * (3 if in_burst else 7 / 9 if burst else 1)
        for f in range(4):
            share = rate / 4 * (1 + rng.gauss(0, 0.3))
            nbytes = max(0, int(share / 8 * bin_ns / 1e9))
            cross_lines.append(f"{b},tcp 10.0.0.1:{40000 + f}>10.0.0.9:7000,10.0.0.1,10.0.0.9,{nbytes},"
                               f"{max(1 if nbytes else 0, nbytes // 1500)}")
        while phase < len(phases) and phases[phase][1] <= b:
            phase += 1
        if phase < len(phases) and phases[phase][0] <= b:
            ring_bytes = int(per_rank / max(1, (phases[phase][1] - phases[phase][0]) / bin_ns))
            for i in range(4):
                src, dst = f"10.0.0.{i + 1}", f"10.0.0.{(i + 1) % 4 + 1}"
                nbytes = ring_bytes if i != 0 else int(ring_bytes * 0.8)  # node0 shares the bottleneck
                training_lines.append(f"{b},tcp {src}:50000>{dst}:50001,{src},{dst},{nbytes},{max(1, nbytes // 1500)}")
        b += bin_ns
    with open(os.path.join(path, "cross_bins.csv"), "w") as f:
        f.write("\n".join(cross_lines) + "\n")
    with open(os.path.join(path, "training_bins.csv"), "w") as f:
        f.write("\n".join(training_lines) + "\n")


def write_sweep(path, rng):
    """A collective sweep (busbw vs message size), shaped like nccl-tests over 25G."""
    lines = ["# xtk-sweep", "# format_version=1", "collective,size_bytes,time_us,algbw_gbps,busbw_gbps"]
    size = 1024
    while size <= 1 << 30:
        for coll, factor in (("all-reduce", 2 * 3 / 4), ("all-gather", 3 / 4)):
            busbw = 23.5 * size / (size + 2_000_000) * (1 + rng.gauss(0, 0.01))
            algbw = busbw / factor
            time_us = size * 8 / (algbw * 1e9) * 1e6
            lines.append(f"{coll},{size},{time_us:.2f},{algbw:.3f},{busbw:.3f}")
        size *= 4
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--steps", type=int, default=20, help="cross-traffic steps per model and profile")
    p.add_argument("--iterations", type=int, default=10000, help="iterations per rank and step")
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--models", default=",".join(m[0] for m in MODELS))
    p.add_argument("--profiles", default="consistent", help="comma-separated: consistent, burst")
    p.add_argument("--capacity-gbps", type=float, default=25)
    p.add_argument("--b-gbps", type=float, default=3, help="B of t = A exp(B / (C - BW)), Gbit/s")
    p.add_argument("--counter-interval-s", type=float, default=1.0)
    p.add_argument("--trace-steps", type=int, default=0, help="give trace bins to the N steps nearest 30 %% and 80 %%")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    rng = random.Random(args.seed)
    capacity = args.capacity_gbps * 1e9
    wanted = args.models.split(",")
    profiles = args.profiles.split(",")
    for model, params, base_us in MODELS:
        if model not in wanted:
            continue
        for pi, profile in enumerate(profiles):
            for i in range(args.steps):
                load = round(capacity * 0.96 * i / (args.steps - 1))
                prof = "none" if i == 0 else profile
                if i == 0 and pi > 0:
                    continue  # one zero-load step per model opens every profile's series
                trace = args.trace_steps > 0 and any(abs(load / capacity - lvl) < 0.5 / args.steps
                                                     for lvl in (0.3, 0.8)) and model == wanted[0]
                path = os.path.join(args.out, model, prof, f"step{i:02d}")
                write_step(path, model, params, base_us, prof, i, load, args, rng, trace)
    write_sweep(os.path.join(args.out, "sweep.csv"), rng)


if __name__ == "__main__":
    main()
