#!/usr/bin/env python3
"""bench/flow: xtk's flow engine against its peers, every ratio from one run.

  1. bulk throughput, loopback and a veth pair, 1 and 4 streams: xtk / iperf2 and / iperf3
  2. web-search consistent and burst at 30 % and 80 % of a 1 and a 5 Gbit/s shaped port:
     lateness p50/p99/p99.9/max, flows later than 100 us and 1 ms, and drift against this
     machine's timer floor, and the load achieved at the receiver's interface against the
     schedule's offered load
  3. 1 KB flows as fast as possible on loopback: flows/s and CPU us per flow against a minimal
     epoll client/server (persistent connections and a connection per flow), and each xtk tool
     against its minimal counterpart over xtk's wire, so a gap shows on its side
  4. burst fidelity: receiver bytes per 1 ms bin in burst windows vs the rest (packet stamps)
  5. client memory against schedule length: peak RSS replaying 1M, 10M and 60M 1 KB flows
     (--memory-flows) at 100k flows/s on loopback, the schedule streamed from xtk-gen through
     a pipe, every record written and counted
  6. precision by default: a 2 Gbit/s web-search replay on loopback without timing flags, as
     root, against every timing choice off, and as an unprivileged user

Parts 1, 3 and 6 interleave xtk and its peer in --pairs pairs (5) and report the median of the
pair ratios with their range.

Needs root (network namespaces), iperf3 and iperf (2), a Release build. Nothing else may
run on this machine meanwhile: with 2 cores, a benchmark beside a build is void.

  sudo bench/flow/run.py                 # parts 1-4 and 6 (about 25 minutes)
  sudo bench/flow/run.py --parts 5       # memory (about 12 minutes)
  sudo bench/flow/run.py --parts 1,3 --seconds 3
"""
import argparse
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import steal  # noqa: E402  (bench/steal.py: the one definition of steal and of a void run)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# XTK_BUILD: another Release build tree (e.g. a copy made before a change), to compare builds.
BUILD = os.environ.get("XTK_BUILD", os.path.join(ROOT, "build", "release"))
TOOLS = {name: os.path.join(BUILD, "tools", name, name) for name in
         ("xtk-gen", "xtk-server", "xtk-client", "xtk-testbed")}
CEILING = os.path.join(BUILD, "bench", "flow", "xtk-bench-ceiling")
TIMER_FLOOR = os.path.join(BUILD, "bench", "flow", "xtk-bench-timer-floor")
CPU_GAPS = os.path.join(BUILD, "bench", "flow", "xtk-bench-cpu-gaps")
FIXED_1KB = os.path.join(ROOT, "bench", "flow", "fixed-1kb.cdf")
TESTBED = "benchflow"
H0, H1 = f"xtk-{TESTBED}-h0", f"xtk-{TESTBED}-h1"
H1_ADDR = "10.77.0.2"
# The client's worker runs on CPU 1 (--realtime --cpus 1); the testbed's packet
# processing (switch, shaper, receiver) is steered to CPU 0, as a real host
# keeps NIC interrupts off its timing cores.
NET_CPUS = "0"
LINK_BPS = {"1G": 1e9, "5G": 5e9}
# Part 2 replays with a loss-based congestion control: bbr (this VM's default) paces every
# flow with high-resolution timers that fire on the sending CPU, the worker's own, and their
# softirqs then delay its starts (a tail of their own, not the engine's). Linux's usual cubic
# is not allowed on this VM; reno is.
LATENESS_CC = ("--cc", "reno")
# Part 2: a case's p99 rests on at least this many flows (the 10 latest above it); a case
# with fewer flows in --seconds runs longer, up to MAX_CASE_SECONDS.
MIN_LATENESS_FLOWS = 1000
MAX_CASE_SECONDS = 60

started = []  # every process this script starts, stopped by PID at the end


def run(argv, **kw):
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kw).stdout


def start(argv, log=subprocess.DEVNULL):
    p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    started.append(p)
    return p


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(3)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def cpu_s(usage):
    return usage.ru_utime + usage.ru_stime


