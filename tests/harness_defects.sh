#!/bin/sh
# Regression tests of the harness-side defects of issue 17 (each block
# names its item): sizes are estimated before a sweep and refused beyond
# the machine, SIGINT during set-up ends at once, --resume matches the
# build, duplicate loads/seeds and tiny windows are rejected at load, a
# run that serves nothing is flagged, bad input found by the stream fails
# before the experiment row exists, a locked database names its holder
# and leaves no 'running' experiment, experiment.name is a safe file name,
# foreign SQLite files are refused, errors name their key, and the docs
# state the schema version of the code.
# usage: harness_defects.sh CRSIM TESTS_DIR TRACE
set -u
CRSIM=$1
T=$2
TRACE=$3
ROOT="$T/.."
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
. "$(dirname "$0")/lib.sh"

SMALL="$T/configs/small.yaml"
RUN="$CRSIM run $SMALL --set workload.trace=$TRACE --quiet"
DB="$TMP/h.db"

# A synthetic config (the paper's workload preset) on 2 destinations.
SYN="$TMP/syn.yaml"
{
    printf 'experiment: {name: syn, policies: [flat_lb], rates: [1000], seeds: [1], warmup_s: 0, drain_s: 0, timeline_s: 0}\n'
    printf 'cluster: {destinations: 2}\n'
    sed -n '/^workload:/,$p' "$ROOT/workloads/specs/paper-main.yaml"
} >"$SYN"

# ---- item 2: size estimate, refusal, --force, SIGINT during set-up ----
expect_error 2 "experiment.rates 1000 x workload.duration_s 1e+09" -- $CRSIM run "$SYN" --set workload.duration_s=1e9 --set "experiment.db=$DB"
grep -q -- "--force" "$TMP/err" || fail "the size refusal does not mention --force"
[ -e "$DB" ] && fail "a refused run created its database"
CRSIM_MEM_AVAILABLE_GB=0.001 expect_error 2 "the key population needs about 0.0078 GB (workload.keys.n 130000" -- $CRSIM run "$SYN" --set workload.keys.n=130000 --set "experiment.db=$DB"
CRSIM_MEM_AVAILABLE_GB=0.05 expect_error 2 "largest run: the trace's 12031 requests" -- $RUN --set workload.max_requests=0 --set "experiment.db=$DB"
# the estimate line: 4 runs of 600 requests
if $CRSIM run "$SMALL" --set "workload.trace=$TRACE" --set "experiment.db=$TMP/e.db" 2>/dev/null |
    grep -q "^estimate: 4 runs to simulate, 2.4e+03 requests (at most 600 per run)"; then
    echo "ok: estimate printed"
else
    fail "no estimate line"
fi
if CRSIM_MEM_AVAILABLE_GB=0.05 $RUN --force --set workload.max_requests=200 --set experiment.rates=[1] --set "experiment.db=$TMP/f.db" >/dev/null 2>&1; then
    echo "ok: --force runs past the estimate"
else
    fail "--force did not run"
fi
# SIGINT while a 4e6-key population is built (about 12 s): exit 130 at once
$CRSIM run "$SYN" --set workload.keys.n=4000000 --set "experiment.db=$TMP/int.db" --quiet --force >/dev/null 2>"$TMP/err" &
pid=$!
sleep 1
kill -INT $pid
t0=$(date +%s)
wait $pid
st=$?
t1=$(date +%s)
if [ $st -eq 130 ] && [ $((t1 - t0)) -le 1 ] && grep -q "interrupted during set-up" "$TMP/err" && [ ! -e "$TMP/int.db" ]; then
    echo "ok: SIGINT during set-up"
else
    fail "SIGINT during set-up: status $st after $((t1 - t0)) s: $(cat "$TMP/err")"
fi
# An allocation failure inside a run marks the experiment incomplete
# (exit 1), never an abort (134) leaving it 'running'.  ulimit -v cannot
# be used under AddressSanitizer (its shadow memory is virtual).
if ldd "$CRSIM" 2>/dev/null | grep -q asan; then
    echo "skip: allocation failure (ASan build)"
