#!/bin/sh
# The optimised router internals (in bench_sim) against their references
# (in equiv_ref_sim): dualmap's global prefix index as a run queue
# (sim/core/pfxidx.c) against the per-block table it replaced
# (tests/pfxidx_ref.c behind tests/pfxidx_adapter.c), and preble against
# its pre-round-4 implementation (tests/route_preble_ref.c: full passes over
# the active nodes, per-node subtree walks, a sort per completion).  Whole
# simulations must agree bit for bit (the fingerprint line of bench_sim:
# completions, hit tokens, preemptions, p99 TTFT and E2E, end time to 17
# digits).  dualmap: the default index (200k blocks, 20-min expiry), a
# small index (constant eviction, holes) with a short expiry, and the
# router queue (migrated requests are added again).  preble: the defaults
# (rebalancing after every placement, subtree migration, observed TPOT,
# completion TTFTs), the legacy rules, and a short window (pruning, nodes
# reused, requests outliving the window), and the corners of its tree of
# runs (below).
# usage: router_equiv.sh BENCH_SIM EQUIV_REF_SIM SOURCE_ROOT
set -eu
runs=$1 ref=$2 root=$3
fail=0
check() {
    a=$("$runs" "$@" | grep fingerprint) || { echo "bench_sim $* failed"; exit 1; }
    b=$("$ref" "$@" | grep fingerprint) || { echo "equiv_ref_sim $* failed"; exit 1; }
    if [ "$a" = "$b" ]; then
        echo "same: $*: $a"
    else
        echo "DIFFERENT: $*"
        echo "  optimised: $a"
        echo "  reference: $b"
        fail=1
    fi
}
cfg=$root/experiments/flagship.yaml
short="--set workload.duration_s=400 --set experiment.warmup_s=100 --set experiment.drain_s=100"
check experiment "$cfg" 60 dualmap 1 $short
check experiment "$cfg" 100 dualmap 2 $short --set router.dualmap.index_blocks=3000 --set router.dualmap.index_ttl_s=20
check experiment "$cfg" 100 dualmap 3 $short --set router.dualmap.router_queue=true --set router.dualmap.index_blocks=20000 --set router.dualmap.switch_tokens=0 --set router.dualmap.rebalance_tokens=0
check experiment "$cfg" 60 preble 1 $short
check experiment "$cfg" 100 preble 2 $short --set router.preble.tpot=cost_model --set router.preble.overload=dispatch_estimate --set router.preble.migrate=segment --set router.preble.rebalance=per_second
check experiment "$cfg" 80 preble 3 $short --set router.preble.window_s=8
# preble's tree of runs (round 4): many migrations (more runs cut and
# subtrees walked), segment replication over runs with a short window,
# the cost-model TPOT on 5 destinations, 70 destinations (allocation sets
# of two words), and a 2-s window at 200 req/s (runs pruned within
# seconds, node ids recycled from the free stack constantly).
check experiment "$cfg" 130 preble 4 $short --set router.preble.high_load=1.1
check experiment "$cfg" 100 preble 5 $short --set router.preble.window_s=8 --set router.preble.migrate=segment
check experiment "$cfg" 100 preble 6 $short --set router.preble.tpot=cost_model --set cluster.destinations=5
check experiment "$cfg" 100 preble 1 $short --set cluster.destinations=70
check experiment "$cfg" 200 preble 9 $short --set router.preble.window_s=2
# A platform-wide system prompt (global_prompt's identified point, rounded):
# one wide node above every key's prefix, whose subtree is migrated over
# and over while most of its children are inactive (the active-children
# lists of round 8).
check experiment "$cfg" 40 preble 7 --set workload.duration_s=200 --set experiment.warmup_s=50 \
    --set experiment.drain_s=100 --set workload.prefix.global_tokens=527 --set workload.input.cv=12 \
    --set workload.prefix.cv=1.5 --set workload.prefix.mean=2438 --set workload.input.mean=645
# The production routers against their pre-round-4 per-block versions
# (tests/route_aibrix_ref.c, route_llmd_ref.c, route_dynamo_kv_ref.c,
# route_kvidx_ref.c).  aibrix_prefix: the defaults (12,500-block table), a
# 250-block table (smaller than one prompt: constant eviction, a prompt
# evicting its own blocks) with a 5-s idle expiry, a large table where
# expiry does the evicting, and 70 destinations (two bitset words) with
# the scraped running-requests signal.
check experiment "$cfg" 100 aibrix_prefix 1 $short
check experiment "$cfg" 100 aibrix_prefix 2 $short --set router.aibrix_prefix.table_blocks=1000 --set router.aibrix_prefix.ttl_s=5
check experiment "$cfg" 80 aibrix_prefix 3 $short --set router.aibrix_prefix.table_blocks=4000000 --set router.aibrix_prefix.ttl_s=3
check experiment "$cfg" 150 aibrix_prefix 4 $short --set cluster.destinations=70 --set router.aibrix_prefix.signal=running
# llmd approximate (decision-fed per-destination LRUs, route__kvlru):
# the defaults (31,250 hash blocks per destination), a capacity just above
# one hash list (constant eviction) and one below it (a list evicting its
# own blocks) with longer hash blocks, and 70 destinations (the general,
# two-word index).  llmd precise and dynamo_kv (KV-event-fed): the
# defaults and a 50-ms event delay.  dynamo_kv without events (TTL expiry
# of its own decisions): the 120-s default, a 2-s TTL, and softmax
# sampling.
check experiment "$cfg" 100 llmd 1 $short
check experiment "$cfg" 100 llmd 2 $short --set router.llmd.lru_capacity=300
check experiment "$cfg" 80 llmd 3 $short --set router.llmd.lru_capacity=40 --set router.llmd.hash_block_tokens=32 --set router.llmd.max_prefix_blocks=100
check experiment "$cfg" 150 llmd 4 $short --set cluster.destinations=70 --set router.llmd.lru_capacity=5000
check experiment "$cfg" 100 llmd 5 $short --set router.llmd.mode=precise
check experiment "$cfg" 100 llmd 6 $short --set router.llmd.mode=precise --set gateway.kv_event_delay_s=0.05
check experiment "$cfg" 100 dynamo_kv 1 $short
check experiment "$cfg" 100 dynamo_kv 2 $short --set gateway.kv_event_delay_s=0.05
check experiment "$cfg" 100 dynamo_kv 3 $short --set router.dynamo_kv.use_kv_events=false
check experiment "$cfg" 100 dynamo_kv 4 $short --set router.dynamo_kv.use_kv_events=false --set router.dynamo_kv.ttl_s=2
check experiment "$cfg" 100 dynamo_kv 5 $short --set router.dynamo_kv.use_kv_events=false --set router.dynamo_kv.ttl_s=10 --set router.dynamo_kv.router_temperature=0.5 --set cluster.destinations=70
# Round 4, second pass (route_kvidx: one shared bisection for all holders,
# stretches of one holder set in the walk, tables on huge pages; pfxidx:
# common prefixes by bisection): the direct index at its limit of 64
# destinations (bit 63, many distinct bisection answers) for llmd precise,
# dynamo_kv and llmd approximate, and a long walk with a small table.
check experiment "$cfg" 100 llmd 7 $short --set router.llmd.mode=precise --set cluster.destinations=64
check experiment "$cfg" 100 dynamo_kv 6 $short --set cluster.destinations=64
check experiment "$cfg" 120 llmd 8 $short --set cluster.destinations=64 --set router.llmd.lru_capacity=2000
exit $fail
