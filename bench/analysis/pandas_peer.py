#!/usr/bin/env python3
"""The peer of `xtk-analyze tables` in bench/analysis: what a researcher would
write with pandas for table 1 alone (per step: slowest rank per iteration,
mean, p50, p99, stdev; load from the bottleneck counter's first and last
samples). Prints the number of steps; used for timing only."""
import glob
import json
import os
import sys

import pandas as pd


def main():
    rows = []
    for run in sorted(glob.glob(os.path.join(sys.argv[1], "**", "run.json"), recursive=True)):
        d = os.path.dirname(run)
        with open(run) as f:
            info = json.load(f)
        it = pd.read_csv(os.path.join(d, info["files"]["iterations"]), comment="#")
        t = it.groupby("iter")["iter_us"].max()
        load = 0.0
        if "counters" in info["files"]:
            c = pd.read_csv(os.path.join(d, info["files"]["counters"]), comment="#")
            c = c[(c.source == "net:eth0") & (c.name == "tx_bytes") & (c.slow == 0)]
            load = (c.value.iloc[-1] - c.value.iloc[0]) * 8 / ((c.t_ns.iloc[-1] - c.t_ns.iloc[0]) * 1e-9)
        rows.append((info["model"], info["cross_traffic"]["profile"], info["step"], load, t.mean(), t.quantile(0.5),
                     t.quantile(0.99), t.std()))
    print(len(rows), "steps")


if __name__ == "__main__":
    main()
