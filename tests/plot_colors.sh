#!/bin/sh
# crsim plot (issue 39 item 9): one colour per router, the same in every
# figure and experiment (fixed palette by registry order), and the output
# folder derived from the database, so two databases holding experiments of
# the same name do not overwrite each other's figures.
# usage: plot_colors.sh CRSIM SOURCE_ROOT
set -u
case $1 in /*) CRSIM=$1 ;; *) CRSIM=$(pwd)/$1 ;; esac
SRC=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# gnuplot is not needed: the gnuplot command line is what is checked.
mkdir "$TMP/bin"
printf '#!/bin/sh\necho "$2" >>"%s/gp.log"\n' "$TMP" >"$TMP/bin/gnuplot"
chmod +x "$TMP/bin/gnuplot"
cd "$TMP" || exit 99
run() { # db policies
    "$CRSIM" run "$SRC/tests/configs/small.yaml" --set "workload.trace=$SRC/data/mooncake/conversation_trace.jsonl.xz" \
        --set workload.max_requests=300 --set experiment.min_measured=0 --set experiment.rates=[1] \
        --set "experiment.policies=$2" --set "experiment.db=$1" --quiet >/dev/null 2>&1 ||
        fail "run $1 failed"
}
mkdir a b
run a/x.db '[flat_lb, sticky]'
run b/x.db '[sticky, chwbl, flat_lb]'
PATH="$TMP/bin:$PATH" "$CRSIM" plot a/x.db >/dev/null 2>&1 || fail "plot a/x.db"
PATH="$TMP/bin:$PATH" "$CRSIM" plot b/x.db >/dev/null 2>&1 || fail "plot b/x.db"
[ -f a/x-small/p99.tsv ] && [ -f b/x-small/p99.tsv ] && [ ! -e results ] &&
    echo "ok: figures beside each database" || fail "output folders: $(find . -name p99.tsv)"
# flat_lb keeps its colour whatever the policy list; sticky likewise.
ca=$(grep "a/x-small/p99" gp.log | sed -n "s/.*colors='\([^']*\)'.*/\1/p")
cb=$(grep "b/x-small/p99" gp.log | sed -n "s/.*colors='\([^']*\)'.*/\1/p")
fa=$(echo "$ca" | cut -d' ' -f1); sa=$(echo "$ca" | cut -d' ' -f2)
sb=$(echo "$cb" | cut -d' ' -f1); cc=$(echo "$cb" | cut -d' ' -f2); fb=$(echo "$cb" | cut -d' ' -f3)
if [ -n "$fa" ] && [ "$fa" = "$fb" ] && [ "$sa" = "$sb" ] && [ "$fa" != "$sa" ] && [ "$cc" != "$fa" ] && [ "$cc" != "$sa" ]; then
    echo "ok: one colour per router ($ca | $cb)"
else
    fail "colours: a '$ca', b '$cb'"
fi
grep -q "lc rgb word(colors, i)" "$SRC/scripts/plot-p99.gp" || fail "plot-p99.gp does not use the colours"
# The hit figure colours each router's box with its colour too.
ch=$(grep "a/x-small/hit" gp.log | sed -n "s/.*colors='\([^']*\)'.*/\1/p")
[ "$ch" = "$ca" ] && echo "ok: hit.png uses the router colours" || fail "hit colours '$ch' vs p99 '$ca'"
# The run table's columns stay aligned with a long router name.
"$CRSIM" run "$SRC/tests/configs/small.yaml" --set "workload.trace=$SRC/data/mooncake/conversation_trace.jsonl.xz" \
    --set workload.max_requests=300 --set experiment.min_measured=0 --set experiment.rates=[1] \
    --set "experiment.policies=[flat_lb, sglang_cache_aware]" --set experiment.db=t.db 2>/dev/null >table.txt
h=$(grep '^policy' table.txt | awk '{ print index($0, "rate/s") + 5 }')
bad=$(awk -v h="$h" '/^(flat_lb|sglang_cache_aware) / { if (index($0, " 1.00 ") + 4 != h) print }' table.txt)
[ -n "$h" ] && [ -z "$bad" ] && [ "$(grep -c '^\(flat_lb\|sglang_cache_aware\) ' table.txt)" -eq 2 ] &&
    echo "ok: run table aligned with a long router name" || fail "run table: $(cat table.txt)"
# With real gnuplot: every hit 0 (a CSV trace has no reuse) draws without
# "empty y range" warnings.
if command -v gnuplot >/dev/null 2>&1; then
    "$CRSIM" run "$SRC/tests/configs/small.yaml" --set "workload.trace=$SRC/data/azure/AzureLLMInferenceTrace_conv.csv.xz" \
        --set workload.max_requests=400 --set experiment.min_measured=0 --set experiment.rates=[1,2] \
        --set experiment.timeline_s=60 --set experiment.db=z.db --quiet >/dev/null 2>&1 || fail "zero-hit run"
    "$CRSIM" plot z.db >/dev/null 2>plot.err || fail "zero-hit plot: $(cat plot.err)"
    if grep -qi "empty . range\|warning" plot.err; then fail "gnuplot warnings: $(cat plot.err)"; else echo "ok: zero hits plot without warnings"; fi
else
    echo "skip: no gnuplot"
fi
[ "$fails" -eq 0 ] && echo "plot_colors: all passed"
exit "$fails"
