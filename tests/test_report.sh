#!/bin/sh
# End-to-end tests of `crsim report` and `crsim plot` on a small result
# database built here with SQL (schema version 9, the tables and columns
# the report reads), so the test does not depend on the simulator: known
# per-seed SLO metrics give known capacity strings, including left- and
# right-censored and non-monotone cases, and bad inputs exit with status 2
# and one error line.
# usage: test_report.sh CRSIM [SCRIPT_DIR]
set -u
CRSIM=$1
SCRIPTS=${2:-}
[ -n "$SCRIPTS" ] && export CRSIM_SCRIPT_DIR="$SCRIPTS"
command -v sqlite3 >/dev/null 2>&1 || { echo "SKIP: sqlite3 command not found"; exit 77; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

if ! "$CRSIM" report --help >/dev/null 2>&1; then
    echo "FAIL: '$CRSIM report --help' failed: main.c lacks the report/plot dispatch"
    exit 1
fi

DB="$TMP/r.db"
{
cat <<'EOF'
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('schema_version', '9');
CREATE TABLE experiments(id INTEGER PRIMARY KEY, name TEXT NOT NULL, config_path TEXT,
  config_text TEXT NOT NULL, config_hash TEXT NOT NULL, build_version TEXT NOT NULL,
  host TEXT, started_at TEXT NOT NULL, finished_at TEXT, n_runs_planned INTEGER NOT NULL,
  n_points INTEGER NOT NULL, shard TEXT, slo_metric TEXT NOT NULL, slos TEXT NOT NULL,
  report_rate_rps REAL NOT NULL, status TEXT NOT NULL);
CREATE TABLE runs(id INTEGER PRIMARY KEY, experiment_id INTEGER NOT NULL, run_index INTEGER
  NOT NULL, point INTEGER NOT NULL, point_label TEXT NOT NULL, resumed_from INTEGER,
  policy TEXT NOT NULL, seed INTEGER NOT NULL, rate_rps REAL NOT NULL, config_text TEXT NOT
  NULL, config_hash TEXT NOT NULL, build_version TEXT NOT NULL, started_at TEXT NOT NULL,
  wall_s REAL NOT NULL, status TEXT NOT NULL);
CREATE TABLE run_metrics(run_id INTEGER PRIMARY KEY, n_arrived INTEGER NOT NULL,
  n_completed INTEGER NOT NULL, n_unfinished INTEGER NOT NULL, n_rejected INTEGER NOT NULL,
  n_measured INTEGER NOT NULL, measured_completed INTEGER NOT NULL, prompt_tokens INTEGER
  NOT NULL, hit_tokens INTEGER NOT NULL, hit_rate REAL, ttft_p50 REAL, ttft_p90 REAL,
  ttft_p99 REAL, ttft_mean REAL, tpot_p50 REAL, tpot_p90 REAL, tpot_p99 REAL, e2e_p50 REAL,
  e2e_p90 REAL, e2e_p99 REAL, imbalance_work REAL, imbalance_requests REAL,
  first_arrival_s REAL, last_arrival_s REAL, sim_end_s REAL, throughput_rps REAL,
  steps INTEGER NOT NULL, events INTEGER NOT NULL, preemptions INTEGER NOT NULL,
  kv_pool_blocks INTEGER NOT NULL, kv_pool_tokens INTEGER NOT NULL,
  n_too_long INTEGER NOT NULL DEFAULT 0, fair_keys INTEGER NOT NULL DEFAULT 0,
  fair_worst_p99 REAL, fair_spread_p99 REAL, fair_jain REAL,
  n_failed INTEGER NOT NULL DEFAULT 0, n_lost INTEGER NOT NULL DEFAULT 0,
  n_refused INTEGER NOT NULL DEFAULT 0, n_retries INTEGER NOT NULL DEFAULT 0,
  n_crashes INTEGER NOT NULL DEFAULT 0);
CREATE TABLE capacities(experiment_id INTEGER NOT NULL, point INTEGER NOT NULL,
  point_label TEXT NOT NULL, policy TEXT NOT NULL, seed INTEGER NOT NULL, slo_metric TEXT
  NOT NULL, slo_s REAL NOT NULL, capacity_rps REAL, censoring TEXT NOT NULL, lowest_rps REAL
  NOT NULL, highest_rps REAL NOT NULL, n_loads INTEGER NOT NULL,
  PRIMARY KEY (experiment_id, point, policy, seed, slo_metric, slo_s));
INSERT INTO experiments VALUES (1, 'flag', 'x.yaml', '', 'h', '0.1.0-test', 'host',
  '2025-01-01T00:00:00Z', '2025-01-01T01:00:00Z', 36, 1, NULL, 'ttft_p99', '2,3.5,5', 100,
  'complete');
INSERT INTO experiments VALUES (2, 'sweep', 'y.yaml', '', 'h', '0.1.0-test', 'host',
  '2025-01-02T00:00:00Z', NULL, 8, 2, '1/2', 'ttft_p99', '3.5', 15, 'running');
EOF
# run ID EXP INDEX POINT LABEL POLICY SEED RATE TTFT_P99 HIT IMBALANCE
n=0
run() {
    n=$((n + 1))
    echo "INSERT INTO runs VALUES ($n, $1, $2, $3, '$4', NULL, '$5', $6, $7, '', 'h', 'b', 't', 1, 'complete');"
    echo "INSERT INTO run_metrics VALUES ($n, 10, 10, 0, 0, 10, 10, 100, 50, $9, 0.1, 0.2, $8, 0.1, NULL, NULL, NULL, 1, 1, 1, ${10}, 1, 0, 1, 2, 1, 1, 1, 0, 1, 1, 0, 0, NULL, NULL, NULL, 0, 0, 0, 0, 0);"
}
i=0
# flat_lb: fails 2 s everywhere (left), 3.5 s: 50, 30, 50 (seed 3 is
# non-monotone: NULL at 100 fails, 3.0 at 200 passes again).
for s in 1 2 3; do
    case $s in
    1) v="2.5 3.0 6.0 1e999"; h=0.64 ;;
    2) v="2.2 4.0 5.5 1e999"; h=0.65 ;;
    3) v="2.8 3.2 NULL 3.0"; h=0.63 ;;
    esac
    set -- $v
    for rate in 30 50 100 200; do
        i=$((i + 1)); run 1 $i 0 '' flat_lb $s $rate "$1" $h 1.5; shift
    done