else
    # Three address-space limits hit three different allocations (the
    # run's records, the stream's blocks, the engines' and caches' growth
    # through the aborting allocators and their out-of-memory hook).
    for lim in 300000 400000 600000; do
        rm -f "$TMP/oom.db"
        (ulimit -v $lim; $CRSIM run "$SYN" --set workload.duration_s=400 --set "experiment.db=$TMP/oom.db" --quiet --jobs 1 --force >/dev/null 2>"$TMP/err")
        st=$?
        s=$(sqlite3 "$TMP/oom.db" "SELECT status FROM experiments" 2>/dev/null)
        if [ $st -eq 1 ] && [ "$s" = incomplete ] && grep -q "out of memory" "$TMP/err"; then
            echo "ok: out of memory (ulimit -v $lim) marks the experiment incomplete"
        else
            fail "out of memory (ulimit -v $lim): status $st, experiment '$s': $(cat "$TMP/err")"
        fi
    done
fi

# ---- item 4: --resume matches the build ----
R="$TMP/resume.db"
$RUN --set "experiment.db=$R" --set experiment.rates=[1] >/dev/null 2>&1 || fail "resume: first run failed"
sqlite3 "$R" "UPDATE runs SET build_version = '0.0.1-elsewhere'"
$RUN --set "experiment.db=$R" --set experiment.rates=[1] --resume >"$TMP/out" 2>&1
grep -q "^resume: 0 of 2 runs reused; only runs stored by this build" "$TMP/out" && echo "ok: resume ignores other builds" ||
    fail "resume reused another build's runs: $(head -3 "$TMP/out")"
sqlite3 "$R" "UPDATE runs SET build_version = '0.0.1-elsewhere'"
$RUN --set "experiment.db=$R" --set experiment.rates=[1] --resume-any-build >"$TMP/out" 2>&1
grep -q "^resume: 2 of 2 runs reused (2 of build 0.0.1-elsewhere); stored runs of any build match" "$TMP/out" &&
    [ "$(sqlite3 "$R" "SELECT count(*) FROM runs WHERE experiment_id = 3 AND resumed_from IS NOT NULL")" = 2 ] &&
    echo "ok: --resume-any-build reuses and names the build" || fail "--resume-any-build: $(head -3 "$TMP/out")"

# ---- item 5: duplicate loads or seeds rejected at load ----
expect_error 2 "experiment.rates lists 1 twice (items 0 and 2)" -- $RUN --set "experiment.rates=[1,2,1]" --set "experiment.db=$DB"
expect_error 2 "experiment.seeds lists 3 twice" -- $RUN --set "experiment.seeds=[3,3]" --set "experiment.db=$DB"
[ -e "$DB" ] && fail "a duplicate-load config created its database"

# ---- item 6: rejected shown apart; a run that serves nothing is flagged ----
HUGE="$TMP/huge.jsonl"
ids=$(seq -s, 0 39)
for t in 0 1000 2000 3000 4000 5000; do
    printf '{"timestamp": %d, "input_length": 20000, "output_length": 10, "hash_ids": [%s]}\n' $t "$ids"
done >"$HUGE"
N="$TMP/nothing.db"
$CRSIM run "$SMALL" --set "workload.trace=$HUGE" --set "experiment.db=$N" --set experiment.rates=[1] --set cluster.mem_util=0.47 --set experiment.warmup_s=0 --set experiment.min_measured=0 >"$TMP/out" 2>"$TMP/err"
grep -q "unfin     rej preempt" "$TMP/out" && grep -q "^flat_lb .* 0       0       6       0       0  SERVED NOTHING" "$TMP/out" &&
    grep -q "WARNING: 2 run(s) served nothing" "$TMP/out" &&
    grep -q "warning: flat_lb rate 1 seed 5 served nothing: all 6 requests were rejected" "$TMP/err" &&
    echo "ok: served-nothing runs flagged in the table" || fail "served nothing: $(cat "$TMP/out" "$TMP/err")"
