// SPDX-License-Identifier: MIT
/** @file Terminal progress bar / plain progress lines; see progress.h.
 * A redrawn bar on a terminal, plain lines otherwise; phases weighted by work. */
#include "characterize/progress.h"

#include <algorithm>
#include <chrono>

namespace hetopt::characterize {

double monotonicSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Progress::Progress(FILE* out, bool tty) : m_out(out), m_tty(tty) {}

void Progress::start() {
  m_phaseStartS = monotonicSeconds();
  m_lastDrawS = -1;
  m_leftAtS = -1;
  m_phase.clear();
  m_detail.clear();
}

void Progress::phase(const std::string& what, double work) {
  double now = monotonicSeconds();
  if (!m_tty && !m_phase.empty())
    fprintf(m_out, "  %-22s done in %.1f s\n", m_phase.c_str(), now - m_phaseStartS);
  m_phase = what;
  m_phaseTotal = work > 0 ? work : 1;
  m_phaseDone = 0;
  m_detail.clear();
  m_phaseStartS = now;
  m_leftAtS = -1;
  draw(true);
}

void Progress::advance(double work, const std::string& detail) {
  m_phaseDone = std::min(m_phaseTotal, m_phaseDone + work);
  if (!detail.empty()) m_detail = detail;
  draw(false);
}

void Progress::expect(double seconds) {
  m_leftS = seconds > 0 ? seconds : 0;
  m_leftAtS = monotonicSeconds();
}

void Progress::say(const std::string& text) {
  if (m_tty) fprintf(m_out, "\r\033[K");
  fprintf(m_out, "  %s\n", text.c_str());
  draw(true);
}

void Progress::note(const std::string& text) { say("note: " + text); }

void Progress::finish() {
  if (m_tty) {
    fprintf(m_out, "\r\033[K");
  } else if (!m_phase.empty()) {
    fprintf(m_out, "  %-22s done in %.1f s\n", m_phase.c_str(), monotonicSeconds() - m_phaseStartS);
  }
  m_phase.clear();
  fflush(m_out);
}

void Progress::draw(bool force) {
  // Before the first phase there is no phase to name and no start to count from.
  if (!m_tty || m_phase.empty()) return;
  double now = monotonicSeconds();
  // Redrawing costs a write(2); ten times a second is smooth and stays out of the measurements.
  if (!force && now - m_lastDrawS < 0.1) return;
  m_lastDrawS = now;
  const int width = 30;
  const double frac = m_phaseDone / m_phaseTotal, inPhase = now - m_phaseStartS;
  int filled = static_cast<int>(frac * width);
  char bar[width + 1];
  for (int i = 0; i < width; ++i) bar[i] = i < filled ? '#' : '.';
  bar[width] = '\0';
  // The bench's last estimate, counted down since it came.
  char left[48] = "estimating";
  if (m_leftAtS >= 0) {
    const double s = std::max(0.0, m_leftS - (now - m_leftAtS));
    snprintf(left, sizeof left, s < 10 ? "~%.1f s left" : "~%.0f s left", s);
  }
  fprintf(m_out, "\r\033[K  %-11s [%s] %3d%%  %-18s %5.1f s, %s", m_phase.c_str(), bar,
          static_cast<int>(frac * 100), m_detail.c_str(), inPhase, left);
  fflush(m_out);
}

}  // namespace hetopt::characterize
