# Served, token-weighted KV hit rate per policy at the report rate (mean
# ± sd over seeds), for `crsim plot`.
# Variables: datafile, outbase (no extension), exptitle, unit (of the loads), rate
# (the report load, in unit), policies, colors (one "#rrggbb" per policy: the router's fixed
# colour, the same in every figure).
set datafile separator "\t"
set datafile missing "?"
set encoding utf8
npol = words(policies)

if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 1000,650 noenhanced font "Sans,12"
} else {
    set terminal png size 1000,650 noenhanced
}
set output outbase.".png"

set title exptitle."\nserved KV hit rate at ".sprintf("%g", rate)." ".unit." (mean ± sd over seeds)"
set ylabel "KV hit rate (% of prompt tokens)"
set xlabel "policy"
set xrange [-0.6 : npol - 0.4]
set yrange [0 : 109]
set ytics 0, 10, 100 nomirror
set xtics nomirror scale 0
# Router names slanted when they would not fit side by side (about 900 px
# across npol slots of 11 px per character).
maxlen = 0
do for [i = 1:npol] { maxlen = strlen(word(policies, i)) > maxlen ? strlen(word(policies, i)) : maxlen }
if (maxlen * 11 * npol > 850) {
    set xtics rotate by 30 right
    set bmargin maxlen / 4 + 3
}
set grid ytics lc rgb "gray80"
set boxwidth 0.6 absolute
set style fill solid 0.75 border -1

# One box per router, in the router's fixed colour (colors).
plot for [i = 1:npol] datafile every ::(i - 1)::(i - 1) using 1:2:xtic(5) with boxes \
         lc rgb word(colors, i) notitle, \
     '' using 1:($2 - $3):(0):(2 * $3) with vectors heads size screen 0.006,90 lc rgb "black" lw 1.5 notitle, \
     '' using 1:($2 + $3):4 with labels offset 0, 0.9 notitle

set terminal svg size 1000,650 noenhanced font "Sans,12" background rgb "white"
set output outbase.".svg"
replot
set output
