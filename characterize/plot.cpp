// SPDX-License-Identifier: MIT
/** @file gnuplot data files and scripts for a characterization; see plot.h.
 * One data file (a named block per curve) and one script drawing three images. */
#include "characterize/plot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "common/gnuplot.h"
#include "common/paths.h"
#include "common/units.h"

namespace hetopt::characterize {
namespace {

const char* policyColor(PolicyKind p) {
  switch (p) {
    case PolicyKind::Standard:
      return "#404040";
    case PolicyKind::Locked:
      return "#e69f00";
    case PolicyKind::OpenCL:
      return "#0072b2";
    case PolicyKind::Hybrid:
      return "#009e73";
    case PolicyKind::Register:
      return "#d55e00";
  }
  return "#000000";
}

std::string blockName(const char* what, PolicyKind p, int concurrency = 0) {
  std::string n = std::string("[") + what + " " + policyName(p);
  if (concurrency > 0) n += " c" + std::to_string(concurrency);
  return n + "]";
}

// The samples of one curve, by size.
std::vector<const Sample*> curve(const CharacterizationRun& run, Measure m, PolicyKind p, int c) {
  std::vector<const Sample*> out;
  for (const Sample& s : run.samples)
    if (s.kind == m && s.policy == p && s.concurrency == c && s.medianNs > 0) out.push_back(&s);
  std::sort(out.begin(), out.end(),
            [](const Sample* a, const Sample* b) { return a->size < b->size; });
  return out;
}

// Size axis: a tic every factor of 4 from 1 KiB.
std::string sizeTics(double maxSize) {
  std::string t = "(";
  for (double s = 1024; s <= maxSize * 1.01; s *= 4) {
    if (t.size() > 1) t += ", ";
    const uint64_t bytes = static_cast<uint64_t>(s);
    t += gnuplotQuote(formatBytes(bytes)) + " " + std::to_string(bytes);
  }
  return t + ")";
}

// Time axis: a tic every power of 10 covering [lo, hi].
std::string timeTics(double lo, double hi) {
  static const char* const kLabels[] = {"1 ns", "10 ns", "100 ns", "1 us", "10 us", "100 us",
                                        "1 ms", "10 ms", "100 ms", "1 s",  "10 s",  "100 s"};
  std::string t = "(";
  for (int e = 0; e < 12; ++e) {
    double v = std::pow(10.0, e);
    if (v < lo / 10 || v > hi * 10) continue;
    if (t.size() > 1) t += ", ";
    t += gnuplotQuote(kLabels[e]) + " " + std::to_string(static_cast<uint64_t>(v));
  }
  return t + ")";
}

}  // namespace

std::string plotSlug(const CharacterizationRun& run) {
  std::string slug;
  for (char c : run.info.key.deviceName) {
    if (isalnum(static_cast<unsigned char>(c)))
      slug += static_cast<char>(tolower(static_cast<unsigned char>(c)));
    else if (!slug.empty() && slug.back() != '-')
      slug += '-';
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  if (slug.size() > 40) slug.resize(40);
  return slug.empty() ? "device" : slug;
}

bool writePlotFiles(const CharacterizationRun& run, const std::string& dir, const std::string& slug,
                    PlotFormat format, PlotFiles* out, std::string* error) {
  if (!makePrivateDirs(dir, error)) return false;
  const std::string datName = slug + ".dat";
  out->data = dir + "/" + datName;
  out->script = dir + "/" + slug + ".gp";
  const char* ext = format == PlotFormat::Png ? ".png" : ".svg";
  out->images = {dir + "/" + slug + "-alloc" + ext, dir + "/" + slug + "-transfer" + ext,
                 dir + "/" + slug + "-concurrency" + ext};

  // ---- data: one named block per curve, gnuplot selects them with `index "[...]"`.
  std::string dat = "# hetopt characterize: " + run.info.describe() + "\n# host " +
                    run.info.hostname + " (" + run.info.key.cpuModel + ", Linux " +
                    run.info.key.kernel + "), measured " + run.info.createdUtc + "\n";
  std::map<std::string, bool> present;
  char line[256];
  double minAlloc = 1e30, maxAlloc = 0, minTransfer = 1e30, maxTransfer = 0;
  double minTime = 1e30, maxTime = 0;
  auto fitBlock = [&](const Fit* f, const std::string& name, bool bandwidth) {
    if (!f || !f->fn.valid()) return;
    dat += "# " + name + " size_bytes fit_ns" + (bandwidth ? " fit_GBs" : "") + "\n";
    for (double s = f->fn.sizeMin; s <= f->fn.sizeMax * 1.0001; s *= std::pow(2.0, 0.125)) {
      if (bandwidth)
        snprintf(line, sizeof line, "%.0f %.6g %.6g\n", s, f->fn.eval(s), f->fn.bandwidthGBs(s));
      else
        snprintf(line, sizeof line, "%.0f %.6g\n", s, f->fn.eval(s));
      dat += line;
    }
    dat += "\n\n";
    present[name] = true;
  };
  for (PolicyKind p : kAllPolicies) {
    for (Measure m : {Measure::Alloc, Measure::Free}) {
      auto pts = curve(run, m, p, 1);
      if (pts.empty()) continue;
      std::string name = blockName(measureName(m), p);
      dat += "# " + name + " size_bytes median_ns q1_ns q3_ns\n";
      for (const Sample* s : pts) {
        snprintf(line, sizeof line, "%llu %.6g %.6g %.6g\n",
                 static_cast<unsigned long long>(s->size), s->medianNs, s->q1Ns, s->q3Ns);
        dat += line;
        if (m == Measure::Alloc) {
          minAlloc = std::min(minAlloc, static_cast<double>(s->size));
          maxAlloc = std::max(maxAlloc, static_cast<double>(s->size));
          minTime = std::min(minTime, s->medianNs);
          maxTime = std::max(maxTime, s->medianNs);
        }
      }
      dat += "\n\n";
      present[name] = true;
      fitBlock(run.findFit(m, p, 1), blockName((std::string("fit ") + measureName(m)).c_str(), p),
               false);
    }
  }
  int maxConcurrency = 1;
  for (const Sample& s : run.samples) maxConcurrency = std::max(maxConcurrency, s.concurrency);
  double concurrencySize = 0;
  for (PolicyKind p : kAllPolicies) {
    for (Measure m : {Measure::H2D, Measure::D2H}) {
      for (int c = 1; c <= maxConcurrency; ++c) {
        auto pts = curve(run, m, p, c);
        if (pts.empty()) continue;
        std::string name = blockName(measureName(m), p, c);
        dat += "# " + name + " size_bytes median_ns q1_ns q3_ns GBs_median GBs_q3time GBs_q1time\n";
        for (const Sample* s : pts) {
          double bytes = static_cast<double>(s->size) * c;
          snprintf(line, sizeof line, "%llu %.6g %.6g %.6g %.6g %.6g %.6g\n",
                   static_cast<unsigned long long>(s->size), s->medianNs, s->q1Ns, s->q3Ns,
                   bytes / s->medianNs, bytes / s->q3Ns, bytes / s->q1Ns);
          dat += line;
          minTransfer = std::min(minTransfer, static_cast<double>(s->size));
          maxTransfer = std::max(maxTransfer, static_cast<double>(s->size));
        }
        dat += "\n\n";
        present[name] = true;
        fitBlock(run.findFit(m, p, c),
                 blockName((std::string("fit ") + measureName(m)).c_str(), p, c), true);
      }
      // Aggregate bandwidth by concurrency at the largest size measured with the most concurrent
      // transfers (larger sizes run fewer at once, or one: bench_plan.h).
      std::vector<const Sample*> most;
      for (int c = maxConcurrency; c >= 1 && most.empty(); --c) most = curve(run, m, p, c);
      if (most.empty()) continue;
      const uint64_t top = most.back()->size;
      concurrencySize = std::max(concurrencySize, static_cast<double>(top));
      std::string name = blockName((std::string("conc ") + measureName(m)).c_str(), p);
      std::string block;
      for (int c = 1; c <= maxConcurrency; ++c) {
        for (const Sample& s : run.samples) {
          if (s.kind == m && s.policy == p && s.concurrency == c && s.size == top) {
            snprintf(line, sizeof line, "%d %.6g %llu\n", c, s.bandwidthGBs(),
                     static_cast<unsigned long long>(top));
            block += line;
          }
        }
      }
      if (block.empty()) continue;
      dat += "# " + name + " concurrency aggregate_GBs size_bytes\n" + block + "\n\n";
      present[name] = true;
    }
  }
  if (!writePrivateFile(out->data, dat, error)) return false;

  // ---- script
  const std::string device = run.info.key.deviceName + " (" + run.info.key.platformName +
                             ", driver " + run.info.key.driverVersion + ")";
  std::string gp;
  gp += "# hetopt characterize plots for " + run.info.describe() + "\n";
  gp += "# Render: cd " + dir + " && gnuplot " + slug + ".gp\n";
  gp += std::string("fmt = ") + (format == PlotFormat::Png ? "\"png\"" : "\"svg\"") + "\n";
  gp += R"GP(if (fmt eq "png" && strstrt(GPVAL_TERMINALS, " pngcairo ") > 0) {
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
)GP";
  gp += "dat = " + gnuplotQuote(datName) + "\n";
  auto plotList = [&](Measure m, int c, const char* usingMeasured, const char* usingFit) {
    std::string cmd;
    for (PolicyKind p : kAllPolicies) {
      std::string name = c ? blockName(measureName(m), p, c) : blockName(measureName(m), p);
      std::string fit = c ? blockName((std::string("fit ") + measureName(m)).c_str(), p, c)
                          : blockName((std::string("fit ") + measureName(m)).c_str(), p);
      if (!present.count(name)) continue;
      if (!cmd.empty()) cmd += ", \\\n     ";
      cmd += "dat index " + gnuplotQuote(name) + " using " + usingMeasured +
             " with points pt 7 ps 1.1 lc rgb " + gnuplotQuote(policyColor(p)) + " title " +
             gnuplotQuote(policyName(p));
      if (present.count(fit))
        cmd += ", \\\n     dat index " + gnuplotQuote(fit) + " using " + usingFit +
               " with lines lw 2 lc rgb " + gnuplotQuote(policyColor(p)) + " notitle";
    }
    return cmd;
  };

  // Allocation cost.
  std::string allocPlot = plotList(Measure::Alloc, 0, "1:2", "1:2");
  if (!allocPlot.empty()) {
    gp += "set output " + gnuplotQuote(slug + "-alloc") + ".ext\n";
    gp += "set title " +
          gnuplotTitle("Allocation cost per policy (points: median, lines: fit) - " + device, 1400,
                       11) +
          "\n";
    gp += "set logscale xy\nset xlabel \"allocation size\"\nset ylabel \"time to allocate\"\n";
    gp += "set xtics " + sizeTics(maxAlloc) + "\n";
    gp += "set xrange [" + std::to_string(minAlloc / 1.3) + ":" + std::to_string(maxAlloc * 1.3) +
          "]\n";
    gp += "set ytics " + timeTics(minTime, maxTime) + "\n";
    gp += "plot " + allocPlot + "\n";
    gp += "unset logscale y\nset ytics autofreq\n";
  }
  // Transfers, one transfer at a time.
  gp += "set output " + gnuplotQuote(slug + "-transfer") + ".ext\n";
  gp += "set multiplot layout 1,2 title " +
        gnuplotTitle(
            "Transfer bandwidth per policy, one transfer (points: median, lines: fit) - " + device,
            1400, 11) +
        "\n";
  gp += "set logscale x\nunset logscale y\nset yrange [0:*]\nset xlabel \"transfer size\"\n";
  gp += "set ylabel \"bandwidth (GB/s)\"\nset xtics " + sizeTics(maxTransfer) + "\n";
  gp += "set xrange [" + std::to_string(minTransfer / 1.3) + ":" +
        std::to_string(maxTransfer * 1.3) + "]\n";
  for (Measure m : {Measure::H2D, Measure::D2H}) {
    std::string p = plotList(m, 1, "1:5", "1:3");
    gp += std::string("set title ") +
          (m == Measure::H2D ? "\"host to device\"" : "\"device to host\"") + "\n";
    gp += p.empty()
              ? "set label 1 \"no data\" at graph 0.5,0.5 center\nplot 0 notitle\nunset label 1\n"
              : "plot " + p + "\n";
  }
  gp += "unset multiplot\n";
  // Concurrency.
  gp += "set output " + gnuplotQuote(slug + "-concurrency") + ".ext\n";
  gp += "set multiplot layout 1,2 title " +
        gnuplotTitle("Aggregate bandwidth of concurrent transfers on separate queues, " +
                         formatBytes(static_cast<uint64_t>(concurrencySize)) + " each - " + device,
                     1400, 11) +
        "\n";
  // Its lines run across the whole plot at every height: the key goes under it, never over them.
  gp += "set key below horizontal box opaque\n";
  gp +=
      "unset logscale x\nset xrange [0.5:" + std::to_string(maxConcurrency) + ".5]\nset xtics 1\n";
  gp += "set xlabel \"concurrent transfers\"\nset ylabel \"aggregate bandwidth (GB/s)\"\n";
  for (Measure m : {Measure::H2D, Measure::D2H}) {
    std::string cmd;
    for (PolicyKind p : kAllPolicies) {
      std::string name = blockName((std::string("conc ") + measureName(m)).c_str(), p);
      if (!present.count(name)) continue;
      if (!cmd.empty()) cmd += ", \\\n     ";
      cmd += "dat index " + gnuplotQuote(name) + " using 1:2 with linespoints pt 7 lw 2 lc rgb " +
             gnuplotQuote(policyColor(p)) + " title " + gnuplotQuote(policyName(p));
    }
    gp += std::string("set title ") +
          (m == Measure::H2D ? "\"host to device\"" : "\"device to host\"") + "\n";
    gp += cmd.empty()
              ? "set label 1 \"no data\" at graph 0.5,0.5 center\nplot 0 notitle\nunset label 1\n"
              : "plot " + cmd + "\n";
  }
  gp += "unset multiplot\n";
  return writePrivateFile(out->script, gp, error);
}

}  // namespace hetopt::characterize
