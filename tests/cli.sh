#!/bin/sh
# End-to-end tests of the crsim command line: bad input gives one clear
# error naming the file and line (or key) and exit status 2; a small real
# run writes a database whose rows match the printed table; the same seed
# and config twice give identical metrics rows.
# usage: cli.sh CRSIM TESTS_DIR TRACE
set -u
CRSIM=$1
T=$2
TRACE=$3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0

. "$(dirname "$0")/lib.sh"

SMALL="$T/configs/small.yaml"
DB="$TMP/small.db"

# Broken traces (fixtures in tests/bad-inputs, see its README).
expect_error 2 "truncated.jsonl:3:" -- "$CRSIM" run "$SMALL" --set "workload.trace=$T/bad-inputs/truncated.jsonl" --set "experiment.db=$DB"
expect_error 2 "missing_field.jsonl:2: missing field \"output_length\"" -- "$CRSIM" run "$SMALL" --set "workload.trace=$T/bad-inputs/missing_field.jsonl" --set "experiment.db=$DB"
expect_error 2 "negative_length.jsonl:4: field \"input_length\" is -5" -- "$CRSIM" run "$SMALL" --set "workload.trace=$T/bad-inputs/negative_length.jsonl" --set "experiment.db=$DB"
expect_error 2 "nonmonotone.jsonl:3: field \"timestamp\"" -- "$CRSIM" run "$SMALL" --set "workload.trace=$T/bad-inputs/nonmonotone.jsonl" --set "experiment.db=$DB"
expect_error 2 "no-such-trace.jsonl: cannot open" -- "$CRSIM" run "$SMALL" --set "workload.trace=$TMP/no-such-trace.jsonl" --set "experiment.db=$DB"
[ -e "$DB" ] && fail "a failed run left a database behind"

# Broken configs.
expect_error 2 "bad_key.yaml:5: unknown key 'cluster.destinatons'" -- "$CRSIM" run "$T/configs/bad_key.yaml"
expect_error 2 "bad_policy.yaml:4: key 'experiment.policies\[1\]' is 'stickyy'" -- "$CRSIM" run "$T/configs/bad_policy.yaml"
expect_error 2 "bad_range.yaml:3: key 'experiment.rates\[1\]' is -3" -- "$CRSIM" run "$T/configs/bad_range.yaml"
expect_error 2 "--set cluster.destinations: key 'cluster.destinations' is 'many'" -- "$CRSIM" run "$SMALL" --set cluster.destinations=many
# The gateway's information model (docs/information-model.md): bad values name the key.
expect_error 2 "key 'gateway.scrape_interval_s' is -1" -- "$CRSIM" run "$SMALL" --set gateway.scrape_interval_s=-1
expect_error 2 "key 'gateway.replicas' is 0" -- "$CRSIM" run "$SMALL" --set gateway.replicas=0
expect_error 2 "key 'gateway.scrape_delay_s' is 'nan'" -- "$CRSIM" run "$SMALL" --set gateway.scrape_delay_s=nan
expect_error 2 "key 'gateway.scrape_delay_s' is 0.5 with gateway.scrape_interval_s 0" -- "$CRSIM" run "$SMALL" --set gateway.scrape_interval_s=0 --set gateway.scrape_delay_s=0.5
expect_error 2 "key 'gateway.replica_assignment' is 'rand'" -- "$CRSIM" run "$SMALL" --set gateway.replica_assignment=rand
expect_error 2 "key 'router.flat_lb.signal' is 'kv'" -- "$CRSIM" run "$SMALL" --set router.flat_lb.signal=kv
expect_error 2 "no-such.yaml: cannot open" -- "$CRSIM" run "$TMP/no-such.yaml"
expect_error 2 "leave no KV pool" -- "$CRSIM" run "$SMALL" --set "workload.trace=$TRACE" --set cluster.tp=1 --set cluster.weight_dtype=fp16 --set "experiment.db=$DB"
expect_error 2 "unknown option '--bogus'" -- "$CRSIM" run "$SMALL" --bogus
expect_error 2 "unknown command 'runn'" -- "$CRSIM" runn

