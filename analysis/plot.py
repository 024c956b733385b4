#!/usr/bin/python3
"""Figures of an xtk experiment, drawn from the CSV tables of
`xtk-analyze tables EXP -o TABLES` and from step directories
(docs/analysis.md shows each one; formats in docs/run-directory.md).

  plot.py iteration-time TABLES        iteration time vs cross traffic, log y, p99 as bars
  plot.py rescaled TABLES              the same against C/(C-BW), with the fits
  plot.py cdf TABLES                   iteration-time CDFs at light and heavy load
  plot.py injection STEP_DIR           histogram of the cross-traffic rate per bin
  plot.py flow-throughput STEP_DIR     per-flow throughput over time, with a moving average
  plot.py busbw SWEEP_CSV              collective bus bandwidth vs message size
  plot.py spread SPREAD_TABLES         every run's iteration time and congestion point, with the median
                                       (tables of `xtk-analyze spread RUN... -o SPREAD_TABLES`)
  plot.py all --tables TABLES [--step STEP_DIR] [--sweep SWEEP_CSV] -o OUTDIR

Each command writes one figure: -o FILE, or <command>.<format> in the current
directory (PNG by default; --format pdf or svg for papers). Needs Debian's
python3-matplotlib and python3-pandas (scripts/install-deps.sh).
"""
import argparse
import json
import math
import os
import sys

try:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    import pandas as pd
except ImportError as missing:
    # A GPU host's Python often lacks them: say so in one line, not a traceback.
    sys.exit(f"plot.py: error: {sys.executable} has no {missing.name} (Debian: python3-matplotlib and "
             "python3-pandas); the tables are complete: draw the figures where it has them")

PROFILE_STYLE = {"consistent": ("tab:blue", "o"), "burst": ("tab:red", "s"), "long-lived": ("tab:green", "^")}


def fail(message):
    sys.exit(f"plot.py: error: {message}")


def read_table(tables, name, writer="xtk-analyze tables EXP"):
    path = os.path.join(tables, f"{name}.csv")
    if not os.path.isfile(path):
        fail(f"{path} does not exist: write the tables with `{writer} -o {tables}`")
    return pd.read_csv(path)


def style(profile, index):
    if profile in PROFILE_STYLE:
        return PROFILE_STYLE[profile]
    return (f"C{index % 10}", "D")


def model_grid(models):
    """One panel per model, up to 3 across."""
    cols = min(3, len(models))
    rows = math.ceil(len(models) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.6 * rows), squeeze=False)
    for ax in axes.flat[len(models):]:
        ax.set_visible(False)
    return fig, list(axes.flat)


def series(table, model):
    """A model's profiles, each with the model's zero-load steps in front, by measured load."""
    rows = table[table.model == model]
    idle = rows[rows.profile == "none"]
    out = []
    for i, profile in enumerate(p for p in rows.profile.unique() if p != "none"):
        s = pd.concat([idle, rows[rows.profile == profile]]).sort_values("measured_load_gbps")
        out.append((i, profile, s))
    if not out and len(idle):
        out.append((0, "none", idle))
    return out


def plot_iteration_time(args):
    t = read_table(args.tables, "iteration_time")
    models = list(t.model.unique())
    fig, axes = model_grid(models)
    # An emulated cluster (xtk-run's emulate_link) is drawn in its own units.
    emulated = "emulated_load_gbps" in t and not t.emulated_load_gbps.equals(t.measured_load_gbps)
    for ax, model in zip(axes, models):
        for i, profile, s in series(t, model):
            color, marker = style(profile, i)
            to_cluster = s.emulated_mean_us / s.mean_us if emulated else 1.0
            mean_ms = s.mean_us * to_cluster / 1e3
            p99_ms = s.p99_us * to_cluster / 1e3
            load = s.emulated_load_gbps if emulated else s.measured_load_gbps
            ax.errorbar(load, mean_ms, yerr=[[0] * len(s), (p99_ms - mean_ms).clip(lower=0)],
                        color=color, marker=marker, ms=4, capsize=3, lw=1.2, label=f"{profile} (bar: p99)")
        ax.set_yscale("log")
        ax.set_title(model)
        ax.set_xlabel("cross-traffic load, emulated cluster (Gbit/s)" if emulated else "cross-traffic load (Gbit/s)")
        ax.set_ylabel("iteration time (ms)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Iteration time vs cross traffic (mean, p99 as bars)")
    return fig


