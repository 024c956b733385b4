#!/usr/bin/env python3
"""Steal: the time the hypervisor gave this VM's CPUs to other tenants (/proc/stat), the one
definition every bench uses. A part or run with steal above VOID_STEAL % of the CPUs' time is
void: the VM stalled for milliseconds at a time, and its figures read the host.

  bench/steal.py now                    # prints "ALL STEAL": the CPUs' ticks so far
  bench/steal.py report PART ALL STEAL  # the steal since that reading, as a bench's part line
"""
import sys

VOID_STEAL = 5


def cpu_ticks():
    """The CPUs' time so far, in ticks: (all, steal)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    return sum(ticks), ticks[7]


def steal_since(before):
    """Steal since `before` (cpu_ticks()), in % of the CPUs' time."""
    total, steal = (b - a for a, b in zip(before, cpu_ticks()))
    return 100 * steal / max(1, total)


def report(part, before):
    """The line a bench prints after a part."""
    share = steal_since(before)
    return (f"# part {part}: steal {share:.1f} % of the CPUs' time"
            + (f" (above {VOID_STEAL} %: this part is void)" if share > VOID_STEAL else ""))


def main(argv):
    if argv[1:2] == ["now"] and len(argv) == 2:
        print(*cpu_ticks())
    elif argv[1:2] == ["report"] and len(argv) == 5:
        print(report(argv[2], (int(argv[3]), int(argv[4]))), flush=True)
    else:
        print(f"usage: {argv[0]} now | report PART ALL STEAL", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv)
