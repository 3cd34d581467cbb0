# SPDX-License-Identifier: GPL-2.0
# gnuplot -e "dat='build/bench/plot.dat'; out='build/bench/results.png'" tools/bench/icount/plot.gp
set terminal pngcairo size 1200,600 font ",10"
set output out
set title "Router CPU per packet and per router (guest instructions, QEMU icount; lower is better)"
set style data histogram
set style histogram cluster gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set ylabel "instructions per packet"
set xtics rotate by -30 scale 0
set yrange [0:*]
set grid ytics
# A configuration not run (plain, say) leaves its bars out, not the plot.
set datafile missing "NaN"
set key top center horizontal
plot dat using 2:xtic(1) title "plain forwarding", \
     '' using 3 title "stock flowtable", \
     '' using 4 title "nf\\_flow\\_bulk"
