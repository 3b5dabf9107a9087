# The SLO metric (a p99 latency, s) against offered load per policy, mean
# over seeds, with the SLO thresholds as dashed lines, for `crsim plot`.
# A mean that is +Inf (a seed had unfinished requests) is drawn at the
# dotted red ceiling with a large open circle.
# Variables: datafile, outbase (no extension), exptitle, metric, unit (of the loads), slos,
# policies, colors (one "#rrggbb" per policy: a fixed colour per router,
# the same in every figure), ceiling (s), ymin (s), logy (0/1), anyinf (0/1:
# draw the ceiling line).
set datafile separator "\t"
set datafile missing "?"
set encoding utf8
npol = words(policies)

if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 1200,720 noenhanced font "Sans,12"
} else {
    set terminal png size 1200,720 noenhanced
}
set output outbase.".png"

set title exptitle."\n".metric." against offered load (mean over seeds)"
set xlabel "offered load (".unit.")"
set ylabel metric." (s)".(logy ? ", log scale" : "")
if (logy) {
    set logscale y
    set yrange [ymin : ceiling * 1.8]
} else {
    set yrange [0 : ceiling * 1.12]
}
set xrange [0 : *]
set grid lc rgb "gray85"
set key outside right top box
set rmargin 22
do for [i = 1:words(slos)] {
    s = word(slos, i) + 0
    set arrow from graph 0, first s to graph 1, first s nohead dt 2 lw 1.5 lc rgb "gray30" front
    set label sprintf("SLO %s s", word(slos, i)) at graph 0.01, first s offset 0, 0.6 tc rgb "gray30" front
}
if (anyinf) {
    set arrow from graph 0, first ceiling to graph 1, first ceiling nohead dt 3 lw 1.5 lc rgb "red"
    set label "unfinished requests (∞) drawn here" at graph 0.99, first ceiling right offset 0, 0.7 tc rgb "red"
}

# Columns 3 and 4 give each point's size and type: a filled dot, or a large
# open circle where the mean is +Inf (drawn at the ceiling).
plot for [i = 1:npol] datafile index (i - 1) using 1:2:3:4 with linespoints lw 2 \
         ps variable pt variable lc rgb word(colors, i) title word(policies, i)

set terminal svg size 1200,720 noenhanced font "Sans,12" background rgb "white"
set output outbase.".svg"
replot
set output