done
# cacheroute: 2 s: 100, 50, right-censored; 3.5 s and 5 s: right-censored.
for s in 1 2 3; do
    case $s in
    1) v="0.5 0.8 1.5 2.5"; h=0.93 ;;
    2) v="0.6 0.9 2.1 3.0"; h=0.935 ;;
    3) v="0.5 0.7 1.2 1.9"; h=0.925 ;;
    esac
    set -- $v
    for rate in 30 50 100 200; do
        i=$((i + 1)); run 1 $i 0 '' cacheroute $s $rate "$1" $h 1.1; shift
    done
done
# sticky: pass, fail, pass, fail: capacity 30 at every threshold; seed 3
# unfinished at 100 (p99 'inf').
for s in 1 2 3; do
    case $s in
    3) v="1.0 9.0 1e999 1e999" ;;
    *) v="1.0 9.0 1.0 1e999" ;;
    esac
    set -- $v
    for rate in 30 50 100 200; do
        i=$((i + 1)); run 1 $i 0 '' sticky $s $rate "$1" 0.87 2.0; shift
    done
done
# Experiment 2: a running shard with two sweep points, one seed.
i=0
for pt in 0 1; do
    for rate in 10 20; do
        i=$((i + 1))
        run 2 $i $pt "router.cacheroute.q_cap=$((50 * (pt + 1)))" cacheroute 7 $rate $((2 * pt + 2)).0 0.9 1.0
    done
done
# Schema 9's columns (NULL: no goodput, no joint SLO, no ITL).
echo "ALTER TABLE experiments ADD COLUMN goodput_ttft_s REAL;"
echo "ALTER TABLE experiments ADD COLUMN goodput_tpot_s REAL;"
echo "ALTER TABLE experiments ADD COLUMN joint_slo TEXT;"
for c in tpot_mean e2e_mean itl_mean itl_p50 itl_p90 itl_p99 output_tps goodput_rps; do
    echo "ALTER TABLE run_metrics ADD COLUMN $c REAL;"
done
echo "ALTER TABLE run_metrics ADD COLUMN itl_gaps INTEGER NOT NULL DEFAULT 0;"
echo "ALTER TABLE run_metrics ADD COLUMN n_good INTEGER NOT NULL DEFAULT 0;"
} >"$TMP/fixture.sql"
sqlite3 "$DB" <"$TMP/fixture.sql" || { echo "FAIL: cannot build the fixture"; exit 1; }

