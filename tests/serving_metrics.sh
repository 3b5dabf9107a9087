#!/bin/sh
# Serving metrics, goodput, the joint SLO and the export edge cases of
# issues 36, 38 (C13) and 39 (item 10), end to end on tests/configs/small.yaml:
# the run_metrics serving columns are filled and consistent (goodput <=
# throughput, ITL gaps counted), the report shows the serving table and the
# joint capacity, and its CSV carries the stored values, exported request rows name policy, load and seed;
# `export --run 99`, an export of a database without per-request records
# and a bad joint SLO are one line and exit 2 (no output file left); a run
# whose every request is over engine.max_model_len says SERVED NOTHING;
# seeds that did not vary the stream are said to be identical, not "± 0".
# usage: serving_metrics.sh CRSIM TESTS_DIR TRACE
set -u
CRSIM=$1
T=$2
TRACE=$3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
. "$(dirname "$0")/lib.sh"
run() { # DB extra --set args...
    db=$1; shift
    "$CRSIM" run "$T/configs/small.yaml" --quiet --set "workload.trace=$TRACE" \
        --set "experiment.db=$db" "$@"
}

# 1. Metrics, goodput and the joint SLO stored and reported.
run "$TMP/m.db" --set experiment.requests=true --set experiment.goodput_ttft_s=2 \
    --set experiment.goodput_tpot_s=0.05 --set 'experiment.joint_slo=[ttft_p99<=1000, tpot_p99<=10]' \
    >/dev/null 2>"$TMP/err" || fail "run with metrics: $(cat "$TMP/err")"
bad=$(sqlite3 "$TMP/m.db" "SELECT count(*) FROM run_metrics WHERE NOT (goodput_rps <= throughput_rps
    AND n_good <= measured_completed AND itl_gaps > 0 AND itl_p50 <= itl_p90 AND itl_p90 <= itl_p99
    AND output_tps > 0 AND tpot_mean > 0 AND e2e_mean >= ttft_mean)")
[ "$bad" = 0 ] || fail "$bad run_metrics rows with inconsistent serving metrics"
# Loose joint terms hold at every load: right-censored at the highest.
j=$(sqlite3 "$TMP/m.db" "SELECT count(*) FROM capacities WHERE slo_metric =
    'ttft_p99<=1000 and tpot_p99<=10' AND censoring = 'right' AND slo_s = 1")
[ "$j" = 2 ] || fail "joint SLO capacities: $j right-censored rows, expected 2"
"$CRSIM" report "$TMP/m.db" >"$TMP/rep" 2>/dev/null || fail "report"
for want in "TTFT mean/p50/p90/p99" "ITL mean/p50/p90/p99" "goodput req/s" "cap joint SLO" "≥ 2 (R 1/1)"; do
    grep -qF -- "$want" "$TMP/rep" || fail "report lacks '$want'"
done
# report --format csv carries the serving metrics and the joint capacity:
# the named columns hold the means over seeds of the stored run_metrics at
# the report rate (one seed here: the stored values, to 10 digits).
"$CRSIM" report "$TMP/m.db" --format csv >"$TMP/rep.csv" 2>/dev/null || fail "report csv"
col() { # CSV POLICY COLUMN: the value of COLUMN in POLICY's row
    awk -F, -v p="$2" -v c="$3" 'NR == 1 { for (i = 1; i <= NF; i++) k[$i] = i; next }
        $5 == p { print (c in k) ? $k[c] : "NO-COLUMN" }' "$1"
}
rr=$(sqlite3 "$TMP/m.db" "SELECT report_rate_rps FROM experiments")
for c in ttft_p99 tpot_p90 itl_mean e2e_p50 throughput_rps output_tps goodput_rps; do
    want=$(sqlite3 "$TMP/m.db" "SELECT printf('%.10g', m.$c) FROM run_metrics m JOIN runs r
        ON r.id = m.run_id WHERE r.policy = 'sticky' AND r.rate_rps = $rr")
    got=$(col "$TMP/rep.csv" sticky $c)
    [ -n "$want" ] && [ "$got" = "$want" ] || fail "report csv $c of sticky: '$got', stored '$want'"
done
[ "$(col "$TMP/rep.csv" flat_lb joint_slo)" = "ttft_p99<=1000 and tpot_p99<=10" ] ||
    fail "report csv joint_slo: $(col "$TMP/rep.csv" flat_lb joint_slo)"
[ "$(col "$TMP/rep.csv" flat_lb joint_n_right)" = 1 ] && [ "$(col "$TMP/rep.csv" flat_lb joint_cap_right_bound)" = 2 ] ||
    fail "report csv joint capacity of flat_lb: right-censored at 2 expected"
expect_error_fixed 2 "has no stage rows (no complete run of a closed-loop client" -- \
    "$CRSIM" report "$TMP/m.db" --format csv --table stages
head=$("$CRSIM" export "$TMP/m.db" --run 2 | head -2)
case $head in
run_id,policy,rate_rps,seed,point,id,*stage,client*) ;;
*) fail "export header: $head" ;;
esac
row=$(printf '%s\n' "$head" | sed -n 2p)
case $row in 2,sticky,1,5,0,0,*) ;; *) fail "export row lacks policy/load/seed: $row" ;; esac

