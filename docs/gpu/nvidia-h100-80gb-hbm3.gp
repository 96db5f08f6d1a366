# hetopt characterize plots for NVIDIA CUDA / NVIDIA H100 80GB HBM3 [GPU, driver 580.159.04]
# Render: cd docs/gpu && gnuplot nvidia-h100-80gb-hbm3.gp
fmt = "png"
if (fmt eq "png" && strstrt(GPVAL_TERMINALS, " pngcairo ") > 0) {
  set terminal pngcairo size 1400,560 font "sans,11" noenhanced; ext = ".png"
} else {
  if (fmt eq "png" && strstrt(GPVAL_TERMINALS, " png ") > 0) {
    set terminal png size 1400,560 noenhanced; ext = ".png"
  } else {
    set terminal svg size 1400,560 dynamic font "sans,11" noenhanced; ext = ".svg"
  }
}
set termoption noenhanced
set grid
set key top left box opaque
set border 3
set tics nomirror
dat = "nvidia-h100-80gb-hbm3.dat"
set output "nvidia-h100-80gb-hbm3-alloc".ext
set title "Allocation cost per policy (points: median, lines: fit) - NVIDIA H100 80GB HBM3 (NVIDIA CUDA, driver 580.159.04)"
set logscale xy
set xlabel "allocation size"
set ylabel "time to allocate"
set xtics ("1 KiB" 1024, "4 KiB" 4096, "16 KiB" 16384, "64 KiB" 65536, "256 KiB" 262144, "1 MiB" 1048576, "4 MiB" 4194304, "16 MiB" 16777216, "64 MiB" 67108864, "256 MiB" 268435456)
set xrange [787.692308:1046898278.400000]
set ytics ("100 ns" 100, "1 us" 1000, "10 us" 10000, "100 us" 100000, "1 ms" 1000000, "10 ms" 10000000, "100 ms" 100000000, "1 s" 1000000000)
plot dat index "[alloc standard]" using 1:2 with points pt 7 ps 1.1 lc rgb "#404040" title "standard", \
     dat index "[fit alloc standard]" using 1:2 with lines lw 2 lc rgb "#404040" notitle, \
     dat index "[alloc locked]" using 1:2 with points pt 7 ps 1.1 lc rgb "#e69f00" title "locked", \
     dat index "[fit alloc locked]" using 1:2 with lines lw 2 lc rgb "#e69f00" notitle, \
     dat index "[alloc opencl]" using 1:2 with points pt 7 ps 1.1 lc rgb "#0072b2" title "opencl", \
     dat index "[fit alloc opencl]" using 1:2 with lines lw 2 lc rgb "#0072b2" notitle, \
     dat index "[alloc hybrid]" using 1:2 with points pt 7 ps 1.1 lc rgb "#009e73" title "hybrid", \
     dat index "[fit alloc hybrid]" using 1:2 with lines lw 2 lc rgb "#009e73" notitle, \
     dat index "[alloc register]" using 1:2 with points pt 7 ps 1.1 lc rgb "#d55e00" title "register", \
     dat index "[fit alloc register]" using 1:2 with lines lw 2 lc rgb "#d55e00" notitle
unset logscale y
set ytics autofreq
set output "nvidia-h100-80gb-hbm3-transfer".ext
set multiplot layout 1,2 title "Transfer bandwidth per policy, one transfer (points: median, lines: fit) - NVIDIA H100 80GB HBM3 (NVIDIA CUDA, driver 580.159.04)"
set logscale x
unset logscale y
set yrange [0:*]
set xlabel "transfer size"
set ylabel "bandwidth (GB/s)"
set xtics ("1 KiB" 1024, "4 KiB" 4096, "16 KiB" 16384, "64 KiB" 65536, "256 KiB" 262144, "1 MiB" 1048576, "4 MiB" 4194304, "16 MiB" 16777216, "64 MiB" 67108864, "256 MiB" 268435456)
set xrange [787.692308:348966092.800000]
set title "host to device"
plot dat index "[h2d standard c1]" using 1:5 with points pt 7 ps 1.1 lc rgb "#404040" title "standard", \
     dat index "[fit h2d standard c1]" using 1:3 with lines lw 2 lc rgb "#404040" notitle, \
     dat index "[h2d locked c1]" using 1:5 with points pt 7 ps 1.1 lc rgb "#e69f00" title "locked", \
     dat index "[fit h2d locked c1]" using 1:3 with lines lw 2 lc rgb "#e69f00" notitle, \
     dat index "[h2d opencl c1]" using 1:5 with points pt 7 ps 1.1 lc rgb "#0072b2" title "opencl", \
     dat index "[fit h2d opencl c1]" using 1:3 with lines lw 2 lc rgb "#0072b2" notitle, \
     dat index "[h2d hybrid c1]" using 1:5 with points pt 7 ps 1.1 lc rgb "#009e73" title "hybrid", \
     dat index "[fit h2d hybrid c1]" using 1:3 with lines lw 2 lc rgb "#009e73" notitle, \
     dat index "[h2d register c1]" using 1:5 with points pt 7 ps 1.1 lc rgb "#d55e00" title "register", \
     dat index "[fit h2d register c1]" using 1:3 with lines lw 2 lc rgb "#d55e00" notitle
