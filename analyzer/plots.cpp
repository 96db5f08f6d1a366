// SPDX-License-Identifier: MIT
/** @file Breakdown plots with gnuplot; see plots.h. */
#include "analyzer/plots.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/gnuplot.h"
#include "common/paths.h"

namespace hetopt::analyzer {
namespace {


// gnuplot strings in double quotes: escape what gnuplot would interpret.
std::string gpQuote(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    if (c == '\n') {
      r += ' ';
      continue;
    }
    r += c;
  }
  return r + "\"";
}

}  // namespace

std::string programSlug(const std::string& programPath) {
  std::string base = baseName(programPath), slug;
  for (char c : base) slug += (isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return slug.empty() ? "program" : slug;
}

bool writeBreakdownPlot(const std::string& dir, const std::string& slug, const std::string& title,
                        const std::vector<BreakdownBar>& bars, PlotOutput* out, std::string* error) {
  *out = PlotOutput{};
  if (!makePrivateDirs(dir, error)) return false;
  const std::string stem = slug + "-breakdown";
  out->data = dir + "/" + stem + ".dat";
  out->script = dir + "/" + stem + ".gp";

  std::string dat = "# label kernel_s communication_s cpu_sync_s total_s\n";
  for (const BreakdownBar& b : bars) {
    char line[256];
    snprintf(line, sizeof line, "%s %.9g %.9g %.9g %.9g\n", gpQuote(b.label).c_str(),
             b.breakdown.kernelNs / 1e9, b.breakdown.communicationNs / 1e9,
             b.breakdown.cpuSyncNs / 1e9, b.breakdown.totalNs / 1e9);
    dat += line;
  }
  if (!writePrivateFile(out->data, dat, error)) return false;

  std::string gp;
  gp += "# hetopt execution breakdown: " + title + "\n";
  gp += "# Render: cd " + dir + " && gnuplot " + stem + ".gp\n";
  gp += "set terminal svg size 720,480 dynamic font \"sans,11\" noenhanced\n";
  gp += "set output " + gpQuote(stem + ".svg") + "\n";
  gp += "set title " + gpQuote(title) + " noenhanced\n";
  gp += R"GP(set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.6
set ylabel "time (s)"
set yrange [0:*]
set grid ytics
set key outside right top box
set border 3
set tics nomirror
)GP";
  // Runs labelled by kind and time would overlap side by side.
  for (const BreakdownBar& b : bars)
    if (b.label.size() > 12) {
      gp += "set xtics rotate by -30\n";
      break;
    }
  gp += "plot " + gpQuote(stem + ".dat") +
        " using 2:xtic(1) title \"kernel\" lc rgb \"#4e79a7\", \\\n"
        "     '' using 3 title \"communication\" lc rgb \"#e15759\", \\\n"
        "     '' using 4 title \"cpu+sync\" lc rgb \"#bab0ac\"\n";
  // The same figure as PNG (cairo's where this gnuplot has it) for places that show no SVG.
  gp += "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) { set terminal pngcairo size 720,480 "
        "font \"sans,10\" noenhanced } else { set terminal png size 720,480 noenhanced }\n";
  gp += "set output " + gpQuote(stem + ".png") + "\nreplot\n";
  if (!writePrivateFile(out->script, gp, error)) return false;

  std::string gnuplot = findGnuplot();
  if (gnuplot.empty()) {
    out->note = "gnuplot not found; render with: cd " + dir + " && gnuplot " + stem + ".gp";
    return true;
  }
  std::string err;
  // gnuplot would create the image with the umask's mode; an existing file keeps 0600.
  if (!writePrivateFile(dir + "/" + stem + ".svg", "", error) ||
      !writePrivateFile(dir + "/" + stem + ".png", "", error))
    return false;
  if (!runGnuplot(gnuplot, out->script, &err)) {
    out->note = err;
    return true;
  }
  out->image = dir + "/" + stem + ".svg";
  out->png = dir + "/" + stem + ".png";
  return true;
}

}  // namespace hetopt::analyzer
