#!/bin/sh
# Closed-loop clients through the command line (docs/clients.md): bad
# client keys exit 2 with one line naming the key, before any run or
# database; the same config gives identical results with --jobs 1 and
# --jobs 2 (stage_metrics, client_runs and run_metrics rows, wall times
# aside); report shows the client section, and `report --format csv
# --table stages` writes the stored stage rows; `plot` writes the serving
# metrics against load and, for a stage ladder, per stage; per-request
# records name their stage and client.
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
expect_bad "workload.client.concurrency 0" --set workload.client.concurrency=0 --set 'experiment.rates=[0.4]'
expect_bad "workload.client.stages\[0\] has rate 0 and concurrency 0" --set workload.client.mode=stages \
    --set 'workload.client.stages=[{concurrency: 0, duration_s: 5}]'
expect_bad "workload.client.stages\[0\].duration_s" --set workload.client.mode=stages \
    --set 'workload.client.stages=[{rate: 2}]'
expect_bad "workload.client.mode sessions needs an end" --set workload.client.mode=sessions \
    --set workload.duration_s=0
expect_bad "workload.client.mode" --set workload.client.mode=closed
expect_bad "experiment.warmup_requests" --set experiment.warmup_requests=10
expect_bad "workload.client.patience_s" --set workload.client.mode=open --set workload.client.think.mean_s=0 \
    --set workload.client.patience_s=3
# A fixed N (or batch) with several loads: identical runs under different load labels.
expect_bad "key 'experiment.rates' has 2 loads but 'workload.client.concurrency' is 8" \
    --set workload.client.concurrency=8 --set 'experiment.rates=[4, 16]'
expect_bad "key 'experiment.rates' has 2 loads but 'workload.client.batch' is 8" \
    --set workload.client.mode=burst --set workload.client.batch=8 --set 'experiment.rates=[4, 16]'

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
    printf '%s\n' "$out" | grep -q "TPOT p99 *ITL p50 *ITL p99 *E2E p99" &&
    printf '%s\n' "$out" | grep -q "Clients: SLO capacity"; then
    echo "ok: report shows the client section"
else
    echo "FAIL: report has no client section"
    fails=$((fails + 1))
fi
# The loads of a concurrency client are numbers of clients, not requests/s.
if printf '%s\n' "$out" | grep -q "^  loads: 4, 16 clients$" &&
    printf '%s\n' "$out" | grep -q "cap ≤T: SLO capacity in clients "; then
    echo "ok: the report's loads and capacities are in clients"
else
    echo "FAIL: report load unit: $(printf '%s\n' "$out" | grep -E "loads:|cap ≤T")"
    fails=$((fails + 1))
fi
# report --format csv --table stages: one row per stored stage, with the
# stored values (10 significant digits); CSV only.
db=j1/results/clients-test.db
"$CRSIM" report $db --format csv --table stages >st.csv 2>/dev/null || fails=$((fails + 1))
rows=$(sqlite3 $db "SELECT count(*) FROM stage_metrics")
if [ "$(($(wc -l <st.csv) - 1))" -ne "$rows" ] || [ "$rows" -lt 12 ] ||
    [ -n "$(awk -F, 'NR > 1 && NF != 38' st.csv)" ]; then
    echo "FAIL: report --table stages: $(($(wc -l <st.csv) - 1)) rows (stored $rows) or bad field counts"
    fails=$((fails + 1))
fi
for c in throughput_rps ttft_p90 tpot_mean e2e_p99 itl_mean itl_p50 itl_p99 ttft_p99_intended; do
    awk -F, -v c=$c 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next }
        { print $1 "," $4 "," $5 "," $6 "," $8 "," $k }' st.csv | sort >got.txt
    sqlite3 $db "SELECT r.experiment_id || ',' || r.policy || ',' || printf('%.10g', r.rate_rps)
        || ',' || r.seed || ',' || g.stage || ',' || printf('%.10g', g.$c) FROM stage_metrics g
        JOIN runs r ON r.id = g.run_id" | sort >want.txt
    cmp -s got.txt want.txt || { echo "FAIL: report --table stages column $c differs from stage_metrics"; fails=$((fails + 1)); }
