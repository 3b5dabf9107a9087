#!/bin/sh
# Closed-loop clients through the command line (docs/clients.md): bad
# client keys exit 2 with one line naming the key, before any run or
# database; the same config gives identical results with --jobs 1 and
# --jobs 2 (stage_metrics, client_runs and run_metrics rows, wall times
# aside); report shows the client section.
# usage: clients.sh CRSIM
set -u
case $1 in /*) CRSIM=$1 ;; *) CRSIM=$(pwd)/$1 ;; esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CFG="$ROOT/tests/configs/clients.yaml"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 99
fails=0
expect_bad() { # KEY_IN_MESSAGE ARGS...
    want=$1
    shift
    out=$("$CRSIM" run "$CFG" --quiet "$@" 2>&1 >/dev/null)
    st=$?
    lines=$(printf '%s\n' "$out" | wc -l)
    if [ "$st" -ne 2 ] || [ "$lines" -ne 1 ] || ! printf '%s' "$out" | grep -q "$want" ||
        [ -e results ]; then
        echo "FAIL ($st, $lines lines): $* -> $out"
        fails=$((fails + 1))
    else
        echo "ok: $out"
    fi
}
expect_bad "workload.client.concurrency" --set 'experiment.rates=[2.5]'
expect_bad "workload.client.concurrency" --set workload.client.concurrency=-1
expect_bad "workload.client.think.mean_s" --set workload.client.think.mean_s=-2
expect_bad "workload.client.stages" --set workload.client.mode=stages
expect_bad "workload.client.stages\[1\]" --set workload.client.mode=stages \
    --set 'workload.client.stages=[{rate: 2, duration_s: 5}, {rate: 1, concurrency: 2, duration_s: 5}]'
expect_bad "duration_s" --set workload.client.mode=stages \
    --set 'workload.client.stages=[{rate: 2, duration_s: 0}]'
expect_bad "workload.client.mode" --set workload.client.mode=closed
expect_bad "experiment.warmup_requests" --set experiment.warmup_requests=10
expect_bad "workload.client.patience_s" --set workload.client.mode=open --set workload.client.think.mean_s=0 \
    --set workload.client.patience_s=3

# Determinism whatever --jobs.
mkdir j1 j2
(cd j1 && "$CRSIM" run "$CFG" --quiet --jobs 1 >/dev/null 2>&1) || { echo "FAIL: run --jobs 1"; exit 1; }
(cd j2 && "$CRSIM" run "$CFG" --quiet --jobs 2 >/dev/null 2>&1) || { echo "FAIL: run --jobs 2"; exit 1; }
for t in stage_metrics client_runs run_metrics; do
    "$CRSIM" export j1/results/clients-test.db --table $t > j1/$t.csv || fails=$((fails + 1))
    "$CRSIM" export j2/results/clients-test.db --table $t > j2/$t.csv || fails=$((fails + 1))
    if ! cmp -s j1/$t.csv j2/$t.csv; then
        echo "FAIL: table $t differs between --jobs 1 and --jobs 2"
        fails=$((fails + 1))
    elif [ "$(wc -l < j1/$t.csv)" -lt 13 ]; then
        echo "FAIL: table $t has too few rows"
        fails=$((fails + 1))
    else
        echo "ok: $t identical with --jobs 1 and 2"
    fi
done
out=$("$CRSIM" report j1/results/clients-test.db)
if printf '%s\n' "$out" | grep -q "Clients: per-stage metrics (mode concurrency)" &&
    printf '%s\n' "$out" | grep -q "Clients: SLO capacity"; then
    echo "ok: report shows the client section"
else
    echo "FAIL: report has no client section"
    fails=$((fails + 1))
fi
[ "$fails" -eq 0 ] || exit 1
