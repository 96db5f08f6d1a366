// SPDX-License-Identifier: MIT
// Titles and strings as the gnuplot scripts hetopt writes spell them (common/gnuplot.h).
#include "common/gnuplot.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hetopt {
namespace {

// The lines of a title gnuplotTitle() made, its quotes and \n escapes undone.
std::vector<std::string> titleLines(const std::string& quoted) {
  EXPECT_GE(quoted.size(), 2u);
  EXPECT_EQ(quoted.front(), '"');
  EXPECT_EQ(quoted.back(), '"');
  std::vector<std::string> lines{""};
  for (size_t i = 1; i + 1 < quoted.size(); ++i) {
    if (quoted[i] == '\\' && quoted[i + 1] == 'n') {
      lines.emplace_back();
      ++i;
    } else if (quoted[i] == '\\') {
      lines.back() += quoted[++i];
    } else {
      lines.back() += quoted[i];
    }
  }
  return lines;
}

TEST(GnuplotTitle, ALongTitleIsBrokenIntoLinesThatFitTheCanvas) {
  const std::string title =
      "python3.11 train_the_network_on_every_file.py on Portable Computing Language / "
      "cpu-haswell-AMD EPYC 7B13 64-Core Processor, 2026-11-25: traced, untouched and optimized "
      "runs";
  const size_t columns = gnuplotTitleColumns(720, 11);
  ASSERT_LT(columns, title.size());
  const std::vector<std::string> lines = titleLines(gnuplotTitle(title, 720, 11));
  ASSERT_GT(lines.size(), 1u);
  std::string joined;
  for (const std::string& line : lines) {
    EXPECT_LE(line.size(), columns) << line;
    EXPECT_FALSE(line.empty());
    EXPECT_NE(line.front(), ' ') << line;
    EXPECT_NE(line.back(), ' ') << line;
    joined += (joined.empty() ? "" : " ") + line;
  }
  EXPECT_EQ(joined, title) << "every word kept, in order";
}

TEST(GnuplotTitle, AShortTitleStaysOneLineAndQuotesAreEscaped) {
  EXPECT_EQ(gnuplotTitle("say \"hi\" \\ there", 1400, 11), "\"say \\\"hi\\\" \\\\ there\"");
  EXPECT_EQ(gnuplotQuote("a\nb"), "\"a\\nb\"");
}

}  // namespace
}  // namespace hetopt