def run_cpu(argv):
    """run() that also returns the CPU seconds the process used (user + system)."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    started.append(p)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise subprocess.CalledProcessError(p.returncode, argv, out)
    return out, cpu_s(usage)


def stop_cpu(p):
    """stop() that returns the CPU seconds the process used (not Popen.send_signal: it would reap
    a process that already exited, and its rusage with it)."""
    os.kill(p.pid, signal.SIGTERM)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode not in (0, -signal.SIGTERM):
        sys.exit(f"run.py: {p.args[0]} exited with {p.returncode} (its port in use?)")
    return cpu_s(usage)


def in_ns(ns, argv):
    return ["ip", "netns", "exec", ns] + argv if ns else argv


def testbed_up(shape=None, net_cpus=None):
    argv = [TOOLS["xtk-testbed"], "up", TESTBED, "--hosts", "2"]
    if shape:
        argv += ["--shape", shape]
    if net_cpus:
        argv += ["--net-cpus", net_cpus]
    run(argv)


def testbed_down():
    subprocess.run([TOOLS["xtk-testbed"], "down", TESTBED], capture_output=True)


def rx_bytes(ns, dev="eth0"):
    return int(run(in_ns(ns, ["cat", f"/sys/class/net/{dev}/statistics/rx_bytes"])))


# ---------------------------------------------------------------- part 1: bulk throughput

def xtk_bulk(ns_client, ns_server, addr, port, streams, seconds):
    server = start(in_ns(ns_server, [TOOLS["xtk-server"], "--listen", f"{addr}:{port}", "--quiet",
                                     "--threads", str(min(streams, 2))]))
    time.sleep(0.3)
    out = run(in_ns(ns_client, [TOOLS["xtk-client"], "--bulk", str(streams), "--dst", f"{addr}:{port}",
                                "-t", f"{seconds}s", "-o", "/dev/null", "--json"]))
    stop(server)
    return json.loads(out)["summary"]["goodput_bps"]


def iperf3_bulk(ns_client, ns_server, addr, port, streams, seconds):
    server = start(in_ns(ns_server, ["iperf3", "-s", "-p", str(port), "-1"]))
    time.sleep(0.3)
    out = run(in_ns(ns_client, ["iperf3", "-c", addr, "-p", str(port), "-t", str(seconds), "-P", str(streams),
                                "-J"]))
    stop(server)
    return json.loads(out)["end"]["sum_received"]["bits_per_second"]


def iperf2_bulk(ns_client, ns_server, addr, port, streams, seconds):
    server = start(in_ns(ns_server, ["iperf", "-s", "-p", str(port)]))
    time.sleep(0.3)
    out = run(in_ns(ns_client, ["iperf", "-c", addr, "-p", str(port), "-t", str(seconds), "-P", str(streams),
                                "-y", "C"]))
    stop(server)
    rows = [line.split(",") for line in out.strip().splitlines()]
    return float(rows[-1][8])  # the sum line when -P > 1, else the one stream


def report_steal(part, before):
    print(steal.report(part, before), flush=True)


def goal_text(met, run_steal):
    """A run's goal column: met, not, or void (steal above VOID_STEAL during it, bench/steal.py)."""
    return "void" if run_steal > steal.VOID_STEAL else "met" if met else "not"


def median_range(values, fmt="{:.2f}"):
    return f"{fmt.format(statistics.median(values))} [{fmt.format(min(values))}-{fmt.format(max(values))}]"


def part_bulk(seconds, pairs):
    print(f"\n== 1. bulk throughput (Gbit/s), xtk-client --bulk vs iperf3 -P and iperf2 -P: {pairs} interleaved "
          "rounds, each round's ratio to the better peer of that round; median [range]")
    print(f"# {'path':9} {'streams':>7} {'xtk':>20} {'iperf3':>20} {'iperf2':>20} {'xtk/best':>18}")
    testbed_up()
    rows = []
    try:
        for path, client_ns, server_ns, addr in (("loopback", None, None, "127.0.0.1"), ("veth", H0, H1, H1_ADDR)):
            for streams in (1, 4):
                xs, i3s, i2s = [], [], []
                for _ in range(pairs):
                    xs.append(xtk_bulk(client_ns, server_ns, addr, 7300, streams, seconds) / 1e9)
                    i3s.append(iperf3_bulk(client_ns, server_ns, addr, 7301, streams, seconds) / 1e9)
                    i2s.append(iperf2_bulk(client_ns, server_ns, addr, 7302, streams, seconds) / 1e9)
                ratios = [x / max(a, b) for x, a, b in zip(xs, i3s, i2s)]
                rows.append((path, streams, ratios))
                print(f"  {path:9} {streams:7} {median_range(xs):>20} {median_range(i3s):>20} {median_range(i2s):>20} "
                      f"{median_range(ratios):>18}", flush=True)
    finally:
        testbed_down()
    return rows


# ---------------------------------------------------------------- part 2: lateness and load

