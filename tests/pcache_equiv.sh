#!/bin/sh
# The radix-tree prefix cache (models/pcache.c, in bench_sim) and the
# per-block reference cache (tests/pcache_ref.c behind
# tests/pcache_adapter.c, in equiv_sim) must simulate the same thing bit
# for bit: same completions, hit tokens, preemptions, p99s and end time
# (the fingerprint line of bench_sim, printed to 17 digits), on the
# Mooncake trace (memory short: preemptions, eviction) and on synthetic
# business-key traffic (shared prefixes, multi-turn, output blocks).
# usage: pcache_equiv.sh BENCH_SIM EQUIV_SIM SOURCE_ROOT MOONCAKE_TRACE
set -eu
tree=$1 ref=$2 root=$3 trace=$4
fail=0
check() {
    a=$("$tree" "$@" | grep fingerprint) || { echo "bench_sim $* failed"; exit 1; }
    b=$("$ref" "$@" | grep fingerprint) || { echo "equiv_sim $* failed"; exit 1; }
    if [ "$a" = "$b" ]; then
        echo "same: $*: $a"
    else
        echo "DIFFERENT: $*"
        echo "  tree:      $a"
        echo "  per-block: $b"
        fail=1
    fi
}
check mooncake "$trace" 20 flat_lb
check mooncake "$trace" 30 sticky 4000
check flagship "$root/workloads/specs/paper-main.yaml" 300 100 cacheroute
check experiment "$root/experiments/flagship.yaml" 60 chwbl 1 --set gateway.scrape_interval_s=0
check experiment "$root/experiments/flagship.yaml" 40 flat_lb 2 --set gateway.scrape_interval_s=0
exit $fail
