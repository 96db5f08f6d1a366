// SPDX-License-Identifier: MIT
/**
 * @file Progress of a characterization: on a terminal, a redrawn bar per phase with the time the
 * measurements have left (as the bench estimates it); otherwise plain lines (one per phase, no
 * bar), so logs of CI and of the GPU tool stay readable.
 */
#pragma once
#include <cstdio>
#include <string>

namespace hetopt::characterize {

class Progress {
 public:
  /// Draws on `out`; `tty` chooses the bar (pass isatty(fileno(out))).
  Progress(FILE* out, bool tty);
  /// Starts a new device.
  void start();
  /// `what` is the current phase ("transfers"), `work` the units of it advance() will report (the
  /// bar is the phase's); a new phase prints a line when not a tty.
  void phase(const std::string& what, double work);
  /// Adds done work; `detail` names the current point ("64 MiB x4").
  void advance(double work, const std::string& detail = {});
  /// The device's measurements have about `seconds` left, all phases (bench_plan.h's
  /// PhaseEstimate); the bar counts it down until the next estimate. Until the first of a phase,
  /// the bar says "estimating".
  void expect(double seconds);
  /// Prints one line ("memory: ...") without garbling the bar.
  void say(const std::string& text);
  /// say("note: " + text).
  void note(const std::string& text);
  /// Clears the bar (tty) so that normal output follows on a clean line.
  void finish();

 private:
  void draw(bool force);
  FILE* m_out;
  bool m_tty;
  double m_phaseTotal = 1, m_phaseDone = 0;
  double m_lastDrawS = -1, m_phaseStartS = 0;
  double m_leftS = 0, m_leftAtS = -1;  // the last estimate, and when it came (-1: none this phase)
  std::string m_phase, m_detail;
};

/// Seconds on a monotonic clock.
double monotonicSeconds();

}  // namespace hetopt::characterize
