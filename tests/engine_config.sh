#!/bin/sh
# Engine keys (docs/engine.md): each bad value or cross-flavour key exits 2
# with one line naming the key and the expected form; then a small run of
# each flavour's non-default setting completes and says so at start-up.
# usage: engine_config.sh CRSIM TRACE
set -u
case $1 in /*) CRSIM=$1 ;; *) CRSIM=$(pwd)/$1 ;; esac
case $2 in /*) TRACE=$2 ;; *) TRACE=$(pwd)/$2 ;; esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CFG="$ROOT/tests/configs/small.yaml"
fails=0
expect_bad() { # TEXT_IN_MESSAGE ARGS...
    want=$1
    shift
    out=$("$CRSIM" run "$CFG" --dry-run --set workload.trace="$TRACE" "$@" 2>&1 >/dev/null)
    st=$?
    lines=$(printf '%s\n' "$out" | wc -l)
    if [ "$st" -ne 2 ] || [ "$lines" -ne 1 ] || ! printf '%s' "$out" | grep -q "$want"; then
        echo "FAIL ($st, $lines lines): $* -> $out"
        fails=$((fails + 1))
    else
        echo "ok: $out"
    fi
}
expect_bad "key 'engine.flavor' is 'tgi'; expected one of: vllm, sglang" --set engine.flavor=tgi
expect_bad "key 'engine.schedule_policy' is 'sjf'" --set engine.schedule_policy=sjf
expect_bad "key 'engine.long_prefill_token_threshold'" --set engine.long_prefill_token_threshold=-1
expect_bad "key 'engine.chunked_prefill_size' is set with engine.flavor vllm" --set engine.chunked_prefill_size=4096
expect_bad "key 'engine.schedule_policy' is set with engine.flavor vllm" --set engine.schedule_policy=lpm
expect_bad "key 'engine.max_num_batched_tokens' is vLLM's, set with engine.flavor sglang" --set engine.flavor=sglang --set engine.max_num_batched_tokens=4096
expect_bad "key 'engine.long_prefill_token_threshold' is vLLM's" --set engine.flavor=sglang --set engine.long_prefill_token_threshold=2048
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { # WANT ARGS...
    want=$1
    shift
    out=$(cd "$tmp" && "$CRSIM" run "$CFG" --set workload.trace="$TRACE" --set experiment.db="$tmp/r.db" --set 'experiment.rates=[2]' "$@" 2>&1)
    st=$?
    rm -f "$tmp/r.db"
    if [ "$st" -ne 0 ] || ! printf '%s' "$out" | grep -q "$want"; then
        echo "FAIL ($st): $* -> $out"
        fails=$((fails + 1))
    else
        echo "ok: $want"
    fi
}
run "engine: SGLang flavour, prefill and decode batches apart, chunked_prefill_size 8192 (SGLang's default for the GPU memory), schedule_policy lpm" --set engine.flavor=sglang --set engine.schedule_policy=lpm
run "chunked_prefill_size 2048, schedule_policy fcfs" --set engine.flavor=sglang --set engine.chunked_prefill_size=2048
run "engine: vLLM V1, long_prefill_token_threshold 2048 tokens" --set engine.long_prefill_token_threshold=2048
[ "$fails" -eq 0 ] && echo "engine_config: ok" || exit 1
