#!/bin/sh
# Operations (issue 15): the context limit engine.max_model_len, per-tenant
# fairness, per-request records and crsim export, end to end on the first
# 600 requests of the Mooncake conversation trace (tests/configs/small.yaml).
# Known answers come from the trace file itself (python3) and from the
# stored per-request rows, recomputed independently here.
# usage: ops.sh CRSIM TRACE.jsonl.xz
set -u
CRSIM=$1
TRACE=$2
command -v sqlite3 >/dev/null 2>&1 || { echo "SKIP: sqlite3 not found"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not found"; exit 77; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
q() { sqlite3 "$DB" "$1"; }

DB=$TMP/o.db
"$CRSIM" run "$ROOT/tests/configs/small.yaml" --set workload.trace="$TRACE" \
    --set experiment.db="$DB" --set engine.max_model_len=20000 \
    --set experiment.fair_min_requests=2 --requests --quiet -j 1 > "$TMP/out" 2>&1 ||
    { cat "$TMP/out"; fail "run exited $?"; exit 1; }

# ---- context limit ------------------------------------------------------
# Expected: requests among the first 600 whose input + output > 20000.
want=$(xz -dc "$TRACE" | head -600 | python3 -c '
import sys, json
print(sum(1 for l in sys.stdin
          if (lambda r: r["input_length"] + r["output_length"] > 20000)(json.loads(l))))')
[ "$want" -gt 0 ] || fail "the trace has no request over 20000 tokens (test premise)"
got=$(q "SELECT group_concat(DISTINCT n_too_long) FROM run_metrics")
[ "$got" = "$want" ] && ok "n_too_long = $want in every run (from the trace)" ||
    fail "n_too_long '$got', expected $want"
bad=$(q "SELECT count(*) FROM run_metrics WHERE n_arrived != n_completed + n_unfinished +
         n_rejected + n_too_long")
[ "$bad" = 0 ] && ok "conservation: arrived = completed + unfinished + rejected + too_long" ||
    fail "conservation broken in $bad runs"
bad=$(q "SELECT count(*) FROM run_metrics m WHERE n_too_long != (SELECT count(*) FROM requests
         r WHERE r.run_id = m.run_id AND status = 'too_long' AND dest IS NULL AND ttft_s IS
         NULL AND prompt_tokens + output_tokens > 20000)")
[ "$bad" = 0 ] && ok "too-long rows: never routed, no TTFT, all over the limit" ||
    fail "$bad runs with too-long rows that disagree"
bad=$(q "SELECT count(*) FROM requests WHERE status != 'too_long' AND prompt_tokens +
         output_tokens > 20000")
[ "$bad" = 0 ] && ok "no request over the limit was served" || fail "$bad served over the limit"
grep -q "toolong" "$TMP/out" && grep -q "^flat_lb .* $want\$" "$TMP/out" &&
    ok "run table shows the toolong column" || fail "run table lacks toolong $want"
# measured = arrived after warm-up and not too long
bad=$(q "SELECT count(*) FROM run_metrics m WHERE n_measured != (SELECT sum(measured) FROM
         requests r WHERE r.run_id = m.run_id)")
[ "$bad" = 0 ] && ok "n_measured = measured request rows (too-long excluded)" ||
    fail "n_measured disagrees with the requests rows in $bad runs"
"$CRSIM" run "$ROOT/tests/configs/small.yaml" --set workload.trace="$TRACE" \
    --set engine.max_model_len=-1 --dry-run --quiet > "$TMP/e" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "engine.max_model_len" "$TMP/e" && ok "max_model_len -1: exit 2 naming the key" ||
    fail "max_model_len -1: exit $rc: $(cat "$TMP/e")"

# ---- per-request records --------------------------------------------------
bad=$(q "SELECT count(*) FROM run_metrics m WHERE n_arrived != (SELECT count(*) FROM requests
         r WHERE r.run_id = m.run_id)")
[ "$bad" = 0 ] && ok "one requests row per arrived request" || fail "row counts differ in $bad runs"
bad=$(q "SELECT count(*) FROM requests WHERE status = 'completed' AND NOT (queue_s >= 0 AND
         queue_s <= ttft_s AND ttft_s <= e2e_s AND hit_tokens < prompt_tokens AND retries = 0)")
[ "$bad" = 0 ] && ok "completed rows: 0 <= queue <= TTFT <= E2E, hit < prompt" ||
    fail "$bad completed rows out of order"
bad=$(q "SELECT count(*) FROM run_metrics m WHERE preemptions != (SELECT sum(preemptions) FROM
         requests r WHERE r.run_id = m.run_id)")
[ "$bad" = 0 ] && ok "per-request preemptions add up to the run's" || fail "preemptions differ"
n1=$(q "SELECT count(*) FROM requests WHERE run_id = 1")
"$CRSIM" export "$DB" --run 1 --out "$TMP/r.csv" 2>/dev/null || fail "export csv exited $?"
sqlite3 "$TMP/i.db" ".import --csv $TMP/r.csv req" &&
    [ "$(sqlite3 "$TMP/i.db" 'SELECT count(*) FROM req')" = "$n1" ] &&
    [ "$(sqlite3 "$TMP/i.db" "SELECT sum(ttft_s) FROM req WHERE ttft_s != ''")" = \
      "$(q 'SELECT sum(ttft_s) FROM requests WHERE run_id = 1')" ] &&
    ok "CSV loads with sqlite3 .import: $n1 rows, same TTFT sum" || fail "sqlite3 .import of the CSV"
python3 - "$TMP/r.csv" "$n1" <<'PY' && ok "CSV loads with Python's csv module" || fail "python csv"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert len(rows) == int(sys.argv[2]), len(rows)
assert set(r["run_id"] for r in rows) == {"1"}
assert all(r["status"] in ("completed", "unfinished", "rejected", "too_long") for r in rows)
assert all((r["dest"] == "") == (r["status"] == "too_long") for r in rows)
PY
"$CRSIM" export "$DB" --table run_metrics --format jsonl > "$TMP/m.jsonl" || fail "export jsonl"
python3 - "$TMP/m.jsonl" <<'PY' && ok "JSON Lines of run_metrics: 4 objects with n_too_long" || fail "jsonl"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 4 and all(r["n_too_long"] > 0 for r in rows), rows
PY
for bad in "--format xml" "--table nosuch" "--run 0" "--run 1 --table experiments" "--bogus"; do
    # shellcheck disable=SC2086
    "$CRSIM" export "$DB" $bad > /dev/null 2> "$TMP/e"
    rc=$?
    [ $rc = 2 ] && [ "$(wc -l < "$TMP/e")" -ge 1 ] && ok "export $bad: exit 2" ||
        fail "export $bad: exit $rc"
done
"$CRSIM" export "$TMP/missing.db" > /dev/null 2>&1
[ $? = 2 ] && ok "export of a missing database: exit 2" || fail "export missing db"
DB0=$TMP/n.db
"$CRSIM" run "$ROOT/tests/configs/small.yaml" --set workload.trace="$TRACE" \
    --set experiment.db="$DB0" --set experiment.rates=[1] --quiet -j 1 > /dev/null 2>&1
[ "$(sqlite3 "$DB0" 'SELECT count(*) FROM requests')" = 0 ] &&
    ok "records are off by default" || fail "requests stored without experiment.requests"

# --resume copies a run's requests and key rows with its metrics.
cp "$DB" "$TMP/res.db"
"$CRSIM" run "$ROOT/tests/configs/small.yaml" --set workload.trace="$TRACE" \
    --set experiment.db="$TMP/res.db" --set engine.max_model_len=20000 \
    --set experiment.fair_min_requests=2 --requests --resume --quiet -j 1 > /dev/null 2>&1 ||
    fail "resume exited $?"
bad=$(sqlite3 "$TMP/res.db" "SELECT count(*) FROM runs n JOIN run_metrics m ON m.run_id = n.id
      WHERE n.resumed_from IS NOT NULL AND (m.n_too_long != $want
      OR (SELECT count(*) FROM requests WHERE run_id = n.id) != m.n_arrived
      OR (SELECT count(*) FROM key_metrics WHERE run_id = n.id) != m.fair_keys)")
nres=$(sqlite3 "$TMP/res.db" "SELECT count(*) FROM runs WHERE resumed_from IS NOT NULL")
[ "$nres" = 4 ] && [ "$bad" = 0 ] && ok "--resume copies requests, key_metrics and n_too_long" ||
    fail "resume: $nres resumed runs, $bad disagree"

# ---- fairness: recompute from the stored rows -----------------------------
python3 - "$DB" <<'PY' && ok "fairness columns = recomputation from the requests rows (p99 type 7, Jain)" || fail "fairness recomputation"
import math, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
def q7(v, p):  # Hyndman-Fan type 7 (numpy default)
    v = sorted(v); h = p * (len(v) - 1); lo = math.floor(h)
    if lo + 1 >= len(v): return v[lo]
    if math.isinf(v[lo + 1]) or math.isinf(v[lo]): return math.inf
    return v[lo] + (h - lo) * (v[lo + 1] - v[lo])
def close(a, b):
    if a is None or b is None: return a is None and b is None
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))
for run, keys, worst, spread, jain in db.execute(
        "SELECT run_id, fair_keys, fair_worst_p99, fair_spread_p99, fair_jain FROM run_metrics"):
    by = {}
    for k, t in db.execute("SELECT routing_key, ttft_s FROM requests WHERE run_id = ? AND measured",
                           (run,)):
        by.setdefault(k, []).append(math.inf if t is None else t)
    q = {k: v for k, v in by.items() if len(v) >= 2}
    assert keys == len(q) > 1, (keys, len(q))
    p99 = [q7(v, 0.99) for v in q.values()]
    means = [sum(x for x in v if x != math.inf) / sum(1 for x in v if x != math.inf)
             for v in q.values()]
    j = sum(means) ** 2 / (len(means) * sum(m * m for m in means))
    assert close(worst, max(p99)) and close(spread, q7(p99, 0.99)) and close(jain, j), \
        (run, worst, max(p99), spread, q7(p99, 0.99), jain, j)
    assert 1 / len(means) <= jain <= 1
    n = db.execute("SELECT count(*) FROM key_metrics WHERE run_id = ?", (run,)).fetchone()[0]
    assert n == keys
PY
"$CRSIM" report "$DB" > "$TMP/rep" 2>&1
grep -q "tenant worst p99" "$TMP/rep" && grep -q "Jain" "$TMP/rep" && grep -q "too long" "$TMP/rep" &&
    grep -q "flat_lb .* 0\.[0-9][0-9][0-9] .* $want\$" "$TMP/rep" &&
    ok "crsim report shows tenant p99, Jain and too-long columns" || { cat "$TMP/rep"; fail "report columns"; }
"$CRSIM" run "$ROOT/tests/configs/small.yaml" --set workload.trace="$TRACE" \
    --set experiment.fair_min_requests=0 --dry-run --quiet > "$TMP/e" 2>&1
[ $? = 2 ] && grep -q "fair_min_requests" "$TMP/e" && ok "fair_min_requests 0: exit 2" ||
    fail "fair_min_requests 0 accepted"

[ $fails = 0 ] && echo "all ops checks passed" || { echo "$fails failure(s)"; exit 1; }
