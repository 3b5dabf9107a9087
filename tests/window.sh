#!/bin/sh
# Measurement windows (issue 16, "fixed warm-up against time-scaled
# traces"): a 2,000-request trace recorded at 1 request/s and replayed at
# 100 requests/s lasts 20 s, inside the default 60 s warm-up, so the run
# measures 0 requests: it must be refused as "no data" (never stored as an
# SLO pass or failure).  experiment.warmup_share=0.25 measures exactly
# 2000 - floor(0.25 x 2000) = 1500 requests at every load, and
# experiment.warmup_requests=300 exactly 1700; both at once are refused.
# usage: window.sh CRSIM SOURCE_DIR
set -u
CRSIM=$1
SRC=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
awk 'BEGIN { for (i = 0; i < 2000; i++) printf "{\"timestamp\": %d, \"input_length\": 600, \"output_length\": 8, \"hash_ids\": [%d, %d]}\n", i * 1000, i % 50, 1000 + i }' >"$TMP/t.jsonl"
BASE="$SRC/tests/configs/small.yaml"
SETS="--set workload.trace=$TMP/t.jsonl --set workload.max_requests=0 --set experiment.policies=[flat_lb] --set experiment.rates=[20,100] --set experiment.warmup_s=60 --quiet"

# 1. The default warm-up by time leaves nothing at 100 requests/s: refused, exit 2.
"$CRSIM" run "$BASE" $SETS --set "experiment.db=$TMP/a.db" >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ "$rc" -eq 2 ] && grep -q "load 100 requests/s, seed 5: no data: 0 of 2000 requests measured (warm-up 60 s), fewer than experiment.min_measured 100" "$TMP/err" &&
    [ ! -f "$TMP/a.db" ]; then
    echo "ok: 0 measured requests refused as no data"
else
    fail "no-data run: exit $rc, $(cat "$TMP/err")"
fi

# measured COUNT... : n_measured of every stored run equals the expected count.
measured() {
    python3 - "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(" ".join(str(r[0]) for r in db.execute(
    "SELECT m.n_measured FROM runs r JOIN run_metrics m ON m.run_id = r.id ORDER BY r.run_index")))
PY
}
# 2. By share: 1500 measured at both loads.
if "$CRSIM" run "$BASE" $SETS --set experiment.warmup_share=0.25 --set "experiment.db=$TMP/b.db" >"$TMP/out" 2>"$TMP/err"; then
    got=$(measured "$TMP/b.db")
    [ "$got" = "1500 1500" ] && echo "ok: warmup_share 0.25 measures 1500 at 20 and 100 requests/s" ||
        fail "warmup_share measured '$got'"
else
    fail "warmup_share run: $(cat "$TMP/err")"
fi
# 3. By count: 1700 measured.
if "$CRSIM" run "$BASE" $SETS --set experiment.warmup_requests=300 --set "experiment.db=$TMP/c.db" >"$TMP/out" 2>"$TMP/err"; then
    got=$(measured "$TMP/c.db")
    [ "$got" = "1700 1700" ] && echo "ok: warmup_requests 300 measures 1700" ||
        fail "warmup_requests measured '$got'"
else
    fail "warmup_requests run: $(cat "$TMP/err")"
fi
# 4. Both at once: one clear error, exit 2.
"$CRSIM" run "$BASE" $SETS --set experiment.warmup_requests=300 --set experiment.warmup_share=0.2 --set "experiment.db=$TMP/d.db" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" -eq 2 ] && grep -q "are both set; expected at most one warm-up by count" "$TMP/err" &&
    echo "ok: warmup_requests with warmup_share refused" || fail "both: exit $rc, $(cat "$TMP/err")"
# 5. A share of 1 or more is out of range.
"$CRSIM" run "$BASE" $SETS --set experiment.warmup_share=1 --set "experiment.db=$TMP/e.db" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" -eq 2 ] && grep -q "experiment.warmup_share" "$TMP/err" && echo "ok: warmup_share 1 refused" ||
    fail "share 1: exit $rc, $(cat "$TMP/err")"

if [ "$fails" -ne 0 ]; then echo "$fails failure(s)"; exit 1; fi
echo "window: ok"
