#!/bin/sh
# Per-group metrics of a mixed fleet (docs/mixed-fleets.md, "Per-group
# report"; docs/results-schema.md, group_metrics): a tiny fleet of 3 x H100
# + 2 x H200, two policies, two seeds.  Asserts:
#  - one group_metrics row per group per run, with the group's name and
#    destination count;
#  - the groups add up to the run: Σ requests = n_measured, Σ prompt and
#    hit tokens = the run's, and each group's hit_rate = hit / prompt
#    tokens; utilisation in [0, 1];
#  - the groups' requests agree with the per-request records (--requests):
#    measured requests whose destination is in the group;
#  - --resume copies the rows unchanged into the new experiment;
#  - `crsim report` prints the group table, one row per (policy, group),
#    served shares adding up to 100 % per policy; a uniform cluster stores
#    no rows and prints no group table.
# usage: report_groups.sh CRSIM
set -u
CRSIM=$1
command -v sqlite3 >/dev/null 2>&1 || { echo "SKIP: sqlite3 command not found"; exit 77; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
cat >"$TMP/m.yaml" <<'YAML'
experiment:
  name: groups
  policies: [flat_lb, preble]
  rates: [8]
  seeds: [1, 2]
  slos: [2, 3, 4]
  warmup_s: 20
workload:
  type: synthetic
  duration_s: 90
  keys: {n: 50, active_set: 10}
cluster:
  model: llama-3.3-70b
  tp: 2
  groups:
    - {name: h100, destinations: 3, hardware: h100-sxm}
    - {name: h200, destinations: 2, hardware: h200-sxm}
YAML
DB="$TMP/m.db"
"$CRSIM" run "$TMP/m.yaml" --quiet --jobs 2 --requests --set "experiment.db=$DB" >"$TMP/out" 2>&1 ||
    { echo "FAIL: run failed: $(cat "$TMP/out")"; exit 1; }
q() { sqlite3 -separator ' ' "$DB" "$1"; }
n=$(q "SELECT COUNT(*) FROM group_metrics")
[ "$n" = 8 ] && ok "8 group rows (4 runs x 2 groups)" || fail "expected 8 group rows, got $n"
bad=$(q "SELECT r.id FROM runs r WHERE (SELECT group_concat(name || ':' || destinations, ',') FROM
    (SELECT * FROM group_metrics g WHERE g.run_id = r.id ORDER BY grp)) IS NOT 'h100:3,h200:2'")
[ -z "$bad" ] && ok "names and sizes" || fail "group names/sizes wrong in runs $bad"
bad=$(q "SELECT m.run_id FROM run_metrics m JOIN (SELECT run_id, SUM(requests) rq,
    SUM(prompt_tokens) pt, SUM(hit_tokens) ht FROM group_metrics GROUP BY run_id) g
    ON g.run_id = m.run_id WHERE g.rq != m.n_measured OR g.pt != m.prompt_tokens
    OR g.ht != m.hit_tokens")
[ -z "$bad" ] && ok "groups add up to the run totals" || fail "groups do not add up in runs $bad"
bad=$(q "SELECT run_id, grp FROM group_metrics WHERE abs(hit_rate - 1.0 * hit_tokens / prompt_tokens)
    > 1e-12 OR NOT (utilization BETWEEN 0 AND 1) OR requests = 0 OR ttft_p99 < ttft_p50")
[ -z "$bad" ] && ok "hit_rate = hit/prompt, utilisation in [0,1], p99 >= p50" || fail "bad rows $bad"
bad=$(q "SELECT g.run_id, g.grp FROM group_metrics g WHERE g.requests != (SELECT COUNT(*)
    FROM requests q WHERE q.run_id = g.run_id AND q.measured = 1
    AND q.dest BETWEEN (CASE g.grp WHEN 0 THEN 0 ELSE 3 END) AND (CASE g.grp WHEN 0 THEN 2 ELSE 4 END))")
[ -z "$bad" ] && ok "group requests = measured request records on its destinations" ||
    fail "group requests disagree with the request records: $bad"
"$CRSIM" run "$TMP/m.yaml" --quiet --resume --set "experiment.db=$DB" >"$TMP/out2" 2>&1 ||
    { echo "FAIL: resume failed: $(cat "$TMP/out2")"; exit 1; }
d=$(q "SELECT COUNT(*) FROM (SELECT r.run_index, g.grp, g.requests, g.hit_tokens, quote(g.ttft_p99),
    quote(g.utilization) FROM group_metrics g JOIN runs r ON r.id = g.run_id WHERE r.experiment_id = 1
    EXCEPT SELECT r.run_index, g.grp, g.requests, g.hit_tokens, quote(g.ttft_p99), quote(g.utilization)
    FROM group_metrics g JOIN runs r ON r.id = g.run_id WHERE r.experiment_id = 2)")
n2=$(q "SELECT COUNT(*) FROM group_metrics g JOIN runs r ON r.id = g.run_id WHERE r.experiment_id = 2")
[ "$d" = 0 ] && [ "$n2" = 8 ] && ok "--resume copies the group rows" || fail "resume: $n2 rows, $d differ"
"$CRSIM" report "$DB" --experiment 1 >"$TMP/rep" 2>&1 || fail "report failed: $(cat "$TMP/rep")"
grep -q "destination groups @8" "$TMP/rep" && ok "report prints the group table" ||
    fail "no group table in the report: $(cat "$TMP/rep")"
rows=$(awk '/destination groups @8/ { on = 1; next } on && /^(flat_lb|preble) / { n++ } END { print n + 0 }' "$TMP/rep")
[ "$rows" = 4 ] && ok "4 group rows in the report" || fail "expected 4 group rows, got $rows"
awk '/destination groups @8/ { on = 1; next }
     on && /^(flat_lb|preble) / { for (i = 1; i <= NF; i++) if ($i == "%") { s[$1] += $(i - 1); break } }
     END { bad = 0; for (p in s) if (s[p] < 99.8 || s[p] > 100.2) { print "FAIL: " p " served sums to " s[p]; bad = 1 }; exit bad }' \
    "$TMP/rep" && ok "served shares add up to 100 % per policy" || fail "served shares"
# A uniform cluster: no rows, no table.
"$CRSIM" run "$TMP/m.yaml" --quiet --set "experiment.db=$TMP/u.db" --set 'cluster.groups=[]' \
    --set cluster.destinations=5 --set 'experiment.policies=[flat_lb]' --set 'experiment.seeds=[1]' \
    >"$TMP/out3" 2>&1 || { echo "FAIL: uniform run failed: $(cat "$TMP/out3")"; exit 1; }
n=$(sqlite3 "$TMP/u.db" "SELECT COUNT(*) FROM group_metrics")
"$CRSIM" report "$TMP/u.db" >"$TMP/rep2" 2>&1
[ "$n" = 0 ] && ! grep -q "destination groups" "$TMP/rep2" && ok "uniform: no group rows, no table" ||
    fail "uniform cluster: $n group rows or a group table"
[ "$fails" -eq 0 ] || exit 1
echo "report_groups: ok"