def timer_floor(mean_gap_us, seconds):
    """The timer floor, then this machine's CPU gaps, under the same iperf3 loopback load."""
    load = start(["iperf3", "-s", "-p", "7310", "-1"])
    time.sleep(0.2)
    client = start(["iperf3", "-c", "127.0.0.1", "-p", "7310", "-t", str(2 * seconds + 2)])
    time.sleep(0.5)
    out = run([TIMER_FLOOR, f"{mean_gap_us:.3f}", str(seconds), "100", "1", "0"]).split()
    gaps = run([CPU_GAPS, str(seconds), "1"]).split()
    stop(client)
    stop(load)
    return {"events": int(out[0]), "p50": float(out[1]), "p99": float(out[2]), "max": float(out[3]),
            "fifo": out[4] == "1", "gaps_p99": float(gaps[2])}


def schedule(path, cdf, profile, link, load, seconds):
    run([TOOLS["xtk-gen"], "--cdf", cdf, "--profile", profile, "--link", link, "--load", str(load), "-t",
         f"{seconds}s", "--dst", "h1", "-o", path])
    report = json.loads(run([TOOLS["xtk-gen"], "inspect", "--json", path]))
    return report


def replay(path, seconds, tmp, extra=()):
    """Runs xtk-client in h0 against a server in h1; reads h1's rx_bytes over the schedule."""
    # The server is another host: it stays off the client's timing core.
    server = start(in_ns(H1, ["taskset", "-c", NET_CPUS, TOOLS["xtk-server"], "--listen", "[::]:7000", "--quiet"]))
    time.sleep(0.3)
    start_at = time.time() + 1.0
    records = os.path.join(tmp, "records.csv")
    client = subprocess.Popen(in_ns(H0, [TOOLS["xtk-client"], path, "--map", f"h1={H1_ADDR}", "-o", records,
                                         "--json", "--start-at", f"{start_at:.6f}", "--realtime", "--cpus", "1",
                                         "--cpu-wake-latency", "0",
                                         *extra]),
                              stdout=subprocess.PIPE, text=True)
    started.append(client)
    before_all = rx_bytes(H1)
    time.sleep(max(0.0, start_at - time.time()))
    at_start = rx_bytes(H1)
    time.sleep(max(0.0, start_at + seconds - time.time()))
    at_end = rx_bytes(H1)
    out, _ = client.communicate(timeout=seconds + 120)
    after_all = rx_bytes(H1)
    stop(server)
    return json.loads(out), (before_all, at_start, at_end, after_all)


def late_by_cause(summary):
    c = summary["late_causes"]
    return "/".join(str(c[k]) for k in ("feeder", "wake-up", "worker", "connection"))


