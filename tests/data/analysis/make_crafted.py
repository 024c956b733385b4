#!/usr/bin/env python3
"""Writes tests/data/analysis/exp, the crafted experiment of the golden tests.

Numbers are chosen so the tables can be checked by hand (see
tests/unit/analysis_tables_test.cpp):

- model "toy": 1,000,000 params x 4 bytes on 2 ranks (run.json overrides), so
  D = 2(2-1)/2 * 4e6 = 4,000,000 bytes; bottleneck 10 Gbit/s.
  Steps: none at 0, consistent at 1..9 Gbit/s, burst at 3 and 8 Gbit/s.
  Mean iteration time 8000 us up to 5 Gbit/s, then 10000, 13000, 20000, 40000.
  Each step's measured load comes from a different source (counters, trace
  bins, flow records with and without start_realtime_ns, none).
- model "resnet50": counts from configs/models/params.csv, 4 ranks, 25 Gbit/s.

Every rank-0 iteration time is T * (1 + 0.02 * (i % 5 - 2)), rank 1 is 10 us
faster, so each step's mean is exactly T and its p50 is T.

Run it from anywhere; it replaces the directory.
"""
import json
import math
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "exp")
REALTIME0 = 1_700_000_000_000_000_000
MONO_OFFSET = 1_600_000_000_000_000_000  # CLOCK_MONOTONIC = realtime - this


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def iterations(ranks, count, mean_us, base, bytes_per_iter):
    """The iterations file and the window [start, end] (realtime ns)."""
    lines = ["# xtk-iterations", "# format_version=1", "rank,iter,start_ns,end_ns,iter_us,comm_us,bytes"]
    starts, durations = [], []
    t = base
    for i in range(count):
        us = mean_us * (1 + 0.02 * (i % 5 - 2))
        starts.append(t)
        durations.append(round(us * 1000))
        t += round(us * 1000)
    for rank in range(ranks):
        for i in range(count):
            us = mean_us * (1 + 0.02 * (i % 5 - 2)) - 10 * rank
            lines.append(f"{rank},{i},{starts[i]},{starts[i] + round(us * 1000)},{us:.3f},{us * 0.4:.3f},{bytes_per_iter}")
    return "\n".join(lines) + "\n", (base, t)


def counters(window, load_bps, slow_at=None):
    """Samples every 5 ms from 10 ms before the window to 10 ms after it."""
    lines = ["# xtk-counters", "# format_version=1", "t_ns,realtime_ns,source,name,value,slow"]
    step_ns = 5_000_000
    t = window[0] - 10_000_000
    value = 10**9
    k = 0
    while t <= window[1] + 10_000_000:
        slow = 1 if k == slow_at else 0
        # A slow read: its timestamp is 3 ms late for the value it holds.
        stamp = t + (3_000_000 if slow else 0)
        lines.append(f"{stamp - MONO_OFFSET},{stamp},net:eth0,tx_bytes,{value},{slow}")
        lines.append(f"{stamp - MONO_OFFSET + 1000},{stamp + 1000},net:eth0,rx_packets,{k * 7},0")
        value += load_bps * step_ns // 8 // 10**9
        t += step_ns
        k += 1
    return "\n".join(lines) + "\n"


def trace_bins(window, load_bps, train_bytes_per_ms):
    """Two trace-bins files, as the capture tool writes them with a filter on
    the cross-traffic port and its negation: 1 ms bins on a grid offset by
    0.5 ms from the window, 2.5 ms either side."""
    head = ["# xtk-trace-bins", "# format_version=1", "# bin_ns=1000000", "bin_start_ns,flow,src,dst,bytes,packets"]
    cross_lines, training_lines = list(head), list(head)
    cross = load_bps // 8 // 1000
    b = window[0] - 2_500_000
    while b < window[1] + 2_500_000:
        cross_lines.append(f"{b},tcp node0:40000>sink:7000,node0,sink,{cross},{math.ceil(cross / 1500)}")
        for src, dst in (("node0", "node1"), ("node1", "node0")):
            training_lines.append(f"{b},tcp {src}:50000>{dst}:50000,{src},{dst},{train_bytes_per_ms},"
                                  f"{math.ceil(train_bytes_per_ms / 1500)}")
        b += 1_000_000
    return "\n".join(cross_lines) + "\n", "\n".join(training_lines) + "\n"


