#!/usr/bin/env python3
"""busbw of xtk-collective against nccl-tests, per collective, size and mode, from the pairs of
vs_nccl_tests.sh: the median of the pair ratios (xtk / nccl-tests) and their range, and the
elements either tool found wrong. A markdown table on stdout; exits 1 when a median from
--min-size up is below --goal or anything was wrong.

  python3 nccl_tests_compare.py OUT --pairs 5 --collectives all_reduce all_gather ...
"""
import argparse
import json
import statistics
import sys


def wrong_count(text):
    """nccl-tests' #wrong: a count, or N/A where it checks nothing (in place, all-to-all and send/recv)."""
    return None if text == "N/A" else int(float(text))


def nccl_tests_rows(path):
    """size -> (oop busbw, oop wrong, ip busbw, ip wrong) from nccl-tests' table."""
    rows = {}
    for line in open(path):
        f = line.split()
        if len(f) >= 13 and not line.startswith("#") and f[0].isdigit():
            rows[int(f[0])] = (float(f[7]), wrong_count(f[8]), float(f[11]), wrong_count(f[12]))
    return rows


def xtk_rows(path):
    """size -> (oop busbw, oop wrong, ip busbw, ip wrong); wrong is None where xtk checked nothing."""
    rows = {}
    for r in json.load(open(path))["results"]:
        o, i = r["out_of_place"], r["in_place"]
        rows[r["size"]] = (o["busbw_gbyte_s"], o["wrong"], i["busbw_gbyte_s"], i["wrong"])
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--collectives", nargs="+", required=True)
    p.add_argument("--min-size", type=int, default=32 << 20)
    p.add_argument("--goal", type=float, default=0.99)
    a = p.parse_args()
    ok = True
    print("| collective | size (B) | mode | xtk busbw (GB/s) | nccl-tests busbw (GB/s) | ratio: median [range] "
          "| wrong elements (xtk, nccl-tests) |")
    print("|---|---:|---|---:|---:|---|---|")
    for c in a.collectives:
        pairs = []
        for i in range(1, a.pairs + 1):
            nt_path = f"{a.out}/{c}.nccl-tests.{i}.txt"
            try:
                pair = (xtk_rows(f"{a.out}/{c}.xtk.{i}.json"), nccl_tests_rows(nt_path))
            except (OSError, ValueError, KeyError) as e:
                print(f"nccl_tests_compare.py: {c} pair {i}: {e}", file=sys.stderr)
                ok = False
                continue
            # A binary that did not start leaves an output with no table: no pair, and the goal unmet.
            if not pair[1]:
                print(f"nccl_tests_compare.py: {nt_path}: no result rows (see its text)", file=sys.stderr)
                ok = False
                continue
            pairs.append(pair)
        if len(pairs) < a.pairs:
            ok = False
        if not pairs:
            continue
        for size in sorted(pairs[0][1]):
            for mode, col in (("out of place", 0), ("in place", 2)):
                ratios, xs, ns, wx, wn = [], [], [], 0, 0
                x_checked = n_checked = True
                for x, n in pairs:
                    if size not in x or size not in n or n[size][col] <= 0:
                        continue
                    ratios.append(x[size][col] / n[size][col])
                    xs.append(x[size][col])
                    ns.append(n[size][col])
                    if x[size][col + 1] is None:
                        x_checked = False
                    else:
                        wx += x[size][col + 1]
                    if n[size][col + 1] is None:
                        n_checked = False
                    else:
                        wn += n[size][col + 1]
                if not ratios:
                    continue
                med = statistics.median(ratios)
                if (size >= a.min_size and med < a.goal) or wx or wn:
                    ok = False
                print(f"| {c} | {size} | {mode} | {statistics.median(xs):.2f} | {statistics.median(ns):.2f} "
                      f"| {med:.3f} [{min(ratios):.3f}-{max(ratios):.3f}] ({len(ratios)}) "
                      f"| {wx if x_checked else 'not checked'}, {wn if n_checked else 'not checked'} |")
    print(f"\ngoal: median ratio >= {a.goal} from {a.min_size} B, 0 wrong: {'met' if ok else 'NOT met'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
