#!/bin/sh
# dualmap on the run-queue global prefix index (sim/core/pfxidx.c, in
# bench_sim) and on the per-block table it replaced (tests/pfxidx_ref.c
# behind tests/pfxidx_adapter.c, in equiv_dm_sim) must simulate the same
# thing bit for bit (the fingerprint line of bench_sim: completions, hit
# tokens, preemptions, p99 TTFT and E2E, end time to 17 digits): at the
# default index (200k blocks, 20-min expiry), with a small index (constant
# eviction, holes) and a short expiry, and with the router queue (requests
# migrated between candidates are added again).
# usage: pfxidx_equiv.sh BENCH_SIM EQUIV_DM_SIM SOURCE_ROOT
set -eu
runs=$1 ref=$2 root=$3
fail=0
check() {
    a=$("$runs" "$@" | grep fingerprint) || { echo "bench_sim $* failed"; exit 1; }
    b=$("$ref" "$@" | grep fingerprint) || { echo "equiv_dm_sim $* failed"; exit 1; }
    if [ "$a" = "$b" ]; then
        echo "same: $*: $a"
    else
        echo "DIFFERENT: $*"
        echo "  runs:      $a"
        echo "  per-block: $b"
        fail=1
    fi
}
cfg=$root/experiments/flagship.yaml
short="--set workload.duration_s=400 --set experiment.warmup_s=100 --set experiment.drain_s=100"
check experiment "$cfg" 60 dualmap 1 $short
check experiment "$cfg" 100 dualmap 2 $short --set router.dualmap.index_blocks=3000 --set router.dualmap.index_ttl_s=20
check experiment "$cfg" 100 dualmap 3 $short --set router.dualmap.router_queue=true --set router.dualmap.index_blocks=20000 --set router.dualmap.switch_tokens=0 --set router.dualmap.rebalance_tokens=0
exit $fail
