# The scaling curve of scripts/bench-scale: µs per simulated request and
# peak RSS against cluster size R (proportional load) and against the key
# population, one line per router (dashed: the user part of the CPU
# time, without the system time of first touches of fresh memory).
# Variables: dest, keys (data files), outfile (.svg).
set datafile separator "\t"
set terminal svg size 1100,800 dynamic noenhanced font "Sans,12"
set output outfile
pols = system("awk -F'\t' '!/^#/ && !s[$1]++ {printf \"%s \", $1}' ".dest)
set multiplot layout 2,2 title "crsim scaling (scripts/bench-scale)"
set logscale x
set grid
set key top left
set xrange [5:1500]
set xlabel "destinations R (load and keys per destination fixed)"
set ylabel "µs of CPU time per simulated request"
set yrange [0:*]
plot for [p in pols] dest using 2:(strcol(1) eq p ? $6 : 1/0) with linespoints title p, \
     for [p in pols] dest using 2:(strcol(1) eq p && strcol(9) ne "" ? $9 : 1/0) with linespoints dt 2 title p." (user)"
set ylabel "peak RSS (MB)"
set logscale y
set yrange [*:*]
plot for [p in pols] dest using 2:(strcol(1) eq p ? $8 : 1/0) with linespoints title p
unset logscale y
set xrange [*:*]
set xlabel "key population (workload.keys.n, all active; R = 30, 100 requests/s)"
set ylabel "µs of CPU time per simulated request"
set yrange [0:*]
plot for [p in pols] keys using 2:(strcol(1) eq p ? $5 : 1/0) with linespoints title p, \
     for [p in pols] keys using 2:(strcol(1) eq p && strcol(8) ne "" ? $8 : 1/0) with linespoints dt 2 title p." (user)"
set ylabel "peak RSS (MB)"
set logscale y
set yrange [*:*]
plot for [p in pols] keys using 2:(strcol(1) eq p ? $7 : 1/0) with linespoints title p
unset multiplot
