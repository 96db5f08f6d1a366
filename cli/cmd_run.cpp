// SPDX-License-Identifier: MIT
/** @file `hetopt run`: the every-day command. */
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/commands.h"
#include "cli/launch.h"
#include "common/log.h"

namespace hetopt::cli {

int cmdRun(int argc, char** argv) {
  bool passthrough = false;
  std::string device;
  std::string error;
  bool help = false;
  std::vector<std::string> program = splitProgram(
      argc, argv,
      [&](int i) -> int {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return help = true, 1;
        if (!strcmp(argv[i], "--passthrough")) return passthrough = true, 1;
        if (!strcmp(argv[i], "--device") && i + 1 < argc) return device = argv[i + 1], 2;
        return 0;
      },
      &error);
  if (help) {
    printf(
        "usage: hetopt run [--device FILTER] [--passthrough] [--] program [args...]\n\n"
        "Runs the program. With a profile from `hetopt trace` and this machine's characterization,\n"
        "the allocations that feed host<->device transfers are served from pinned memory; without\n"
        "them the program runs untouched. The program's exit status and signals pass through.\n\n"
        "  --device FILTER  OpenCL device ('gpu', 'cpu' or a name substring); sets HETOPT_DEVICE\n"
        "  --passthrough    load the shim but only forward every call (shows it is transparent)\n");
    return 0;
  }
  if (program.empty()) {
    warn("run: %s (see hetopt run --help)", error.c_str());
    return 2;
  }
  Launch launch;
  launch.argv = program;
  if (!device.empty()) launch.env.push_back({"HETOPT_DEVICE", device});
  if (passthrough) {
    launch.env.push_back({"HETOPT_MODE", "off"});
  } else {
    // Profiles and plans come from `hetopt trace` + analysis; until one exists for this program,
    // the run is untouched: no shim in the process at all.
    warn("no profile for %s; running unoptimized (run `hetopt trace` on it first)",
         program[0].c_str());
    launch.preloadShim = false;
  }
  return execProgram(launch);
}

}  // namespace hetopt::cli