# contains FILE STRING...
contains() {
    f=$1; shift
    for want in "$@"; do
        if grep -qF -- "$want" "$f"; then ok "$(basename "$f") has '$want'"
        else fail "$(basename "$f") lacks '$want':"; cat "$f"; fi
    done
}

# Text, experiment 1 (capacities computed from the runs).
if "$CRSIM" report "$DB" --experiment 1 >"$TMP/t1" 2>"$TMP/e1"; then
    contains "$TMP/t1" "experiment 'flag' (id 1), status complete" "seeds: 1, 2, 3 (3)" \
        "loads: 30, 50, 100, 200 requests/s" "SLO: ttft_p99 <= 2 / 3.5 / 5 s" \
        "computed from the runs" "< 30 (L 3/3)" "43 ± 12" "50 ± 0" "75 ± 35 (R 1/3)" \
        "≥ 200 (R 3/3)" "64.0 ± 1.0 %" "93.0 ± 0.5 %" "5.75 s" "inf" "30 ± 0"
    grep -q "WARNING" "$TMP/t1" && fail "complete experiment flagged partial"
    [ -s "$TMP/e1" ] && fail "warnings for a complete experiment: $(cat "$TMP/e1")"
    # Row order = order of first run: flat_lb, cacheroute, sticky (the first table).
    order=$(grep -E '^(flat_lb|cacheroute|sticky) ' "$TMP/t1" | head -3 | cut -d' ' -f1 | tr '\n' ' ')
    [ "$order" = "flat_lb cacheroute sticky " ] && ok "policy order" || fail "policy order '$order'"
    line=$(grep '^flat_lb ' "$TMP/t1")
    case "$line" in *"< 30 (L 3/3)"*"43 ± 12"*"50 ± 0"*"5.75 s"*"1.50"*) ok "flat_lb row" ;;
        *) fail "flat_lb row: $line" ;; esac
else
    fail "report exited $?: $(cat "$TMP/e1")"
fi

# The default experiment is the latest: the running shard, flagged partial.
"$CRSIM" report "$DB" >"$TMP/t2" 2>"$TMP/e2" || fail "report (latest) exited $?"
contains "$TMP/t2" "experiment 'sweep' (id 2), status running" "PARTIAL RESULTS" \
    "shard 1/2" "router.cacheroute.q_cap=50 (point 0)" "router.cacheroute.q_cap=100 (point 1)" \
    "report rate 10 requests/s (stored rate 15 was not tested" "≥ 20 (R 1/1)" "< 10 (L 1/1)"
contains "$TMP/e2" "warning: experiment 2 ('sweep') has status 'running'" "shard 1/2"

# Markdown and CSV.
"$CRSIM" report "$DB" --experiment 1 --format markdown --out "$TMP/m1" 2>/dev/null ||
    fail "markdown exited $?"
contains "$TMP/m1" "# crsim report: flag (experiment 1)" "## flag (point 0)" \
    "| policy " "| flat_lb " "| < 30 (L 3/3)    |" "| :---"
"$CRSIM" report "$DB" --experiment 1 --format csv >"$TMP/c1" 2>/dev/null || fail "csv exited $?"
contains "$TMP/c1" \
    "experiment_id,status,point,point_label,policy,n_seeds,rate_rps,lowest_rps,highest_rps,slo_metric,hit_mean,hit_sd,p99_metric,p99_mean,imbalance_mean,imbalance_sd,cap_mean_2,cap_sd_2,n_exact_2,n_left_2,n_right_2,cap_left_bound_2,cap_right_bound_2,cap_mean_3.5" \
    "1,complete,0,,flat_lb,3,100,30,200,ttft_p99,0.64,0.01,ttft_p99,5.75,1.5,0,,,0,3,0,30,,43.33333333,11.54700538,3,0,0,,,50,0,3,0,0,,"
grep -q '^1,complete,0,,sticky,.*,ttft_p99,inf,' "$TMP/c1" && ok "csv inf p99" ||
    fail "csv sticky p99 not inf: $(grep sticky "$TMP/c1")"
[ "$(wc -l <"$TMP/c1")" -eq 4 ] && ok "csv rows" || fail "csv has $(wc -l <"$TMP/c1") lines"

# --rate selects another tested load.
"$CRSIM" report "$DB" --experiment 1 --rate 30 >"$TMP/t3" 2>/dev/null || fail "--rate 30 exited $?"
contains "$TMP/t3" "KV hit @30" "ttft_p99 @30"

