// SPDX-License-Identifier: MIT
/** @file The `hetopt` driver: dispatches to one subcommand per file (cli/cmd_*.cpp).
 * The command table, the usage text and the environment variables' help; main(). */
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/command_line.h"
#include "cli/commands.h"
#include "common/options.h"

namespace {

using hetopt::cli::CommandSpec;

// Each command's entry point; its options, summary and help are its table in command_specs.cpp.
struct Command {
  const char* name;
  int (*run)(int argc, char** argv);
};

constexpr Command kCommands[] = {
    {"devices", hetopt::cli::cmdDevices},
    {"run", hetopt::cli::cmdRun},
    {"trace", hetopt::cli::cmdTrace},
    {"show", hetopt::cli::cmdShow},
    {"characterize", hetopt::cli::cmdCharacterize},
    {"analyze", hetopt::cli::cmdAnalyze},
#ifdef HETOPT_HAVE_ANALYZER
    {"report", hetopt::cli::cmdReport},
#endif
};

const Command* findCommand(const std::string& name) {
  for (const Command& c : kCommands)
    if (name == c.name) return &c;
  return nullptr;
}

void usage(FILE* out) {
  const CommandSpec& top = hetopt::cli::commandSpec("");
  fputs(hetopt::cli::helpText(top).c_str(), out);
  fprintf(out, "\ncommands:\n");
  for (const CommandSpec& c : hetopt::cli::commandSpecs().subspan(1))
    if (findCommand(c.name)) fprintf(out, "  %-13s %s\n", c.name, c.summary);
  fprintf(out, "\n`hetopt <command> --help` describes a command (`man hetopt` all of them).\n");
}

void usageEnv() {
  printf("Environment variables (set by the hetopt commands; read by the shim):\n");
  for (int i = 0; i < static_cast<int>(hetopt::Option::Count); ++i) {
    const hetopt::OptionInfo& o = hetopt::optionInfo(static_cast<hetopt::Option>(i));
    printf("  %-24s %s (default: \"%s\")\n", o.envName, o.doc, o.defaultValue);
  }
}

}  // namespace

namespace {
void ignoreSignal(int) {}
}  // namespace

int main(int argc, char** argv) {
  // Under a file size limit (ulimit -f) hetopt's own writes (DB, traces, reports) must fail with
  // an error, not kill hetopt with SIGXFSZ after the traced program ran: its exit status would be
  // lost. A handler rather than SIG_IGN: exec resets handlers, so the programs hetopt runs get
  // the default back. An inherited SIG_IGN is left alone (the programs inherit it as before).
  struct sigaction old {};
  if (sigaction(SIGXFSZ, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) {
    struct sigaction sa {};
    sa.sa_handler = ignoreSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGXFSZ, &sa, nullptr);
  }
  const CommandSpec& top = hetopt::cli::commandSpec("");
  if (argc >= 2 && !strcmp(argv[1], "help")) {  // `hetopt help [COMMAND]`
    if (argc == 2) return usage(stdout), 0;
    if (findCommand(argv[2]))
      return fputs(hetopt::cli::helpText(hetopt::cli::commandSpec(argv[2])).c_str(), stdout), 0;
    return fprintf(stderr, "hetopt: unknown command '%s' (see hetopt --help)\n", argv[2]), 2;
  }
  hetopt::cli::ParsedArgs args;
  std::string error;
  if (!hetopt::cli::parseArgs(top, argc, argv, &args, &error))
    return hetopt::cli::usageError(top, error);
  if (args.help) return usage(stdout), 0;
  if (args.version) return printf("%s\n", hetopt::cli::versionText().c_str()), 0;
  if (args.flag("help-env")) return usageEnv(), 0;
  if (args.operands.empty()) return usage(stderr), 2;
  // The command and its arguments: argv from the command's name on.
  const int at = argc - static_cast<int>(args.operands.size());
  const char* cmd = argv[at];
  if (const Command* c = findCommand(cmd)) return c->run(argc - at, argv + at);
  fprintf(stderr, "hetopt: unknown command '%s' (see hetopt --help)\n", cmd);
  return 2;
}
