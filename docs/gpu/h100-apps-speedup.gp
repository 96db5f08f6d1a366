# Speedup over native of each test app (median of 5 interleaved runs; the app's own elapsed time:
# host allocation + transfers + kernels): hand-pinned, hetopt run (pool) and hetopt run --no-pool
# (the naive variant). Data: h100-apps-speedup.dat (scripts/bench/apps_speedup.sh, columns: app
# native pinned hetopt nopool pinned_x hetopt_x nopool_x ...). Render: cd docs/gpu && gnuplot h100-apps-speedup.gp
set terminal pngcairo size 1200,520 font "sans,11" noenhanced
set output "h100-apps-speedup.png"
set title "Test apps on NVIDIA H100 80GB HBM3 (driver 580.159.04, 2026-11-23), 64 MiB buffers: speedup over native"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set ylabel "speedup over native (x)"
set yrange [0:*]
set grid ytics
set key top right
set xtics rotate by -30
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb "#808080"
plot "h100-apps-speedup.dat" using 6:xtic(1) title "hand-pinned (--pinned)" lc rgb "#0072b2", \
     "" using 7 title "hetopt run" lc rgb "#d55e00", \
     "" using 8 title "hetopt run --no-pool" lc rgb "#009e73"
