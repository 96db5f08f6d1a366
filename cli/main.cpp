// SPDX-License-Identifier: MIT
/** @file The `hetopt` driver: dispatches to one subcommand per file (cli/cmd_*.cpp). */
#include <csignal>
#include <cstdio>
#include <cstring>

#include "cli/commands.h"
#include "common/options.h"
#include "hetopt/version.h"

namespace {

struct Command {
  const char* name;
  int (*run)(int argc, char** argv);
  const char* summary;
};

// The one list of subcommands; `hetopt --help` prints it.
constexpr Command kCommands[] = {
    {"devices", hetopt::cli::cmdDevices,
     "list OpenCL platforms/devices, show which one hetopt picks, diagnose ICD set-up problems"},
    {"run", hetopt::cli::cmdRun,
     "run a program, serving its transfer-feeding allocations from pinned memory (every run)"},
    {"trace", hetopt::cli::cmdTrace,
     "run a program recording its OpenCL calls and host allocations into a compressed trace (once)"},
    {"show", hetopt::cli::cmdShow, "print a trace: calls, objects defined and used, loops, times (--json)"},
    {"characterize", hetopt::cli::cmdCharacterize,
     "measure this machine's allocation policies and transfers once; fit, store, plot (once per machine)"},
    {"analyze", hetopt::cli::cmdAnalyze,
     "analyse a trace: eligibility, transfer-feeding allocation sites, profile, report, plots"},
#ifdef HETOPT_HAVE_ANALYZER
    {"report", hetopt::cli::cmdReport,
     "before and after: the traced run against the last optimized runs, predicted and measured"},
#endif
};

void usage(FILE* out) {
  fprintf(out,
          "usage: hetopt <command> [options] [--] [program args...]\n\n"
          "hetopt makes unmodified OpenCL programs move data between host and device at the speed\n"
          "of hand-pinned code.\n\ncommands:\n");
  for (const Command& c : kCommands) fprintf(out, "  %-13s %s\n", c.name, c.summary);
  fprintf(out,
          "\n`hetopt <command> --help` describes a command; `hetopt --help-env` lists the\n"
          "HETOPT_* environment variables. A program's exit status is hetopt's exit status;\n"
          "hetopt's own errors exit 2.\n");
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
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char* cmd = argv[1];
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(cmd, "--help-env")) {
    usageEnv();
    return 0;
  }
  if (!strcmp(cmd, "--version")) {
    printf("hetopt %s (trace format %d)\n", HETOPT_VERSION_STRING, HETOPT_TRACE_FORMAT_VERSION);
    return 0;
  }
  for (const Command& c : kCommands)
    if (!strcmp(cmd, c.name)) return c.run(argc - 1, argv + 1);
  fprintf(stderr, "hetopt: unknown command '%s' (see hetopt --help)\n", cmd);
  return 2;
}
