// SPDX-License-Identifier: MIT
/** @file `hetopt devices`: what OpenCL sees, what hetopt would pick, and what is misconfigured. */
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/commands.h"
#include "cli/icd_doctor.h"
#include "cli/json_output.h"
#include "common/cl_select.h"
#include "common/options.h"
#include "common/units.h"

namespace hetopt::cli {

int cmdDevices(int argc, char** argv) {
  std::string filter;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf(
          "usage: hetopt devices [--device FILTER] [--json]\n\n"
          "Lists every OpenCL platform and device, marks the one hetopt commands and test apps\n"
          "use, and diagnoses common set-up problems (vendor library without an ICD file, a CPU\n"
          "platform listed before the GPU). FILTER is 'gpu', 'cpu' or a case-insensitive\n"
          "substring of 'platform / device' (default: $HETOPT_DEVICE, else the first GPU, else\n"
          "the first device). Exits 1 when no device matches.\n\n"
          "--json prints one JSON object instead: \"devices\" (each with platform_index, platform,\n"
          "platform_version, device_index, device, vendor, type, driver_version, global_mem_bytes,\n"
          "max_alloc_bytes, host_unified_memory, selected), \"selected\" (platform_index,\n"
          "device_index, description; null when none matches), \"error\" (why no device or no\n"
          "match; null otherwise) and \"findings\" (the diagnosis: level \"warning\" or \"note\",\n"
          "text). The exit status is the same.\n");
      return 0;
    }
    if (!strcmp(argv[i], "--device") && i + 1 < argc) {
      filter = argv[++i];
    } else if (!strcmp(argv[i], "--json")) {
      json = true;
    } else {
      fprintf(stderr, "hetopt: devices: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  std::string error;
  std::vector<ClDevice> devices = listClDevices(&error);
  ClDevice chosen;
  std::string selectError;
  bool haveChoice = !devices.empty() && selectClDevice(filter, &chosen, &selectError);
  if (json) {
    const std::string why = devices.empty() ? (error.empty() ? "no OpenCL devices" : error) : selectError;
    fputs(devicesJson(devices, haveChoice ? &chosen : nullptr, haveChoice ? "" : why, diagnoseIcdSetup(devices)).c_str(),
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
           formatBytes(d.globalMemBytes, ByteUnit::GiB).c_str(), picked ? "  <- hetopt uses this" : "");
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
