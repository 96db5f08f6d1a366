// SPDX-License-Identifier: MIT
/** @file Breakdown plots with gnuplot; see plots.h.
 * A profile's time breakdown as a gnuplot script and data file, named after the program. */
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

std::string programSlug(const ProgramIdentity& program) {
  const ScriptRef& script = program.script;
  std::string base = baseName(program.path);
  if (script.kind == ScriptRef::Kind::File) base += "-" + baseName(script.name);
  if (script.kind == ScriptRef::Kind::Module) base += "-m-" + script.name;
  if (script.kind == ScriptRef::Kind::Code) base += "-c-" + script.hash.substr(0, 8);
  std::string slug;
  for (char c : base)
    slug += (isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return slug.empty() ? "program" : slug;
}

std::string programLabel(const ProgramIdentity& program) {
  const ScriptRef& script = program.script;
  const std::string exe = baseName(program.path);
  switch (script.kind) {
    case ScriptRef::Kind::File:
      return exe + " " + baseName(script.name);
    case ScriptRef::Kind::Module:
      return exe + " -m " + script.name;
    case ScriptRef::Kind::Code:
      return exe + " -c <code " + script.hash.substr(0, 8) + ">";
    case ScriptRef::Kind::None:
      break;
  }
  return exe;
}

bool writeBreakdownPlot(const std::string& dir, const std::string& slug, const std::string& title,
                        const std::vector<BreakdownBar>& bars, PlotOutput* out, std::string* error,
                        const std::string& note) {
  *out = PlotOutput{};
  if (!makePrivateDirs(dir, error)) return false;
  const std::string stem = slug + "-breakdown";
  out->data = dir + "/" + stem + ".dat";
  out->script = dir + "/" + stem + ".gp";

  std::string dat = "# label kernel_s communication_s cpu_sync_s total_s\n";
  for (const BreakdownBar& b : bars) {
    char line[256];
    snprintf(line, sizeof line, "%s %.9g %.9g %.9g %.9g\n", gnuplotQuote(b.label).c_str(),
             b.breakdown.kernelNs / 1e9, b.breakdown.communicationNs / 1e9,
             b.breakdown.cpuSyncNs / 1e9, b.breakdown.totalNs / 1e9);
    dat += line;
  }
  if (!writePrivateFile(out->data, dat, error)) return false;

  std::string gp;
  gp += "# hetopt execution breakdown: " + title + "\n";
  gp += "# Render: cd " + dir + " && gnuplot " + stem + ".gp\n";
  // The SVG's font is the larger: its title is wrapped for it, and fits the PNG too.
  gp += "set terminal svg size 720,480 dynamic font \"sans,11\" noenhanced\n";
  gp += "set output " + gnuplotQuote(stem + ".svg") + "\n";
  gp += "set title " + gnuplotTitle(title, 720, 11) + " noenhanced\n";
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
  // Under the key, right-aligned with it; one label per line (a quoted "\n" would need escapes).
  size_t line = 0;
  for (size_t at = 0; !note.empty() && at <= note.size(); ++line) {
    size_t end = note.find('\n', at);
    if (end == std::string::npos) end = note.size();
    char pos[64];
    snprintf(pos, sizeof pos, " at screen 0.98, %.3f right font \",9\"\n", 0.74 - 0.04 * line);
    gp += "set label " + gnuplotQuote(note.substr(at, end - at)) + pos;
    at = end + 1;
  }
  gp += "plot " + gnuplotQuote(stem + ".dat") +
        " using 2:xtic(1) title \"kernel\" lc rgb \"#4e79a7\", \\\n"
        "     '' using 3 title \"communication\" lc rgb \"#e15759\", \\\n"
        "     '' using 4 title \"cpu+sync\" lc rgb \"#bab0ac\"\n";
  // The same figure as PNG (cairo's where this gnuplot has it) for places that show no SVG.
  gp +=
      "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) { set terminal pngcairo size 720,480 "
      "font \"sans,10\" noenhanced } else { set terminal png size 720,480 noenhanced }\n";
  gp += "set output " + gnuplotQuote(stem + ".png") + "\nreplot\n";
  if (!writePrivateFile(out->script, gp, error)) return false;

  std::string gnuplot = findGnuplot();
  if (gnuplot.empty()) {
    out->note = "gnuplot not found; render with: cd " + dir + " && gnuplot " + stem + ".gp";
    return true;
  }
  std::string err;
  if (!runGnuplot(gnuplot, out->script, {dir + "/" + stem + ".svg", dir + "/" + stem + ".png"},
                  &err)) {
    out->note = err;
    return true;
  }
  out->image = dir + "/" + stem + ".svg";
  out->png = dir + "/" + stem + ".png";
  return true;
}

}  // namespace hetopt::analyzer