def part_lateness(seconds, tmp):
    print("\n== 2. web-search replay in the testbed, tuned: lateness (goal: p99 <= 15 us and p99.9 <= 200 us), "
          "the load at the receiver, and this machine's timer floor and CPU gaps for reference")
    print(f"# {'link':>5} {'profile':10} {'load':>4} {'flows':>6} {'late_p50_us':>11} {'late_p99_us':>11} "
          f"{'late_p999_us':>12} {'late_max_us':>11} {'over_100us':>10} {'over_1ms':>8} {'drift_us':>8} "
          f"{'waits':>5} {'floor_p99_us':>12} {'floor_max_us':>12} {'gaps_p99_us':>11} {'achieved/offered':>16} {'achieved/port':>13} "
          f"{'steal':>5} {'goal':>4} "
          f"{'late_by_cause':>13} {'max_cause':>10}")
    print(f"# steal: % of the CPUs' time the hypervisor gave others during the case (above {steal.VOID_STEAL}: void)")
    print("# late_by_cause: flows later than 100 us, feeder/wake-up/worker/connection (docs/flow-engine.md#summary);"
          " max_cause: the latest flow's")
    print("# gaps_p99_us: the p99 lateness of a thread that never sleeps on CPU 1 (xtk-bench-cpu-gaps): "
          "no timing strategy gets under it on this machine")
    print("# achieved/port: over what a perfect replay gets through the port in the window (port_limited_bins: "
          "at 80 % of a port, work still queued when the window ends is a few percent of it)")
    rows = []
    for link in ("1G", "5G"):
        testbed_up(f"port:h1={link}", NET_CPUS)
        try:
            for profile in ("consistent", "burst"):
                for load in (0.3, 0.8):
                    path = os.path.join(tmp, f"{profile}-{link}-{load}.csv")
                    report = schedule(path, "web-search", profile, link, load, seconds)
                    # A p99 of fewer flows is the latest one or two: sparse cases (1G consistent
                    # 30 %: 25 flows/s) run long enough for MIN_LATENESS_FLOWS.
                    case_seconds = seconds
                    if report["flows"] < MIN_LATENESS_FLOWS:
                        case_seconds = min(MAX_CASE_SECONDS,
                                           math.ceil(seconds * MIN_LATENESS_FLOWS / max(1, report["flows"])))
                        report = schedule(path, "web-search", profile, link, load, case_seconds)
                    # The floor's events come at least every 1 ms on average, so its p99
                    # rests on thousands of wake-ups even when the schedule has a hundred
                    # flows (gaps above the 100 us spin guard wake the same way).
                    mean_gap_us = min(1000.0, case_seconds * 1e6 / max(1, report["flows"]))
                    floor = timer_floor(mean_gap_us, min(case_seconds, 5))
                    # --pool-limit 256 as in part 4: at 80 % of the port, bursts keep more than
                    # 64 flows of one destination in flight, and the rest would wait for one.
                    before = steal.cpu_ticks()
                    result, rx = replay(path, case_seconds, tmp, (*LATENESS_CC, "--pool-limit", "256"))
                    run_steal = steal.steal_since(before)
                    s = result["summary"]
                    # Header overhead from the whole run: interface bytes per payload byte.
                    overhead = (rx[3] - rx[0]) / max(1, report["bytes"])
                    achieved = (rx[2] - rx[1]) * 8 / case_seconds / overhead
                    ratio = achieved / report["offered_bps"]
                    # The port's payload rate, with the same header overhead.
                    deliverable = sum(port_limited_bins(path, LINK_BPS[link] / overhead, case_seconds).values())
                    port_ratio = achieved / (deliverable * 8 / case_seconds)
                    p99 = s["lateness_us"]["p99"]
                    rows.append((link, profile, load, s, floor, ratio))
                    print(f"  {link:>5} {profile:10} {load:4.1f} {s['flows']:6} {s['lateness_us']['p50']:11.1f} "
                          f"{p99:11.1f} {s['lateness_us']['p999']:12.1f} {s['lateness_us']['max']:11.1f} "
                          f"{s['flows_late_over_100us']:10} {s['flows_late_over_1ms']:8} "
                          f"{s['drift_us']['last_minus_first']:8.1f} "
                          f"{s['connection_waits']:5} {floor['p99']:12.1f} {floor['max']:12.1f} {floor['gaps_p99']:11.1f} {ratio:16.4f} {port_ratio:13.4f} "
                          f"{run_steal:5.1f} "
                          f"{goal_text(p99 <= 15 and s['lateness_us']['p999'] <= 200, run_steal):>4} "
                          f"{late_by_cause(s):>13} {s['late_causes']['latest_cause'] or '-':>10}", flush=True)
        finally:
            testbed_down()
    return rows


# ---------------------------------------------------------------- part 3: small flows

