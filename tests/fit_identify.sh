#!/bin/sh
# `crsim fit` identifies the structure of a workload crsim generated itself
# from the kinds of observation the paper publishes (docs/fit.md,
# docs/reproduction.md "Procedure"): tests/configs/fit_synth.yaml with 16
# conversations open per key (workload.session.per_key), 4 turns each and a
# 1,024-token per-key context is the truth; the targets are its Flat-LB
# and Sticky served hits at 4 and 16 requests/s, its measured-window
# infinite-cache hit bound at 16 requests/s (a one-sided bound, side
# at_least) and its admission scale C = R * W (the calibration outcome).
# Two structural alternatives: 'conversations' frees per_key, turns and
# the context; 'single_turn' (one conversation per key, one turn: the
# working set is the context alone) frees the context and the new input.
# Expected: 'conversations' kept (identified, best point within
# tolerance), 'single_turn' rejected at screening (it cannot reach the
# bound and the admission scale together: nothing identified); every
# identified point's context within 10 %, turns within 15 % and per_key
# within 20 % of the truth.  Also: an achieved_ratio target passes an
# open-loop candidate and rejects a closed-loop one capped at 2 requests
# in flight; the bad workload-target files exit 2 naming FILE:LINE and
# the key.
# usage: fit_identify.sh CRSIM SOURCE_ROOT
set -u
case $1 in /*) CRSIM=$1 ;; *) CRSIM=$PWD/$1 ;; esac
CFG=$2/tests/configs/fit_synth.yaml
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 99
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
TRUTH="--set workload.session.per_key=16 --set workload.turns.mean=4 --set workload.prefix.mean=1024"

# ---- the truth: router rows, bound and admission scale ----
# shellcheck disable=SC2086
"$CRSIM" run "$CFG" --quiet --jobs 2 --set experiment.db=truth.db \
    --set experiment.rates=[4,16] $TRUTH >truth.txt 2>&1 || { cat truth.txt; exit 99; }
val() { awk -v p="$1" -v r="$2" '$1 == p && $2 + 0 == r { printf "%.6f", $4 / 100 }' truth.txt; }
# The workload targets' values of the truth: a fit with workload targets
# only runs nothing and prints them in its residual table (column sim).
cat >wl.yaml <<EOT
seeds: [1]
targets:
  workload:
    inf_hit: {loads: [16], values: [0.5], tol: 1}
    admission_scale: {values: [100], tol: 1}
budget: 1
refine: 0
EOT
# shellcheck disable=SC2086
"$CRSIM" fit "$CFG" --targets wl.yaml --db wl.db --quiet $TRUTH >wl.txt 2>err ||
    fail "workload-only fit exited $?: $(cat err)"
n_runs=$(sqlite3 wl.db "SELECT COUNT(*) FROM runs" 2>/dev/null || echo 0)
[ "$n_runs" = 0 ] || fail "a fit with workload targets only ran $n_runs runs"
bound=$(awk '$1 == "workload" && $2 == "inf_hit" { print $6 }' wl.txt)
cscale=$(awk '$1 == "workload" && $2 == "admission_scale" { print $6 }' wl.txt)
awk -v b="$bound" -v c="$cscale" 'BEGIN { exit !(b > 0.5 && b < 1 && c > 10) }' ||
    fail "truth's bound '$bound' and admission scale '$cscale'"
ctol=$(awk -v c="$cscale" 'BEGIN { printf "%.4g", c * 0.1 }')
cat >targets.yaml <<EOT
seeds: [1]
loads: [4, 16]
targets:
  workload:
    inf_hit: {loads: [16], values: [$bound], tol: 0.005, side: at_least}
    admission_scale: {values: [$cscale], tol: $ctol}
  flat_lb:
    hit: {loads: [4, 16], values: [$(val flat_lb 4), $(val flat_lb 16)], tol: 0.01}
  sticky:
    hit: {loads: [4, 16], values: [$(val sticky 4), $(val sticky 16)], tol: 0.01}
free:
  - workload.prefix.mean=log[512, 2048]
alternatives:
  - conversations workload.session.per_key=log[4, 64] workload.turns.mean=log[1.5, 10]
  - single_turn workload.session.per_key=1 workload.turns.mean=1 workload.input.mean=log[64, 4096]
screen:
  max_residual: 10
budget: 24
refine: 40
EOT

# ---- the fit ----
"$CRSIM" fit "$CFG" --targets targets.yaml --db fit.db --out fit.yaml --jobs 2 --quiet \
    >fit.txt 2>err || fail "fit exited $?: $(cat err)"
sed -n '1,/^best:/p' fit.txt
grep -q '^best: conversations .*(within tolerance)' fit.txt || fail "best: $(grep '^best' fit.txt)"
awk '$1 == "conversations" && $3 >= 1 { p = 1 } $1 == "single_turn" && $3 == 0 { q = 1 }
     END { exit !(p && q) }' fit.txt || fail "identified counts: $(sed -n 3,5p fit.txt)"
grep -q 'single_turn .*\[rejected at screening\]' fit.txt || fail "single_turn not rejected at screening"
n_id=$(awk '/^identified set of conversations/ { on = 1; next } /^identified set|^residuals/ { on = 0 }
    on && /^  #/ { n++ } END { print n + 0 }' fit.txt)
[ "$n_id" -ge 1 ] || fail "no identified point"
awk '/^identified set of conversations/ { on = 1; next } /^identified set|^residuals/ { on = 0 }
    on && /^  #/ { for (i = 1; i <= NF; i++) {
        split($i, a, "="); v = a[2] + 0; sub(/;$/, "", a[1])
        if (a[1] == "workload.prefix.mean" && (v < 1024 * 0.9 || v > 1024 * 1.1)) bad = 1
        if (a[1] == "workload.turns.mean" && (v < 4 * 0.85 || v > 4 * 1.15)) bad = 1
        if (a[1] == "workload.session.per_key" && (v < 16 * 0.8 || v > 16 * 1.2)) bad = 1 } }
    END { exit bad }' fit.txt || fail "an identified point is far from the truth"
echo "ok: structure and lengths recovered ($n_id identified)"
# The bound and the admission scale are in the residual table, one-sided
# named with '>='.
grep -q '^  workload     inf_hit>= ' fit.txt && grep -q '^  workload     admission_scale ' fit.txt ||
    fail "workload residual rows missing"

# ---- a closed-loop alternative: its client keys free under it, its
# workload targets from the stream an infinitely fast server receives
# (docs/fit.md): longer think times keep more conversations open per key,
# so the footprint grows and the admission scale C falls; nothing is run.
cat >cl.yaml <<EOT
seeds: [1]
targets:
  workload:
    inf_hit: {loads: [16], values: [0.5], tol: 1}
    admission_scale: {values: [100], tol: 1}
alternatives:
  - sessions workload.client.mode=sessions workload.turns.mean=4 workload.client.think.mean_s=in[1, 30]
budget: 2
refine: 0
EOT
"$CRSIM" fit "$CFG" --targets cl.yaml --db cl.db --quiet >cl.txt 2>err ||
    fail "closed-loop workload-only fit exited $?: $(cat err)"
n_runs=$(sqlite3 cl.db "SELECT COUNT(*) FROM runs" 2>/dev/null || echo 0)
[ "$n_runs" = 0 ] || fail "closed-loop workload-only fit ran $n_runs runs"
cl_c() { sqlite3 cl.db "SELECT r.sim FROM fit_residuals r JOIN fit_candidates c
    ON r.candidate_id = c.id WHERE r.metric = 'admission_scale'
    AND c.overrides LIKE '%think.mean_s=$1'" 2>/dev/null; }
c1=$(cl_c 1)
c30=$(cl_c 30)
awk -v a="$c1" -v b="$c30" 'BEGIN { exit !(a > 0 && b > 0 && b < 0.8 * a) }' &&
    echo "ok: closed-loop admission scale falls with the think time ($c1 at 1 s, $c30 at 30 s)" ||
    fail "closed-loop admission scale: '$c1' at think 1 s, '$c30' at 30 s (expected 30 s below 0.8 x 1 s)"

# ---- screen.refine_nearest: every alternative misses by more than
# max_residual (a Flat-LB hit of 0.99 within 0.001); the nearest one
# (long shared contexts: the higher hit) is refined anyway, the other
# (64-token contexts) is rejected.
cat >near.yaml <<EOT
seeds: [1]
loads: [4]
targets:
  flat_lb:
    hit: {loads: [4], values: [0.99], tol: 0.001}
screen:
  max_residual: 1
  refine_nearest: 1
free:
  - workload.input.mean=log[64, 256]
alternatives:
  - short workload.prefix.mean=64
  - long workload.prefix.mean=4096
budget: 4
refine: 2
EOT
"$CRSIM" fit "$CFG" --targets near.yaml --db near.db --quiet >near.txt 2>err ||
    fail "refine_nearest fit exited $?: $(cat err)"
nref() { sqlite3 near.db "SELECT COUNT(*) FROM fit_candidates WHERE alternative = '$1' AND stage = 'refine'" 2>/dev/null; }
if [ "$(nref long)" -ge 1 ] && [ "$(nref short)" = 0 ] &&
    grep -q '^long .*refined as nearest' near.txt && grep -q '^short .*rejected at screening' near.txt; then
    echo "ok: refine_nearest refines the nearest alternative only ($(nref long) refined)"
else
    fail "refine_nearest: refined long $(nref long), short $(nref short): $(grep -E '^(short|long) ' near.txt)"
fi

# ---- achieved_ratio: an open-loop candidate sends the offered 16
# requests/s and its routers complete them (ratio near 1, within the 5 %
# bound); a closed-loop one with 2 requests in flight completes a
# fraction of it (each request's E2E is far above 2 / 16 s): rejected.
cat >ach.yaml <<EOT
seeds: [1]
loads: [16]
targets:
  flat_lb:
    achieved_ratio: {loads: [16], values: [1], tol: 0.05, side: at_least}
alternatives:
  - open workload.client.mode=open
  - capped workload.client.mode=sessions workload.client.max_concurrency=2
budget: 2
refine: 0
EOT
"$CRSIM" fit "$CFG" --targets ach.yaml --db ach.db --quiet >ach.txt 2>err ||
    fail "achieved_ratio fit exited $?: $(cat err)"
ach() { sqlite3 ach.db "SELECT r.sim || ' ' || c.identified FROM fit_residuals r JOIN fit_candidates c
    ON r.candidate_id = c.id WHERE r.metric = 'achieved_ratio>=' AND c.alternative = '$1'" 2>/dev/null; }
a_open=$(ach open)
a_cap=$(ach capped)
echo "$a_open $a_cap" | awk '{ exit !($1 > 0.95 && $1 < 1.05 && $2 == 1 && $3 < 0.5 && $4 == 0) }' &&
    echo "ok: achieved_ratio: open-loop $a_open (ratio, identified), max_concurrency 2: $a_cap" ||
    fail "achieved_ratio: open-loop '$a_open', closed-loop capped '$a_cap' (expected ratio 0.95..1.05 identified, and < 0.5 rejected)"
# The measured send window starts at a warm-up by time: a warm-up by
# count is refused before any run.
printf 'loads: [16]\nset: [experiment.warmup_requests=100]\ntargets:\n  flat_lb:\n    achieved_ratio: {loads: [16], values: [1], tol: 0.05}\n' >ach_count.yaml
"$CRSIM" fit "$CFG" --targets ach_count.yaml --db ach_count.db >out 2>err
st=$?
if [ "$st" -eq 2 ] && grep -q "ach_count.yaml: achieved_ratio targets need a warm-up by time" err &&
    [ ! -e ach_count.db ]; then echo "ok: ach_count: $(cat err)"
else fail "ach_count: exit $st: $(cat err)"
fi

# ---- bad workload targets: exit 2, FILE:LINE, the key ----
bad() { # NAME PATTERN
    "$CRSIM" fit "$CFG" --targets "$1.yaml" --db "bad-$1.db" >out 2>err
    st=$?
    if [ "$st" -ne 2 ]; then fail "$1: exit $st, expected 2: $(cat err)"
    elif ! grep -q -- "$2" err; then fail "$1: stderr lacks '$2': $(cat err)"
    elif [ -e "bad-$1.db" ]; then fail "$1: a database was created"
    else echo "ok: $1: $(cat err)"
    fi
}
printf 'targets:\n  workload:\n    inf_hits: {loads: [4], values: [0.5], tol: 0.01}\n' >wl_key.yaml
bad wl_key "wl_key.yaml:3: unknown key 'targets.workload.inf_hits'"
printf 'targets:\n  workload:\n    inf_hit: {loads: [4], values: [0.5], tol: 0.01, side: above}\n' >wl_side.yaml
bad wl_side "wl_side.yaml:3: .*side"
printf 'targets:\n  workload:\n    admission_scale: {values: [128, 256], tol: 10}\n' >wl_two.yaml
bad wl_two "wl_two.yaml:3: key 'targets.workload.admission_scale.values' has 2 values; expected one"
printf 'targets:\n  workload:\n    admission_scale: {values: [128]}\n' >wl_tol.yaml
bad wl_tol "wl_tol.yaml:3: missing key 'targets.workload.admission_scale.tol'"
printf 'targets:\n  workload:\n    inf_hit: {loads: [4], values: [1.5], tol: 0.01}\n' >wl_range.yaml
bad wl_range "wl_range.yaml:3: .*inf_hit.values"
printf 'targets:\n  flat_lb:\n    hit: {loads: [4], values: [0.5], tol: 0.01}\nscreen:\n  max_residul: 3\n' >scr_key.yaml
bad scr_key "scr_key.yaml:5: unknown key 'screen.max_residul'"

[ "$fails" -eq 0 ] && echo "fit_identify: all tests passed"
exit $((fails > 0))