# Workloads: describe a preset (the paper's statistics) and reject bad input.
PRESET="$T/../workloads/specs/paper-main.yaml"
if "$CRSIM" workload describe "$PRESET" --requests 2000 >"$TMP/desc" 2>"$TMP/err"; then
    grep -q "128824 keys, Gini 0.7560" "$TMP/desc" && grep -q "largest key 0.300%" "$TMP/desc" &&
        grep -q "infinite-cache hit rate" "$TMP/desc" && echo "ok: workload describe" ||
        fail "workload describe output: $(cat "$TMP/desc")"
else
    fail "workload describe failed: $(cat "$TMP/err")"
fi
# fit_gini is the preset's lognormal fit: it does not apply to a file (an error).
FILEKEYS="--set workload.keys.distribution=file --set workload.keys.fit_gini=0 --set workload.keys.file"
expect_error 2 "workload.loop_s is 3 with workload.type synthetic; expected 0" -- "$CRSIM" workload describe "$PRESET" --set workload.loop_s=3
expect_error 2 "key 'workload.loop_s' is -3; expected a number in \\[0, 1000000000\\] (s)" -- "$CRSIM" run "$SMALL" --set workload.loop_s=-3 --dry-run
# Issue 16: the bound describe prints holds for what a run measures.  On
# the flagship workload (active set of 128 keys) with a 1,000-request
# warm-up, sticky's measured hit rate (0.860) exceeds the whole-stream
# infinite-cache hit rate (0.819: the cold start is not measured) and must
# not exceed the measured window's (0.861); the population (128,824 keys)
# is described as well as the active set.
FLAGSHIP="$T/../experiments/flagship.yaml"
W="--set experiment.warmup_requests=1000 --set experiment.policies=[sticky] --set experiment.rates=[20] --set experiment.seeds=[1] --set workload.duration_s=100 --set experiment.db=$TMP/window.db"
if "$CRSIM" run "$FLAGSHIP" $W --quiet >"$TMP/out" 2>"$TMP/err" &&
    "$CRSIM" workload describe "$FLAGSHIP" $W --rate 20 --seed 1 >"$TMP/desc" 2>>"$TMP/err"; then
    hit=$(sqlite3 "$TMP/window.db" "select hit_rate from run_metrics")
    whole=$(sed -n 's/.*infinite-cache hit rate \([0-9.]*\) (.*/\1/p' "$TMP/desc")
    win=$(sed -n 's/^measured window.*: 996 of the 1996 requests, infinite-cache hit rate \([0-9.]*\)$/\1/p' "$TMP/desc")
    if [ -n "$whole" ] && [ -n "$win" ] &&
        awk -v h="$hit" -v a="$whole" -v b="$win" 'BEGIN { exit !(h > a && h <= b + 0.0005) }' &&
        grep -q "^key-rate population (all keys): 128824 keys, Gini 0.7560" "$TMP/desc" &&
        grep -q "^active set: workload.keys.active_set 128 keys hold 7.4% of the population's rate" "$TMP/desc" &&
        grep -q "^active set (renormalised): 128 keys" "$TMP/desc"; then
        echo "ok: describe's measured-window bound ($win) holds for a run's hit rate ($hit > whole stream $whole)"
    else
        fail "describe window bound: hit $hit, whole $whole, window $win: $(cat "$TMP/desc")"
    fi
else
    fail "describe window run: $(cat "$TMP/err")"
