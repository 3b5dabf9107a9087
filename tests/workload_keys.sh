#!/bin/sh
# Keys that do not apply to the chosen workload are errors, not silently
# ignored (issue 39 item 1, issue 38 C10): each names the key and what it
# needs, exit 2, one line, before any run.  workload.type trace replays any
# trace format (detected or named); mooncake, its former name, still loads.
# A key that applies at some point of a sweep is accepted; a duplicate
# sweep value is refused.
# usage: workload_keys.sh CRSIM SOURCE_ROOT
set -u
CRSIM=$1
SRC=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
. "$(dirname "$0")/lib.sh"

expect0() {
    what=$1; shift 2
    if "$@" >"$TMP/out" 2>"$TMP/err"; then
        echo "ok: $what"
    else
        fail "$what: '$*' failed: $(cat "$TMP/err")"
    fi
}

SYN="$SRC/experiments/regime.yaml"
MOON="$SRC/data/mooncake/conversation_trace.jsonl.xz"
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n2023-11-16 18:15:51.1200000,879,22\n' >"$TMP/az.csv"
printf 'key,rate\na,1\nb,2\n' >"$TMP/rates.csv"
cat >"$TMP/trace.yaml" <<YAML
experiment: {name: t, policies: [flat_lb], rates: [1], seeds: [1], warmup_s: 0, drain_s: 60,
             min_measured: 1}
cluster: {destinations: 2}
workload: {type: trace, trace: az.csv}
YAML
NA="does not apply to this workload"

# The reproducer of item 1: a trace on a synthetic config, in calibrate,
# run and workload describe.
expect_error 2 "key 'workload.trace' $NA (type synthetic, keys lognormal).*expected workload.type: trace" -- \
    "$CRSIM" calibrate "$SYN" --set "workload.trace=$MOON"
expect_error 2 "key 'workload.trace' $NA" -- "$CRSIM" run "$SYN" --dry-run --set "workload.trace=$MOON"
expect_error 2 "key 'workload.trace' $NA" -- "$CRSIM" workload describe "$SYN" --set "workload.trace=$MOON"
# Synthetic keys on a trace.
for k in keys.n=10 duration_s=60 keys.active_set=8 seed=7 arrival.process=gamma; do
    expect_error 2 "key 'workload.${k%%=*}' $NA (type trace).*expected workload.type: synthetic" -- \
        "$CRSIM" run "$TMP/trace.yaml" --dry-run --set "workload.$k"
done
# Keys of another family, process or distribution.
expect_error 2 "key 'workload.keys.file' $NA.*expected workload.keys.distribution: file" -- \
    "$CRSIM" run "$SYN" --dry-run --set "workload.keys.file=$TMP/rates.csv"
expect_error 2 "key 'workload.keys.zipf_s' $NA.*expected workload.keys.distribution: zipf" -- \
    "$CRSIM" run "$SYN" --dry-run --set workload.keys.zipf_s=1.2
expect_error 2 "key 'workload.keys.sigma' $NA.*expected workload.keys.fit_gini 0" -- \
    "$CRSIM" run "$SYN" --dry-run --set workload.keys.fit_gini=0.5
expect_error 2 "key 'workload.keys.n' $NA.*expected workload.keys.distribution lognormal or zipf" -- \
    "$CRSIM" run "$SYN" --dry-run --set workload.keys.distribution=file \
    --set "workload.keys.file=$TMP/rates.csv"
expect_error 2 "key 'workload.arrival.cv' $NA.*expected workload.arrival.process: gamma" -- \
    "$CRSIM" run "$SYN" --dry-run --set workload.arrival.cv=2
expect_error 2 "key 'workload.arrival.iat_file' $NA.*expected workload.arrival.process: bootstrap" -- \
    "$CRSIM" run "$SYN" --dry-run --set "workload.arrival.iat_file=$TMP/rates.csv"
expect_error 2 "key 'workload.input.cv' $NA.*lognormal or gamma" -- \
    "$CRSIM" run "$SYN" --dry-run --set workload.input.dist=uniform --set workload.input.cv=3
