// SPDX-License-Identifier: MIT
/**
 * @file Diagnoses the OpenCL set-ups that make programs silently run on the wrong device or find
 * none: a vendor library installed without an ICD file naming it, a loader that lists a CPU
 * platform first while a GPU platform exists (the lent GPU machines' image is exactly
 * that).
 */
#pragma once
#include <string>
#include <vector>

#include "common/cl_select.h"

namespace hetopt::cli {

struct IcdFinding {
  enum class Level { Info, Warning } level;
  std::string text;  ///< one or more lines, already worded for the user
};

/// Examines ICD files, known vendor libraries, the loader in use and the device list.
std::vector<IcdFinding> diagnoseIcdSetup(const std::vector<ClDevice>& devices);

}  // namespace hetopt::cli