fi
expect_error 2 "empty_rates.csv: no key-rate rows" -- "$CRSIM" workload describe "$PRESET" $FILEKEYS="$T/bad-inputs/empty_rates.csv"
expect_error 2 "zero_rate.csv:2: rate 0" -- "$CRSIM" workload describe "$PRESET" $FILEKEYS="$T/bad-inputs/zero_rate.csv"
expect_error 2 "negative_rate.csv:2: rate -1" -- "$CRSIM" workload describe "$PRESET" $FILEKEYS="$T/bad-inputs/negative_rate.csv"
expect_error 2 "nan_rate.csv:3: rate nan" -- "$CRSIM" workload describe "$PRESET" $FILEKEYS="$T/bad-inputs/nan_rate.csv"
expect_error 2 "key 'workload.keys.distribution' is 'pareto'" -- "$CRSIM" workload describe "$PRESET" --set workload.keys.distribution=pareto
expect_error 2 "key 'workload.arrival.cv' is 0" -- "$CRSIM" workload describe "$PRESET" --set workload.arrival.cv=0
expect_error 2 "key 'workload.arrival.cv' is -1" -- "$CRSIM" run "$SMALL" --set workload.type=synthetic --set workload.duration_s=10 --set workload.arrival.cv=-1

# Issue 17: the bad-input campaign's defects, each a fixture in
# tests/bad-inputs (see its README) or a special file made here.
B="$T/bad-inputs"
IAT="--set workload.arrival.process=bootstrap --set workload.arrival.iat_file"
expect_error 2 "iat_mixed_forms.csv:3: '2023-11-16 18:15:54.9320210' mixes numeric and date-time times (line 2 has a number)" -- "$CRSIM" workload describe "$PRESET" $IAT="$B/iat_mixed_forms.csv"
expect_error 2 "iat_feb30.csv:4: '2023-02-30 00:00:00' in column 'TIMESTAMP' names a day that does not exist" -- "$CRSIM" workload describe "$PRESET" $IAT="$B/iat_feb30.csv"
if "$CRSIM" workload describe "$PRESET" $IAT="$B/iat_year9999.csv" --requests 100 >"$TMP/desc" 2>"$TMP/err"; then
    echo "ok: arrival times in the year 9999"
else
    fail "year 9999 arrival times: $(cat "$TMP/err")"
fi
NOCAP="--set workload.keys.cap=0"
expect_error 2 "rates_overflow.csv: the 2 key rates sum to inf (the sum overflows)" -- "$CRSIM" workload describe "$PRESET" $FILEKEYS="$B/rates_overflow.csv" $NOCAP
expect_error 2 "rates_overflow.csv: the 2 key rates sum to inf" -- "$CRSIM" plan --rates "$B/rates_overflow.csv" --destinations 2 --q-cap 1 --slots 1
expect_error 2 "rates_hex.csv:3: rate '0x10' is hexadecimal" -- "$CRSIM" workload describe "$PRESET" $FILEKEYS="$B/rates_hex.csv" $NOCAP
expect_error 2 "rates_duplicate_key.csv:4: key 'tenant-a' again (first on line 2); expected each key once" -- "$CRSIM" plan --rates "$B/rates_duplicate_key.csv" --destinations 2 --q-cap 1 --slots 1
expect_error 2 "' is not a number; expected key,rate" -- "$CRSIM" workload describe "$PRESET" $FILEKEYS="$B/rates_long_value.csv" $NOCAP
expect_error 2 "rates_binary.csv:3: control character 0x7f in line (a binary file?); expected a text CSV file" -- "$CRSIM" workload describe "$PRESET" $FILEKEYS="$B/rates_binary.csv" $NOCAP
if "$CRSIM" plan --rates "$B/rates_bom.csv" --destinations 2 --q-cap 4 --slots 1 >"$TMP/plan" 2>"$TMP/err" &&
    grep -q "keys 2, total 4 requests/s" "$TMP/plan" && grep -q "^a  " "$TMP/plan"; then
    echo "ok: a key-rate file with a byte order mark"
else
    fail "key-rate file with a BOM: $(cat "$TMP/plan" "$TMP/err")"
fi
if "$CRSIM" workload describe "$PRESET" $FILEKEYS="$B/rates_near_max.csv" $NOCAP --requests 100 >"$TMP/desc" 2>"$TMP/err" &&
    grep -q "4 keys, Gini 0.7500" "$TMP/desc"; then
    echo "ok: rates near the largest double"
