#!/bin/sh
# `crsim report`'s regime statement (docs/report.md, "Which regime limits
# capacity") on two constructed cases whose answer is known, both on
# tests/configs/fit_synth.yaml (4 destinations) with per-request records:
# (a) throughput-bound: narrow prompts (input CV 0.2) offered far above the
#     cluster's prefill throughput (160 requests/s): queues grow for every
#     request, so the rest's p99 breaks the 1 s SLO as much as the tail's;
# (b) tail-bound: a light load (2 and 4 requests/s) with a heavy input tail
#     (lognormal, mean 1024, CV 10): the longest 1 % of prompts take
#     seconds to prefill while the rest stay under the SLO.
# Also: an experiment without per-request records gets no statement.
# usage: report_regime.sh CRSIM SOURCE_ROOT
set -u
case $1 in /*) CRSIM=$1 ;; *) CRSIM=$PWD/$1 ;; esac
CFG=$2/tests/configs/fit_synth.yaml
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 99
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
COMMON="--quiet --jobs 2 --set experiment.policies=[flat_lb] --set experiment.slos=[1]"
# shellcheck disable=SC2086
"$CRSIM" run "$CFG" $COMMON --requests --set experiment.db=a.db --set 'experiment.rates=[8, 160]' \
    --set workload.input.cv=0.2 --set workload.input.mean=1024 >a.log 2>&1 || { cat a.log; exit 99; }
"$CRSIM" report a.db >a.txt || fail "report a exited $?"
grep -q '^  flat_lb: throughput-bound (queueing) at 160 requests/s: ' a.txt ||
    fail "case a: $(grep -A2 '^regime' a.txt)"
# shellcheck disable=SC2086
"$CRSIM" run "$CFG" $COMMON --requests --set experiment.db=b.db --set 'experiment.rates=[2, 4]' \
    --set workload.input.cv=10 --set workload.input.mean=1024 --set workload.input.max=65536 \
    --set workload.prefix.mean=512 >b.log 2>&1 || { cat b.log; exit 99; }
"$CRSIM" report b.db --format markdown >b.txt || fail "report b exited $?"
grep -q '^\* flat_lb: tail-bound (request size) at 2 requests/s' b.txt ||
    fail "case b: $(grep -A2 'regime' b.txt)"
# the figures: the tail's p99 above the SLO, the rest's below, the tail's
# prompts much longer
awk '/tail-bound/ { for (i = 1; i <= NF; i++) { if ($i == "1" && $(i+1) == "%") { l = $(i+2) + 0 }
        if ($i == "rest") r = $(i+1) + 0 } }
     END { exit !(l > 1 && r < 1) }' b.txt || fail "case b figures: $(grep tail-bound b.txt)"
# shellcheck disable=SC2086
"$CRSIM" run "$CFG" $COMMON --set experiment.db=c.db --set 'experiment.rates=[8, 160]' \
    --set workload.input.cv=0.2 --set workload.input.mean=1024 >c.log 2>&1 || { cat c.log; exit 99; }
"$CRSIM" report c.db >c.txt || fail "report c exited $?"
! grep -q 'regime at capacity' c.txt || fail "case c: a statement without per-request records"
[ "$fails" -eq 0 ] && echo "report_regime: all tests passed"
exit $((fails > 0))
