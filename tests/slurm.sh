#!/bin/sh
# A real Slurm, on this machine: starts munged, slurmctld and slurmd for a
# one-node cluster (localhost, 2 CPUs) from a slurm.conf written into a
# temporary folder (state, spool, logs, pid files and the munge key and
# socket all live there; free TCP ports are picked so that two runs on one
# machine do not meet), waits until the node is idle, submits a sharded
# sweep of a tiny experiment (tests/configs/small.yaml on 600 Mooncake
# requests: 2 routers x 2 loads x 2 seeds = 8 runs, 3 shards) through
# scripts/slurm-sweep as a job array with the dependent merge job, waits
# for both, and checks that every array task and the merge completed on
# the node and that the merged database equals an unsharded run of the
# same sweep: every row of every result table (runs, run_metrics,
# dest_metrics, capacities, timeline, router_intervals, plan_keys, meta,
# experiments), values quoted exactly, minus ids, host, timestamps and
# wall times.  Every daemon it started is stopped on exit (by its pid).
#
# Exit 77 (skip) with the reason where the Slurm or munge programs are
# missing or the daemons cannot start; with CI=true a missing program is
# a failure instead (scripts/setup --slurm installs them; scripts/test
# does).
# usage: slurm.sh CRSIM SOURCE_ROOT TRACE
set -u
CRSIM=$1
SRC=$2
TRACE=$3
# Absolute paths: the test and the jobs run from a folder of their own.
abs() { case $1 in /*) echo "$1" ;; *) echo "$(pwd)/$1" ;; esac; }
CRSIM=$(abs "$CRSIM")
SRC=$(abs "$SRC")
TRACE=$(abs "$TRACE")
PATH=$PATH:/usr/sbin:/sbin
export PATH

skip() { echo "SKIP: $*"; exit 77; }
for p in munged slurmctld slurmd sbatch squeue sinfo scontrol sqlite3; do
    if ! command -v "$p" >/dev/null 2>&1; then
        [ "${CI:-}" = true ] && { echo "FAIL: CI=true but '$p' is missing (scripts/setup --slurm installs slurm-wlm and munge)"; exit 1; }
        skip "'$p' not found: install slurm-wlm and munge (scripts/setup --slurm)"
    fi
done

T=$(mktemp -d /tmp/crsim_slurm_XXXXXX)
chmod 700 "$T"
PIDS=""
cleanup() {
    for p in $PIDS; do
        kill "$p" 2>/dev/null
    done
    for p in $PIDS; do # wait for each to go, at most 10 s, then force
        i=0
        while kill -0 "$p" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
        kill -9 "$p" 2>/dev/null
    done
    if [ "${KEEP:-}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

logs() { for f in "$T"/*.log "$T"/work/results/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -n 15 "$f"; }; done; }
fail() { echo "FAIL: $*"; logs; exit 1; }
# not_ready WHY: the daemons could not start -> skip (CI too: a machine
# where Slurm cannot run is not a test failure), with their logs.
not_ready() { echo "SKIP: $*"; logs; exit 77; }

# Two free TCP ports (not listening in /proc/net/tcp{,6}), from a
# pid-dependent start so that concurrent runs try different ones.
listening() { # PORT -> 0 if something listens on it
    hex=$(printf ':%04X ' "$1")
    cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '$4 == "0A" { print $2 " " }' | grep -q "$hex"
}
port=$((20000 + ($$ * 7) % 30000))
pick() {
    while listening "$port" || listening $((port + 1)); do port=$((port + 2)); done
    echo "$port"
}
CTLD_PORT=$(pick)
SLURMD_PORT=$((CTLD_PORT + 1))
USER_NAME=$(id -un)

mkdir -p "$T/munge" "$T/state" "$T/spool" "$T/work"
chmod 700 "$T/munge"
# munge: a fresh 1024-byte key, its socket in the temporary folder.
dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$T/munge/munge.key"
SOCK=$T/munge/munge.socket
munged --foreground --key-file="$T/munge/munge.key" --socket="$SOCK" \
    --pid-file="$T/munge/munged.pid" --seed-file="$T/munge/munged.seed" \
    --log-file="$T/munged.log" --force >"$T/munged.out.log" 2>&1 &
PIDS="$PIDS $!"

cat >"$T/slurm.conf" <<EOF
# One-node Slurm for tests/slurm.sh (Slurm 22.05 slurm.conf(5)).
ClusterName=crsimtest
SlurmctldHost=localhost
SlurmUser=$USER_NAME
SlurmdUser=$USER_NAME
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCK
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
MailProg=/bin/true
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=600
KillWait=5
NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
SLURM_CONF=$T/slurm.conf
export SLURM_CONF

i=0
while [ ! -S "$SOCK" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -S "$SOCK" ] || not_ready "munged did not start"

slurmctld -D -c -f "$SLURM_CONF" >"$T/slurmctld.out.log" 2>&1 &
PIDS="$PIDS $!"
slurmd -D -N localhost -f "$SLURM_CONF" >"$T/slurmd.out.log" 2>&1 &
PIDS="$PIDS $!"

t0=$(date +%s)
state=""
while [ $(($(date +%s) - t0)) -lt 60 ]; do
    state=$(sinfo -h -N -n localhost -o %T 2>/dev/null)
    [ "$state" = idle ] && break
    for p in $PIDS; do kill -0 "$p" 2>/dev/null || not_ready "a Slurm or munge daemon exited while starting"; done
    sleep 0.5
done
[ "$state" = idle ] || not_ready "node localhost not idle after 60 s (state '$state')"
echo "ok: slurmctld and slurmd up on ports $CTLD_PORT/$SLURMD_PORT, node idle after $(($(date +%s) - t0)) s"

# The sweep: 8 runs in 3 shards, each array task on 1 CPU.
cd "$T/work" || exit 99
EXTRA="--set experiment.seeds=[5,6]"
out=$(CRSIM=$CRSIM CPUS_PER_TASK=1 "$SRC/scripts/slurm-sweep" "$SRC/tests/configs/small.yaml" 3 \
    --set "workload.trace=$TRACE" $EXTRA 2>&1) || fail "slurm-sweep: $out"
echo "$out"
aj=$(echo "$out" | sed -n 's/^submitted array \([0-9]*\) (3 shards) and its merge job \([0-9]*\)$/\1/p')
mj=$(echo "$out" | sed -n 's/^submitted array \([0-9]*\) (3 shards) and its merge job \([0-9]*\)$/\2/p')
[ -n "$aj" ] && [ -n "$mj" ] || fail "slurm-sweep did not report the job ids: $out"

t0=$(date +%s)
while [ $(($(date +%s) - t0)) -lt 600 ]; do
    q=$(squeue -h -j "$aj,$mj" -o '%i %T %r' 2>/dev/null)
    [ -z "$q" ] && break
    echo "$q" | grep -q 'DependencyNeverSatisfied' && fail "merge job can never run (a shard failed): $q"
    sleep 1
done
[ -z "$q" ] || fail "jobs still queued after 600 s: $q"
echo "ok: array $aj and merge $mj left the queue after $(($(date +%s) - t0)) s"

done_tasks=$(scontrol -o show job "$aj" | grep -c 'JobState=COMPLETED .*NodeList=localhost')
[ "$done_tasks" -eq 3 ] || fail "expected 3 array tasks COMPLETED on localhost, got $done_tasks: $(scontrol -o show job "$aj")"
scontrol -o show job "$mj" | grep -q 'JobState=COMPLETED' || fail "merge job not COMPLETED: $(scontrol -o show job "$mj")"
grep -q . results/small.merge.log || fail "merge job wrote no report"
echo "ok: 3 array tasks and the dependent merge COMPLETED on localhost"

# The unsharded run of the same sweep, here, without Slurm.
"$CRSIM" run "$SRC/tests/configs/small.yaml" --quiet --set "workload.trace=$TRACE" $EXTRA \
    --set "experiment.db=$T/unsharded.db" >/dev/null 2>"$T/unsharded.log" || fail "unsharded run failed"

# Every table's rows, every column quoted exactly, minus the ones that
# cannot be equal (ids, host, clock times, wall times, shard label, config
# path); rows of per-run tables carry their run's index; a text's line
# ends are written \n so that each row is one line.  Sorted.
VOLATILE="'id','experiment_id','run_id','host','started_at','finished_at','wall_s','build_wall_s','shard','config_path','resumed_from'"
dump() {
    for t in $(sqlite3 "$1" "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"); do
        cols=$(sqlite3 "$1" "SELECT group_concat('replace(quote(t.' || name || '), char(10), ''\n'')', ' || ''|'' || ') FROM pragma_table_info('$t') WHERE name NOT IN ($VOLATILE)")
        if [ -n "$(sqlite3 "$1" "SELECT 1 FROM pragma_table_info('$t') WHERE name = 'run_id'")" ]; then
            sqlite3 "$1" "SELECT '$t|run ' || r.run_index || '|' || $cols FROM $t t JOIN runs r ON r.id = t.run_id"
        else
            sqlite3 "$1" "SELECT '$t|' || $cols FROM $t t"
        fi
    done | LC_ALL=C sort
}
dump results/small.db >"$T/merged.txt"
dump "$T/unsharded.db" >"$T/unsharded.txt"
for k in 0 1 2; do dump "results/small.shard$k.db"; done | grep -c '^runs|' >"$T/nshard"
nruns=$(grep -c '^runs|' "$T/unsharded.txt")
nmet=$(grep -c '^run_metrics|' "$T/merged.txt")
ndest=$(grep -c '^dest_metrics|' "$T/merged.txt")
[ "$nruns" -eq 8 ] && [ "$nmet" -eq 8 ] && [ "$ndest" -ge 16 ] || fail "expected 8 runs with metrics: runs $nruns, metrics $nmet, dest rows $ndest"
[ "$(cat "$T/nshard")" -eq 8 ] || fail "the 3 shards hold $(cat "$T/nshard") runs, expected 8"
[ "$(sqlite3 results/small.db "SELECT status FROM experiments")" = complete ] || fail "merged experiment not complete"
if cmp -s "$T/merged.txt" "$T/unsharded.txt"; then
    echo "ok: merged database equals the unsharded run ($(wc -l <"$T/merged.txt") rows compared: $nruns runs, $ndest destination rows, capacities, meta)"
else
    diff "$T/unsharded.txt" "$T/merged.txt" | head -20
    fail "merged database differs from the unsharded run"
fi
exit 0
