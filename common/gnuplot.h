// SPDX-License-Identifier: MIT
/** @file Rendering the gnuplot scripts hetopt writes (characterize, analyze). Tools only.
 * Finds gnuplot on PATH and runs it on a script beside its data; plots are optional. */
#pragma once
#include <string>
#include <vector>

namespace hetopt {

/// gnuplot on $PATH, or empty: callers then keep the .gp/.dat files and say how to render them.
std::string findGnuplot();

/// Runs `gnuplot <script>` in the script's directory (scripts name their data files relative to
/// it), its chatter on stdout discarded. Every file hetopt writes is 0600, plots too (they name
/// programs, paths, devices and hosts): `images`, the files the script writes, are made 0600
/// before it runs (and refused when they are links, see writePrivateFile), gnuplot runs under
/// umask 077, and an image it left empty (a format the script fell back from) is removed. False
/// with a one-line *error when it cannot run or fails.
bool runGnuplot(const std::string& gnuplot, const std::string& script,
                const std::vector<std::string>& images, std::string* error);

/// `text` as a gnuplot double-quoted string: quotes and backslashes escaped, newlines as \n.
std::string gnuplotQuote(const std::string& text);

/// A title as a gnuplot string that fits `widthPx` pixels of `fontPt` sans: broken into lines
/// after ", ", ": " or " - " (else at a blank) so that no line is wider than the canvas less a
/// margin; gnuplot centres titles over the plot, not the canvas, so the margin is wide.
std::string gnuplotTitle(const std::string& title, int widthPx, int fontPt);
/// The most characters of a title line gnuplotTitle() allows for that canvas and font.
size_t gnuplotTitleColumns(int widthPx, int fontPt);

}  // namespace hetopt