def part_small(seconds, tmp, pairs):
    print(f"\n== 3. 1 KB flows as fast as possible on loopback (flows/s), against a minimal epoll client/server: "
          f"{pairs} interleaved pairs; median [range]")
    print("#   sides: xtk-server driven by the minimal client, and xtk-client driving the minimal server, each "
          "against the minimal pair, all three speaking xtk's wire (header and flow id)")
    print(f"# {'connections':11} {'policy':10} {'xtk':>24} {'ceiling':>24} {'xtk/ceiling':>18} "
          f"{'xtk_cpu_us/flow':>20} {'ceiling_cpu_us/flow':>20} {'xtk-server side':>18} {'xtk-client side':>18}")
    conns = 8
    rows = []
    # Both swing by tens of percent from run to run here (other tenants of the host): the ratio
    # of each pair, measured back to back, is what holds.
    for policy, mode, expected_per_s in (("pool", "persistent", 130e3), ("per-flow", "per-flow", 14e3)):
        # 1 KB flows at 8 Gbit/s (1M flows/s) is far above what the machine can do: every flow
        # is due at once and xtk runs flat out, about a third of --seconds at the expected rate.
        path = os.path.join(tmp, f"small-{policy}.csv")
        run([TOOLS["xtk-gen"], "--cdf", FIXED_1KB, "--load", "8G", "-t", f"{seconds / 3 * expected_per_s / 1e6}s",
             "--dst", "127.0.0.1", "-o", path])
        per_flow = ["per-flow"] if mode == "per-flow" else []
        ceiling_client = [CEILING, "client", "7320", str(conns), str(seconds / 3), mode]
        # No PM QoS request, as the minimal pair makes none: where the kernel has no cpuidle driver
        # xtk-client would keep it with pollers on both CPUs, and its rusage would count their spinning.
        xtk_client = [TOOLS["xtk-client"], path, "--policy", policy, "--pool-limit", str(conns), "--pool-init",
                      str(conns), "-o", os.path.join(tmp, "small-records.csv"), "--json", "--cpu-wake-latency", "none"]

        def xtk_rate(out):
            s = json.loads(out)["summary"]
            return s["flows_by_status"]["ok"], s["flows_by_status"]["ok"] / (s["elapsed_ns"] / 1e9)

        ceilings, xtks, ceiling_cpus, xtk_cpus, server_sides, client_sides = [], [], [], [], [], []
        for _ in range(pairs):
            # CPU per flow: client and server together (user + system), from each process's rusage.
            # Per flow, the server closes after its ack, as xtk-server does (wire.md).
            ceiling_server = start([CEILING, "server", "7320", *per_flow])
            time.sleep(0.2)
            out, client_cpu = run_cpu(ceiling_client)
            ceilings.append(float(out))
            ceiling_cpus.append((client_cpu + stop_cpu(ceiling_server)) / (ceilings[-1] * seconds / 3) * 1e6)
            server = start([TOOLS["xtk-server"], "--listen", "127.0.0.1:7321", "--quiet"])
            time.sleep(0.2)
            out, client_cpu = run_cpu([*xtk_client, "-p", "7321"])
            flows, rate = xtk_rate(out)
            xtks.append(rate)
            xtk_cpus.append((client_cpu + stop_cpu(server)) / flows * 1e6)
            # Where the gap lies: each xtk tool against its minimal counterpart, over the same wire.
            minimal_server = start([CEILING, "server", "7320", *per_flow, "wire"])
            time.sleep(0.2)
            minimal = float(run([*ceiling_client, "wire"]))
            stop(minimal_server)
            server = start([TOOLS["xtk-server"], "--listen", "127.0.0.1:7321", "--quiet"])
            time.sleep(0.2)
            server_sides.append(float(run([CEILING, "client", "7321", str(conns), str(seconds / 3), mode, "wire"]))
                                / minimal)
            stop(server)
            minimal_server = start([CEILING, "server", "7320", *per_flow, "wire"])
            time.sleep(0.2)
            client_sides.append(xtk_rate(run([*xtk_client, "-p", "7320"]))[1] / minimal)
            stop(minimal_server)
        ratios = [x / c for x, c in zip(xtks, ceilings)]
        rows.append((policy, ratios))
        print(f"  {conns:11} {policy:10} {median_range(xtks, '{:.0f}'):>24} {median_range(ceilings, '{:.0f}'):>24} "
              f"{median_range(ratios):>18} {median_range(xtk_cpus, '{:.1f}'):>20} "
              f"{median_range(ceiling_cpus, '{:.1f}'):>20} {median_range(server_sides):>18} "
              f"{median_range(client_sides):>18}", flush=True)
    for policy, ratios in rows:
        median = statistics.median(ratios)
        print(f"  goal ({policy}, median xtk/ceiling >= 0.95): {'met' if median >= 0.95 else 'not met'} ({median:.3f})")
    return rows


# ---------------------------------------------------------------- part 5: memory

def parse_count(text):
    scale = {"k": 1e3, "M": 1e6, "G": 1e9}
    return int(float(text[:-1]) * scale[text[-1]]) if text[-1] in scale else int(text)


def part_memory(counts, tmp, flows_per_s=100e3):
    print(f"\n== 5. client peak RSS against schedule length: 1 KB flows at {flows_per_s / 1e3:.0f}k flows/s on "
          "loopback, the schedule piped from xtk-gen")
    print(f"# {'requested':>11} {'records':>11} {'ok':>11} {'elapsed_s':>9} {'flows/s':>9} {'peak_rss_MiB':>12} "
          f"{'vs_first':>8}")
    rows = []
    records = os.path.join(tmp, "memory-records.csv")
    for count in counts:
        server = start([TOOLS["xtk-server"], "--listen", "127.0.0.1:7322", "--quiet"])
        time.sleep(0.2)
        seconds = count / flows_per_s
        gen = subprocess.Popen([TOOLS["xtk-gen"], "--cdf", FIXED_1KB, "--load", f"{flows_per_s * 8000 / 1e6:.0f}M",
                                "--link", "10G", "-t", f"{seconds}s", "--dst", "127.0.0.1", "-o", "-"],
                               stdout=subprocess.PIPE)
        started.append(gen)
        client = subprocess.Popen([TOOLS["xtk-client"], "-", "-p", "7322", "-o", records, "--json", "--no-progress"],
                                  stdin=gen.stdout, stdout=subprocess.PIPE, text=True)
        gen.stdout.close()
        out = client.stdout.read()
        _, status, usage = os.wait4(client.pid, 0)  # ru_maxrss: the client's peak RSS, in KiB
        client.returncode = os.waitstatus_to_exitcode(status)
        gen.wait()
        stop(server)
        if client.returncode != 0:
            sys.exit(f"run.py: xtk-client exited {client.returncode}: {out[-2000:]}")
        summary = json.loads(out)["summary"]
        with open(records, "rb") as f:
            written = sum(1 for line in f if line[:1].isdigit())
        os.remove(records)
        rss = usage.ru_maxrss / 1024
        rows.append((count, written, rss))
        elapsed = summary["elapsed_ns"] / 1e9
        statuses = summary["flows_by_status"]
        others = ", ".join(f"{k} {v}" for k, v in statuses.items() if k != "ok" and v)
        print(f"  {count:11} {written:11} {statuses['ok']:11} {elapsed:9.1f} "
              f"{count / elapsed:9.0f} {rss:12.1f} {rss / rows[0][2]:8.3f}"
              + (f"   ({others}; first error: {summary.get('first_error', '')})" if others else ""), flush=True)
    return rows