def plot_rescaled(args):
    t = read_table(args.tables, "iteration_time")
    fits = read_table(args.tables, "fits")
    models = list(t.model.unique())
    fig, axes = model_grid(models)
    for ax, model in zip(axes, models):
        for i, profile, s in series(t, model):
            color, marker = style(profile, i)
            s = s[s.rescaled_load.notna()]
            ax.plot(s.rescaled_load, s.mean_us / 1e3, marker=marker, ls="none", color=color, ms=4, label=profile)
            best = fits[(fits.model == model) & (fits.profile == profile) & (fits.best == "yes")]
            if len(best) and len(s):
                f = best.iloc[0]
                lo, hi = 1.0, float(s.rescaled_load.max())
                xs = [lo + (hi - lo) * k / 200 for k in range(201)]
                # x = C / (C - BW), so C - BW = C / x.
                ys = [f.a_us * math.exp(f.b_gbps_pow_n / (f.c_gbps / x) ** f.n) / 1e3 for x in xs]
                ax.plot(xs, ys, color=color, lw=1,
                        label=f"fit n={f.n:g}: A={f.a_us / 1e3:.1f} ms, B={f.b_gbps_pow_n:.3g}, R²={f.r2:.3f}")
        ax.set_yscale("log")
        ax.set_xscale("log")
        ax.set_title(model)
        ax.set_xlabel("C / (C − BW)")
        ax.set_ylabel("mean iteration time (ms)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Iteration time on the rescaled axis, with t = A·exp(B/(C−BW)^n)")
    return fig


def plot_cdf(args):
    cdf = read_table(args.tables, "iteration_cdf")
    levels = read_table(args.tables, "light_heavy")
    models = list(levels.model.unique()) or list(cdf.model.unique())
    fig, axes = model_grid(models)
    for ax, model in zip(axes, models):
        idle = cdf[(cdf.model == model) & (cdf.profile == "none")]
        if len(idle):
            first = idle[idle.step == idle.step.min()]
            ax.plot(first.iter_us / 1e3, first["quantile"], color="black", lw=1.2, label="no cross traffic")
        for j, row in enumerate(levels[levels.model == model].itertuples()):
            pts = cdf[(cdf.model == model) & (cdf.profile == row.profile) & (cdf.step == row.step)]
            color, _ = style(row.profile, j)
            ax.plot(pts.iter_us / 1e3, pts["quantile"], color=color, lw=1.2,
                    ls="-" if row.level == "heavy" else "--",
                    label=f"{row.profile} {row.level} ({row.requested_load_pct:.0f} %)")
        ax.set_xscale("log")
        ax.set_ylim(0, 1)
        ax.set_title(model)
        ax.set_xlabel("iteration time (ms)")
        ax.set_ylabel("CDF")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Iteration-time CDFs at light and heavy cross traffic")
    return fig


def read_run(step_dir):
    path = os.path.join(step_dir, "run.json")
    if not os.path.isfile(path):
        fail(f"{path} does not exist: give a step directory")
    with open(path) as f:
        return json.load(f)


