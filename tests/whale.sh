#!/bin/sh
# Router orderings on a whale workload (one key with 25 % of traffic, 30
# destinations; tests/configs/whale.yaml): sticky leaves a hot destination
# (work max/mean > 2), cacheroute's replication brings max/mean below 1.3,
# flat_lb stays near 1 (< 1.15) with a lower hit rate than cacheroute.
# usage: whale.sh CRSIM TESTS_DIR
set -u
CRSIM=$1
T=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$CRSIM" run "$T/configs/whale.yaml" --quiet --jobs 2 --set "experiment.db=$TMP/w.db" >"$TMP/out" 2>&1 || {
    echo "FAIL: run failed: $(cat "$TMP/out")"; exit 1; }
q() { sqlite3 "$TMP/w.db" "SELECT m.$2 FROM runs r JOIN run_metrics m ON m.run_id = r.id WHERE r.policy = '$1'"; }
st=$(q sticky imbalance_work); cr=$(q cacheroute imbalance_work); fl=$(q flat_lb imbalance_work)
hcr=$(q cacheroute hit_rate); hfl=$(q flat_lb hit_rate)
echo "imbalance (work max/mean): sticky $st, cacheroute $cr, flat_lb $fl; hit: cacheroute $hcr, flat_lb $hfl"
awk -v st="$st" -v cr="$cr" -v fl="$fl" -v hcr="$hcr" -v hfl="$hfl" 'BEGIN {
    bad = 0
    if (!(st > 2)) { print "FAIL: sticky imbalance " st " not > 2"; bad = 1 }
    if (!(cr < 1.3)) { print "FAIL: cacheroute imbalance " cr " not < 1.3"; bad = 1 }
    if (!(fl < 1.15)) { print "FAIL: flat_lb imbalance " fl " not < 1.15"; bad = 1 }
    if (!(hfl < hcr)) { print "FAIL: flat_lb hit " hfl " not below cacheroute " hcr; bad = 1 }
    exit bad }' || exit 1
echo "whale: ok"
