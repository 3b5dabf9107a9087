#!/bin/sh
# Regression tests of issue 38 ("Reliability, round 2"), one block per
# defect (D1...) or class (C7...): each failed on 7df2dfb.
# usage: reliability.sh CRSIM TESTS_DIR
set -u
CRSIM=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
T=$(cd "$2" && pwd)
ROOT="$T/.."
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
. "$(dirname "$0")/lib.sh"
q() { sqlite3 -cmd ".timeout 5000" "$@"; }


# A sweep of 40 short synthetic runs (about 1 s).
TINY="$TMP/tiny.yaml"
cat >"$TINY" <<'Y'
experiment: {name: tiny, policies: [flat_lb, sticky], rates: [0.5, 0.6], seeds: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], warmup_s: 0, drain_s: 30, min_measured: 1, timeline_s: 0}
cluster: {destinations: 2}
workload: {type: synthetic, duration_s: 20, keys: {n: 20}}
Y

# ---- D1: SIGTERM between runs: exit 143, incomplete, no capacities; --resume completes ----
for j in 1 2; do
    DB="$TMP/d1-$j.db"
    CRSIM_TEST_SIGTERM_AFTER_RUNS=3 "$CRSIM" run "$TINY" --quiet --jobs $j --set "experiment.db=$DB" >"$TMP/out" 2>"$TMP/err"
    st=$?
    got=$(q "$DB" "SELECT status || ',' || (SELECT count(*) FROM runs) || ',' || (SELECT count(*) FROM capacities) FROM experiments")
    if [ $st -eq 143 ] && [ "$got" = "incomplete,3,0" ] && grep -q "interrupted by a signal: 3 of 40 runs stored" "$TMP/err" &&
        ! grep -q "^stored" "$TMP/out"; then
        echo "ok: SIGTERM after 3 runs (--jobs $j): exit 143, incomplete, 3 runs, no capacities"
    else
        fail "SIGTERM after 3 runs (--jobs $j): exit $st, status,runs,capacities $got: $(cat "$TMP/err")"
    fi
    "$CRSIM" run "$TINY" --quiet --jobs $j --resume --set "experiment.db=$DB" >"$TMP/out" 2>"$TMP/err" || fail "resume after SIGTERM: $(cat "$TMP/err")"
    got=$(q "$DB" "SELECT status || ',' || (SELECT count(*) FROM runs WHERE experiment_id = 2) || ',' || (SELECT count(*) FROM runs WHERE resumed_from IS NOT NULL) FROM experiments WHERE id = 2")
    [ "$got" = "complete,40,3" ] && echo "ok: --resume completes it (40 runs, 3 reused)" || fail "resume: status,runs,reused $got"
done

# ---- D2: names from a database reach gnuplot as data, never as commands ----
if command -v gnuplot >/dev/null 2>&1; then
    DB="$TMP/d2.db"
    "$CRSIM" run "$TINY" --quiet --jobs 2 --set experiment.seeds=[1,2] --set 'experiment.sweep=["cluster.destinations=[2,3]"]' --set "experiment.db=$DB" >/dev/null 2>"$TMP/err" || fail "D2 run: $(cat "$TMP/err")"
    # backquotes, both quotes, a newline, a gnuplot macro, a backslash
    hostile="x\`touch $TMP/PWNED1\`'\"); system(\"touch $TMP/PWNED2\") #
