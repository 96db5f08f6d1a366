// SPDX-License-Identifier: MIT
/** @file Helpers shared by the characterize tests (and the fuzz seeds): a private temporary
 * directory, the run information of a characterization on the CI machine. */
#pragma once
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "characterize/records.h"
#include "tests/common/temp_dir.h"

namespace hetopt::characterize::testing {

/// What a quick characterization of `device` (PoCL on the CI machine) records about itself.
inline RunInfo ciRunInfo(const std::string& device, const std::string& createdUtc) {
  RunInfo i;
  i.key = {"Portable Computing Language", "OpenCL 3.0 PoCL", device, "3.1", "AMD EPYC", "6.1.0"};
  i.deviceVendor = "AuthenticAMD";
  i.deviceType = "CPU";
  i.hostname = "ci";
  i.hetoptVersion = "0.1.0";
  i.createdUtc = createdUtc;
  i.quick = true;
  i.durationS = 4.5;
  i.memlockLimit = 8 << 20;
  return i;
}

using hetopt::testing::TempDir;

}  // namespace hetopt::characterize::testing
