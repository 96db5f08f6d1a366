// SPDX-License-Identifier: MIT
/**
 * @file Plots of a characterization with gnuplot: allocation cost per policy vs size, H2D and D2H
 * bandwidth per policy vs size (measured medians as points, fitted functions as lines), and
 * aggregate bandwidth vs concurrency at the largest size.
 *
 * The data files and the script are always written, so plots can be rendered on another machine
 * (the GPU machine has no gnuplot): `cd DIR && gnuplot SLUG.gp`. The script picks pngcairo, else
 * png, else svg, from the terminals that gnuplot has.
 */
#pragma once
#include <string>
#include <vector>

#include "characterize/model.h"

namespace hetopt::characterize {

enum class PlotFormat { Png, Svg };

struct PlotFiles {
  std::string data;                 ///< DIR/SLUG.dat
  std::string script;               ///< DIR/SLUG.gp
  std::vector<std::string> images;  ///< what the script renders (extension per format asked)
};

/// A file-name-safe short name for the run's device ("nvidia-h200", "pthread-amd-epyc").
std::string plotSlug(const CharacterizationRun& run);

/// Writes DIR/SLUG.dat and DIR/SLUG.gp (DIR is created 0700 when missing).
bool writePlotFiles(const CharacterizationRun& run, const std::string& dir, const std::string& slug,
                    PlotFormat format, PlotFiles* out, std::string* error);

// Rendering: common/gnuplot.h (findGnuplot, runGnuplot on files.script).

}  // namespace hetopt::characterize
