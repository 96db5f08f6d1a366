// SPDX-License-Identifier: MIT
/** @file Rendering the gnuplot scripts hetopt writes (characterize, analyze). Tools only. */
#pragma once
#include <string>

namespace hetopt {

/// gnuplot on $PATH, or empty: callers then keep the .gp/.dat files and say how to render them.
std::string findGnuplot();

/// Runs `gnuplot <script>` in the script's directory (scripts name their data files relative to
/// it), its chatter on stdout discarded. False with a one-line *error when it cannot run or fails.
bool runGnuplot(const std::string& gnuplot, const std::string& script, std::string* error);

}  // namespace hetopt
