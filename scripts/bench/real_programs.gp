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

# One bar series per variant that was run (`variants`, default all four); the .dat keeps every
# column, NaN where a variant was not run.
if (!exists("variants")) variants = "hetopt baseline nopool declined"
all = "hetopt baseline nopool declined"
titles = "'hetopt run'|'baseline (register at first transfer)'|'hetopt run --no-pool'|'declined (untouched)'"
colors = "#d55e00 #0072b2 #009e73 #999999"
series = ""
do for [i = 1:4] {
  if (strstrt(" " . variants . " ", " " . word(all, i) . " ") > 0) {
    t = titles
    do for [k = 1:i-1] { t = t[strstrt(t, "|") + 1:] }
    if (strstrt(t, "|") > 0) { t = t[1:strstrt(t, "|") - 1] }
    series = series . sprintf("%s using %d:%d:%d%s title %s lc rgb '%s', ", (series eq "" ? "datafile" : "''"), \
                              11 + i, 14 + 2 * i, 15 + 2 * i, (series eq "" ? ":xtic(1)" : ""), t, word(colors, i))
  }
}
plotit = "plot " . series . "'' using 0:27 with points pt 6 ps 1.6 lw 2 lc rgb 'black' title sprintf('ceiling: native / (native - copy time), at most %.2gx', cap)"

set terminal pngcairo size width,620 font "sans,10"
set output outbase . ".png"
eval plotit
set terminal svg size width,620 font "sans,10" dynamic
set output outbase . ".svg"
eval plotit
