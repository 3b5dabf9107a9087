#!/bin/sh
# Every selected router checks its parameters when the config is loaded,
# before any run starts: cacheroute (and its ablation variants) without
# q_cap or W exits 2 naming the file:line (of the key, of its section, or
# of the experiment.policies entry when the section is absent), the key and
# `crsim calibrate`, and creates no database.
# usage: router_check.sh CRSIM TRACE
set -u
CRSIM=$1
TRACE=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
DB="$TMP/out.db"

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect_error PATTERN... -- command...: exit status 2, one stderr line
# containing every PATTERN, no database.
expect_error() {
    pats=""
    while [ "$1" != "--" ]; do pats="$pats
$1"; shift; done
    shift
    "$@" >"$TMP/out" 2>"$TMP/err"
    got=$?
    if [ "$got" -ne 2 ]; then
        fail "'$*' exited $got, expected 2; stderr: $(cat "$TMP/err")"
        return
    fi
    if [ "$(wc -l < "$TMP/err")" -ne 1 ]; then
        fail "'$*' printed more than one error line: $(cat "$TMP/err")"
        return
    fi
    echo "$pats" | while IFS= read -r p; do
        [ -z "$p" ] && continue
        grep -qF -- "$p" "$TMP/err" || echo "lacks '$p'"
    done > "$TMP/miss"
    if [ -s "$TMP/miss" ]; then
        fail "'$*' stderr $(cat "$TMP/miss"): $(cat "$TMP/err")"
    elif [ -e "$DB" ]; then
        fail "'$*' created the database"
        rm -f "$DB"
    else
        echo "ok: $(cat "$TMP/err")"
    fi
}

# No router section: the policies entry (line 4) is the location.
cat > "$TMP/noq.yaml" <<YAML
experiment:
  name: noq
  rates: [1, 2]
  policies: [flat_lb, sticky,
             cacheroute]
cluster: {destinations: 4}
workload: {trace: $TRACE, max_requests: 200}
YAML
expect_error "noq.yaml:5:" "'router.cacheroute.q_cap' is not set" "crsim calibrate" -- \
    "$CRSIM" run "$TMP/noq.yaml" --set "experiment.db=$DB"

# A section without q_cap: the section's line.
cat > "$TMP/sec.yaml" <<YAML
experiment:
  name: sec
  rates: [1]
  policies: [cr_affinity]
router:
  sticky: {vnodes: 64}
  cacheroute: {slots: 4}
cluster: {destinations: 4}
workload: {trace: $TRACE, max_requests: 200}
YAML
expect_error "sec.yaml:7:" "'router.cacheroute.q_cap' is not set" "crsim calibrate" -- \
    "$CRSIM" run "$TMP/sec.yaml" --set "experiment.db=$DB"

# q_cap: 0 written out: its own line; then W = 0 the same way.
cat > "$TMP/zero.yaml" <<YAML
experiment:
  name: zero
  rates: [1]
  policies: [flat_lb, cacheroute]
router:
  cacheroute:
    slots: 0
    q_cap: 0
cluster: {destinations: 4}
workload: {trace: $TRACE, max_requests: 200}
YAML
expect_error "zero.yaml:8:" "'router.cacheroute.q_cap' is not set" "crsim calibrate" -- \
    "$CRSIM" run "$TMP/zero.yaml" --set "experiment.db=$DB"
expect_error "zero.yaml:7:" "'router.cacheroute.slots' is not set" "crsim calibrate" -- \
    "$CRSIM" run "$TMP/zero.yaml" --set "experiment.db=$DB" --set router.cacheroute.q_cap=2
expect_error "--set router.cacheroute.slots:" "'router.cacheroute.slots' is not set" -- \
    "$CRSIM" run "$TMP/zero.yaml" --set "experiment.db=$DB" --set router.cacheroute.q_cap=2 \
    --set router.cacheroute.slots=0
# A dry run checks too.
expect_error "zero.yaml:8:" "crsim calibrate" -- "$CRSIM" run "$TMP/zero.yaml" --dry-run

# A sweep whose second point lacks q_cap fails before the first is run.
cat > "$TMP/sweep.yaml" <<YAML
experiment:
  name: sweep
  rates: [1]
  policies: [flat_lb, cr_replicate]
  sweep: ["router.cacheroute.q_cap=[1, 0]"]
router:
  cacheroute: {slots: 4}
cluster: {destinations: 4}
workload: {trace: $TRACE, max_requests: 200}
YAML
expect_error "--set router.cacheroute.q_cap:" "crsim calibrate" -- \
    "$CRSIM" run "$TMP/sweep.yaml" --set "experiment.db=$DB"

# The ring must fit: destinations x vnodes < 2^32.
expect_error "'router.sticky.vnodes' is 100000 with 100000 destinations" -- \
    "$CRSIM" run "$TMP/noq.yaml" --set "experiment.db=$DB" --set cluster.destinations=100000 \
    --set router.sticky.vnodes=100000

# The plan policy (issue 19 §3): the legacy replan: false contradicts
# churn_aware (the replan line); out-of-range and unknown values name
# their line or --set.
cat > "$TMP/plan.yaml" <<YAML
experiment:
  name: plan
  rates: [1]
  policies: [cacheroute]
router:
  cacheroute:
    q_cap: 1
    slots: 2
    replan: false
    plan_policy: churn_aware
    rate_window: 0
cluster: {destinations: 4}
workload: {trace: $TRACE, max_requests: 200}
YAML
expect_error "plan.yaml:11:" "'router.cacheroute.rate_window' is 0" "[1, 1000]" -- \
    "$CRSIM" run "$TMP/plan.yaml" --set "experiment.db=$DB"
expect_error "plan.yaml:9:" "'router.cacheroute.replan' is false" "churn_aware" -- \
    "$CRSIM" run "$TMP/plan.yaml" --set "experiment.db=$DB" --set router.cacheroute.rate_window=2
expect_error "--set router.cacheroute.plan_policy:" "'lazy'" "fresh, hold, churn_aware" -- \
    "$CRSIM" run "$TMP/plan.yaml" --set "experiment.db=$DB" --set router.cacheroute.rate_window=2 \
    --set router.cacheroute.plan_policy=lazy
expect_error "--set router.cacheroute.churn_budget:" "[0, 1]" -- \
    "$CRSIM" run "$TMP/plan.yaml" --set "experiment.db=$DB" --set router.cacheroute.rate_window=2 \
    --set router.cacheroute.replan=true --set router.cacheroute.churn_budget=2

# Selected routers only: the same config without cacheroute runs and stores.
"$CRSIM" run "$TMP/zero.yaml" --quiet --set "experiment.db=$DB" \
    --set "experiment.policies=[flat_lb]" >"$TMP/out" 2>&1 || fail "flat_lb alone: $(cat "$TMP/out")"
[ -e "$DB" ] || fail "flat_lb alone stored nothing"

[ "$fails" -eq 0 ] && echo "router_check: all passed"
exit "$fails"
