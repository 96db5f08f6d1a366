// SPDX-License-Identifier: MIT
/** @file Running gnuplot; see gnuplot.h.
 * Finding it on PATH, running it in a child on pre-created private images, quoting titles. */
#include "common/gnuplot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/paths.h"

namespace hetopt {

std::string findGnuplot() { return findOnPath("gnuplot"); }

bool runGnuplot(const std::string& gnuplot, const std::string& script,
                const std::vector<std::string>& images, std::string* error) {
  for (const std::string& image : images)
    if (!writePrivateFile(image, "", error)) return false;
  pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("fork failed: ") + strerror(errno);
    return false;
  }
  if (pid == 0) {
    umask(077);
    if (chdir(dirName(script).c_str()) != 0) _exit(126);
    int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, 1);  // gnuplot's chatter is not ours to print
    std::string base = baseName(script);
    execl(gnuplot.c_str(), "gnuplot", base.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      *error = std::string("waitpid failed: ") + strerror(errno);
      return false;
    }
  }
  for (const std::string& image : images) {
    struct stat st;
    if (stat(image.c_str(), &st) == 0 && st.st_size == 0) unlink(image.c_str());
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *error = "gnuplot " + script + " failed (" +
             (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                : "signal " + std::to_string(WTERMSIG(status))) +
             ")";
    return false;
  }
  return true;
}

std::string gnuplotQuote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

size_t gnuplotTitleColumns(int widthPx, int fontPt) {
  // Sans glyphs average about 0.65 em; a title is centred over the plot, which a key beside it
  // pushes left, so three quarters of the canvas is what a line may take.
  return static_cast<size_t>(0.75 * widthPx / (0.65 * fontPt));
}

std::string gnuplotTitle(const std::string& title, int widthPx, int fontPt) {
  const size_t columns = gnuplotTitleColumns(widthPx, fontPt);
  // Pieces that end after a separator, kept whole where they fit.
  std::vector<std::string> pieces;
  size_t start = 0;
  while (start < title.size()) {
    size_t first = std::string::npos, end = title.size();
    for (const char* sep : {", ", ": ", " - "}) {
      const size_t at = title.find(sep, start);
      if (at != std::string::npos && (first == std::string::npos || at < first)) {
        first = at;
        end = at + strlen(sep);
      }
    }
    pieces.push_back(title.substr(start, end - start));
    start = end;
  }
  std::vector<std::string> lines{""};
  auto add = [&](const std::string& piece) {
    std::string& line = lines.back();
    if (!line.empty() && line.size() + piece.size() > columns) {
      while (!line.empty() && line.back() == ' ') line.pop_back();
      lines.push_back("");
    }
    lines.back() += lines.back().empty() && piece[0] == ' ' ? piece.substr(1) : piece;
  };
  for (const std::string& piece : pieces) {
    if (piece.size() <= columns) {
      add(piece);
      continue;
    }
    // Too long alone: word by word.
    size_t w = 0;
    while (w < piece.size()) {
      size_t blank = piece.find(' ', w + 1);
      const size_t end = blank == std::string::npos ? piece.size() : blank;
      add(piece.substr(w, end - w));
      w = end;
    }
  }
  std::string joined;
  for (std::string& line : lines) {
    while (!line.empty() && line.back() == ' ') line.pop_back();
    joined += (joined.empty() ? "" : "\n") + line;
  }
  return gnuplotQuote(joined);
}

}  // namespace hetopt
