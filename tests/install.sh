#!/bin/sh
# An installed crsim is relocatable (issue 37 item 5, docs/install.md):
# `meson install --destdir` into a temporary folder, the installation moved
# elsewhere as a whole, then the installed binary, run from a third folder
# with CRSIM_SPEC_DIR and CRSIM_SCRIPT_DIR unset, runs the quickstart
# config (experiments/mooncake.yaml, shortened) from the installed data
# folder, takes its specs and cost profile from there (start-up line) and
# `crsim plot` draws its figures (when gnuplot is installed); an explicit
# CRSIM_SPEC_DIR that does not exist is an error naming it (exit 2).
# usage: install.sh BUILD_DIR
set -u
BUILD=$1
command -v meson >/dev/null 2>&1 || { echo "meson not in PATH: skipped"; exit 77; }
TMP=$(mktemp -d /tmp/crsim-install.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
unset CRSIM_SPEC_DIR CRSIM_SCRIPT_DIR
fails=0
ok() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; fails=$((fails + 1)); }

meson install -C "$BUILD" --no-rebuild --destdir "$TMP/dest" >"$TMP/install.log" 2>&1 ||
    { cat "$TMP/install.log"; echo "FAIL: meson install"; exit 1; }
bin=$(find "$TMP/dest" -type f -name crsim -path '*/bin/*' | head -1)
[ -x "$bin" ] || { echo "FAIL: no installed bin/crsim under $TMP/dest"; exit 1; }
root=${bin%/bin/crsim}                 # the prefix inside the destdir
# Move the whole prefix: nothing may point back at where it was installed.
mv "$root" "$TMP/moved"
bin=$TMP/moved/bin/crsim
share=$TMP/moved/share/crsim
for f in models/specs/h100-sxm.yaml models/specs/cost/llama-3.3-70b_h100-sxm_tp2_fp8-fp8.yaml \
         workloads/specs/paper-main.yaml scripts/plot-capacity.gp experiments/mooncake.yaml \
         data/mooncake/conversation_trace.jsonl.xz data/README.md; do
    [ -f "$share/$f" ] && ok "installed $f" || fail "not installed: share/crsim/$f"
done

mkdir "$TMP/work"
cd "$TMP/work" || exit 1
"$bin" run "$share/experiments/mooncake.yaml" --set experiment.rates=[5,10] \
    --set experiment.drain_s=120 --jobs 2 >run.out 2>run.err
rc=$?
[ $rc -eq 0 ] && ok "quickstart config ran" || { cat run.err; fail "crsim run exit $rc"; }
grep -q "calibration profile llama-3.3-70b_h100-sxm_tp2_fp8-fp8 ($share/models/specs/cost/" run.out &&
    ok "profile read from the installed data folder" ||
    { grep "cost model" run.out; fail "profile not read from $share"; }
[ -f results/mooncake.db ] && ok "results/mooncake.db in the working folder" ||
    fail "no results/mooncake.db"
"$bin" report results/mooncake.db >report.out 2>&1 && ok "report" || fail "crsim report"
if command -v gnuplot >/dev/null 2>&1 || [ -n "${CRSIM_GNUPLOT:-}" ]; then
    "$bin" plot results/mooncake.db >plot.out 2>&1
    rc=$?
    [ $rc -eq 0 ] && ok "plot" || { cat plot.out; fail "crsim plot exit $rc"; }
    for fig in capacity p99 hit timeline; do
        [ -s "results/mooncake/$fig.png" ] && [ -s "results/mooncake/$fig.svg" ] &&
            ok "figure $fig" || fail "figure $fig not drawn"
    done
else
    echo "gnuplot not installed: figures not checked"
fi

CRSIM_SPEC_DIR=$TMP/none "$bin" run "$share/experiments/mooncake.yaml" --dry-run \
    >/dev/null 2>err.out
rc=$?
[ $rc -eq 2 ] && grep -q "$TMP/none" err.out && ok "missing CRSIM_SPEC_DIR named (exit 2)" ||
    { cat err.out; fail "missing CRSIM_SPEC_DIR: exit $rc"; }

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all install checks passed"
