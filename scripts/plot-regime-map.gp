# Win/tie/lose region map for `crsim regime --map`: two workload axes, the
# capacity ratio cacheroute/flat_lb as colour, the verdict as a label.
# Variables: datafile (TSV: x y x_label y_label ratio verdict ...),
# outbase (no extension), xname, yname, nx, ny.
set datafile separator "\t"
set encoding utf8

do for [fmt in "png svg"] {
    if (fmt eq "png") {
        if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
            set terminal pngcairo size 1000,700 noenhanced font "Sans,12"
        } else {
            set terminal png size 1000,700 noenhanced
        }
    } else {
        set terminal svg size 1000,700 noenhanced font "Sans,12"
    }
    set output outbase.".".fmt
    set title "Will cacheroute win against flat_lb?  colour: SLO capacity ratio cacheroute / flat_lb\n(label: verdict; tie = within the tie band or overlapping seed ranges)"
    set xlabel xname
    set ylabel yname
    set xrange [-0.5 : nx - 0.5]
    set yrange [-0.5 : ny - 0.5]
    set cblabel "capacity ratio (cacheroute / flat_lb)"
    set cbrange [0.5 : 2.0]
    set palette defined (0.5 "#b2182b", 0.9 "#f4a582", 1.0 "#f7f7f7", 1.1 "#92c5de", 2.0 "#2166ac")
    set xtics () nomirror
    set ytics () nomirror
    unset key
    plot datafile using 1:2:($5 > 2 ? 2 : $5 < 0.5 ? 0.5 : $5) with image, \
         '' using 1:2:(sprintf("%s\n%.2f", stringcolumn(6), $5)) with labels font ",11", \
         '' using 1:(-0.5):xticlabels(3) with points pt -1, \
         '' using (-0.5):2:yticlabels(4) with points pt -1
}