done
# --table capacities: per (policy, seed, SLO) the stored capacity and the
# achieved requests/s of the run at that load.
"$CRSIM" report $db --format csv --table capacities >cap.csv 2>/dev/null || fails=$((fails + 1))
tail -n +2 cap.csv | awk -F, '{ print $3 "|" $4 "|" $7 "|" $8 "|" $9 "|" $10 }' | sort >got.txt
sqlite3 $db "SELECT r.policy || '|' || r.seed || '|' || printf('%.10g', c.slo_s) || '|' ||
    iif(c.capacity_rps IS NULL, '', printf('%.10g', c.capacity_rps)) || '|' || c.censoring || '|' ||
    ifnull((SELECT printf('%.10g', g.throughput_rps) FROM stage_metrics g JOIN runs q ON q.id = g.run_id
        WHERE q.experiment_id = r.experiment_id AND q.policy = r.policy AND q.seed = r.seed
        AND q.rate_rps = c.capacity_rps), '')
    FROM capacities c JOIN runs r ON r.experiment_id = c.experiment_id AND r.policy = c.policy
    AND r.seed = c.seed AND r.rate_rps = (SELECT min(rate_rps) FROM runs) WHERE c.slo_metric = 'ttft_p99'" |
    sort >want.txt
if [ "$(wc -l <got.txt)" -eq 12 ] && cmp -s got.txt want.txt; then
    echo "ok: report --table capacities: 12 rows, the stored capacities and the requests/s there"
else
    echo "FAIL: report --table capacities differs from capacities/stage_metrics:"; diff got.txt want.txt | head -5
    fails=$((fails + 1))
fi
out=$("$CRSIM" report $db --table stages 2>&1 >/dev/null)
if [ $? -ne 2 ] || [ "$(printf '%s\n' "$out" | wc -l)" -ne 1 ] || ! printf '%s' "$out" | grep -q "needs --format csv"; then
    echo "FAIL: --table stages without --format csv: $out"
    fails=$((fails + 1))
fi
# plot: serving-load.tsv holds, per policy and load, the mean over seeds of
# the stored achieved requests/s; a stage ladder adds stages.tsv, per
# policy and stage, the mean over seeds of the stage rows (no gnuplot
# needed for the data files).
near() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-9 * (b < 0 ? -b : b) + 1e-12) }'; }
CRSIM_GNUPLOT="$TMP/no-gnuplot" "$CRSIM" plot $db --out fig >/dev/null 2>&1
[ -e fig/stages.tsv ] && { echo "FAIL: stages.tsv for a run without stages"; fails=$((fails + 1)); }
sqlite3 -separator ' ' $db "SELECT r.policy, r.rate_rps, avg(m.throughput_rps) FROM run_metrics m
    JOIN runs r ON r.id = m.run_id GROUP BY r.policy, r.rate_rps" >want.txt
n=0
while read -r pol load want; do
    got=$(awk -F'\t' -v p="$pol" -v l="$load" '!/^#/ && $8 == p && $1 == l { print $2 }' fig/serving-load.tsv)
    if [ -n "$got" ] && near "$got" "$want"; then n=$((n + 1)); else
        echo "FAIL: serving-load.tsv $pol at $load: '$got', stored mean $want"; fails=$((fails + 1)); fi
done <want.txt
[ "$n" -eq 6 ] && echo "ok: serving-load.tsv has the achieved requests/s of the 6 (policy, load)s" ||
    { echo "FAIL: serving-load.tsv checked $n of 6"; fails=$((fails + 1)); }
mkdir lad
(cd lad && "$CRSIM" run "$CFG" --quiet --requests --set workload.client.mode=stages --set 'experiment.rates=[1]' \
    --set 'workload.client.stages=[{rate: 2, duration_s: 10}, {concurrency: 6, duration_s: 10}]' \
    --set 'experiment.policies=[sticky, round_robin]' --set 'experiment.slos=[0.03, 2]' \
    >/dev/null 2>&1) || { echo "FAIL: ladder run"; exit 1; }
ldb=lad/results/clients-test.db
# Per-request records name their stage and client: every stage's records
# are as many as it sent; the concurrency stage's come from its 6 clients,
# the rate stage's from conversations.
bad=$(sqlite3 $ldb "SELECT count(*) FROM stage_metrics g WHERE g.sent != (SELECT count(*) FROM requests q
    WHERE q.run_id = g.run_id AND q.stage = g.stage)")
