// SPDX-License-Identifier: MIT
/**
 * @file Progress of a characterization: on a terminal, a redrawn bar per phase with the time it
 * has left; otherwise plain lines (one per phase, no bar), so logs of CI and of the GPU tool stay
 * readable.
 */
#pragma once
#include <cstdio>
#include <string>

namespace hetopt::characterize {

class Progress {
 public:
  /// Draws on `out`; `tty` chooses the bar (pass isatty(fileno(out))).
  Progress(FILE* out, bool tty);
  /// Starts a new device: `totalWork` units will be reported through advance().
  void start(double totalWork);
  /// `what` is the current phase ("transfers"), `work` the units of it advance() will report (the
  /// bar and the estimate are the phase's); a new phase prints a line when not a tty.
  void phase(const std::string& what, double work);
  /// Adds done work; `detail` names the current point ("64 MiB x4").
  void advance(double work, const std::string& detail = {});
  /// Prints one line of information ("sizes capped at ...") without garbling the bar.
  void note(const std::string& text);
  /// Clears the bar (tty) so that normal output follows on a clean line.
  void finish();

 private:
  void draw(bool force);
  FILE* m_out;
  bool m_tty;
  double m_total = 1, m_done = 0, m_phaseTotal = 1, m_phaseDone = 0;
  double m_startS = 0, m_lastDrawS = -1, m_phaseStartS = 0;
  std::string m_phase, m_detail;
};

/// Seconds on a monotonic clock.
double monotonicSeconds();

}  // namespace hetopt::characterize
