# SLO capacity per policy, one bar per SLO threshold, for `crsim plot`
# (sim/exp/plot.c writes the data and passes the variables below with -e).
# Exact capacities: solid bars, mean over exact seeds with sd error bars.
# All seeds right-censored: hatched bar up to the highest tested load.
# Censored seeds are named by a label above the bar (L: fails at the
# lowest load; R: meets the SLO at every tested load).
# Variables: datafile, outbase (no extension), exptitle, metric, unit (of the loads), slos
# (space-separated thresholds, s), policies (space-separated), ymax.
set datafile separator "\t"
# Missing values are written as "?"; `v(c)` maps them below the y range,
# where they are clipped, so a block with none (say, no censored seed)
# plots without gnuplot's "no valid points" warning.
v(c) = valid(c) ? column(c) : -1e30
set encoding utf8
nslo = words(slos)
npol = words(policies)
bw = 0.8 / nslo

if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 1200,720 noenhanced font "Sans,12"
} else {
    set terminal png size 1200,720 noenhanced
}
set output outbase.".png"

set title exptitle."\nSLO capacity: highest tested load with ".metric." ≤ threshold at every tested load up to it"
set ylabel "SLO capacity (".unit.")"
set xlabel "policy"
set xrange [-0.6 : npol - 0.4]
set yrange [0 : ymax]
set xtics (word(policies, 1) 0) nomirror scale 0
do for [i = 2:npol] { set xtics add (word(policies, i) i - 1) }
set ytics nomirror
set grid ytics lc rgb "gray80"
set key top left horizontal box opaque
set boxwidth bw * 0.9 absolute
set bmargin 6
# Router names under their bars: slanted when they would not fit side by
# side (about 1100 px across npol slots of 11 px per character).
maxlen = 0
do for [i = 1:npol] { maxlen = strlen(word(policies, i)) > maxlen ? strlen(word(policies, i)) : maxlen }
if (maxlen * 11 * npol > 1000) {
    set xtics rotate by 30 right
    set bmargin 6 + maxlen / 4
}
set label 1 "solid: mean ± sd over exact seeds;  hatched: all seeds right-censored (capacity ≥ bar);  labels: censored seeds (L = fails at the lowest load, R = meets the SLO at every load)" \
    at screen 0.5, screen 0.025 center font ",10"

plot for [i = 1:nslo] datafile index (i - 1) using 1:(v(2)) with boxes fs solid 0.75 border lt -1 lc i \
         title sprintf("%s ≤ %s s", metric, word(slos, i)), \
     for [i = 1:nslo] datafile index (i - 1) using 1:(v(4)) with boxes fs pattern 4 border lt -1 lc i notitle, \
     for [i = 1:nslo] datafile index (i - 1) using 1:(v(2) - $3):(0):(2 * $3) with vectors heads size screen 0.006,90 lc rgb "black" lw 1.5 notitle, \
     for [i = 1:nslo] datafile index (i - 1) using 1:(v(5)):6 with labels rotate by 90 left font ",10" notitle

set terminal svg size 1200,720 noenhanced font "Sans,12" background rgb "white"
set output outbase.".svg"
replot
set output
