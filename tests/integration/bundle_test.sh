#!/usr/bin/env bash
# The bundle for hosts without apt (scripts/bundle.sh), as a GPU host gets it:
# built, moved elsewhere, set up there, then xtk-run runs a netns step from it
# with the bundle first on PATH (no xtk tool elsewhere) and the source tree's configs/, analysis/ and
# build tree hidden (a private mount namespace), so every tool must find its
# siblings through /proc/self/exe and the shipped data under share/xtk.
# Exit 77 (skip) without root or patchelf.
#
#   tests/integration/bundle_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
[[ $(id -u) == 0 ]] || { echo "SKIP: the netns step and the private mounts need root"; exit 77; }
command -v patchelf >/dev/null || { echo "SKIP: patchelf is not installed (scripts/install-deps.sh)"; exit 77; }

work=$(mktemp -d /tmp/xtk-bundle-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
bash "$src/scripts/bundle.sh" "$build" "$work/made"
mv "$work/made" "$work/moved"
sh "$work/moved/setup.sh"
interp=$(readelf -l "$work/moved/bin/xtk-run" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
[[ $interp == "$work/moved/lib/"* ]] || { echo "FAIL: xtk-run's interpreter is $interp, not the bundle's"; exit 1; }

cp "$src/tests/data/collective/tiny-mlp.csv" "$work/"
cat >"$work/exp.toml" <<CONF
[experiment]
name = "bundle"
link = "200M"
step_timeout = "60s"
[training]
model = "$work/tiny-mlp.csv"
ranks = 2
iterations = 3
warmup = 0
[cross_traffic]
profiles = ["consistent"]
cdf = "web-search"
loads = [0.0, 0.5]
warmup = "500ms"
CONF
# Everything the build left outside the bundle disappears for this run.
unshare -m sh -c "
  mount -t tmpfs none '$src/configs' && mount -t tmpfs none '$src/analysis' && mount -t tmpfs none '$build' &&
  cd '$work' && env -i PATH='$work/moved/bin:/usr/bin:/bin' HOME='$work' xtk-run exp.toml -o '$work/exp' -q
" >"$work/run.log" 2>&1 || { cat "$work/run.log"; echo "FAIL: xtk-run from the bundle"; exit 1; }
for step in none/step00 consistent/step01; do
  grep -q '"status": "ok"' "$work/exp/tiny-mlp/$step/run.json" || { cat "$work/run.log"; echo "FAIL: $step"; exit 1; }
done
[[ -s $work/exp/tables/theory.csv ]] || { cat "$work/run.log"; echo "FAIL: no tables (xtk-analyze from the bundle)"; exit 1; }
echo "bundle test: ok ($(du -sh "$work/moved" | cut -f1) bundle; xtk-run ran two steps from it)"
