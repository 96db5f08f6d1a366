// SPDX-License-Identifier: MIT
/** @file `hetopt devices`: what OpenCL sees, what hetopt would pick, and what is misconfigured.
 * Exits 1 when hetopt would pick no device (the reason on stderr), else 0. */
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/icd_doctor.h"
#include "cli/json_output.h"
#include "common/cl_select.h"
#include "common/options.h"
#include "common/units.h"

namespace hetopt::cli {

int cmdDevices(int argc, char** argv) {
  ParsedArgs args;
  if (int rc = parseOrExit(commandSpec("devices"), argc, argv, &args); rc >= 0) return rc;
  const std::string filter = args.value("device");
  const bool json = args.flag("json");
  std::string error;
  std::vector<ClDevice> devices = listClDevices(&error);
  ClDevice chosen;
  std::string selectError;
  bool haveChoice = !devices.empty() && selectClDevice(filter, &chosen, &selectError);
  if (json) {
    const std::string why =
        devices.empty() ? (error.empty() ? "no OpenCL devices" : error) : selectError;
    fputs(devicesJson(devices, haveChoice ? &chosen : nullptr, haveChoice ? "" : why,
                      diagnoseIcdSetup(devices))
              .c_str(),
          stdout);
    return haveChoice ? 0 : 1;
  }
  unsigned lastPlatform = ~0u;
  for (const ClDevice& d : devices) {
    if (d.platformIndex != lastPlatform) {
      printf("platform %u: %s (%s)\n", d.platformIndex, d.platformName.c_str(),
             d.platformVersion.c_str());
      lastPlatform = d.platformIndex;
    }
    bool picked = haveChoice && d.device == chosen.device;
    printf("  %s device %u: %s [%s, driver %s, %s]%s\n", picked ? "*" : " ", d.deviceIndex,
           d.deviceName.c_str(), d.typeName().c_str(), d.driverVersion.c_str(),
           formatBytes(d.globalMemBytes, ByteUnit::GiB).c_str(),
           picked ? "  <- hetopt uses this" : "");
  }
  if (devices.empty()) printf("no OpenCL devices (%s)\n", error.c_str());
  for (const IcdFinding& f : diagnoseIcdSetup(devices))
    printf("%s %s\n", f.level == IcdFinding::Level::Warning ? "warning:" : "note:", f.text.c_str());
  if (!haveChoice) {
    if (!selectError.empty()) fprintf(stderr, "hetopt: %s\n", selectError.c_str());
    return 1;
  }
  return 0;
}

}  // namespace hetopt::cli
