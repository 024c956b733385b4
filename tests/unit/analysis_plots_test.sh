#!/usr/bin/env bash
# ctest analysis_plots: draws every figure of analysis/plot.py from the crafted
# experiment (tests/data/analysis/exp, its tables and tests/data/analysis/sweep.csv)
# and checks that each PNG exists, is a real PNG of some size, and is not blank.
#
#   analysis_plots_test.sh XTK_ANALYZE SOURCE_DIR
set -euo pipefail

analyze=$1
root=$2
py=/usr/bin/python3  # Debian's, with python3-matplotlib and python3-pandas
[[ -x $py ]] || py=python3
exp=$root/tests/data/analysis/exp
tmp=$(mktemp -d "${TMPDIR:-/tmp}/xtk-plots.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

"$analyze" tables "$exp" -o "$tmp/tables" >/dev/null
"$py" "$root/analysis/plot.py" all --tables "$tmp/tables" --step "$exp/toy-consistent-07" \
  --sweep "$root/tests/data/analysis/sweep.csv" -o "$tmp/png"
# The spread over two runs (copies of the experiment, one with a slower step), each with its tables;
# the spread's table names them by the path given, here relative to another directory.
for run in run1 run2; do cp -r "$exp" "$tmp/$run" && "$analyze" tables "$tmp/$run" -o "$tmp/$run/tables" >/dev/null; done
sed -i 's/^\(0,4,[0-9]*,[0-9]*,\)8320.000/\113120.000/; s/^\(1,4,[0-9]*,[0-9]*,\)8310.000/\113110.000/' \
  "$tmp/run2/toy-consistent-05/iterations.csv"
"$analyze" tables "$tmp/run2" -o "$tmp/run2/tables" >/dev/null
(cd "$tmp" && "$analyze" spread run1 run2 -o spread >/dev/null)
"$py" "$root/analysis/plot.py" spread "$tmp/spread" -o "$tmp/png/spread.png"
# --format goes before the command or after it, where users put it; either writes a PDF.
"$py" "$root/analysis/plot.py" --format pdf cdf "$tmp/tables" -o "$tmp/before.pdf" >/dev/null
"$py" "$root/analysis/plot.py" cdf "$tmp/tables" --format pdf --dpi 80 -o "$tmp/after.pdf" >/dev/null
"$py" "$root/analysis/plot.py" cdf "$tmp/tables" --format pdf >/dev/null && mv cdf.pdf "$tmp/default.pdf"
for f in before after default; do
  [[ $(head -c 5 "$tmp/$f.pdf") == %PDF- ]] || { echo "analysis_plots: $f.pdf is not a PDF" >&2; exit 1; }
done
# The injection histogram of a step without trace bins comes from its counters.
"$py" "$root/analysis/plot.py" injection "$exp/toy-consistent-05" -o "$tmp/png/injection-counters.png"
# A figure that cannot be drawn says why and fails.
if "$py" "$root/analysis/plot.py" flow-throughput "$exp/toy-consistent-05" -o "$tmp/none.png" 2>"$tmp/err"; then
  echo "analysis_plots: flow-throughput without trace bins did not fail" >&2
  exit 1
fi
grep -q "per-flow throughput needs trace bins" "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
# A Python without matplotlib (-S: no site packages, as a GPU host's may be) says so in one line.
if "$py" -S "$root/analysis/plot.py" spread "$tmp/spread" -o "$tmp/none.png" 2>"$tmp/err"; then
  echo "analysis_plots: plot.py without matplotlib did not fail" >&2
  exit 1
fi
[[ $(wc -l <"$tmp/err") == 1 ]] && grep -q "has no matplotlib" "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
# `all` on such a step draws the others and says which it left out.
"$py" "$root/analysis/plot.py" all --tables "$tmp/tables" --step "$exp/toy-consistent-05" -o "$tmp/no-bins" >"$tmp/out"
grep -q "no flow-throughput figure: .*toy-consistent-05 has no trace bins" "$tmp/out" || { cat "$tmp/out" >&2; exit 1; }
[[ -s $tmp/no-bins/injection.png && ! -e $tmp/no-bins/flow-throughput.png ]] || { ls "$tmp/no-bins" >&2; exit 1; }

"$py" - "$tmp/png" <<'PY'
import os
import sys

import matplotlib.image as image
import numpy as np

out = sys.argv[1]
names = ["iteration-time", "rescaled", "cdf", "injection", "flow-throughput", "busbw", "injection-counters", "spread"]
failed = False
for name in names:
    path = os.path.join(out, name + ".png")
    if not os.path.isfile(path):
        print(f"analysis_plots: {path} was not written")
        failed = True
        continue
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        magic = f.read(8)
    pixels = image.imread(path)[..., :3]
    ink = float(np.mean(np.any(pixels < 0.9, axis=-1)))  # share of pixels that are not near-white
    # Axes, ticks and text are grey; the data are drawn in colour. An empty
    # figure has ink but hardly any colour.
    data = float(np.mean(pixels.max(axis=-1) - pixels.min(axis=-1) > 0.25))
    colours = len(np.unique((pixels * 255).astype(np.uint8).reshape(-1, 3), axis=0))
    ok = magic == b"\x89PNG\r\n\x1a\n" and size > 10_000 and ink > 0.02 and data > 0.003 and colours > 50
    print(f"analysis_plots: {name}.png {size} bytes, {pixels.shape[1]}x{pixels.shape[0]}, "
          f"{ink:.1%} ink, {data:.2%} in colour, {colours} colours: {'ok' if ok else 'FAILED'}")
    failed |= not ok
sys.exit(1 if failed else 0)
PY