c1=$(sqlite3 $ldb "SELECT count(DISTINCT client) || ' ' || sum(client NOT LIKE 'client %') FROM requests
    WHERE stage = 1 AND run_id = 1")
c0=$(sqlite3 $ldb "SELECT sum(client NOT LIKE 'conversation %') FROM requests WHERE stage = 0")
if [ "$bad" = 0 ] && [ "$c1" = "6 0" ] && [ "$c0" = 0 ]; then
    echo "ok: request records name their stage and client"
else
    echo "FAIL: request stage/client: $bad stages miscounted, stage 1 clients '$c1', stage 0 non-conversations '$c0'"
    fails=$((fails + 1))
fi
# Every stage has an ITL (its span has decode steps), p50 <= p99.
bad=$(sqlite3 $ldb "SELECT count(*) FROM stage_metrics WHERE NOT (itl_mean > 0 AND itl_p50 <= itl_p90
    AND itl_p90 <= itl_p99)")
[ "$bad" = 0 ] && echo "ok: every ladder stage has its ITL" ||
    { echo "FAIL: $bad ladder stages without a valid ITL"; fails=$((fails + 1)); }
# A ladder's capacity: the last stage whose stage p99 TTFT and every
# earlier one's hold the SLO, with that stage's requests/s.
"$CRSIM" report $ldb --format csv --table capacities 2>/dev/null | tail -n +2 |
    awk -F, '{ print $3 "|" $4 "|" $7 "|" $8 "|" $9 "|" $10 }' | sort >got.txt
sqlite3 $ldb "WITH s(v) AS (VALUES (0.03), (2)), k AS (SELECT r.id, r.policy, r.seed, s.v,
    (SELECT max(g.stage) FROM stage_metrics g WHERE g.run_id = r.id AND NOT EXISTS (SELECT 1
        FROM stage_metrics h WHERE h.run_id = r.id AND h.stage <= g.stage AND NOT h.ttft_p99 <= s.v)) AS st,
    (SELECT max(stage) FROM stage_metrics WHERE run_id = r.id) AS last FROM runs r, s)
    SELECT k.policy || '|' || k.seed || '|' || printf('%.10g', k.v) || '|' ||
    iif(g.load IS NULL, '', printf('%.10g', g.load)) || '|' ||
    CASE WHEN k.st IS NULL THEN 'left' WHEN k.st = k.last THEN 'right' ELSE 'none' END || '|' ||
    iif(g.throughput_rps IS NULL, '', printf('%.10g', g.throughput_rps))
    FROM k LEFT JOIN stage_metrics g ON g.run_id = k.id AND g.stage = k.st" | sort >want.txt
if [ "$(wc -l <got.txt)" -eq 8 ] && cmp -s got.txt want.txt; then
    echo "ok: ladder capacities: the last stage holding the SLO with every earlier one ($(cut -d'|' -f5 got.txt | sort | uniq -c | tr -s ' \n' ' '))"
else
    echo "FAIL: ladder --table capacities:"; diff got.txt want.txt | head -5
    fails=$((fails + 1))
fi
CRSIM_GNUPLOT="$TMP/no-gnuplot" "$CRSIM" plot $ldb --out lfig >/dev/null 2>&1
sqlite3 -separator ' ' $ldb "SELECT r.policy, g.load, avg(g.throughput_rps), avg(g.ttft_p99), count(*),
    avg(g.itl_p99) FROM stage_metrics g JOIN runs r ON r.id = g.run_id GROUP BY r.policy, g.stage" >want.txt
n=0
while read -r pol load tput ttft cnt itl; do
    row=$(awk -F'\t' -v p="$pol" -v l="$load" '!/^#/ && $8 == p && $1 == l { print $2, $4, $7, $15 }' lfig/stages.tsv)
    set -- $row
    if [ $# -eq 4 ] && near "$1" "$tput" && near "$2" "$ttft" && [ "$3" = "$cnt" ] && near "$4" "$itl"; then n=$((n + 1)); else
        echo "FAIL: stages.tsv $pol stage load $load: '$row', stored means $tput $ttft over $cnt, ITL p99 $itl"; fails=$((fails + 1)); fi
done <want.txt
[ "$n" -eq 4 ] && echo "ok: stages.tsv has the stage means of 2 policies x 2 stages" ||
    { echo "FAIL: stages.tsv checked $n of 4"; fails=$((fails + 1)); }
if command -v gnuplot >/dev/null 2>&1; then
    CRSIM_SCRIPT_DIR="$ROOT/scripts" "$CRSIM" plot $ldb --out lfig2 >/dev/null 2>plot.err &&
        [ -s lfig2/stages.png ] && [ -s lfig2/stages.svg ] && [ -s lfig2/serving-load.png ] &&
        [ ! -s plot.err ] && echo "ok: stages and serving-load figures drawn" ||
        { echo "FAIL: figures: $(cat plot.err)"; fails=$((fails + 1)); }
fi
# benchmark shared_prefix: the routing keys are the groups, and the
# description and the run header say so (not the unused key population).
SP="$ROOT/experiments/benchmarks/shared-prefix-stages.yaml"
d=$("$CRSIM" workload describe "$SP" 2>&1 | head -1)
h=$("$CRSIM" run "$SP" --dry-run 2>&1 | grep '^workload:')
case "$d|$h" in
*"benchmark shared_prefix: 16 groups (the routing keys, equal shares) x 32 prompts"*"|"*"16 groups (the routing keys) x 32 prompts"*)
    echo "ok: shared_prefix described by its groups" ;;
*) echo "FAIL: shared_prefix description: '$d' / '$h'"; fails=$((fails + 1)) ;;
esac
[ "$fails" -eq 0 ] || exit 1