@m \\ \$1"
    q "$DB" "UPDATE experiments SET name = '$(printf '%s' "$hostile" | sed "s/'/''/g")'; UPDATE runs SET point_label = point_label || '$(printf '%s' "$hostile" | sed "s/'/''/g")'"
    q "$DB" "UPDATE runs SET policy = 'p\`touch $TMP/PWNED3\`' WHERE policy = 'sticky'"
    "$CRSIM" plot "$DB" --out "$TMP/plot'\`touch $TMP/PWNED4\`" >"$TMP/out" 2>"$TMP/err"
    st=$?
    if ls "$TMP" | grep -q PWNED; then
        fail "crsim plot ran shell text from the database: $(ls "$TMP" | grep PWNED)"
    elif [ $st -ne 0 ] || [ "$(ls "$TMP/plot'\`touch $TMP/PWNED4\`"/*.png | wc -l)" -ne 8 ]; then
        fail "plot of hostile names: exit $st, $(cat "$TMP/err")"
    else
        echo "ok: hostile experiment name, point label, policy and --out plotted as text (8 figures: capacity, p99, hit and serving-load of two points)"
    fi
else
    echo "skip: D2 (no gnuplot)"
fi

# ---- D5: a run's identity includes the bytes of every input file ----
# A 60-request trace; a config naming it and a copied model spec.
awk 'BEGIN { for (i = 0; i < 60; i++) printf "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": 20, \"hash_ids\": [%d, %d]}\n", i * 500, 1024 - 16 * (i % 7), i % 5, 100 + i }' >"$TMP/t.jsonl"
cp "$ROOT/models/specs/llama-3.3-70b.yaml" "$TMP/model.yaml"
cat >"$TMP/d5.yaml" <<Y
experiment: {name: d5, policies: [flat_lb, sticky], rates: [2, 4], warmup_share: 0.2, min_measured: 5, drain_s: 60}
cluster: {destinations: 2, model: $TMP/model.yaml}
cost: {profile: llama-3.3-70b_h100-sxm_tp2_fp8-fp8}
workload: {trace: t.jsonl}
Y
D5="$CRSIM run $TMP/d5.yaml --quiet --jobs 2"
(cd "$TMP" && $D5 >/dev/null 2>"$TMP/err") || fail "D5 run: $(cat "$TMP/err")"
n=$(q "$TMP/results/d5.db" "SELECT count(*) FROM runs WHERE inputs LIKE '%t.jsonl%' AND inputs LIKE '%model.yaml%'")
[ "$n" = 4 ] && echo "ok: runs store their input files' hashes" || fail "runs.inputs lacks the trace or the spec ($n of 4): $(q "$TMP/results/d5.db" "SELECT inputs FROM runs LIMIT 1")"
(cd "$TMP" && $D5 --resume >/dev/null 2>"$TMP/err") || fail "D5 resume: $(cat "$TMP/err")"
[ "$(q "$TMP/results/d5.db" "SELECT count(*) FROM runs WHERE experiment_id = 2 AND resumed_from IS NOT NULL")" = 4 ] && echo "ok: unchanged inputs: 4 runs reused" || fail "unchanged inputs not reused"
# the trace is edited: resume simulates again, says which file, equals a fresh run
head -40 "$TMP/t.jsonl" >"$TMP/t2" && mv "$TMP/t2" "$TMP/t.jsonl"
(cd "$TMP" && $D5 --resume >/dev/null 2>"$TMP/err") || fail "D5 resume after edit: $(cat "$TMP/err")"
grep -q "resume: $TMP/t.jsonl changed since run [0-9]* was stored (content hash [0-9a-f]* ([0-9]* bytes), now" "$TMP/err" && echo "ok: resume names the changed trace" || fail "resume after a trace edit says: $(cat "$TMP/err")"
(cd "$TMP" && $D5 --set experiment.db=fresh.db >/dev/null 2>&1)
a=$(q "$TMP/results/d5.db" "SELECT group_concat(m.n_arrived || ':' || quote(m.hit_rate), ',') FROM runs r JOIN run_metrics m ON m.run_id = r.id WHERE r.experiment_id = 3 AND r.resumed_from IS NULL")
b=$(q "$TMP/fresh.db" "SELECT group_concat(m.n_arrived || ':' || quote(m.hit_rate), ',') FROM run_metrics m")
[ -n "$a" ] && [ "$a" = "$b" ] && echo "ok: resumed after the edit equals a fresh run ($a)" || fail "resume after a trace edit: $a, fresh run: $b"
# a spec edited between shards: merge refuses, naming the file
(cd "$TMP" && $D5 --shard 0/2 --set experiment.db=s0.db >/dev/null 2>&1)
echo "# edited" >>"$TMP/model.yaml"
(cd "$TMP" && $D5 --shard 1/2 --set experiment.db=s1.db >/dev/null 2>&1)
expect_error 2 "s1.db: input file $TMP/model.yaml of sweep point 0 differs from the shards merged before (content hash" -- "$CRSIM" merge "$TMP/m.db" "$TMP/s0.db" "$TMP/s1.db"

# ---- D3: scripts/slurm-sweep quotes the config's name in the jobs' shell ----
# A fake sbatch runs each --wrap command as Slurm's shell would (array
# task 0 and 1; the merge job after them).
mkdir -p "$TMP/d3/bin"
cat >"$TMP/d3/bin/sbatch" <<'S'
#!/bin/sh
for a in "$@"; do case $a in --wrap=*) w=${a#--wrap=} ;; --array=*) arr=1 ;; esac; done
if [ -n "${arr:-}" ]; then
    SLURM_ARRAY_TASK_ID=0 sh -c "$w" >/dev/null 2>&1 && SLURM_ARRAY_TASK_ID=1 sh -c "$w" >/dev/null 2>&1 || echo "task failed" >&2
else
    sh -c "$w" >/dev/null 2>&1 || echo "merge failed" >&2
fi
echo 4242
S
chmod +x "$TMP/d3/bin/sbatch"
hostile="x;touch PWNED_slurm;\$(touch PWNED_slurm2) 'y z"
cp "$TINY" "$TMP/d3/$hostile.yaml"
(cd "$TMP/d3" && PATH="$TMP/d3/bin:$PATH" CRSIM="$CRSIM" "$ROOT/scripts/slurm-sweep" "./$hostile.yaml" 2 --set experiment.seeds=[1] >"$TMP/out" 2>"$TMP/err")
if ls "$TMP/d3" | grep -q "^PWNED"; then
    fail "slurm-sweep ran text of the config's name: $(ls "$TMP/d3")"
elif [ -s "$TMP/err" ] || [ "$(q "$TMP/d3/results/x_touch_PWNED_slurm___touch_PWNED_slurm2___y_z.db" "SELECT status FROM experiments" 2>&1)" != complete ]; then
    fail "slurm-sweep with a hostile config name: $(cat "$TMP/err"; ls "$TMP/d3/results")"
else
    echo "ok: slurm-sweep with ; \$( ) ' and a space in the config name: 2 shards merged, nothing run"
fi

# ---- D4: the trace cache never writes or reads through a planted symlink ----
mkdir -p "$TMP/d4"
awk 'BEGIN { for (i = 0; i < 1500; i++) printf "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": 20, \"hash_ids\": [%d, %d]}\n", i * 50, 1000, i % 5, 100 + i }' >"$TMP/d4/t.jsonl"
sed "s|trace: t.jsonl|trace: $TMP/d4/t.jsonl|" "$TMP/d5.yaml" >"$TMP/d4/c.yaml"
"$CRSIM" run "$TMP/d4/c.yaml" --dry-run >/dev/null 2>"$TMP/err" || fail "D4 dry run: $(cat "$TMP/err")"
cache=$(ls -a "$TMP/d4" | grep 'crsim-cache$')
if [ -z "$cache" ]; then
    fail "D4: no trace cache file written"
else
    rm -f "$TMP/d4/$cache"
    echo "victim" >"$TMP/d4/victim"
    # links at the names the old code used, <cache>.tmp.<pid>, for the next
    # pids (made by one process, so that they are the next pids)
    python3 -c "
import os, sys
last = int(open('/proc/sys/kernel/ns_last_pid').read())
for p in range(last + 1, last + 301):
    os.symlink(sys.argv[1] + '/victim', sys.argv[1] + '/' + sys.argv[2] + '.tmp.%d' % p)" "$TMP/d4" "$cache" || fail "D4: cannot plant the links"
    "$CRSIM" run "$TMP/d4/c.yaml" --dry-run >/dev/null 2>"$TMP/err" || fail "D4 dry run with planted links: $(cat "$TMP/err")"
    if [ "$(cat "$TMP/d4/victim")" != victim ]; then
        fail "the trace cache was written through a planted symlink"
    elif [ ! -f "$TMP/d4/$cache" ] || [ -L "$TMP/d4/$cache" ]; then
        fail "D4: the cache file was not written beside the planted links"
    else
        echo "ok: trace cache written beside 300 planted symlinks, none followed"
    fi
    # a symlink planted at the cache's own name is not read (rebuilt instead)
    mv "$TMP/d4/$cache" "$TMP/d4/real-cache"
    ln -s "$TMP/d4/real-cache" "$TMP/d4/$cache"
    "$CRSIM" run "$TMP/d4/c.yaml" --dry-run >/dev/null 2>"$TMP/err" || fail "D4 dry run with a linked cache: $(cat "$TMP/err")"
    [ -f "$TMP/d4/$cache" ] && [ ! -L "$TMP/d4/$cache" ] && echo "ok: a symlink at the cache's name is replaced, not read" || fail "a symlink at the cache's name stayed"
fi

# ---- D10: Azure date-times far apart: a range error, not a wrapped product ----
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 00:00:00,100,20\n2023-11-16 00:00:05,100,20\n2700-01-01 00:00:00,100,20\n' >"$TMP/az.csv"
expect_error 2 "az.csv:4: '2700-01-01 00:00:00' in column 'TIMESTAMP' is 676 years from the first row's date-time; expected rows within 292 years" -- "$CRSIM" workload describe "$TMP/d5.yaml" --set "workload.trace=$TMP/az.csv" --requests 3
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 00:00:00,100,20\n2317-01-01 00:00:00,100,20\n' >"$TMP/az2.csv"
expect_error 2 "az2.csv:3: '2317-01-01 00:00:00' in column 'TIMESTAMP' is 293 years from the first" -- "$CRSIM" workload describe "$TMP/d5.yaml" --set "workload.trace=$TMP/az2.csv" --requests 3
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 00:00:00,100,20\n2315-01-01 00:00:00,100,20\n' >"$TMP/az3.csv"
"$CRSIM" workload describe "$TMP/d5.yaml" --set "workload.trace=$TMP/az3.csv" --requests 3 2>"$TMP/err" | grep -q "2 requests" && echo "ok: 291 years apart still read" || fail "291 years apart: $(cat "$TMP/err")"

# ---- D11: fault destinations are checked against the cluster.groups fleet at load ----
cat >"$TMP/gf.yaml" <<'Y'
experiment: {name: gf, policies: [flat_lb], rates: [5], warmup_s: 5, min_measured: 10}
cluster:
  groups:
    - {name: h100, destinations: 2}
    - {name: h200, destinations: 1, hardware: h200-sxm}
faults: {events: ["30:slow:3:3"]}
workload: {type: synthetic, duration_s: 100, keys: {n: 100}}
Y
expect_error 2 "gf.yaml:6: key 'faults.events' item 0 is '30:slow:3:3': destination 3 of 3; expected DEST in \[0, 2\]" -- "$CRSIM" run "$TMP/gf.yaml" --dry-run
expect_error 2 "destination 3 of 3" -- "$CRSIM" run "$TMP/gf.yaml" --set "experiment.db=$TMP/gf.db"
[ -e "$TMP/gf.db" ] && fail "a fault beyond the groups' fleet created $TMP/gf.db" || echo "ok: nothing written"
"$CRSIM" run "$TMP/gf.yaml" --dry-run --set 'faults.events=["30:slow:2:3"]' >/dev/null 2>"$TMP/err" && echo "ok: destination 2 of 3 passes" || fail "destination 2 of 3: $(cat "$TMP/err")"

# ---- D6: merge checks each shard's schema version and is atomic ----
M="$CRSIM run $TINY --quiet --set experiment.seeds=[1,2]"
$M --shard 0/2 --set "experiment.db=$TMP/sh0.db" >/dev/null 2>&1
$M --shard 1/2 --set "experiment.db=$TMP/sh1.db" >/dev/null 2>&1
cp "$TMP/sh1.db" "$TMP/v999.db" && q "$TMP/v999.db" "UPDATE meta SET value = '999' WHERE key = 'schema_version'"
cp "$TMP/sh1.db" "$TMP/dropcol.db" && q "$TMP/dropcol.db" "ALTER TABLE run_metrics DROP COLUMN hit_rate"
v=$(sed -n 's/^#define EXP_STORE_SCHEMA_VERSION \([0-9]*\).*/\1/p' "$ROOT/sim/exp/store.h")
expect_error 2 "v999.db: result schema version 999; this crsim merges version $v" -- "$CRSIM" merge "$TMP/mg.db" "$TMP/sh0.db" "$TMP/v999.db"
[ -e "$TMP/mg.db" ] && fail "a refused merge created its output" || echo "ok: a refused merge creates no output"
expect_error 2 "dropcol.db: cannot copy its runs (.*); expected an unaltered crsim result database of schema version $v" -- "$CRSIM" merge "$TMP/mg.db" "$TMP/sh0.db" "$TMP/dropcol.db"
# a merge failing after its first shard leaves an existing output as it was
"$CRSIM" merge "$TMP/mg.db" "$TMP/sh0.db" "$TMP/sh1.db" >/dev/null 2>"$TMP/err" || fail "merge: $(cat "$TMP/err")"
before=$(q "$TMP/mg.db" "SELECT group_concat(id || ':' || status) FROM experiments")
"$CRSIM" merge "$TMP/mg.db" "$TMP/sh0.db" "$TMP/dropcol.db" >/dev/null 2>&1
after=$(q "$TMP/mg.db" "SELECT group_concat(id || ':' || status) FROM experiments")
left=$(ls "$TMP" | grep -c "mg.db.merge-")
[ "$before" = "1:complete" ] && [ "$after" = "$before" ] && [ "$left" = 0 ] && echo "ok: a failed merge leaves the output unchanged ($after)" || fail "failed merge: experiments before $before, after $after, $left temporary file(s) left"

# ---- C11: a write error on standard output fails the command ----
if [ -w /dev/full ]; then
    for cmd in "run $TINY --dry-run" "workload describe $TINY --requests 100" "help config" "version"; do
        $CRSIM $cmd >/dev/full 2>"$TMP/err"
        st=$?
        [ $st -eq 2 ] && grep -q "cannot write standard output" "$TMP/err" && echo "ok: crsim $cmd > /dev/full: exit 2" || fail "crsim $cmd > /dev/full: exit $st: $(cat "$TMP/err")"
    done
else
    echo "skip: C11 (no /dev/full)"
fi

# A closed pipe on standard output (`crsim run ... | head -1`; here a
# reader that exits at once, `true`): the runs are stored and the
# experiment marked complete; the failed write is reported (exit 2), not
# a death by SIGPIPE that left status 'running'.
st=$( { "$CRSIM" run "$TINY" --jobs 2 --set "experiment.db=$TMP/pipe.db" 2>"$TMP/err"; echo $? >"$TMP/st"; } | true; cat "$TMP/st")
got=$(q "$TMP/pipe.db" "SELECT status || ',' || (SELECT count(*) FROM runs) FROM experiments")
[ "$st" = 2 ] && [ "$got" = "complete,40" ] && grep -q "cannot write standard output: Broken pipe" "$TMP/err" &&
    echo "ok: run | true: complete, 40 runs, exit 2 naming the broken pipe" ||
    fail "run | true: exit $st, status,runs $got: $(cat "$TMP/err")"

# ---- C14: bytes after the last gzip member are an error (as gzip -t says) ----
G="$TMP/gz"
mkdir -p "$G"
awk 'BEGIN { for (i = 0; i < 300; i++) printf "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": 20, \"hash_ids\": [%d, %d]}\n", i * 50, 1000, i % 5, 100 + i }' >"$G/t.jsonl"
gzip -c "$G/t.jsonl" >"$G/t.jsonl.gz"
head -150 "$G/t.jsonl" | gzip -c >"$G/c.jsonl.gz" && tail -150 "$G/t.jsonl" | gzip -c >>"$G/c.jsonl.gz"
cp "$G/t.jsonl.gz" "$G/g.jsonl.gz" && printf 'garbage' >>"$G/g.jsonl.gz"
DESC="env CRSIM_TRACE_CACHE=off $CRSIM workload describe $TMP/d5.yaml --requests 10"
plain=$($DESC --set "workload.trace=$G/t.jsonl" 2>&1 | sed 1d)
for f in t.jsonl.gz c.jsonl.gz; do
    [ "$($DESC --set "workload.trace=$G/$f" 2>&1 | sed 1d)" = "$plain" ] && echo "ok: $f reads as the plain file" || fail "$f differs from the plain file"
done
expect_error 2 "g.jsonl.gz:301: cannot read: Bad message" -- $DESC --set "workload.trace=$G/g.jsonl.gz"

# ---- C9: one decimal number reader: no hexadecimal, inf, nan; ranges in the value's type ----
{ echo 'Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type'; i=1; while [ $i -le 20 ]; do echo "$i,ChatGPT,100,20,120,Conversation log"; i=$((i + 1)); done; } >"$TMP/b.csv"
cp "$TMP/b.csv" "$TMP/bhex.csv" && echo '0x200,ChatGPT,100,20,120,Conversation log' >>"$TMP/bhex.csv"
cp "$TMP/b.csv" "$TMP/bbig.csv" && echo '1e308,ChatGPT,100,20,120,Conversation log' >>"$TMP/bbig.csv"
BG="$CRSIM workload describe $TMP/d5.yaml --set workload.trace_format=burstgpt --requests 10"
expect_error 2 "bhex.csv:22: '0x200' in column 'Timestamp' is not a time" -- $BG --set "workload.trace=$TMP/bhex.csv"
expect_error 2 "bbig.csv:22: '1e308' in column 'Timestamp' is not a time" -- $BG --set "workload.trace=$TMP/bbig.csv"
expect_error 2 "item 0 is '0x10:crash:0'; expected TIME_S a decimal number" -- "$CRSIM" run "$TINY" --dry-run --set 'faults.events=["0x10:crash:0"]'
expect_error 2 "item 0 is '10:slow:0:0x2'; expected FACTOR" -- "$CRSIM" run "$TINY" --dry-run --set 'faults.events=["10:slow:0:0x2"]'
expect_error 2 "experiment.seeds\[0\]' is 9007199254740993; expected an integer in \[0, 9007199254740992\]" -- "$CRSIM" run "$TINY" --dry-run --set 'experiment.seeds=[9007199254740993]'
printf 'key,rate\na,1\nb,2\n' >"$TMP/rates.csv"
expect_error 2 "plan: --q-cap '0x10'; expected a number > 0" -- "$CRSIM" plan --rates "$TMP/rates.csv" --destinations 4 --q-cap 0x10 --slots 2
expect_error 2 "plan: --q-cap 'inf'" -- "$CRSIM" plan --rates "$TMP/rates.csv" --destinations 4 --q-cap inf --slots 2
expect_error 2 "--jobs '0x2'" -- "$CRSIM" run "$TINY" --dry-run --jobs 0x2
"$CRSIM" plan --rates "$TMP/rates.csv" --destinations 4 --q-cap 1e1 --slots 2 >/dev/null 2>"$TMP/err" && echo "ok: --q-cap 1e1 (decimal exponent) accepted" || fail "--q-cap 1e1: $(cat "$TMP/err")"

# ---- C7: a database path that cannot be opened, or a file that is not a database: exit 2 everywhere ----
echo "not a database" >"$TMP/garbage.db"
expect_error 2 "garbage.db: cannot read its tables" -- "$CRSIM" run "$TINY" --quiet --set experiment.seeds=[1] --set "experiment.db=$TMP/garbage.db"
expect_error 2 "garbage.db: not a crsim result database" -- "$CRSIM" report "$TMP/garbage.db"
expect_error 2 "/proc/crsim-x.db: cannot open or create the database" -- "$CRSIM" run "$TINY" --quiet --set experiment.seeds=[1] --set experiment.db=/proc/crsim-x.db
expect_error 2 "garbage.db: cannot read its tables" -- "$CRSIM" merge "$TMP/garbage.db" "$TMP/sh0.db"

# ---- C12: an output location is checked before the work ----
t0=$(date +%s)
expect_error 2 "/proc/crsim-map/map.tsv: cannot write the map data" -- "$CRSIM" regime "$ROOT/experiments/regime.yaml" --map "workload.prefix.mean=[1,2]" "workload.input.mean=[1,2]" --out /proc/crsim-map --seeds 1
grep -q calibrating "$TMP/out" && fail "regime --map calibrated before checking --out" || echo "ok: --out checked before calibrating ($(($(date +%s) - t0)) s)"

# ---- C15: messages: bytes that are not UTF-8 escaped as \xHH, ... ----
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,\37712,3\n' >"$TMP/ff.csv"
printf 'experiment: {name: tr, rates: [1], min_measured: 1}\ncluster: {destinations: 2}\nworkload: {trace: TRACE}\n' >"$TMP/trace.yaml"
expect_error 2 "ff.csv:2: '\\\\xff12' in column 'ContextTokens' is not a token count" -- "$CRSIM" run "$TMP/trace.yaml" --dry-run --set "workload.trace=$TMP/ff.csv"
LC_ALL=C grep -q "$(printf '\377')" "$TMP/err" && fail "a raw 0xff byte in the message: $(od -c "$TMP/err" | head -3)"
# ... line numbers counted at line ends: 64 MB of NUL bytes, gzip-compressed
# (one line), was reported near "line 16390", one per 4095-byte chunk
# (1 GB: "line 244201")
head -c 67108864 /dev/zero | gzip -1 >"$TMP/zeros.jsonl.gz"
expect_error 2 "zeros.jsonl.gz:1: NUL byte in line; expected a text trace" -- "$CRSIM" run "$TMP/trace.yaml" --dry-run --set "workload.trace=$TMP/zeros.jsonl.gz"
printf '\n\n  \nhello\n' >"$TMP/h.csv"
expect_error 2 "h.csv:4: cannot tell the trace format from this line" -- "$CRSIM" run "$TMP/trace.yaml" --dry-run --set "workload.trace=$TMP/h.csv"
# ... a file named as a spec is not echoed: its name and the expected form
printf 'SECRET_HEADER,ContextTokens\n1,2\n' >"$TMP/spec.csv"
for k in cluster.hardware cluster.model cost.profile; do
    expect_error 2 "spec.csv:1: top level is a single text value, not a mapping; expected a YAML file" -- "$CRSIM" run "$TINY" --dry-run --set "$k=$TMP/spec.csv"
    grep -q SECRET "$TMP/err" && fail "$k: the spec file's content is echoed: $(cat "$TMP/err")"
done
expect_error 2 "zeros.jsonl.gz:1: YAML syntax error: .*; expected a YAML text file (UTF-8, not compressed or binary)" -- "$CRSIM" run "$TINY" --dry-run --set "cluster.model=$TMP/zeros.jsonl.gz"

# ---- C8: the size estimate counts every dimension that scales ----
# CRSIM_MEM_AVAILABLE_GB fakes the machine's memory (docs/harness.md): each
# refusal is immediate, exit 2, before a database exists, naming the key.
mem() { CRSIM_MEM_AVAILABLE_GB=$1; export CRSIM_MEM_AVAILABLE_GB; shift; "$@"; st=$?; unset CRSIM_MEM_AVAILABLE_GB; return $st; }
S1="--set experiment.seeds=[1] --set experiment.db=$TMP/c8.db"
expect_error 2 "cluster.destinations 100000 x gateway.replicas 1.*expected fewer destinations" -- mem 0.5 "$CRSIM" run "$TINY" --quiet $S1 --set cluster.destinations=100000
expect_error 2 "cluster.destinations 200 x gateway.replicas 4096.*(gateway.replicas)" -- mem 2 "$CRSIM" run "$TINY" --quiet $S1 --set cluster.destinations=200 --set gateway.replicas=4096
expect_error 2 "a timeline of 1e+07 windows of experiment.timeline_s 0.1.*expected a longer experiment.timeline_s" -- mem 0.5 "$CRSIM" run "$TINY" --quiet $S1 --set experiment.timeline_s=0.1 --set workload.duration_s=1e6 --set experiment.rates=[0.01] --set experiment.policies=[flat_lb]
[ -e "$TMP/c8.db" ] && fail "a refused run created its database"
v=1,2,3,4,5,6,7,8,9,10
expect_error 2 "the sweep has 1000000 points.*expected fewer values in experiment.sweep" -- mem 2 "$CRSIM" run "$TINY" --dry-run --set "experiment.sweep=[\"workload.seed=[$v]\",\"experiment.drain_s=[$v]\",\"workload.keys.n=[$v]\",\"engine.block_size=[$v]\",\"cluster.tp=[$v]\",\"experiment.warmup_s=[$v]\"]"
expect_error 2 "the key population needs about 6 GB (workload.keys.n 100000000" -- mem 1 "$CRSIM" run "$TINY" --dry-run --set workload.keys.n=100000000
expect_error 2 "the key population needs about 6 GB (workload.keys.n 100000000" -- mem 1 "$CRSIM" workload describe "$TINY" --set workload.keys.n=100000000
expect_error 2 "describing 1e+10 requests needs about 2.1e+04 GB.*expected fewer --requests" -- mem 1 "$CRSIM" workload describe "$TINY" --set workload.duration_s=1e9 --requests 1000000000000
# the estimate of an ordinary run names the destinations' share; --force overrides a refusal
mem 1e-6 "$CRSIM" workload describe "$TINY" --force >"$TMP/out" 2>"$TMP/err" && grep -q '^stream' "$TMP/out" &&
    echo "ok: describe --force runs below the memory estimate" || fail "describe --force: $(cat "$TMP/err")"
mem 1e-6 "$CRSIM" run "$TINY" --force $S1 --set experiment.rates=[0.5] --set experiment.policies=[flat_lb] >"$TMP/out" 2>"$TMP/err" &&
    grep -q "^estimate: 1 run to simulate" "$TMP/out" && echo "ok: run --force runs below the memory estimate" || fail "run --force: $(cat "$TMP/err")"
rm -f "$TMP/c8.db"

# ---- fuzz_azure (campaign of issue 38): 108 bytes asking for 2.5e8 synthetic ids ----
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:00,374,44\n2023-11-16 18:15:50.9951690,3962000000,2\n' >"$TMP/ids.csv"
expect_error 2 "ids.csv: trace needs 247625024 synthetic ids (1.98 GB) but only 0.5 GB of memory is available" -- mem 0.5 "$CRSIM" run "$TMP/trace.yaml" --dry-run --set "workload.trace=$TMP/ids.csv" --set workload.trace_block_tokens=16

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all reliability checks passed"
