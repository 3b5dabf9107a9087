#!/bin/sh
# `crsim fit-cost` and `crsim spec import-hf` on the command line: a
# profile fitted to a steps CSV is written, loads, and `crsim run` accepts
# it for the deployment (--dry-run); bad measurement files (missing
# column, negative time, fewer steps than parameters) and a bad
# config.json are one line on stderr and exit status 2.  A profile whose
# factors are transferred (the 70B at TP=4) is named so on crsim run's
# start-up lines and in crsim report; the flagship's is not.
# usage: fit_cost.sh CRSIM SOURCE_ROOT
set -u
CRSIM=$1
ROOT=$2
TMP=$(mktemp -d /tmp/fit_cost.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fails=0
ok() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; fails=$((fails + 1)); }
CFG=$ROOT/experiments/mooncake.yaml
SET="--set cluster.model=qwen3-8b --set cluster.tp=1 --set cluster.weight_dtype=bf16 --set cluster.kv_dtype=bf16"

# Steps of an 8B-class engine on one H100 (round numbers, not a
# measurement: the point here is the command, test_catalog checks the fit).
cat > "$TMP/steps.csv" <<CSV
prefill_tokens,decode_tokens,context,seconds
512,0,0,0.0231
2048,0,0,0.0715
8192,0,0,0.2840
0,1,1000,0.0068
0,32,64000,0.0101
0,128,256000,0.0215
1024,16,32000,0.0452
4096,64,128000,0.1601
CSV
# shellcheck disable=SC2086
"$CRSIM" fit-cost "$CFG" $SET --steps "$TMP/steps.csv" --out "$TMP/p.yaml" >"$TMP/out" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q "^wrote $TMP/p.yaml: mfu" "$TMP/out" && ok "profile written" ||
    { cat "$TMP/out"; fail "fit-cost exit $rc"; }
grep -q "^name: qwen3-8b_h100-sxm_tp1_bf16-bf16" "$TMP/p.yaml" && ok "default profile name" ||
    fail "profile name"
grep -q "^#   2 | 23.1 ms" "$TMP/p.yaml" && ok "residual table" || fail "no residual table"
# shellcheck disable=SC2086
"$CRSIM" run "$CFG" $SET --set cost.profile="$TMP/p.yaml" --dry-run >"$TMP/run" 2>&1 &&
    ok "crsim run accepts the fitted profile" || { cat "$TMP/run"; fail "run with profile"; }

bad() { # name, expected message, file contents
    printf '%s' "$3" > "$TMP/bad.csv"
    # shellcheck disable=SC2086
    "$CRSIM" fit-cost "$CFG" $SET --steps "$TMP/bad.csv" >"$TMP/o" 2>"$TMP/e"
    rc=$?
    if [ $rc -eq 2 ] && [ "$(wc -l < "$TMP/e")" -eq 1 ] && grep -q "$2" "$TMP/e"; then
        ok "$1: exit 2, one line"
    else
        cat "$TMP/e"; fail "$1: exit $rc"
    fi
}
bad "missing column" "no column 'seconds'" "prefill_tokens,decode_tokens,context
1,1,1
"
bad "negative time" "bad.csv:3: column 'seconds' is '-1'" "prefill_tokens,decode_tokens,context,seconds
1,1,1,0.1
1,1,1,-1
"
bad "too few steps" "2 measured steps; expected at least 6" "prefill_tokens,decode_tokens,context,seconds
100,0,0,0.01
0,4,100,0.01
"
# shellcheck disable=SC2086
"$CRSIM" fit-cost "$CFG" $SET >/dev/null 2>"$TMP/e"; rc=$?
[ $rc -eq 2 ] && grep -q "expected exactly one of --steps" "$TMP/e" && ok "no measurements: exit 2" ||
    fail "no measurements: exit $rc"

"$CRSIM" spec import-hf "$ROOT/tests/hf/mistral-7b.config.json" --name Mistral-7B --out "$TMP/m.yaml" \
    >/dev/null 2>&1 && cmp -s "$TMP/m.yaml" "$TMP/m.yaml" && grep -q "^params: 7248023552" "$TMP/m.yaml" &&
    ok "spec import-hf writes a spec" || fail "spec import-hf"
echo '{"model_type": "llama"}' > "$TMP/c.json"
"$CRSIM" spec import-hf "$TMP/c.json" --name X >/dev/null 2>"$TMP/e"; rc=$?
[ $rc -eq 2 ] && grep -q "key 'num_hidden_layers' is missing" "$TMP/e" && ok "bad config.json: exit 2" ||
    { cat "$TMP/e"; fail "bad config.json: exit $rc"; }

# A profile with transferred factors says so at start-up and in the report;
# one fitted to its own deployment alone (the flagship's) says nothing.
"$CRSIM" run "$CFG" --set cluster.tp=4 --set experiment.rates=[5] --set experiment.policies=[flat_lb] \
    --set experiment.drain_s=30 --set experiment.db="$TMP/t4.db" --quiet >"$TMP/run4" 2>&1 ||
    { cat "$TMP/run4"; fail "run at TP=4"; }
NOTE="NOTE: calibration profile llama-3.3-70b_h100-sxm_tp4_fp8-fp8 is not fitted to this deployment alone: mfu of"
grep -q "^$NOTE" "$TMP/run4" && ok "transferred factors at start-up" || fail "no start-up NOTE"
"$CRSIM" report "$TMP/t4.db" >"$TMP/rep4" 2>&1 && grep -q "^  $NOTE" "$TMP/rep4" &&
    ok "transferred factors in the report" || { cat "$TMP/rep4"; fail "no report NOTE"; }
"$CRSIM" run "$CFG" --set experiment.rates=[5] --set experiment.policies=[flat_lb] \
    --set experiment.drain_s=30 --set experiment.db="$TMP/t2.db" --quiet >"$TMP/run2" 2>&1 &&
    "$CRSIM" report "$TMP/t2.db" >"$TMP/rep2" 2>&1
! grep -q "NOTE: calibration" "$TMP/run2" "$TMP/rep2" && ok "no NOTE for a fitted profile" ||
    fail "NOTE for the flagship profile"

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all fit-cost checks passed"