expect_error 2 "key 'workload.drift.interval_s' $NA.*drift.sigma > 0" -- \
    "$CRSIM" run "$SYN" --dry-run --set workload.drift.interval_s=60
expect_error 2 "key 'workload.trace_prefix_tokens' $NA.*trace_prefix: per_key" -- \
    "$CRSIM" run "$TMP/trace.yaml" --dry-run --set workload.trace_prefix_tokens=512
expect_error 2 "key 'workload.key_ids' $NA.*key_field" -- \
    "$CRSIM" run "$TMP/trace.yaml" --dry-run --set workload.key_field=x --set workload.key_ids=3
# Duplicate sweep values and axes.
expect_error 2 "experiment.sweep\[0\] (cluster.destinations) lists '4' twice" -- \
    "$CRSIM" run "$SYN" --dry-run --set 'experiment.sweep=["cluster.destinations=[4, 8, 4]"]'
expect_error 2 "experiment.sweep\[0\] and \[1\] both vary 'cluster.destinations'" -- \
    "$CRSIM" run "$SYN" --dry-run \
    --set 'experiment.sweep=["cluster.destinations=[4]", "cluster.destinations=[8]"]'
# Under a sweep: a key that applies at one point is read there; one that
# applies at none is an error.
expect0 "iat_file beside a sweep of arrival.process" -- "$CRSIM" run "$SYN" --dry-run \
    --set "workload.arrival.iat_file=$SRC/data/azure/AzureLLMInferenceTrace_conv.csv.xz" \
    --set 'experiment.sweep=["workload.arrival.process=[poisson, bootstrap]"]'
expect_error 2 "key 'workload.arrival.cv' $NA" -- "$CRSIM" run "$SYN" --dry-run \
    --set "workload.arrival.iat_file=$SRC/data/azure/AzureLLMInferenceTrace_conv.csv.xz" \
    --set workload.arrival.cv=2 --set 'experiment.sweep=["workload.arrival.process=[poisson, bootstrap]"]'

# workload.type trace: an Azure CSV is read as Azure (format detected) and
# the summary says so; mooncake (the former type name) still loads.
expect0 "type trace, Azure CSV" -- "$CRSIM" run "$TMP/trace.yaml" --dry-run
grep -q "trace: format azure" "$TMP/out" || fail "type trace on a CSV: $(cat "$TMP/out")"
expect0 "type mooncake (former name)" -- "$CRSIM" run "$TMP/trace.yaml" --dry-run \
    --set workload.type=mooncake
expect0 "trace_format named" -- "$CRSIM" run "$TMP/trace.yaml" --dry-run \
    --set workload.trace_format=azure
# A stored run's full config (every key, inapplicable ones at their
# defaults) loads again.
"$CRSIM" run "$TMP/trace.yaml" --dry-run >/dev/null 2>&1
expect0 "regime --trace replaces the synthetic section" -- "$CRSIM" workload describe "$SYN" \
    --set 'workload={type: trace}' --set "workload.trace=$TMP/az.csv" --requests 3

# The neutral trace template (issue 39 item 2): nothing forced; the tick
# and key rule found are printed by --dry-run and workload describe.
TPL="$SRC/experiments/trace-template.yaml"
grep -q '^  tick_s:' "$TPL" && fail "the template forces a tick"
expect0 "template --dry-run" -- "$CRSIM" run "$TPL" --dry-run
grep -q "^trace: format azure, key one per request (no key field), prefix none.*tick 0 s (detected: no tick, stamps as recorded)" "$TMP/out" ||
    fail "template --dry-run lacks the trace rule: $(cat "$TMP/out")"
expect0 "template on the Mooncake trace" -- "$CRSIM" workload describe "$TPL" \
    --set "workload.trace=$MOON" --requests 1000
grep -q "^trace: format mooncake, key first 2 hash ids, .*tick 3 s (detected)" "$TMP/out" ||
    fail "describe lacks the detected tick: $(cat "$TMP/out")"

[ "$fails" -eq 0 ] && echo "workload_keys: all passed"
exit "$fails"
