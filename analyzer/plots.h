// SPDX-License-Identifier: MIT
/**
 * @file gnuplot plots of an application profile: the execution breakdown (kernel / communication /
 * cpu+sync) as stacked bars, one bar per run. With one bar it shows the traced run; with the
 * standard and the optimized run side by side it shows what pinning changed for this app on this
 * machine. Data and script are always written (render elsewhere with `cd DIR && gnuplot X.gp`);
 * they are rendered here when gnuplot is on PATH.
 */
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "analyzer/profile.h"

namespace hetopt::analyzer {

struct PlotOutput {
  std::string data, script;
  std::string image;  ///< the SVG; empty when not rendered
  std::string png;    ///< the same as PNG; empty when not rendered
  std::string note;   ///< why not rendered (no gnuplot, gnuplot failed)
};

/// Writes DIR/SLUG-breakdown.{dat,gp} (DIR created 0700) and renders DIR/SLUG-breakdown.svg and
/// .png when gnuplot is available. Bars show seconds; the key names each part, and `note` (lines
/// separated by '\n'; `hetopt report`: which bars' communication is a prediction) stands under it.
/// False with *error only when the files cannot be written.
bool writeBreakdownPlot(const std::string& dir, const std::string& slug, const std::string& title,
                        const std::vector<BreakdownBar>& bars, PlotOutput* out, std::string* error,
                        const std::string& note = {});

/// A file-name-safe slug of a program: its executable, and for an interpreter what it runs, so
/// that two scripts' plots do not overwrite each other ("loop_wkr", "python3_11-train_py",
/// "python3_11-m-pkg_main", "python3_11-c-1a2b3c4d").
std::string programSlug(const ProgramIdentity& program);
/// A program as a plot title names it: base names only ("python3.11 train.py").
std::string programLabel(const ProgramIdentity& program);

}  // namespace hetopt::analyzer