# ---------------------------------------------------------------- part 4: burst fidelity

def burst_ratios(bins, width_ms, period_ms):
    """Mean bytes per bin in burst windows and in the rest, each over the mean of all bins."""
    mean = sum(bins.values()) / max(1, len(bins))
    burst = [b for k, b in bins.items() if k % period_ms < width_ms]
    rest = [b for k, b in bins.items() if k % period_ms >= width_ms]
    return (sum(burst) / max(1, len(burst))) / mean, (sum(rest) / max(1, len(rest))) / mean


def ms_bins(received, lag_10us, seconds):
    """1 ms bins of the schedule's first `seconds`, from 10 us bins shifted back by the lag."""
    bins = {k: 0 for k in range(int(seconds * 1000))}
    for k10, b in received.items():
        k = (k10 - lag_10us) // 100
        if k in bins:
            bins[k] += b
    return bins


def port_limited_bins(schedule_path, link_bps, seconds):
    """What a perfect engine would deliver per 10 us bin through the shaped port: every flow's
    bytes offered at its scheduled start, queued first come first served, and sent as the
    port's token bucket allows (xtk-testbed's htb: the link rate, and a bucket of a millisecond
    at that rate or 128 KiB, whichever is more)."""
    offered = {}
    with open(schedule_path) as f:
        columns = None
        for line in f:
            if line.startswith("#"):
                continue
            fields = line.rstrip("\n").split(",")
            if columns is None:
                columns = {name: i for i, name in enumerate(fields)}
                continue
            k = int(fields[columns["start_ns"]]) // 10_000
            offered[k] = offered.get(k, 0) + int(fields[columns["size_bytes"]])
    refill = link_bps / 8 * 10e-6
    bucket = max(2 * 65536, link_bps / 8 / 1000)
    delivered, queue, tokens = {}, 0.0, bucket
    for k in range(int(seconds * 1e5)):
        queue += offered.get(k, 0)
        tokens = min(bucket, tokens + refill)
        out = min(queue, tokens)
        queue -= out
        tokens -= out
        delivered[k] = out
    return delivered