else
    fail "rates near DBL_MAX: $(cat "$TMP/desc" "$TMP/err")"
fi
SGKEYS="--set workload.keys.distribution=servegen --set workload.keys.fit_gini=0 --set workload.keys.file"
expect_error 2 "servegen_uneven/chunk-0-trace.csv:3: window_start_s 1300 is 700 s after the previous window" -- "$CRSIM" workload describe "$PRESET" $SGKEYS="$B/servegen_uneven" $NOCAP
expect_error 2 "servegen_overflow/chunk-0-trace.csv: rate_rps values sum to inf" -- "$CRSIM" workload describe "$PRESET" $SGKEYS="$B/servegen_overflow" $NOCAP
expect_error 2 "prefix_conflict.jsonl:4: hash_ids\[2\] = 5 follows 2 here, but followed 1 on line 1" -- "$CRSIM" run "$SMALL" --set "workload.trace=$B/prefix_conflict.jsonl" --set "experiment.db=$DB"
expect_error 2 "key_newline.yaml:5: unknown key 'cluster.dest\\\\ninations'" -- "$CRSIM" run "$B/key_newline.yaml" --dry-run
expect_error 2 "--set workload.tr\\\\nace: unknown key" -- "$CRSIM" run "$SMALL" --dry-run --set "workload.tr
ace=x"
# Special files are refused at once: before, a FIFO blocked forever (the
# timeout turns that into a failure) and /dev/zero was read for gigabytes.
mkfifo "$TMP/fifo.jsonl" "$TMP/fifo.yaml" "$TMP/fifo.csv"
expect_error 2 "fifo.jsonl: trace is a FIFO (named pipe), not a regular file" -- timeout 20 "$CRSIM" run "$SMALL" --set "workload.trace=$TMP/fifo.jsonl" --set "experiment.db=$DB"
expect_error 2 "fifo.yaml: config is a FIFO (named pipe), not a regular file" -- timeout 20 "$CRSIM" run "$TMP/fifo.yaml"
expect_error 2 "fifo.csv: key-rate file is a FIFO (named pipe)" -- timeout 20 "$CRSIM" plan --rates "$TMP/fifo.csv" --destinations 2 --q-cap 1 --slots 1
expect_error 2 "/dev/zero: trace is a character device, not a regular file" -- timeout 20 "$CRSIM" run "$SMALL" --set workload.trace=/dev/zero --set "experiment.db=$DB"
expect_error 2 "/dev/zero: inter-arrival file is a character device" -- timeout 20 "$CRSIM" workload describe "$PRESET" $IAT=/dev/zero
[ -e "$DB" ] && fail "a failed run left a database behind"

