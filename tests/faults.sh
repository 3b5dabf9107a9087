#!/bin/sh
# Bad fault configs (docs/faults.md): each exits 2 with one line naming the
# key (and, for faults.events, the item) and the expected form; a good one
# passes --dry-run.
# usage: faults.sh CRSIM
set -u
CRSIM=$1
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CFG="$ROOT/tests/configs/small.yaml"
fails=0
expect_bad() { # KEY_IN_MESSAGE ARGS...
    want=$1
    shift
    out=$("$CRSIM" run "$CFG" --dry-run "$@" 2>&1 >/dev/null)
    st=$?
    lines=$(printf '%s\n' "$out" | wc -l)
    if [ "$st" -ne 2 ] || [ "$lines" -ne 1 ] || ! printf '%s' "$out" | grep -q "$want"; then
        echo "FAIL ($st, $lines lines): $* -> $out"
        fails=$((fails + 1))
    else
        echo "ok: $out"
    fi
}
expect_bad "key 'faults.events' item 0 is '200:boom:1'; expected KIND" --set 'faults.events=["200:boom:1"]'
expect_bad "item 1 is '9:crash:4': destination 4 of 4" --set 'faults.events=["1:crash:0","9:crash:4"]'
expect_bad "expected slow with a factor" --set 'faults.events=["5:slow:1"]'
expect_bad "expected FACTOR a number in" --set 'faults.events=["5:slow:1:0.5"]'
expect_bad "destination 2 is up and at full speed" --set 'faults.events=["5:recover:2"]'
expect_bad "destination 1 is already crashed" --set 'faults.events=["5:crash:1","7:crash:1"]'
expect_bad "expected TIME_S a decimal number of seconds" --set 'faults.events=["-3:crash:1"]'
expect_bad "faults.mtbf_s" --set faults.mtbf_s=-1
expect_bad "faults.mttr_s" --set faults.mttr_s=0
expect_bad "faults.max_retries" --set faults.max_retries=1.5
expect_bad "faults.retry_timeout_s" --set faults.retry_timeout_s=-1
expect_bad "gateway.health_check_interval_s" --set gateway.health_check_interval_s=0
expect_bad "router.cacheroute.fallback" --set router.cacheroute.fallback=slow
if ! "$CRSIM" run "$CFG" --dry-run --set workload.trace="$ROOT/data/mooncake/conversation_trace.jsonl.xz" --set 'faults.events=["600:crash:3","720:recover:3","100:slow:1:2","200:recover:1","50:drain:2","60:recover:2"]' >/dev/null 2>&1; then
    echo "FAIL: a good fault schedule was refused"
    fails=$((fails + 1))
fi
[ "$fails" -eq 0 ] && echo "faults_config: ok" || exit 1