def flow_records(window, load_bps, zero):
    """Flows of 1.25 MB lasting 1 ms each, at the load's rate, from 5 ms before
    the window to 5 ms after; then one failed and one cancelled flow."""
    size = 1_250_000
    gap = size * 8 * 10**9 // load_bps
    lines = ["# xtk-flow-records", "# format_version=1",
             "flow_id,dst,size_bytes,sched_start_ns,start_ns,end_ns,fct_us,lateness_us,status,error"]
    sched = window[0] - 5_000_000 - zero
    fid = 0
    while sched + zero < window[1] + 5_000_000:
        start = sched + 10_000
        lines.append(f"{fid},sink,{size},{sched},{start},{start + 1_000_000},1000.000,10.000,ok,")
        sched += gap
        fid += 1
    lines.append(f"{fid},sink,{size},{sched},{sched + 5000},-1,0.000,5.000,failed,\"connect: refused, after 3 tries\"")
    lines.append(f"{fid + 1},sink,{size},{sched + gap},-1,-1,0.000,0.000,cancelled,stopped")
    return "\n".join(lines) + "\n"


def step(model, profile, index, load_bps, mean_us, *, ranks, capacity, count, source, params=None, trace_bytes=0):
    name = f"{model}-{profile}-{index:02d}"
    d = os.path.join(OUT, name)
    base = REALTIME0 + (hash_of(name) % 1000) * 10**12
    per_rank = 0 if params is None else 2 * (ranks - 1) * params * 4 // ranks
    text, window = iterations(ranks, count, mean_us, base, per_rank)
    write(os.path.join(d, "iterations.csv"), text)
    run = {"format_version": 1, "step": index, "model": model, "ranks": ranks,
           "cross_traffic": {"profile": profile, "load_bps": load_bps, "cdf": "web-search"},
           "link_bps": capacity,
           "bottleneck": {"host": "node0", "source": "net:eth0", "counter": "tx_bytes", "link_bps": capacity},
           "files": {"iterations": "iterations.csv"},
           "hosts": ["node0", "node1"], "git_revision": "crafted"}
    if params is not None:
        run["params"] = params
        run["bytes_per_param"] = 4
    if source == "counters":
        write(os.path.join(d, "counters.csv"), counters(window, load_bps, slow_at=6 if index == 1 else None))
        run["files"]["counters"] = "counters.csv"
    elif source == "trace":
        cross, training = trace_bins(window, load_bps, trace_bytes)
        write(os.path.join(d, "cross_bins.csv"), cross)
        write(os.path.join(d, "training_bins.csv"), training)
        run["files"]["trace_bins"] = {"cross": "cross_bins.csv", "training": "training_bins.csv"}
        del run["bottleneck"]["source"], run["bottleneck"]["counter"]
    elif source in ("flows", "flows-unaligned"):
        zero = window[0] - 20_000_000
        write(os.path.join(d, "flows.csv"), flow_records(window, load_bps, zero))
        run["files"]["flows"] = "flows.csv"
        if source == "flows":
            run["cross_traffic"]["start_realtime_ns"] = zero
    write(os.path.join(d, "run.json"), json.dumps(run, indent=2) + "\n")


def hash_of(text):
    return sum(ord(c) * (i + 1) for i, c in enumerate(text))


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    g = 10**9
    toy = dict(ranks=2, capacity=10 * g, count=10, params=1_000_000)
    step("toy", "none", 0, 0, 8000, source="none", **toy)
    means = {1: 8000, 2: 8000, 3: 8000, 4: 8000, 5: 8000, 6: 10000, 7: 13000, 8: 20000, 9: 40000}
    sources = {1: "counters", 2: "counters", 3: "trace", 4: "flows", 5: "counters", 6: "none", 7: "trace",
               8: "flows-unaligned", 9: "counters"}
    for k, mean in means.items():
        step("toy", "consistent", k, k * g, mean, source=sources[k], trace_bytes=4_000_000 * 1000 // mean, **toy)
    step("toy", "burst", 1, 3 * g, 8200, source="counters", **toy)
    step("toy", "burst", 2, 8 * g, 30000, source="counters", **toy)
    rn = dict(ranks=4, capacity=25 * g, count=5)
    step("resnet50", "none", 0, 0, 180000, source="none", **rn)
    step("resnet50", "consistent", 1, 12_500_000_000, 182000, source="counters", **rn)
    step("resnet50", "consistent", 2, 20 * g, 260000, source="counters", **rn)
    step("resnet50", "consistent", 3, 24 * g, 900000, source="counters", **rn)


if __name__ == "__main__":
    main()