# 2. export --run 99: no such run.
expect_error_fixed 2 "has no run 99; expected a run id from 1 to 4" -- "$CRSIM" export "$TMP/m.db" --run 99
# 3. A database without per-request records: says why, leaves no file.
run "$TMP/n.db" --set 'experiment.rates=[1]' >/dev/null 2>&1 || fail "run without records"
expect_error_fixed 2 "has no per-request records" -- "$CRSIM" export "$TMP/n.db" --out "$TMP/x.csv"
[ -e "$TMP/x.csv" ] && fail "an empty export left $TMP/x.csv"
# 4. A joint SLO naming an unknown metric: the key, exit 2, no database.
expect_error_fixed 2 "key 'experiment.joint_slo' item 0: unknown metric 'ttft_p98'" -- \
    run "$TMP/b.db" --set 'experiment.joint_slo=[ttft_p98<=2]'
[ -e "$TMP/b.db" ] && fail "a bad joint SLO created a database"
# 5. Every request over engine.max_model_len: said, not silent.
run "$TMP/t.db" --set engine.max_model_len=10 --set 'experiment.rates=[1]' \
    >"$TMP/out" 2>"$TMP/err" || fail "run with max_model_len 10"
grep -q "served nothing: 600 of 600 requests were over engine.max_model_len" "$TMP/err" ||
    fail "no served-nothing warning for all-too-long runs: $(cat "$TMP/err")"
grep -q "WARNING: 2 run(s) served nothing" "$TMP/out" || fail "run table lacks the WARNING"
"$CRSIM" report "$TMP/t.db" 2>/dev/null | grep -q "WARNING: 2 run(s) served nothing" ||
    fail "report lacks the served-nothing WARNING"
# 6. Seeds that do not vary the stream (sticky on the trace as recorded):
#    identical streams, said so, no "± 0".
run "$TMP/s.db" --set 'experiment.policies=[sticky]' --set 'experiment.seeds=[5, 6]' \
    --set workload.tick_s=0 --set 'experiment.rates=[1, 2]' >/dev/null 2>&1 || fail "seeds run"
"$CRSIM" report "$TMP/s.db" >"$TMP/rep" 2>/dev/null
grep -q "seeds gave identical streams" "$TMP/rep" || fail "identical seeds not said"
grep -qF "± 0" "$TMP/rep" && fail "identical seeds shown as '± 0': $(grep -F '± 0' "$TMP/rep")"
# ... while a router that draws from the seed (flat_lb) is not called identical.
run "$TMP/f.db" --set 'experiment.policies=[flat_lb]' --set 'experiment.seeds=[5, 6]' \
    --set workload.tick_s=0 --set 'experiment.rates=[1]' >/dev/null 2>&1 || fail "flat_lb run"
"$CRSIM" report "$TMP/f.db" 2>/dev/null | grep -q "identical" && fail "flat_lb seeds called identical"

[ "$fails" -eq 0 ] && echo "serving_metrics: ok" || { echo "serving_metrics: $fails failure(s)"; exit 1; }
