#!/bin/sh
# End to end, every trace format of docs/trace-replay.md ("End to end"):
# crsim run with all registered routers on a short trace, then crsim regime
# --fast on the Azure trace.  Asserts each run completes every request and
# prints the format, prefix model and tick it chose.
# usage: trace_e2e.sh CRSIM TESTS_DIR AZURE_XZ
set -eu
crsim=$1; tests=$2; azure=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
S=$tests/configs/small.yaml
ALL=$("$crsim" help policies | awk 'NF{print $1}' | paste -sd, -)
n_all=$(echo "$ALL" | tr , '\n' | wc -l)
fail() { echo "FAIL: $*"; exit 1; }
run() { # name want_requests want_trace_line --set...
    name=$1; want=$2; line=$3; shift 3
    "$crsim" run "$S" --set "experiment.policies=[$ALL]" --set experiment.rates=[2] \
        --set experiment.warmup_s=0 --set experiment.min_measured=0 \
        --set router.cacheroute.q_cap=2 --set router.cacheroute.slots=16 \
        --set experiment.db="$tmp/$name.db" -j 2 "$@" \
        > "$tmp/$name.out" 2>&1 || { cat "$tmp/$name.out"; fail "$name: crsim run failed"; }
    grep -qF "$line" "$tmp/$name.out" || { cat "$tmp/$name.out"; fail "$name: no '$line'"; }
    # One table row per router, each with every request done, none unfinished.
    rows=$(awk -v w="$want" '$2=="2.00" && $9==w && $10==0' "$tmp/$name.out" | wc -l)
    [ "$rows" -eq "$n_all" ] || { cat "$tmp/$name.out"; fail "$name: $rows of $n_all routers served $want"; }
    echo "ok $name: $n_all routers, $want requests each"
}
run azure2023 200 "trace: format azure, key one per request (no key field), prefix none" \
    --set workload.trace="$azure" --set workload.max_requests=200
run azure2024 4 "tick 0 s (detected: no tick" \
    --set workload.trace="$tests/traces/azure2024.csv" --set workload.max_requests=0
run burstgpt 4 "prefix per_key (synthetic: 512 tokens shared per key)" \
    --set workload.trace="$tests/traces/burstgpt.csv" --set workload.max_requests=0 \
    --set workload.key_field=Model --set workload.trace_prefix=per_key \
    --set workload.trace_prefix_tokens=512
run jsonl 4 "key field 'session_id'" \
    --set workload.trace="$tests/traces/sessions.jsonl" --set workload.max_requests=0 \
    --set workload.key_field=session_id
# A missing key field is refused at set-up with file:line and the key.
if "$crsim" run "$S" --set workload.trace="$tests/traces/missing_key.jsonl" \
    --set workload.key_field=session_id --set experiment.db="$tmp/x.db" > "$tmp/mk.out" 2>&1; then
    fail "missing key field accepted"
fi
grep -qF 'missing_key.jsonl:2: missing key field "session_id"' "$tmp/mk.out" || { cat "$tmp/mk.out"; fail "missing key message"; }
echo "ok missing key field refused"
# crsim regime on the Azure trace (fast: the diagnostic only).
"$crsim" regime "$S" --trace "$azure" --set workload.max_requests=300 --seeds 1 --fast \
    > "$tmp/regime.out" 2>&1 || { cat "$tmp/regime.out"; fail "crsim regime --trace azure failed"; }
cat "$tmp/regime.out" | head -20
echo "ok regime"