def read_trace(step_dir, run, classes):
    """The trace bins of the given classes ("cross", "training") of a step, as
    one frame, and their bin width; (None, None) without any."""
    named = run.get("files", {}).get("trace_bins", {})
    frames, bin_ns = [], None
    for cls in classes:
        names = named.get(cls, [])
        for name in [names] if isinstance(names, str) else names:
            path = os.path.join(step_dir, name)
            width = None
            with open(path) as f:
                for line in f:
                    if not line.startswith("#"):
                        break
                    if line.strip().startswith("# bin_ns="):
                        width = int(line.split("=", 1)[1])
            if width is None:
                fail(f"{path}: no '# bin_ns=N' header line")
            if bin_ns is not None and width != bin_ns:
                fail(f"{path}: bins of {width} ns, the other files' are {bin_ns} ns")
            bin_ns = width
            frame = pd.read_csv(path, comment="#", dtype={"flow": str, "src": str, "dst": str})
            frame["class"] = cls
            frames.append(frame)
    if not frames:
        return None, None
    return pd.concat(frames, ignore_index=True), bin_ns


def step_title(run):
    ct = run["cross_traffic"]
    return f"{run['model']}, {ct['profile']} at {ct['load_bps'] / 1e9:.1f} Gbit/s (step {run['step']})"


