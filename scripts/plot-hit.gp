# Served, token-weighted KV hit rate per policy at the report rate (mean
# ± sd over seeds), for `crsim plot`.
# Variables: datafile, outbase (no extension), exptitle, rate
# (requests/s), policies.
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

set title exptitle."\nserved KV hit rate at ".sprintf("%g", rate)." requests/s (mean ± sd over seeds)"
set ylabel "KV hit rate (% of prompt tokens)"
set xlabel "policy"
set xrange [-0.6 : npol - 0.4]
set yrange [0 : 109]
set ytics 0, 10, 100 nomirror
set xtics nomirror scale 0
set grid ytics lc rgb "gray80"
set boxwidth 0.6 absolute
set style fill solid 0.75 border -1

plot datafile using 1:2:xtic(5) with boxes lc 1 notitle, \
     '' using 1:($2 - $3):(0):(2 * $3) with vectors heads size screen 0.006,90 lc rgb "black" lw 1.5 notitle, \
     '' using 1:($2 + $3):4 with labels offset 0, 0.9 notitle

set terminal svg size 1000,650 noenhanced font "Sans,12" background rgb "white"
set output outbase.".svg"
replot
set output
