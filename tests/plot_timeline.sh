#!/bin/sh
# `crsim plot` of an experiment with a timeline and scheduled faults
# (docs/faults.md): timeline.tsv has one block per policy with one row per
# stored timeline window, the fault events in its header, +Inf windows at
# the ceiling; the figure is produced and non-empty when gnuplot is
# installed; without gnuplot the data file is still written and the exit
# is 1 with a clear message.
# usage: plot_timeline.sh CRSIM SCRIPT_DIR
set -u
CRSIM=$1
export CRSIM_SCRIPT_DIR=$2
TMP=$(mktemp -d /tmp/plot_timeline.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fails=0
ok() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; fails=$((fails + 1)); }
cat > "$TMP/t.yaml" <<YAML
experiment:
  name: tl
  policies: [flat_lb, sticky]
  rates: [4]
  seeds: [1]
  warmup_s: 20
  drain_s: 300
  timeline_s: 10
  db: $TMP/tl.db
faults:
  events: ["60:crash:1", "120:recover:1"]
gateway: {health_check_interval_s: 10}
cluster: {destinations: 4}
workload:
  type: synthetic
  duration_s: 200
  keys: {n: 50, active_set: 8}
YAML
"$CRSIM" run "$TMP/t.yaml" --quiet >"$TMP/run.out" 2>&1 || { cat "$TMP/run.out"; exit 1; }
"$CRSIM" export "$TMP/tl.db" --table timeline --format csv >"$TMP/tl.csv" 2>"$TMP/ee" ||
    fail "export timeline: $(cat "$TMP/ee")"
n_db=$(($(wc -l < "$TMP/tl.csv") - 1))
CRSIM_GNUPLOT="$TMP/no-gnuplot" "$CRSIM" plot "$TMP/tl.db" --out "$TMP/nog" >"$TMP/po" 2>"$TMP/pe"
st=$?
[ "$st" -eq 1 ] && grep -q "gnuplot not found" "$TMP/pe" && [ -s "$TMP/nog/timeline.tsv" ] &&
    ok "timeline data without gnuplot" || fail "without gnuplot: exit $st, $(cat "$TMP/pe")"
T="$TMP/nog/timeline.tsv"
grep -q "^# fault events: 60 s crash_1; 120 s recover_1;" "$T" && ok "events in the header" ||
    fail "events: $(sed -n 2p "$T")"
n_rows=$(grep -vc '^#\|^$' "$T")
[ "$n_rows" -eq "$n_db" ] && [ "$n_db" -gt 20 ] && ok "$n_rows rows = stored windows" ||
    fail "$n_rows rows in timeline.tsv, $n_db in the store"
n_series=$(awk -F'\t' '!/^#/ && NF > 7 {print $8}' "$T" | sort -u | tr '\n' ' ')
[ "$n_series" = "flat_lb sticky " ] && ok "one series per policy" || fail "series: $n_series"
# Every window's hit rate (%) is 100 x the stored one (flat_lb's first window).
want=$(awk -F, 'NR == 2 {printf "%.4f", 100 * $5}' "$TMP/tl.csv")
got=$(awk -F'\t' '!/^#/ && NF > 7 {printf "%.4f", $2; exit}' "$T")
[ "$want" = "$got" ] && ok "hit rate of window 0: $got %" || fail "hit rate $got, stored $want"
# +Inf windows (marked inf) are drawn at the ceiling of the header.
ceil=$(sed -n '1s/.*drawn at \([0-9.e+]*\)$/\1/p' "$T")
bad=$(awk -F'\t' -v c="$ceil" '!/^#/ && $6 == "inf" && $3 != c' "$T" | wc -l)
[ -n "$ceil" ] && [ "$bad" -eq 0 ] && ok "+Inf windows at the ceiling $ceil" ||
    fail "ceiling '$ceil', $bad +Inf rows elsewhere"
# The report CSV carries the fault columns: retries_mean = the stored n_retries (one seed).
"$CRSIM" report "$TMP/tl.db" --format csv >"$TMP/rep.csv" 2>"$TMP/re" || fail "report: $(cat "$TMP/re")"
head -1 "$TMP/rep.csv" | grep -q ',failed_mean,retries_mean,' && ok "CSV fault columns" ||
    fail "CSV header: $(head -1 "$TMP/rep.csv")"
"$CRSIM" export "$TMP/tl.db" --table run_metrics --format csv >"$TMP/rm.csv" 2>"$TMP/ee"
col=$(head -1 "$TMP/rm.csv" | tr ',' '\n' | grep -n '^n_retries$' | cut -d: -f1)
want=$(awk -F, -v c="$col" 'NR > 1 {s = s $c " "} END {print s}' "$TMP/rm.csv")
rcol=$(head -1 "$TMP/rep.csv" | tr ',' '\n' | grep -n '^retries_mean$' | cut -d: -f1)
got=$(awk -F, -v c="$rcol" 'NR > 1 {s = s $c " "} END {print s}' "$TMP/rep.csv")
[ -n "$col" ] && [ "$want" = "$got" ] && ok "retries_mean per policy: $got" ||
    fail "retries_mean '$got', stored n_retries '$want'"
if command -v gnuplot >/dev/null 2>&1; then
    if "$CRSIM" plot "$TMP/tl.db" --out "$TMP/fig" >"$TMP/po" 2>"$TMP/pe"; then
        [ -s "$TMP/fig/timeline.png" ] && [ -s "$TMP/fig/timeline.svg" ] &&
            grep -q "crash_1" "$TMP/fig/timeline.svg" && ok "timeline.png and .svg drawn" ||
            fail "no timeline figure: $(cat "$TMP/po" "$TMP/pe")"
        [ -s "$TMP/pe" ] && fail "gnuplot complained: $(cat "$TMP/pe")"
    else
        fail "plot exited $?: $(cat "$TMP/pe")"
    fi
else
    echo "skip: gnuplot figures (no gnuplot)"
fi
[ "$fails" -eq 0 ] && echo "plot_timeline: ok" || exit 1
