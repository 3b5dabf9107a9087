#!/bin/sh
# Field scenario (b) of issue 14 (experiments/scenarios/no-shared-prefix.yaml):
# single-turn requests of 1,024 unique tokens, no shared prefix, 8
# destinations at 116 requests/s.  Asserts:
#  - a correct router (flat_lb, power of two choices on in-flight) gives
#    every destination >= 10 % of the requests;
#  - aibrix_prefix: nothing ever matches, so every request takes its
#    least-requests fallback: every destination >= 10 %;
#  - sglang_cache_aware: nothing matches (rate 0 <= 0.3), so every request
#    goes to the smallest tree — load-blind, but with equal prompts that is
#    round robin: the shares differ by at most one request;
#  - chwbl (key: the first 25 tokens, unique here) hashes requests apart:
#    every destination >= 10 %;
#  - dynamo_kv: nothing is cached anywhere, so the cost is the load alone
#    (pending prefill tokens + decode blocks of its own in-flight
#    requests, all prompts equal): the lowest-cost pick is a near round
#    robin, shares at most 8 requests apart (measured 2 of 8,712);
#  - llmd: every prefix score is 0, so the queue (2) and KV-utilisation (2)
#    scorers decide from the scraped snapshot: every destination >= 10 %
#    and within 2 % of 1/R (measured 8,677 .. 8,746 of 8,712);
#  - nothing is reused: every hit rate is 0.
# usage: scenario_no_shared_prefix.sh CRSIM SOURCE_ROOT
set -u
CRSIM=$1
ROOT=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$CRSIM" run "$ROOT/experiments/scenarios/no-shared-prefix.yaml" --quiet --jobs 2 \
    --set "experiment.db=$TMP/s.db" >"$TMP/out" 2>&1 || {
    echo "FAIL: run failed: $(cat "$TMP/out")"; exit 1; }
sqlite3 -separator ' ' "$TMP/s.db" "SELECT r.policy, MAX(d.routed), MIN(d.routed), SUM(d.routed),
    COUNT(*), (SELECT m.hit_rate FROM run_metrics m WHERE m.run_id = r.id)
    FROM runs r JOIN dest_metrics d ON d.run_id = r.id GROUP BY r.id ORDER BY r.id" >"$TMP/q"
cat "$TMP/q"
awk 'BEGIN { bad = 0; n = 0 }
{
    n++; pol = $1; mx = $2; mn = $3; tot = $4; R = $5; hit = $6
    if (!(mn >= 0.10 * tot)) { print "FAIL: " pol " gives a destination " mn "/" tot " < 10 %"; bad = 1 }
    if (pol == "sglang_cache_aware" && !(mx - mn <= 1)) {
        print "FAIL: sglang_cache_aware shares differ by " mx - mn " (> 1: not round robin by tree size)"; bad = 1 }
    if (pol == "dynamo_kv" && !(mx - mn <= 8)) {
        print "FAIL: dynamo_kv shares differ by " mx - mn " (> 8: the load-only cost is not balancing)"; bad = 1 }
    if (pol == "llmd" && !(mx <= 1.02 * tot / R && mn >= 0.98 * tot / R)) {
        print "FAIL: llmd shares " mn " .. " mx " (expected within 2 % of " tot / R ")"; bad = 1 }
    if (!(hit == 0)) { print "FAIL: " pol " hit rate " hit " with nothing shared"; bad = 1 }
}
END { if (n != 6) { print "FAIL: expected 6 policies, got " n; bad = 1 }; exit bad }' "$TMP/q" || exit 1
echo "scenario_no_shared_prefix: ok"