# Real per-tenant rates: one ServeGen model's clients as the key population.
SG_TAR="$T/../data/servegen/servegen_m-small_deepseek-r1.tar.xz"
if mkdir "$TMP/sg" && tar -xJf "$SG_TAR" -C "$TMP/sg" 2>/dev/null; then
    SGDIR="$TMP/sg/data/language/m-small"
    if "$CRSIM" workload describe "$PRESET" --set workload.keys.distribution=servegen --set workload.keys.fit_gini=0 --set "workload.keys.file=$SGDIR" --set workload.keys.cap=0 --requests 2000 >"$TMP/desc" 2>"$TMP/err"; then
        grep -q "43 keys, Gini 0.8389" "$TMP/desc" && echo "ok: servegen clients as keys" || fail "servegen describe: $(cat "$TMP/desc")"
    else
        fail "servegen describe failed: $(cat "$TMP/err")"
    fi
    # A malformed row (line 3 of one client's file) is an error naming file and line.
    mkdir "$TMP/sgbad" && cp "$SGDIR"/*.csv "$TMP/sgbad/"
    f=$(ls "$TMP/sgbad"/*.csv | head -1)
    awk 'NR == 3 {print "600,abc,1,Gamma,1,1"; next} {print}' "$f" >"$f.tmp" && mv "$f.tmp" "$f"
    expect_error 2 "$(basename "$f"):3: rate_rps 'abc'" -- "$CRSIM" workload describe "$PRESET" --set workload.keys.distribution=servegen --set workload.keys.fit_gini=0 --set "workload.keys.file=$TMP/sgbad" --set workload.keys.cap=0
else
    fail "cannot extract $SG_TAR"
fi

# A real small run, twice with the same seed.
for i in 1 2; do
    if ! "$CRSIM" run "$SMALL" --quiet --set "workload.trace=$TRACE" --set "experiment.db=$DB" >"$TMP/table$i" 2>"$TMP/err"; then
        fail "small run $i failed: $(cat "$TMP/err")"
    fi
done
if [ "$fails" -eq 0 ]; then
    n=$(sqlite3 "$DB" "SELECT count(*) FROM runs WHERE experiment_id = 1")
    [ "$n" = 4 ] || fail "expected 4 runs in experiment 1, found $n"
    st=$(sqlite3 "$DB" "SELECT group_concat(status) FROM experiments")
    [ "$st" = "complete,complete" ] || fail "experiment status '$st'"
    # The table's rows equal the database's rows (same formatting).
    sqlite3 -separator ' ' "$DB" "SELECT r.policy, printf('%.2f', r.rate_rps), r.seed,
        printf('%.2f', 100.0 * m.hit_rate), printf('%.3f', m.ttft_p50),
        printf('%.3f', m.ttft_p99), printf('%.3f', m.e2e_p99), m.n_completed
        FROM runs r JOIN run_metrics m ON m.run_id = r.id WHERE r.experiment_id = 1
        ORDER BY r.id" >"$TMP/db_rows"
    awk '$1 == "flat_lb" || $1 == "sticky" {print $1, $2, $3, $4, $5, $6, $7, $9}' "$TMP/table1" >"$TMP/table_rows"
    if cmp -s "$TMP/db_rows" "$TMP/table_rows"; then echo "ok: table rows match the database"
    else fail "table and database differ:"; diff "$TMP/table_rows" "$TMP/db_rows"; fi
    # Same seed and config: every simulated quantity identical (only wall
    # time and timestamps may differ).
    cols="n_arrived, n_completed, n_unfinished, n_rejected, n_measured, measured_completed,
          prompt_tokens, hit_tokens, quote(hit_rate), quote(ttft_p50), quote(ttft_p90),
          quote(ttft_p99), quote(ttft_mean), quote(tpot_p50), quote(tpot_p99), quote(e2e_p50),
          quote(e2e_p99), quote(imbalance_work), quote(imbalance_requests), quote(sim_end_s),
          steps, events, preemptions, kv_pool_blocks"
    q="SELECT r.policy, r.seed, r.rate_rps, r.config_hash, $cols FROM runs r
       JOIN run_metrics m ON m.run_id = r.id WHERE r.experiment_id = %d ORDER BY r.id"
    sqlite3 "$DB" "$(printf "$q" 1)" >"$TMP/e1"
    sqlite3 "$DB" "$(printf "$q" 2)" >"$TMP/e2"
    if [ -s "$TMP/e1" ] && cmp -s "$TMP/e1" "$TMP/e2"; then echo "ok: same seed, identical metrics rows"
    else fail "repeat run differs"; diff "$TMP/e1" "$TMP/e2"; fi
    d1=$(sqlite3 "$DB" "SELECT group_concat(quote(busy_s) || ':' || prefill_tokens, ',') FROM dest_metrics WHERE run_id IN (SELECT id FROM runs WHERE experiment_id = 1)")
    d2=$(sqlite3 "$DB" "SELECT group_concat(quote(busy_s) || ':' || prefill_tokens, ',') FROM dest_metrics WHERE run_id IN (SELECT id FROM runs WHERE experiment_id = 2)")
    [ -n "$d1" ] && [ "$d1" = "$d2" ] || fail "per-destination rows differ between repeats"
    # The stored run config is complete and rerunnable: it names the trace and the seed.
    sqlite3 "$DB" "SELECT config_text FROM runs WHERE id = 1" | grep -q "seeds: \[5\]" || fail "run config lacks its seed"
fi

# Sweeps: results do not depend on --jobs, on sharding + merging, or on
# being killed and resumed.  Compared: every simulated quantity of every
# run by run index, and the capacities.
SWEEP="--set workload.trace=$TRACE --set experiment.sweep=[\"cluster.destinations=[2,4]\"] --set experiment.seeds=[5,6] --quiet"
rows() {
    sqlite3 "$1" "SELECT r.run_index, r.point_label, r.policy, r.seed, r.rate_rps, r.config_hash,
        m.n_completed, m.n_unfinished, quote(m.hit_rate), quote(m.ttft_p99), quote(m.e2e_p99),
        quote(m.imbalance_work), m.steps, m.events FROM runs r JOIN run_metrics m ON m.run_id = r.id
        WHERE r.experiment_id = (SELECT max(id) FROM experiments) ORDER BY r.run_index"
    sqlite3 "$1" "SELECT point, policy, seed, slo_s, quote(capacity_rps), censoring FROM capacities
        WHERE experiment_id = (SELECT max(id) FROM experiments) ORDER BY point, policy, seed, slo_s"
}
"$CRSIM" run "$SMALL" $SWEEP --jobs 1 --set "experiment.db=$TMP/j1.db" >/dev/null 2>"$TMP/err" || fail "jobs 1: $(cat "$TMP/err")"
"$CRSIM" run "$SMALL" $SWEEP --jobs 2 --set "experiment.db=$TMP/j2.db" >/dev/null 2>"$TMP/err" || fail "jobs 2: $(cat "$TMP/err")"
rows "$TMP/j1.db" >"$TMP/r1"
rows "$TMP/j2.db" >"$TMP/r2"
[ "$(grep -c . "$TMP/r1")" -ge 16 ] || fail "sweep stored too few rows: $(cat "$TMP/r1")"
cmp -s "$TMP/r1" "$TMP/r2" && echo "ok: --jobs 1 and --jobs 2 give identical runs" || { fail "--jobs 1 vs 2 differ"; diff "$TMP/r1" "$TMP/r2" | head; }
for i in 0 1 2; do
    "$CRSIM" run "$SMALL" $SWEEP --jobs 2 --shard "$i/3" --set "experiment.db=$TMP/shard$i.db" >/dev/null 2>"$TMP/err" || fail "shard $i: $(cat "$TMP/err")"
done
"$CRSIM" merge "$TMP/merged.db" "$TMP/shard0.db" "$TMP/shard1.db" "$TMP/shard2.db" >/dev/null 2>"$TMP/err" || fail "merge: $(cat "$TMP/err")"
rows "$TMP/merged.db" >"$TMP/rm"
cmp -s "$TMP/r1" "$TMP/rm" && echo "ok: 3 merged shards equal the unsharded run" || { fail "merged shards differ"; diff "$TMP/r1" "$TMP/rm" | head; }
[ "$(sqlite3 "$TMP/merged.db" "SELECT status FROM experiments")" = complete ] || fail "merged experiment not complete"
expect_error 2 "expected disjoint shards" -- "$CRSIM" merge "$TMP/merged2.db" "$TMP/shard0.db" "$TMP/shard0.db"
expect_error 2 "differs from" -- "$CRSIM" merge "$TMP/merged3.db" "$TMP/shard0.db" "$DB"
expect_error 2 "--shard '3/3'" -- "$CRSIM" run "$SMALL" --shard 3/3
# Kill midway (after the first stored run), then resume.
"$CRSIM" run "$SMALL" $SWEEP --jobs 1 --set "experiment.db=$TMP/k.db" >/dev/null 2>&1 &
pid=$!
n=0
while [ "$n" -lt 1 ] && kill -0 "$pid" 2>/dev/null; do
    sleep 0.05
    n=$(sqlite3 "$TMP/k.db" "SELECT count(*) FROM runs" 2>/dev/null || echo 0)
done
kill -INT "$pid" 2>/dev/null
wait "$pid"
killed=$?
done_before=$(sqlite3 "$TMP/k.db" "SELECT count(*) FROM runs")
"$CRSIM" run "$SMALL" $SWEEP --jobs 2 --resume --set "experiment.db=$TMP/k.db" >/dev/null 2>"$TMP/err" || fail "resume: $(cat "$TMP/err")"
rows "$TMP/k.db" >"$TMP/rk"
resumed=$(sqlite3 "$TMP/k.db" "SELECT count(*) FROM runs WHERE resumed_from IS NOT NULL")
cmp -s "$TMP/r1" "$TMP/rk" && echo "ok: killed (exit $killed after $done_before runs) and resumed ($resumed reused) equals the uninterrupted sweep" || { fail "resume differs"; diff "$TMP/r1" "$TMP/rk" | head; }
[ "$resumed" -ge 1 ] || fail "resume reused no stored run"
st=$(sqlite3 "$TMP/k.db" "SELECT group_concat(status) FROM experiments")
# A kill before the last run is stored leaves it incomplete (exit 130, issue 38 D1).
total=$(sqlite3 "$TMP/k.db" "SELECT n_runs_planned FROM experiments WHERE id = 1")
if [ "$done_before" -lt "$total" ]; then
    [ "$killed" -eq 130 ] && [ "$st" = incomplete,complete ] || fail "kill after $done_before of $total runs: exit $killed, statuses $st"
else
    case "$st" in incomplete,complete|complete,complete) ;; *) fail "statuses after kill+resume: $st" ;; esac
fi

# Pruning loads above a series' first SLO failure leaves every capacity
# unchanged, stores fewer runs, and does not depend on --jobs.
PR="--set workload.trace=$TRACE --set experiment.rates=[0.5,1,2,4] --set experiment.seeds=[5,6] --set experiment.report_rate=1 --quiet"
caps() { sqlite3 "$1" "SELECT policy, seed, slo_s, quote(capacity_rps), censoring FROM capacities ORDER BY policy, seed, slo_s"; }
"$CRSIM" run "$SMALL" $PR --jobs 2 --set "experiment.db=$TMP/np.db" >/dev/null 2>&1 || fail "unpruned run"
"$CRSIM" run "$SMALL" $PR --jobs 1 --set experiment.prune=true --set "experiment.db=$TMP/p1.db" >/dev/null 2>&1 || fail "pruned run, 1 job"
"$CRSIM" run "$SMALL" $PR --jobs 2 --set experiment.prune=true --set "experiment.db=$TMP/p2.db" >/dev/null 2>&1 || fail "pruned run, 2 jobs"
if [ "$(caps "$TMP/np.db")" = "$(caps "$TMP/p1.db")" ] && [ "$(rows "$TMP/p1.db")" = "$(rows "$TMP/p2.db")" ] &&
    [ "$(sqlite3 "$TMP/p1.db" "SELECT count(*) FROM runs")" -lt "$(sqlite3 "$TMP/np.db" "SELECT count(*) FROM runs")" ]; then
    echo "ok: pruning keeps capacities, stores fewer runs, independent of --jobs"
else
    fail "pruning changed capacities or depends on --jobs"
fi
expect_error 2 "experiment.prune needs every load" -- "$CRSIM" run "$SMALL" $PR --set experiment.prune=true --shard 0/2 --set "experiment.db=$TMP/ps.db"

# Huge pages (exp_hugepages, sim/exp/cli.h): the stored rows are the same
# with them (the default) and without (CRSIM_HUGEPAGES=0); with the
# kernel's THP mode `madvise`, crsim adds glibc.malloc.hugetlb=1 to the
# user's GLIBC_TUNABLES (a stand-in gnuplot, a child of crsim plot, shows
# its environment), and leaves a user's own hugetlb setting, or the
# variable with CRSIM_HUGEPAGES=0, as it was.
CRSIM_HUGEPAGES=0 "$CRSIM" run "$SMALL" $PR --jobs 2 --set "experiment.db=$TMP/hp0.db" >/dev/null 2>&1 || fail "run without huge pages"
[ "$(rows "$TMP/np.db")" = "$(rows "$TMP/hp0.db")" ] && [ -n "$(rows "$TMP/np.db")" ] ||
    fail "huge pages changed the stored rows"
printf '#!/bin/sh\nprintf "%%s\\n" "$GLIBC_TUNABLES" >>"%s/tunables.txt"\n' "$TMP" >"$TMP/fakegp"
chmod +x "$TMP/fakegp"
for hp in 1 0; do
    for tun in glibc.malloc.check=0 glibc.malloc.hugetlb=0; do
        CRSIM_HUGEPAGES=$hp GLIBC_TUNABLES=$tun CRSIM_GNUPLOT="$TMP/fakegp" "$CRSIM" plot "$TMP/np.db" \
            --out "$TMP/hpfig" >/dev/null 2>&1
    done
done
if grep -q '\[madvise\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null; then
    want="glibc.malloc.check=0:glibc.malloc.hugetlb=1 glibc.malloc.hugetlb=0 glibc.malloc.check=0 glibc.malloc.hugetlb=0"
else
    want="glibc.malloc.check=0 glibc.malloc.hugetlb=0 glibc.malloc.check=0 glibc.malloc.hugetlb=0"
fi
got=$(sort -u "$TMP/tunables.txt" 2>/dev/null | tr '\n' ' ')
want_sorted=$(printf '%s\n' $want | sort -u | tr '\n' ' ')
[ "$got" = "$want_sorted" ] && echo "ok: huge pages: same rows; GLIBC_TUNABLES seen by children: $got" ||
    fail "GLIBC_TUNABLES seen by crsim's children: '$got', expected '$want_sorted'"

# crsim plan on an operator's rate file.
printf 'key,rate\nwhale,12\nb,3\nc,2\nd,1\ne,0.5\n' >"$TMP/rates.csv"
if "$CRSIM" plan --rates "$TMP/rates.csv" --destinations 4 --q-cap 4 --slots 1 --out "$TMP/table.csv" >"$TMP/plan" 2>"$TMP/err"; then
    # C = 4: whale needs k = 3 (12/4), then b (k = 1) fills C; c, d, e are the cold tail.
    grep -q "admitted 2 keys" "$TMP/plan" && grep -q "sum k_b = 4" "$TMP/plan" &&
        grep -q "^whale,12,3," "$TMP/table.csv" && [ "$(wc -l < "$TMP/table.csv")" -eq 3 ] &&
        echo "ok: crsim plan" || fail "crsim plan output: $(cat "$TMP/plan") $(cat "$TMP/table.csv")"
else
    fail "crsim plan failed: $(cat "$TMP/err")"
fi
expect_error 2 "zero_rate.csv:2: rate 0" -- "$CRSIM" plan --rates "$T/bad-inputs/zero_rate.csv" --destinations 4 --q-cap 4 --slots 1
expect_error 2 "plan: needs --rates FILE" -- "$CRSIM" plan --rates "$TMP/rates.csv" --destinations 4
expect_error 2 "--destinations '2.5'" -- "$CRSIM" plan --rates "$TMP/rates.csv" --destinations 2.5 --q-cap 1 --slots 1

# Help works and lists every key.
"$CRSIM" help config | grep -q "workload.key_ids" || fail "help config lacks workload.key_ids"
"$CRSIM" --help | grep -q "usage: crsim" || fail "--help"

if [ "$fails" -ne 0 ]; then echo "$fails failure(s)"; exit 1; fi
echo "cli: ok"