def part_burst(seconds, tmp):
    """Receiver bytes per 1 ms bin, from packet time stamps on h1's eth0 (xtk-log capture
    --summarize, 10 us bins of the h0 -> h1 direction, re-binned to 1 ms from the schedule's
    time zero): burst windows vs the rest, against the mean; beside what the schedule offers
    (xtk-gen inspect). Small flows (google-rpc) finish inside their burst window; web-search
    flows (scaled down to make bursts of at least 2 flows) may outlast it, and TCP spreads them."""
    print("\n== 4. burst fidelity at the receiver: bytes per 1 ms bin in burst windows vs the rest, over the mean")
    print(f"# {'port':>5} {'load':>4} {'cdf':12} {'flows':>6} {'receiver_burst/rest':>19} {'lag_us':>6} "
          f"{'at_lag_burst/rest':>19} {'port_limited':>19} {'schedule_burst/rest':>19} {'late_p99_us':>11} "
          f"{'connection_waits':>16}")
    rows = []
    # 30 % of 1 Gbit/s, bursts at 3x = 90 %. First through an unshaped path (veth and bridge at
    # tens of Gbit/s): the engine's own fidelity; then through the port shaped to 1 Gbit/s,
    # beside what that port lets through of a perfect replay (port_limited).
    link, load = "1G", 0.3
    for shaped, cdf in ((False, "web-search"), (False, "google-rpc"), (True, "web-search"), (True, "google-rpc")):
        testbed_up(f"port:h1={link}" if shaped else None, NET_CPUS)
        try:
            path = os.path.join(tmp, f"burst-fidelity-{cdf}.csv")
            report = schedule(path, cdf, "burst", link, load, seconds)
            bins_path = os.path.join(tmp, "rx-bins.csv")
            capture = start(in_ns(H1, [os.path.join(BUILD, "tools", "xtk-log", "xtk-log"), "capture", "-i", "eth0",
                                       "--summarize", "--per", "direction", "--bin", "10us", "--stats-every", "0",
                                       "-f", "src host 10.77.0.1 and dst host 10.77.0.2", "-o", bins_path]))
            time.sleep(0.5)
            # google-rpc bursts keep more than the default 64 flows in flight per destination.
            result, _ = replay(path, seconds, tmp, ("--pool-limit", "256"))
            capture.send_signal(signal.SIGINT)
            capture.wait(10)
            zero = result["start_realtime_ns"]
            received = {}  # bytes per 10 us bin from the schedule's zero
            with open(bins_path) as f:
                for line in f:
                    if line.startswith("#") or line.startswith("bin_start_ns"):
                        continue
                    fields = line.split(",")
                    t = int(fields[0]) - zero
                    if 0 <= t < seconds * 1e9 + 1e6:
                        received[t // 10_000] = received.get(t // 10_000, 0) + int(fields[4])
            b = report["burst"]
            width_ms, period_ms = b["width_ns"] // 1_000_000, b["period_ns"] // 1_000_000
            got = burst_ratios(ms_bins(received, 0, seconds), width_ms, period_ms)
            # Bytes reach the receiver a transfer time after their flow starts: the 1 ms bins
            # shifted by the lag (0-1 ms, 10 us steps) that shows the bursts most sharply.
            lag, at_lag = max(((lag, burst_ratios(ms_bins(received, lag, seconds), width_ms, period_ms))
                               for lag in range(0, 100)), key=lambda x: x[1][0])
            port = "-"
            if shaped:
                ideal = burst_ratios(ms_bins(port_limited_bins(path, LINK_BPS[link], seconds), 0, seconds), width_ms,
                                     period_ms)
                port = f"{ideal[0]:9.3f}/{ideal[1]:<9.3f}"
            s = result["summary"]
            rows.append((shaped, cdf, got, s))
            print(f"  {link if shaped else 'none':>5} {load:4.1f} {cdf:12} {s['flows']:6} {got[0]:9.3f}/{got[1]:<9.3f} "
                  f"{lag * 10:6} {at_lag[0]:9.3f}/{at_lag[1]:<9.3f} {port:>19} "
                  f"{b['burst_vs_mean']:9.3f}/{b['rest_vs_mean']:<9.3f} {s['lateness_us']['p99']:11.1f} "
                  f"{s['connection_waits']:16}", flush=True)
        finally:
            testbed_down()
    return rows


# ---------------------------------------------------------------- part 6: precision by default

TIMING_OFF = ["--no-realtime", "--cpus", "none", "--cpu-wake-latency", "none"]
AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--inh-caps=-all"]


def replay_loopback(path, records, prefix=(), extra=()):
    server = start([TOOLS["xtk-server"], "--listen", "127.0.0.1:7330", "--quiet"])
    time.sleep(0.3)
    p = subprocess.run([*prefix, TOOLS["xtk-client"], path, "-p", "7330", "-o", records, "--json", *extra],
                       capture_output=True, text=True, check=True)
    stop(server)
    out = json.loads(p.stdout)
    return out["summary"], out["timing"], p.stderr.strip()


def part_defaults(seconds, tmp, pairs):
    print(f"\n== 6. precision by default: a 2 Gbit/s web-search replay on loopback with no timing flags, as root "
          f"(goal: p99 <= 30 us), against the same with every timing choice off ({' '.join(TIMING_OFF)}: the "
          f"defaults before), {pairs} interleaved pairs, and as an unprivileged user")
    # The unprivileged client reads the schedule and writes records here.
    shared = os.path.join(tmp, "defaults")
    os.makedirs(shared)
    os.chmod(tmp, 0o711)
    os.chmod(shared, 0o777)
    path = os.path.join(shared, "web-search-2g.csv")
    run([TOOLS["xtk-gen"], "--cdf", "web-search", "--load", "2G", "-t", f"{seconds}s", "--dst", "127.0.0.1",
         "-o", path])
    variants = (("defaults, root", (), ()), ("timing off, root", (), TIMING_OFF), ("defaults, nobody", AS_NOBODY, ()))
    results = {name: [] for name, _, _ in variants}
    print(f"# {'variant':17} {'flows':>6} {'late_p50_us':>11} {'late_p99_us':>11} {'late_p999_us':>12} "
          f"{'late_max_us':>11} {'over_100us':>10} {'over_1ms':>8} {'steal':>5}  timing")
    void_rounds = 0
    for _ in range(pairs):
        round_results, round_void = {}, False
        for k, (name, prefix, extra) in enumerate(variants):
            records = os.path.join(shared, f"records-{k}.csv")  # each variant's own: the users differ
            before = steal.cpu_ticks()
            s, timing, stderr = replay_loopback(path, records, prefix, extra)
            run_steal = steal.steal_since(before)
            round_void = round_void or run_steal > steal.VOID_STEAL
            round_results[name] = s
            lat = s["lateness_us"]
            print(f"  {name:17} {s['flows']:6} {lat['p50']:11.1f} {lat['p99']:11.1f} {lat['p999']:12.1f} "
                  f"{lat['max']:11.1f} {s['flows_late_over_100us']:10} {s['flows_late_over_1ms']:8} {run_steal:5.1f}  "
                  f"{timing['description']}", flush=True)
            if stderr:
                print(f"    stderr: {stderr}")
        # A round with a void run is left out whole: its pair ratio would read the host.
        if round_void:
            void_rounds += 1
        else:
            for name, s in round_results.items():
                results[name].append(s)
    if void_rounds == pairs:
        print(f"# every round had a run with steal above {steal.VOID_STEAL} %: part 6 is void")
        return
    print("# median [range] of the runs" + (f", {void_rounds} of {pairs} rounds left out (steal above "
                                            f"{steal.VOID_STEAL} % in one of their runs)" if void_rounds else ""))
    for name, runs in results.items():
        for q in ("p99", "p999", "max"):
            print(f"  {name:17} lateness {q:4} {median_range([r['lateness_us'][q] for r in runs], '{:.1f}'):>28} us")
    ratios = [off["lateness_us"]["p99"] / max(on["lateness_us"]["p99"], 0.01)
              for on, off in zip(results["defaults, root"], results["timing off, root"])]
    p99 = statistics.median(r["lateness_us"]["p99"] for r in results["defaults, root"])
    print(f"  p99 timing off / defaults, per pair: {median_range(ratios)}")
    print(f"  goal (defaults as root, median p99 <= 30 us): {'met' if p99 <= 30 else 'not met'} ({p99:.1f} us)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default="1,2,3,4,6", help="which parts to run (1-6)")
    parser.add_argument("--memory-flows", default="1M,10M,60M", help="part 5: schedule lengths (the first is the base)")
    parser.add_argument("--seconds", type=float, default=10, help="length of each measurement")
    parser.add_argument("--pairs", type=int, default=5, help="parts 1, 3 and 6: interleaved pairs (at least 5)")
    args = parser.parse_args()
    if args.pairs < 5:
        parser.error("--pairs: at least 5 (one pair, or two, reads the machine's noise)")
    if os.geteuid() != 0:
        sys.exit("run.py: needs root (network namespaces)")
    for tool in ("iperf3", "iperf"):
        if shutil.which(tool) is None:
            sys.exit(f"run.py: {tool} is not installed (apt-get install iperf3 iperf)")
    missing = [p for p in list(TOOLS.values()) + [CEILING, TIMER_FLOOR, CPU_GAPS] if not os.path.exists(p)]
    if missing:
        sys.exit("run.py: build first (bash scripts/build.sh release); missing: " + ", ".join(missing))
    parts = {int(p) for p in args.parts.split(",")}
    print(f"# bench/flow on {os.uname().nodename}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M:%S')}")
    tmp = tempfile.mkdtemp(prefix="xtk-bench-flow-")
    runs = {1: lambda: part_bulk(int(args.seconds), args.pairs),
            2: lambda: part_lateness(args.seconds, tmp),
            3: lambda: part_small(args.seconds, tmp, args.pairs),
            4: lambda: part_burst(args.seconds, tmp),
            6: lambda: part_defaults(args.seconds, tmp, args.pairs),
            5: lambda: part_memory([parse_count(c) for c in args.memory_flows.split(",")], tmp)}
    try:
        for part, run_part in runs.items():
            if part in parts:
                before = steal.cpu_ticks()
                run_part()
                report_steal(part, before)
    finally:
        for p in started:
            stop(p)
        testbed_down()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