set title "device to host"
plot dat index "[d2h standard c1]" using 1:5 with points pt 7 ps 1.1 lc rgb "#404040" title "standard", \
     dat index "[fit d2h standard c1]" using 1:3 with lines lw 2 lc rgb "#404040" notitle, \
     dat index "[d2h locked c1]" using 1:5 with points pt 7 ps 1.1 lc rgb "#e69f00" title "locked", \
     dat index "[fit d2h locked c1]" using 1:3 with lines lw 2 lc rgb "#e69f00" notitle, \
     dat index "[d2h opencl c1]" using 1:5 with points pt 7 ps 1.1 lc rgb "#0072b2" title "opencl", \
     dat index "[fit d2h opencl c1]" using 1:3 with lines lw 2 lc rgb "#0072b2" notitle, \
     dat index "[d2h hybrid c1]" using 1:5 with points pt 7 ps 1.1 lc rgb "#009e73" title "hybrid", \
     dat index "[fit d2h hybrid c1]" using 1:3 with lines lw 2 lc rgb "#009e73" notitle, \
     dat index "[d2h register c1]" using 1:5 with points pt 7 ps 1.1 lc rgb "#d55e00" title "register", \
     dat index "[fit d2h register c1]" using 1:3 with lines lw 2 lc rgb "#d55e00" notitle
unset multiplot
set output "nvidia-h100-80gb-hbm3-concurrency".ext
set multiplot layout 1,2 title "Aggregate bandwidth of concurrent transfers on separate queues, 256 MiB each - NVIDIA H100 80GB HBM3 (NVIDIA CUDA, driver 580.159.04)"
unset logscale x
set xrange [0.5:4.5]
set xtics 1
set xlabel "concurrent transfers"
set ylabel "aggregate bandwidth (GB/s)"
set title "host to device"
plot dat index "[conc h2d standard]" using 1:2 with linespoints pt 7 lw 2 lc rgb "#404040" title "standard", \
     dat index "[conc h2d locked]" using 1:2 with linespoints pt 7 lw 2 lc rgb "#e69f00" title "locked", \
     dat index "[conc h2d opencl]" using 1:2 with linespoints pt 7 lw 2 lc rgb "#0072b2" title "opencl", \
     dat index "[conc h2d hybrid]" using 1:2 with linespoints pt 7 lw 2 lc rgb "#009e73" title "hybrid", \
     dat index "[conc h2d register]" using 1:2 with linespoints pt 7 lw 2 lc rgb "#d55e00" title "register"
set title "device to host"
plot dat index "[conc d2h standard]" using 1:2 with linespoints pt 7 lw 2 lc rgb "#404040" title "standard", \
     dat index "[conc d2h locked]" using 1:2 with linespoints pt 7 lw 2 lc rgb "#e69f00" title "locked", \
     dat index "[conc d2h opencl]" using 1:2 with linespoints pt 7 lw 2 lc rgb "#0072b2" title "opencl", \
     dat index "[conc d2h hybrid]" using 1:2 with linespoints pt 7 lw 2 lc rgb "#009e73" title "hybrid", \
     dat index "[conc d2h register]" using 1:2 with linespoints pt 7 lw 2 lc rgb "#d55e00" title "register"
unset multiplot