def plot_injection(args):
    run = read_run(args.step)
    trace, bin_ns = read_trace(args.step, run, ["cross"])
    fig, ax = plt.subplots(figsize=(6.4, 4))
    if trace is not None:
        per_bin = trace.groupby("bin_start_ns").bytes.sum()
        # Bins without a row carried nothing.
        full = per_bin.reindex(range(int(trace.bin_start_ns.min()), int(trace.bin_start_ns.max()) + 1, bin_ns),
                               fill_value=0)
        rates = full * 8 / bin_ns  # Gbit/s
        what = f"per {bin_ns / 1e6:g} ms bin (trace bins)"
    else:
        name = run.get("files", {}).get("counters")
        bottleneck = run.get("bottleneck", {})
        if not name or "source" not in bottleneck:
            fail(f"{args.step}: no trace bins, and no bottleneck counters to take the injection rate from")
        c = pd.read_csv(os.path.join(args.step, name), comment="#")
        c = c[(c.source == bottleneck["source"]) & (c.name == bottleneck["counter"])]
        good = (c.slow.values[1:] == 0) & (c.slow.values[:-1] == 0)
        rates = pd.Series((c.value.diff().values[1:] * 8 / c.t_ns.diff().values[1:])[good])
        what = "per counter interval"
    ax.hist(rates, bins=args.bins, color="tab:purple", alpha=0.85)
    ax.axvline(run["cross_traffic"]["load_bps"] / 1e9, color="black", ls="--", lw=1, label="requested load")
    ax.axvline(rates.mean(), color="tab:orange", lw=1.2, label=f"mean {rates.mean():.2f} Gbit/s")
    ax.set_xlabel(f"cross-traffic rate {what} (Gbit/s)")
    ax.set_ylabel("bins" if trace is not None else "intervals")
    ax.set_title(f"Injection rate: {step_title(run)}", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    return fig


def plot_flow_throughput(args):
    run = read_run(args.step)
    trace, bin_ns = read_trace(args.step, run, ["cross", "training"])
    if trace is None:
        fail(f"{args.step}: per-flow throughput needs trace bins (files.trace_bins in run.json)")
    if args.span_ms > 0:
        trace = trace[trace.bin_start_ns < trace.bin_start_ns.min() + args.span_ms * 1e6].copy()
    trace["key"] = trace["class"] + ": " + trace.flow
    flows = trace.groupby("key").bytes.sum().sort_values(ascending=False).index[: args.flows]
    start = trace.bin_start_ns.min()
    grid = range(int(start), int(trace.bin_start_ns.max()) + 1, bin_ns)
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for i, flow in enumerate(flows):
        per_bin = trace[trace["key"] == flow].groupby("bin_start_ns").bytes.sum().reindex(grid, fill_value=0)
        t_ms = (per_bin.index - start) / 1e6
        gbps = per_bin.values * 8 / bin_ns
        color = f"C{i % 10}"
        ax.plot(t_ms, gbps, color=color, lw=0.5, alpha=0.35)
        ax.plot(t_ms, pd.Series(gbps).rolling(args.window, min_periods=1).mean(), color=color, lw=1.5,
                label=flow)
    ax.set_xlabel("time (ms)")
    ax.set_ylabel(f"throughput per {bin_ns / 1e6:g} ms bin (Gbit/s)")
    ax.set_title(f"Per-flow throughput (thin) and {args.window}-bin moving average: {step_title(run)}", fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(True, alpha=0.3)
    return fig


def plot_busbw(args):
    if not os.path.isfile(args.sweep):
        fail(f"{args.sweep} does not exist")
    s = pd.read_csv(args.sweep, comment="#")
    for column in ("size_bytes", "busbw_gbps"):
        if column not in s.columns:
            fail(f"{args.sweep}: no column {column} (a sweep needs size_bytes and busbw_gbps)")
    if "collective" not in s.columns:
        s["collective"] = "collective"
    fig, ax = plt.subplots(figsize=(6.4, 4))
    for i, (name, g) in enumerate(s.groupby("collective", sort=False)):
        g = g.sort_values("size_bytes")
        ax.plot(g.size_bytes, g.busbw_gbps, marker="o", ms=3, color=f"C{i}", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bus bandwidth (Gbit/s)")
    ax.set_title("Bus bandwidth vs message size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def run_tables(spread_tables, run):
    """A run's own tables: RUN/tables as the spread named it, or beside the spread's
    directory (the experiment moved since, or the path was relative to elsewhere)."""
    for base in (run, os.path.join(os.path.dirname(os.path.abspath(spread_tables)), os.path.basename(run))):
        if os.path.isfile(os.path.join(base, "tables", "iteration_time.csv")):
            return os.path.join(base, "tables")
    fail(f"{run}/tables/iteration_time.csv does not exist: write each run's tables with "
         f"`xtk-analyze tables {run} -o {run}/tables`")


def plot_spread(args):
    runs = read_table(args.tables, "congestion_point_runs", "xtk-analyze spread RUN RUN...")
    spread = read_table(args.tables, "congestion_point_spread", "xtk-analyze spread RUN RUN...")
    names = list(dict.fromkeys(runs.run))
    tables = {run: read_table(run_tables(args.tables, run), "iteration_time") for run in names}
    # Runs by their directory's name, or by its last two parts where names repeat (a/rep1, b/rep1).
    labels = [os.path.basename(os.path.normpath(run)) for run in names]
    if len(set(labels)) < len(labels):
        labels = [os.path.join(*os.path.normpath(run).split(os.sep)[-2:]) for run in names]
    panels = list(spread[["model", "profile"]].itertuples(index=False, name=None))
    fig, axes = model_grid(panels)
    for ax, (model, profile) in zip(axes, panels):
        for k, (run, label) in enumerate(zip(names, labels)):
            t = tables[run]
            s = t[(t.model == model) & t.profile.isin(["none", profile])].sort_values("measured_load_gbps")
            color = f"C{k % 10}"
            ax.plot(s.measured_load_gbps, s.mean_us / 1e3, color=color, marker="o", ms=3, lw=1, alpha=0.8,
                    label=label)
            point = runs[(runs.run == run) & (runs.model == model) & (runs.profile == profile) & (runs.status == "ok")]
            if len(point):
                p = point.iloc[0]
                ax.plot(p.load_gbps, p.mean_us / 1e3, color=color, marker="*", ms=13, mec="black", mew=0.6, ls="none")
        row = spread[(spread.model == model) & (spread.profile == profile)].iloc[0]
        title = f"{model} {profile}"
        if row.points > 0:
            # Data per iteration at the point as a multiple of D, as the notes of `xtk-analyze spread` give it.
            d = [1 + row[f"diff_pct_{k}"] / 100 for k in ("median", "min", "max")]
            title += f": {d[0]:.2f} D ({d[1]:.2f}-{d[2]:.2f}), {row.points} of {row.runs} runs"
        ax.set_yscale("log")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("cross-traffic load (Gbit/s)")
        ax.set_ylabel("mean iteration time (ms)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, title="★ congestion point", title_fontsize=7)
    fig.suptitle("Iteration time and congestion point of each run")
    return fig


COMMANDS = {
    "iteration-time": plot_iteration_time,
    "rescaled": plot_rescaled,
    "cdf": plot_cdf,
    "injection": plot_injection,
    "flow-throughput": plot_flow_throughput,
    "busbw": plot_busbw,
    "spread": plot_spread,
}


def save(fig, path, dpi):
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    print(f"plot.py: wrote {path}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--format", default="png", choices=["png", "pdf", "svg"])
    p.add_argument("--dpi", type=int, default=110)
    # The same two after the command too (`plot.py cdf TABLES --format pdf`), where a user puts them.
    output = argparse.ArgumentParser(add_help=False)
    output.add_argument("--format", default=argparse.SUPPRESS, choices=["png", "pdf", "svg"])
    output.add_argument("--dpi", type=int, default=argparse.SUPPRESS)
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("iteration-time", "rescaled", "cdf"):
        c = sub.add_parser(name, parents=[output])
        c.add_argument("tables", help="directory of `xtk-analyze tables -o DIR`")
        c.add_argument("-o", "--out")
    c = sub.add_parser("injection", parents=[output])
    c.add_argument("step", help="a step directory with trace bins or bottleneck counters")
    c.add_argument("--bins", type=int, default=40, help="histogram bars")
    c.add_argument("-o", "--out")
    c = sub.add_parser("flow-throughput", parents=[output])
    c.add_argument("step", help="a step directory with trace bins")
    c.add_argument("--flows", type=int, default=6, help="the N flows with the most bytes")
    c.add_argument("--window", type=int, default=10, help="moving average over this many bins")
    c.add_argument("--span-ms", type=float, default=0, help="only the first this many ms of the trace (0 = all)")
    c.add_argument("-o", "--out")
    c = sub.add_parser("busbw", parents=[output])
    c.add_argument("sweep", help="CSV with size_bytes, busbw_gbps and optionally collective")
    c.add_argument("-o", "--out")
    c = sub.add_parser("spread", parents=[output])
    c.add_argument("tables", help="directory of `xtk-analyze spread RUN RUN... -o DIR`")
    c.add_argument("-o", "--out")
    c = sub.add_parser("all", parents=[output])
    c.add_argument("--tables", required=True)
    c.add_argument("--step", help="step directory for injection and flow-throughput")
    c.add_argument("--sweep", help="sweep CSV for busbw")
    c.add_argument("-o", "--out", default=".", help="output directory")
    args = p.parse_args()

    if args.command != "all":
        fig = COMMANDS[args.command](args)
        save(fig, args.out or f"{args.command}.{args.format}", args.dpi)
        return
    os.makedirs(args.out, exist_ok=True)
    todo = ["iteration-time", "rescaled", "cdf"]
    if args.step:
        todo.append("injection")
        # Per-flow throughput needs trace bins; an experiment without them (capture
        # summarize = false) still gets every other figure.
        if read_trace(args.step, read_run(args.step), ["cross", "training"])[0] is not None:
            todo.append("flow-throughput")
        else:
            print(f"plot.py: no flow-throughput figure: {args.step} has no trace bins")
    if args.sweep:
        todo.append("busbw")
    args.bins, args.flows, args.window, args.span_ms = 40, 6, 10, 0
    for name in todo:
        save(COMMANDS[name](args), os.path.join(args.out, f"{name}.{args.format}"), args.dpi)


if __name__ == "__main__":
    main()
