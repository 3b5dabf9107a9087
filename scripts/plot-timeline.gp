# The timeline of one experiment for `crsim plot`: per window of
# experiment.timeline_s of arrival time, the served KV hit rate (top) and
# the p99 TTFT (bottom, log scale) of the requests arriving in it, one line
# per policy (and per sweep point where the sweep changed the policy's
# timeline), mean over seeds at the report rate.  Vertical lines mark the
# scheduled fault events (faults.events).  A window whose p99 is +Inf (a
# request unfinished or failed for good) is drawn at the dotted red
# ceiling with a large open circle.
# Variables: datafile, outbase (no extension), exptitle, series (word
# list), colors (one "#rrggbb" per series: the router's fixed colour),
# hitmax (largest hit rate, %), ceiling (s), ymin (s), anyinf (0/1), window
# (s), events (times, s), evlabels (word list), xmin, xmax (s), slos, rate.
set datafile separator "\t"
set datafile missing "?"
set encoding utf8
nser = words(series)

if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 1200,900 noenhanced font "Sans,11"
} else {
    set terminal png size 1200,900 noenhanced
}
set output outbase.".png"

# Sixteen distinct colours (then repeated), so that the figure reads in
# the plain png terminal too, which draws no dashes.
set linetype 1 lc rgb "#1f77b4"
set linetype 2 lc rgb "#d62728"
set linetype 3 lc rgb "#2ca02c"
set linetype 4 lc rgb "#ff7f0e"
set linetype 5 lc rgb "#9467bd"
set linetype 6 lc rgb "#8c564b"
set linetype 7 lc rgb "#e377c2"
set linetype 8 lc rgb "#17becf"
set linetype 9 lc rgb "#000000"
set linetype 10 lc rgb "#bcbd22"
set linetype 11 lc rgb "#7f7f7f"
set linetype 12 lc rgb "#aec7e8"
set linetype 13 lc rgb "#98df8a"
set linetype 14 lc rgb "#ff9896"
set linetype 15 lc rgb "#c5b0d5"
set linetype 16 lc rgb "#f7b6d2"
set linetype cycle 16

do for [pass = 1:2] {
    if (pass == 2) {
        set terminal svg size 1200,900 noenhanced font "Sans,11" background rgb "white"
        set output outbase.".svg"
    }
    set multiplot layout 2,1 title exptitle."\ntimeline at ".sprintf("%g", rate)." requests/s, ".sprintf("%g", window)." s windows of arrival time (mean over seeds)"
    unset arrow
    unset label
    set xrange [xmin : xmax]
    set grid lc rgb "gray85"
    set key outside right top box font ",9"
    set lmargin 10
    set rmargin 34
    do for [i = 1:words(events)] {
        t = word(events, i) + 0
        set arrow from first t, graph 0 to first t, graph 1 nohead dt 2 lw 1.5 lc rgb "black" front
        set label word(evlabels, i) at first t, graph 1 offset 0.5, -0.8 tc rgb "black" front
    }
    set ylabel "served KV hit rate (%)"
    unset logscale y
    # From 0 to above the largest hit rate (at least 1 %: all-zero hits
    # would give gnuplot an empty range).
    set yrange [0 : (hitmax > 0 ? hitmax * 1.08 : 1)]
    set format x ""
    unset xlabel
    plot for [i = 1:nser] datafile index (i - 1) using 1:2 with lines lw 1.6 \
             lc rgb word(colors, i) title word(series, i)
    set format x "%g"
    set xlabel "arrival time (s)"
    set ylabel "p99 TTFT (s), log scale"
    set logscale y
    set yrange [ymin : ceiling * 1.8]
    do for [i = 1:words(slos)] {
        s = word(slos, i) + 0
        set arrow from graph 0, first s to graph 1, first s nohead dt 3 lw 1 lc rgb "gray40"
    }
    if (anyinf) {
        set arrow from graph 0, first ceiling to graph 1, first ceiling nohead dt 3 lw 1.5 lc rgb "red"
        set label "+Inf (unfinished or failed requests) drawn here" at graph 0.99, first ceiling right offset 0, 0.7 tc rgb "red"
    }
    plot for [i = 1:nser] datafile index (i - 1) using 1:3:4:5 with linespoints lw 1.6 \
             ps variable pt variable lc rgb word(colors, i) title word(series, i)
    unset multiplot
}
set output