$CRSIM report "$N" >"$TMP/out" 2>"$TMP/err"
grep -q "WARNING: 2 run(s) served nothing" "$TMP/out" && grep -q "warning: 2 run(s) served nothing" "$TMP/err" &&
    echo "ok: served-nothing runs flagged in the report" || fail "report: $(cat "$TMP/out" "$TMP/err")"
$RUN --set "experiment.db=$TMP/rej.db" --set experiment.rates=[1] --set experiment.policies=[flat_lb] --set cluster.mem_util=0.545 >"$TMP/out" 2>&1
grep -q "^flat_lb .* 589       0      11 " "$TMP/out" && echo "ok: rej column apart from unfin" || fail "rej column: $(grep flat_lb "$TMP/out")"

# ---- item 7: lower bounds on windows ----
expect_error 2 "key 'experiment.timeline_s' is 1e-06; expected 0 (no timeline) or a window >= 0.1 s" -- $RUN --set experiment.timeline_s=0.000001 --set "experiment.db=$DB"
expect_error 2 "key 'router.cacheroute.interval_s' is 1e-06 (router cacheroute); expected a control interval >= 1 s" -- $RUN --set "experiment.policies=[cacheroute]" --set router.cacheroute.q_cap=1 --set router.cacheroute.slots=3 --set router.cacheroute.interval_s=1e-6 --set "experiment.db=$DB"

# ---- item 8: stream errors before the experiment row ----
SAME="$TMP/same.jsonl"
for i in 1 2 3 4; do printf '{"timestamp": 5, "input_length": 200, "output_length": 10, "hash_ids": [1]}\n'; done >"$SAME"
expect_error 2 "same.jsonl: all requests share one timestamp" -- $CRSIM run "$SMALL" --set "workload.trace=$SAME" --set "experiment.db=$DB"
[ -e "$DB" ] && fail "a trace error found by the stream left a database (an empty experiment) behind"

# ---- item 9: a locked database ----
if command -v python3 >/dev/null 2>&1; then
    L="$TMP/lock.db"
    # holds an exclusive lock for HOLD s once the runs table has a row
    cat >"$TMP/locker.py" <<'EOF'
import sqlite3, sys, time
db, hold, need = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
deadline = time.time() + 30
print("ready", flush=True)
while time.time() < deadline:
    try:
        c = sqlite3.connect(db, isolation_level=None, timeout=0.05)
        n = c.execute("SELECT count(*) FROM runs").fetchone()[0] if need else 0
        if n >= need:
            c.execute("BEGIN EXCLUSIVE"); print("locked", flush=True)
            time.sleep(hold); c.execute("COMMIT"); sys.exit(0)
        c.close()
    except sqlite3.OperationalError:
        pass
    time.sleep(0.005)
sys.exit(1)
EOF
    # held from the start: exit 2 naming the holder, nothing written
    python3 "$TMP/locker.py" "$L" 3 0 >"$TMP/lk" &
    lp=$!
    while ! grep -q locked "$TMP/lk" 2>/dev/null; do sleep 0.05; done
    CRSIM_DB_BUSY_TIMEOUT_S=0.3 expect_error 2 "database is locked by another process (pid $lp, python3) for longer than the busy timeout of 0.3 s" -- $RUN --set "experiment.db=$L"
    wait $lp
    # taken after the first stored run and released 1.5 s later: the run
    # fails (exit 2) but the experiment ends 'incomplete', not 'running'
    # The locker is started (and ready) before crsim, and the experiment
    # has 32 runs, so the lock lands while runs remain on a loaded machine.
    rm -f "$L"
    python3 "$TMP/locker.py" "$L" 1.5 1 >"$TMP/lk2" &
    lp=$!
    while ! grep -q ready "$TMP/lk2" 2>/dev/null; do sleep 0.05; done
    CRSIM_DB_BUSY_TIMEOUT_S=0.3 $RUN --set "experiment.db=$L" --set workload.max_requests=3000 \
        --set "experiment.seeds=[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]" --jobs 1 >/dev/null 2>"$TMP/err"
    st=$?
    wait $lp
    s=$(sqlite3 "$L" "SELECT status FROM experiments")
    [ $st -eq 2 ] && [ "$s" = incomplete ] && grep -q "database is locked by another process (pid $lp" "$TMP/err" &&
        echo "ok: a lock during the runs marks the experiment incomplete" || fail "lock during runs: status $st, experiment '$s': $(cat "$TMP/err")"
