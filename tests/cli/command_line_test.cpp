// SPDX-License-Identifier: MIT
// The one option parser of every command (cli/command_line.h) and the texts made from its tables.
#include "cli/command_line.h"

#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

namespace hetopt::cli {
namespace {

// Parses `words` (the command's name first) by the command's table.
struct Parse {
  bool ok = false;
  std::string error;
  ParsedArgs args;
};

Parse parse(const char* command, std::initializer_list<const char*> words) {
  std::vector<std::string> storage(words.begin(), words.end());
  std::vector<char*> argv;
  for (std::string& w : storage) argv.push_back(w.data());
  argv.push_back(nullptr);
  Parse p;
  p.ok = parseArgs(commandSpec(command), static_cast<int>(storage.size()), argv.data(), &p.args,
                   &p.error);
  return p;
}

TEST(CommandLine, AValueComesAfterEqualsOrAsTheNextArgumentInEveryCommand) {
  for (const CommandSpec& spec : commandSpecs()) {
    for (const OptionSpec& o : spec.options) {
      if (o.kind == ValueKind::None || o.valueOptional) continue;
      const std::string value =
          o.kind == ValueKind::Choice
              ? std::string(o.choices).substr(0, std::string(o.choices).find('|'))
          : o.kind == ValueKind::Count  ? "3"
          : o.kind == ValueKind::Number ? "0.5"
          : o.kind == ValueKind::Size   ? "64M"
                                        : "cpu";
      const std::string joined = std::string("--") + o.name + "=" + value;
      const char* program = spec.operands == Operands::None ? nullptr : "prog";
      for (int form = 0; form < 2; ++form) {
        Parse p =
            form == 0
                ? (program ? parse(spec.name, {spec.name, joined.c_str(), program})
                           : parse(spec.name, {spec.name, joined.c_str()}))
                : (program ? parse(spec.name, {spec.name, (std::string("--") + o.name).c_str(),
                                               value.c_str(), program})
                           : parse(spec.name, {spec.name, (std::string("--") + o.name).c_str(),
                                               value.c_str()}));
        ASSERT_TRUE(p.ok) << "hetopt " << spec.name << " --" << o.name << (form ? " " : "=")
                          << value << ": " << p.error;
        EXPECT_EQ(p.args.value(o.aliasOf ? o.aliasOf : o.name), value)
            << spec.name << " --" << o.name;
      }
    }
  }
}

TEST(CommandLine, FormerlyRefusedEqualsFormsAreAccepted) {
  Parse db = parse("run", {"run", "--db=/tmp/x.db", "prog"});
  ASSERT_TRUE(db.ok) << db.error;
  EXPECT_EQ(db.args.value("db"), "/tmp/x.db");
  Parse last = parse("report", {"report", "--last=3", "prog"});
  ASSERT_TRUE(last.ok) << last.error;
  EXPECT_EQ(last.args.count("last", 5), 3);
  Parse device = parse("trace", {"trace", "--device=cpu", "prog"});
  ASSERT_TRUE(device.ok) << device.error;
  EXPECT_EQ(device.args.value("device"), "cpu");
  Parse output = parse("trace", {"trace", "-o", "t.trace", "--output=u.trace", "prog"});
  ASSERT_TRUE(output.ok) << output.error;
  EXPECT_EQ(output.args.value("output"), "u.trace");  // the last one given
}

TEST(CommandLine, OptionsStopAtTheProgramSoItsOwnOptionsStayItsOwn) {
  Parse p = parse("run", {"run", "--stats", "./app", "--stats", "-o", "x", "--db", "y"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.args.operands,
            (std::vector<std::string>{"./app", "--stats", "-o", "x", "--db", "y"}));
  EXPECT_FALSE(p.args.given("db"));
  Parse dashes = parse("trace", {"trace", "--", "--app-named-like-an-option", "-h"});
  ASSERT_TRUE(dashes.ok) << dashes.error;
  EXPECT_FALSE(dashes.args.help);
  EXPECT_EQ(dashes.args.operands, (std::vector<std::string>{"--app-named-like-an-option", "-h"}));
}

TEST(CommandLine, StatsAloneIsAFlagAndStatsEqualsFileIsAValue) {
  Parse bare = parse("run", {"run", "--stats", "prog"});
  ASSERT_TRUE(bare.ok) << bare.error;
  EXPECT_TRUE(bare.args.flag("stats"));
  EXPECT_EQ(bare.args.value("stats"), "");
  EXPECT_EQ(bare.args.operands, std::vector<std::string>{"prog"});  // not --stats' value
  Parse file = parse("run", {"run", "--stats=out.json", "prog"});
  ASSERT_TRUE(file.ok) << file.error;
  EXPECT_FALSE(file.args.flag("stats"));
  EXPECT_EQ(file.args.value("stats"), "out.json");
  Parse both = parse("run", {"run", "--stats=out.json", "--stats", "prog"});
  ASSERT_TRUE(both.ok) << both.error;
  EXPECT_TRUE(both.args.flag("stats"));
  EXPECT_EQ(both.args.value("stats"), "out.json");
}

TEST(CommandLine, VerifyTakesOnOrOffInBothForms) {
  Parse joined = parse("run", {"run", "--verify=off", "prog"});
  ASSERT_TRUE(joined.ok) << joined.error;
  EXPECT_EQ(joined.args.value("verify"), "off");
  Parse apart = parse("run", {"run", "--verify", "on", "prog"});
  ASSERT_TRUE(apart.ok) << apart.error;
  EXPECT_EQ(apart.args.value("verify"), "on");
  Parse bad = parse("run", {"run", "--verify=maybe", "prog"});
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.error, "--verify 'maybe' is not on or off");
}

TEST(CommandLine, ABadValueNamesItsAllowedRange) {
  for (const char* v : {"0", "99", "abc", "3x", "-1"}) {
    Parse p = parse("report", {"report", "--last", v, "prog"});
    EXPECT_FALSE(p.ok) << v;
    EXPECT_EQ(p.error, std::string("--last '") + v + "' is not a whole number from 1 to 50");
  }
  EXPECT_EQ(parse("run", {"run", "--policy=pool", "prog"}).error,
            "--policy 'pool' is not opencl, hybrid, locked or register");
  EXPECT_EQ(parse("characterize", {"characterize", "--max-size", "lots"}).error,
            "--max-size 'lots' is not a size in bytes such as 4096, 64K, 64M or 1G");
  EXPECT_EQ(parse("characterize", {"characterize", "--plot-format=jpg"}).error,
            "--plot-format 'jpg' is not png or svg");
  EXPECT_EQ(parse("analyze", {"analyze", "--threshold=-1", "t"}).error,
            "--threshold '-1' is not a number from 0 to 1e+09");
  EXPECT_EQ(parse("trace", {"trace", "--profile", "a b", "prog"}).error,
            "--profile 'a b' is not a name of letters, digits and . _ - (at most 100 characters)");
}

TEST(CommandLine, UnknownAmbiguousAndMisusedOptionsAreNamed) {
  EXPECT_EQ(parse("run", {"run", "--bogus", "prog"}).error, "unknown option --bogus");
  EXPECT_EQ(parse("run", {"run", "--bogus=1", "prog"}).error, "unknown option --bogus");
  EXPECT_EQ(parse("run", {"run", "-x", "prog"}).error, "unknown option -x");
  EXPECT_EQ(parse("run", {"run", "--no", "prog"}).error,
            "ambiguous option --no (--no-pool, --no-build-ahead, --no-early-context)");
  EXPECT_EQ(parse("run", {"run", "--force=yes", "prog"}).error, "--force takes no value");
  EXPECT_EQ(parse("report", {"report", "prog", "--last"}).ok, true);  // the program's own word
  EXPECT_EQ(parse("characterize", {"characterize", "--db"}).error, "--db needs a value (PATH)");
  EXPECT_EQ(parse("report", {"report", "--last"}).error,
            "--last needs a value (N: a whole number from 1 to 50)");
  EXPECT_EQ(parse("trace", {"trace", "-o"}).error, "-o needs a value (FILE)");
  EXPECT_EQ(parse("run", {"run", "--db="}).error, "--db needs a value (PATH)");
  EXPECT_EQ(parse("run", {"run", "--dry-run"}).error, "no program given");
  EXPECT_EQ(parse("devices", {"devices", "extra"}).error, "unexpected argument 'extra'");
  EXPECT_EQ(parse("show", {"show"}).error, "no FILE given");
  EXPECT_EQ(parse("show", {"show", "a", "b"}).error, "one FILE at a time (got 'a' and 'b')");
}

TEST(CommandLine, AFileCommandTakesOptionsAfterItsFile) {
  Parse p = parse("show", {"show", "t.trace", "--json"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_TRUE(p.args.flag("json"));
  EXPECT_EQ(p.args.operands, std::vector<std::string>{"t.trace"});
}

TEST(CommandLine, NoPlotIsTheSameOptionAsNoPlots) {
  Parse old = parse("report", {"report", "--no-plot", "prog"});
  ASSERT_TRUE(old.ok) << old.error;
  EXPECT_TRUE(old.args.flag("no-plots"));
  Parse abbreviated =
      parse("report", {"report", "--no-pl", "prog"});  // both spellings match: one option
  ASSERT_TRUE(abbreviated.ok) << abbreviated.error;
  EXPECT_TRUE(abbreviated.args.flag("no-plots"));
  EXPECT_TRUE(parse("characterize", {"characterize", "--no-plots"}).ok);
}

TEST(CommandLine, EveryCommandTakesHelpAndVersionLongAndShort) {
  for (const CommandSpec& spec : commandSpecs()) {
    for (const char* word : {"-h", "--help"}) {
      Parse p = parse(spec.name, {spec.name, word});
      EXPECT_TRUE(p.ok && p.args.help) << "hetopt " << spec.name << " " << word << ": " << p.error;
    }
    for (const char* word : {"-V", "--version"}) {
      Parse p = parse(spec.name, {spec.name, word});
      EXPECT_TRUE(p.ok && p.args.version)
          << "hetopt " << spec.name << " " << word << ": " << p.error;
    }
  }
  EXPECT_EQ(versionText().rfind("hetopt ", 0), 0u);
}

TEST(CommandLine, EveryHelpListsEveryOptionInItsUsageLineAndEndsWithTheExitStatus) {
  for (const CommandSpec& spec : commandSpecs()) {
    const std::string help = helpText(spec);
    const std::string usage = usageLine(spec);
    EXPECT_EQ(help.rfind("usage: hetopt", 0), 0u) << spec.name;
    EXPECT_NE(help.find("\nexit status:\n"), std::string::npos) << spec.name;
    EXPECT_NE(std::string(spec.exitStatus), "") << spec.name;
    for (const OptionSpec& o : spec.options) {
      if (o.aliasOf) {
        EXPECT_NE(help.find(std::string("(also --") + o.name + ")"), std::string::npos)
            << spec.name << " " << o.name;
        continue;
      }
      const std::string inUsage =
          o.shortName ? std::string("[-") + o.shortName : std::string("[--") + o.name;
      EXPECT_NE(usage.find(inUsage), std::string::npos)
          << spec.name << ": " << o.name << " not in " << usage;
      EXPECT_NE(help.find(std::string("--") + o.name), std::string::npos)
          << spec.name << " " << o.name;
    }
    for (const std::string& line : [&] {
           std::vector<std::string> lines;
           for (size_t s = 0, e; s < help.size(); s = e + 1)
             lines.push_back(help.substr(s, (e = help.find('\n', s)) - s));
           return lines;
         }())
      EXPECT_LE(line.size(), 80u) << spec.name << ": " << line;
  }
}

TEST(CommandLine, TheDbOptionIsDescribedTheSameWayInEveryCommand) {
  std::string first;
  for (const CommandSpec& spec : commandSpecs())
    for (const OptionSpec& o : spec.options) {
      if (strcmp(o.name, "db") != 0) continue;
      const std::string help = o.help;
      const std::string defaults =
          help.substr(help.find("(default"), help.find(')') - help.find("(default") + 1);
      if (first.empty()) first = defaults;
      EXPECT_EQ(defaults, first) << spec.name;
    }
  EXPECT_EQ(first,
            "(default $HETOPT_DB, else $XDG_DATA_HOME/hetopt/hetopt.db, else "
            "~/.local/share/hetopt/hetopt.db)");
}

TEST(CommandLine, TheManPageAndTheCompletionNameEveryOptionOfEveryCommand) {
  const std::string man = manPage(), completion = bashCompletion();
  for (const CommandSpec& spec : commandSpecs()) {
    if (*spec.name) {
      EXPECT_NE(man.find(std::string(".SS \"hetopt ") + spec.name + "\""), std::string::npos)
          << spec.name;
      EXPECT_NE(completion.find(std::string("    ") + spec.name + ") echo '"), std::string::npos)
          << spec.name;
    }
    for (const OptionSpec& o : spec.options) {
      std::string roffName;
      for (const char* c = o.name; *c; ++c)
        roffName += *c == '-' ? std::string("\\-") : std::string(1, *c);
      EXPECT_NE(man.find((o.aliasOf ? "\\-\\-" : "\\fB\\-\\-") + roffName), std::string::npos)
          << spec.name << " " << o.name;
      if (!o.aliasOf)
        EXPECT_NE(completion.find(std::string("--") + o.name), std::string::npos)
            << spec.name << " " << o.name;
    }
  }
  EXPECT_NE(man.find(".B HETOPT_MODE"), std::string::npos);
  // A usage line breaks between options, never inside one, and nothing is hyphenated.
  EXPECT_NE(man.find("[\\-\\-profile\\ NAME]"), std::string::npos);
  EXPECT_NE(man.find("\n.nh\n"), std::string::npos);
}

}  // namespace
}  // namespace hetopt::cli