# A capacities table, when complete, is used as stored.
sqlite3 "$DB" "INSERT INTO capacities SELECT DISTINCT 1, point, point_label, policy, seed,
  'ttft_p99', s.v, 120, 'none', 30, 200, 4 FROM runs, (SELECT 2 AS v UNION SELECT 3.5
  UNION SELECT 5) s WHERE experiment_id = 1"
"$CRSIM" report "$DB" --experiment 1 >"$TMP/t4" 2>/dev/null || fail "stored caps exited $?"
contains "$TMP/t4" "from the capacities table" "120 ± 0"
# ... and recomputed when it does not cover every (policy, seed, threshold).
sqlite3 "$DB" "DELETE FROM capacities WHERE policy = 'sticky' AND seed = 3"
"$CRSIM" report "$DB" --experiment 1 >"$TMP/t5" 2>/dev/null || fail "stale caps exited $?"
contains "$TMP/t5" "recomputed from the runs" "43 ± 12"

# Bad input: exit 2 and one line naming the problem.
expect_error() {
    want=$1; pat=$2; shift 3
    "$@" >"$TMP/out" 2>"$TMP/err"
    got=$?
    if [ "$got" -ne "$want" ]; then fail "'$*' exited $got, expected $want: $(cat "$TMP/err")"
    elif ! grep -qF -- "$pat" "$TMP/err"; then fail "'$*' stderr lacks '$pat': $(cat "$TMP/err")"
    elif [ "$(wc -l <"$TMP/err")" -ne 1 ]; then fail "'$*' printed several lines: $(cat "$TMP/err")"
    else ok "$pat"; fi
}
echo "not a database" >"$TMP/text.db"
sqlite3 "$TMP/other.db" "CREATE TABLE t(x);"
expect_error 2 "no-such.db: cannot open" -- "$CRSIM" report "$TMP/no-such.db"
expect_error 2 "text.db: not a crsim result database" -- "$CRSIM" report "$TMP/text.db"
expect_error 2 "other.db: not a crsim result database" -- "$CRSIM" report "$TMP/other.db"
expect_error 2 "no experiment with id 9" -- "$CRSIM" report "$DB" --experiment 9
expect_error 2 "--rate 75: not a tested load of experiment 1; expected one of: 30, 50, 100, 200" -- "$CRSIM" report "$DB" --experiment 1 --rate 75
expect_error 2 "--format 'xml'" -- "$CRSIM" report "$DB" --format xml
expect_error 2 "unknown option '--bogus'" -- "$CRSIM" report "$DB" --bogus
expect_error 2 "--experiment 'x'" -- "$CRSIM" report "$DB" --experiment x
expect_error 2 "no-such.db: cannot open" -- "$CRSIM" plot "$TMP/no-such.db"

# Plot: data files always; figures when gnuplot is installed.
CRSIM_GNUPLOT="$TMP/no-gnuplot" "$CRSIM" plot "$DB" --experiment 1 --out "$TMP/nog" \
    >/dev/null 2>"$TMP/pe"
st=$?
[ "$st" -eq 1 ] && grep -q "gnuplot not found" "$TMP/pe" && [ -s "$TMP/nog/capacity.tsv" ] &&
    [ -s "$TMP/nog/p99.tsv" ] && [ -s "$TMP/nog/hit.tsv" ] && ok "plot without gnuplot" ||
    fail "plot without gnuplot: exit $st, $(cat "$TMP/pe")"
if command -v gnuplot >/dev/null 2>&1 && [ -n "$SCRIPTS" ]; then
    if "$CRSIM" plot "$DB" --out "$TMP/fig" >"$TMP/po" 2>"$TMP/pe"; then
        for f in capacity-p0 capacity-p1 p99-p0 p99-p1 hit-p0 hit-p1; do
            [ -s "$TMP/fig/$f.png" ] && [ -s "$TMP/fig/$f.svg" ] && ok "figure $f" ||
                fail "figure $f missing"
        done
        [ -s "$TMP/pe" ] && grep -v "warning: experiment\|warning:.*rate\|crsim: warning" "$TMP/pe" | grep -q . &&
            fail "gnuplot complained: $(cat "$TMP/pe")"
    else
        fail "plot exited $?: $(cat "$TMP/pe")"
    fi
else
    echo "skip: gnuplot figures (no gnuplot or no script folder)"
fi

[ "$fails" -eq 0 ] && echo "all report tests passed" || echo "$fails report test(s) failed"
[ "$fails" -eq 0 ]