else
    echo "skip: locked database (no python3)"
fi

# ---- item 11: experiment.name is a safe file name ----
expect_error 2 "key 'experiment.name' is '../../../x'; expected 1 to 128 characters from A-Z a-z 0-9 . _ -" -- $RUN --set "experiment.name=../../../x" --dry-run
expect_error 2 "key 'experiment.name' is ''" -- $RUN --set 'experiment.name=""' --dry-run
expect_error 2 "key 'experiment.name' is '.hidden'" -- $RUN --set "experiment.name=.hidden" --dry-run
$RUN --set "experiment.name=ok-name_1.2" --dry-run >/dev/null 2>&1 && echo "ok: a safe name passes" || fail "a safe name was refused"

# ---- item 12: a foreign SQLite file is refused and left unchanged ----
F="$TMP/foreign.db"
sqlite3 "$F" "CREATE TABLE customers(id INTEGER, name TEXT); INSERT INTO customers VALUES (1, 'a');"
expect_error 2 "foreign.db: not a crsim result database (it holds 1 table: customers" -- $RUN --set "experiment.db=$F"
[ "$(sqlite3 "$F" .tables | tr -s ' \n' ' ' | sed 's/ $//')" = customers ] && echo "ok: foreign database unchanged" || fail "foreign database changed: $(sqlite3 "$F" .tables)"

# ---- item 14: errors name the key ----
expect_error 2 "no calibration profile 'llama-3.3-70b_h100-sxm_tp1_fp8-fp8' for the deployment of keys cluster.model (llama-3.3-70b), cluster.hardware (h100-sxm), cluster.tp (1)" -- $RUN --set cluster.tp=1 --dry-run
grep -q "llama-3.3-70b_h100-sxm_tp2_fp8-fp8" "$TMP/err" && grep -q "cost.profile" "$TMP/err" || fail "the profile error lists no profiles or no cost.profile"
expect_error 2 "sweep point 0 (cluster.tp=1): .*cluster.tp (1)" -- $RUN --set 'experiment.sweep=["cluster.tp=[1,2]"]' --dry-run
expect_error 2 "key 'cost.profile' is 'nope': no such calibration profile" -- $RUN --set cost.profile=nope --dry-run
expect_error 2 "key 'cluster.model' is 'llama-4': no such model spec" -- $RUN --set cluster.model=llama-4 --dry-run
expect_error 2 "experiment.sweep\[0\] (cluster.tp): value 1 is a list" -- $RUN --set 'experiment.sweep=["cluster.tp=[[1],2]"]' --dry-run

# ---- item 16: no sweep over where results go; docs state the schema version ----
expect_error 2 "experiment.sweep\[0\] varies 'experiment.db'" -- $RUN --set 'experiment.sweep=["experiment.db=[a.db,b.db]"]' --dry-run
expect_error 2 "experiment.sweep\[0\] varies 'experiment.name'" -- $RUN --set 'experiment.sweep=["experiment.name=[a,b]"]' --dry-run
v=$(sed -n 's/^#define EXP_STORE_SCHEMA_VERSION \([0-9]*\).*/\1/p' "$ROOT/sim/exp/store.h")
bad=$(grep -n -i -E "schema[ _(]{0,3}version[^0-9]{0,12}[0-9]+" "$ROOT/README.md" "$ROOT"/docs/*.md | grep -v -E "schema[ _(]{0,3}version[^0-9]{0,12}$v([^0-9]|$)")
[ -n "$v" ] && [ -z "$bad" ] && echo "ok: docs state schema version $v" || fail "docs disagree with EXP_STORE_SCHEMA_VERSION $v: $bad"

if [ "$fails" -ne 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "harness_defects: all tests passed"
