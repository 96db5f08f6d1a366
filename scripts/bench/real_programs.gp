# SPDX-License-Identifier: MIT
# Speedup over native of each real program under hetopt run, the register-at-first-transfer
# baseline, hetopt run --no-pool and a declined (untouched) hetopt run: bars are the median of the
# per-round paired ratios (native / variant), whiskers their min-max; the open circle is the
# ceiling, native / (native - copy time), what removing every transfer's device time would give
# (drawn at `cap` when higher). Data: real_programs.dat from scripts/bench/real_programs.sh, which
# renders it; by hand:
#   gnuplot -e "datafile='real_programs.dat'; outbase='real_programs'; device='NVIDIA H100';
#               date='2026-11-24'; rounds='7'; cap=2" scripts/bench/real_programs.gp
if (!exists("datafile")) datafile = "real_programs.dat"
if (!exists("outbase")) outbase = "real_programs"
if (!exists("device")) device = "?"
if (!exists("date")) date = "?"
if (!exists("rounds")) rounds = "?"
if (!exists("cap")) cap = 2

stats datafile using 3 nooutput
n = STATS_records
width = n * 70 + 400
if (width < 900) width = 900

set title sprintf("Real OpenCL programs on %s, %s\nspeedup over native (whole process): median of %s interleaved rounds' paired ratios, whiskers min-max", device, date, rounds) noenhanced
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set bars front
set ylabel "speedup over native (x)"
set yrange [0:cap * 1.05]
set grid ytics
set key below horizontal noenhanced
set xtics rotate by -35 noenhanced
set rmargin 14
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb "#808080" front

plotit = "plot datafile using 12:16:17:xtic(1) title 'hetopt run' lc rgb '#d55e00', \
  '' using 13:18:19 title 'baseline (register at first transfer)' lc rgb '#0072b2', \
  '' using 14:20:21 title 'hetopt run --no-pool' lc rgb '#009e73', \
  '' using 15:22:23 title 'declined (untouched)' lc rgb '#999999', \
  '' using 0:27 with points pt 6 ps 1.6 lw 2 lc rgb 'black' title sprintf('ceiling: native / (native - copy time), at most %.2gx', cap)"

set terminal pngcairo size width,620 font "sans,10"
set output outbase . ".png"
eval plotit
set terminal svg size width,620 font "sans,10" dynamic
set output outbase . ".svg"
eval plotit
