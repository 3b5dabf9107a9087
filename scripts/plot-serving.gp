# Achieved requests/s (and goodput) and p99 TTFT against load per policy,
# means over seeds, for `crsim plot`: the figure the serving benchmarks
# draw (vLLM bench serve, inference-perf).  Two panels: top, achieved
# requests/s (solid) and goodput (dashed, when experiment.goodput_* is
# set); bottom, p99 TTFT, a mean that is +Inf (a seed had unfinished
# requests) drawn at the dotted red ceiling with a large open circle.
# Used for serving-load (x = the tested load) and stages (x = each stage's
# load, staged clients).
# Variables: datafile, outbase (no extension), exptitle, policies, colors
# (one "#rrggbb" per policy, the same in every figure), xlabel, goodput
# (0/1), tmax (requests/s), ceiling (s), ymin (s), logy (0/1), anyinf (0/1).
# Data columns: x, throughput_rps, goodput_rps, ttft_p99 as drawn, point
# size, point type, ...; one block per policy.
set datafile separator "\t"
set datafile missing "?"
set encoding utf8
npol = words(policies)

if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 1200,960 noenhanced font "Sans,12"
} else {
    set terminal png size 1200,960 noenhanced
}
set output outbase.".png"

do for [pass = 1:2] {
    set multiplot layout 2,1 title exptitle."\nachieved requests/s and p99 TTFT (means over seeds)"
    set grid lc rgb "gray85"
    set key outside right top box
    set rmargin 28
    set xrange [0 : *]
    set xlabel xlabel
    unset logscale y
    set yrange [0 : tmax * 1.15]
    set ylabel "requests/s".(goodput ? " (dashed: goodput)" : "")
    if (goodput) {
        plot for [i = 1:npol] datafile index (i - 1) using 1:2 with linespoints lw 2 pt 7 \
                 ps 1.2 lc rgb word(colors, i) title word(policies, i), \
             for [i = 1:npol] datafile index (i - 1) using 1:3 with linespoints lw 2 dt 2 \
                 pt 6 ps 1.2 lc rgb word(colors, i) notitle
    } else {
        plot for [i = 1:npol] datafile index (i - 1) using 1:2 with linespoints lw 2 pt 7 \
                 ps 1.2 lc rgb word(colors, i) title word(policies, i)
    }
    set ylabel "TTFT p99 (s)".(logy ? ", log scale" : "")
    if (logy) {
        set logscale y
        set yrange [ymin : ceiling * 1.8]
    } else {
        set yrange [0 : ceiling * 1.12]
    }
    if (anyinf) {
        set arrow 1 from graph 0, first ceiling to graph 1, first ceiling nohead dt 3 lw 1.5 lc rgb "red"
        set label 1 "unfinished requests (∞) drawn here" at graph 0.99, first ceiling right offset 0, 0.7 tc rgb "red"
    }
    plot for [i = 1:npol] datafile index (i - 1) using 1:4:5:6 with linespoints lw 2 \
             ps variable pt variable lc rgb word(colors, i) title word(policies, i)
    unset arrow 1
    unset label 1
    unset multiplot
    if (pass == 1) {
        set terminal svg size 1200,960 noenhanced font "Sans,12" background rgb "white"
        set output outbase.".svg"
    }
}
set output
