// SPDX-License-Identifier: MIT
/** @file When hetopt's thread may start the OpenCL driver; see driver_start.h.
 * Plain state under Preparation's mutex: the decision at start-up and what fork() changes. */
#include "shim/core/driver_start.h"

#include <dlfcn.h>

#include <cstdlib>
#include <utility>

#include "common/icd_files.h"

namespace hetopt::shim {

void DriverStart::decide(bool planLate, std::string forkImporter) {
  m_forkImporter = std::move(forkImporter);
  m_why = planLate ? Why::Plan : !m_forkImporter.empty() ? Why::CanFork : Why::Early;
}

std::string DriverStart::describe() const {
  switch (m_why) {
    case Why::Early:
      return "early";
    case Why::Plan:
      return "late: the plan says so";
    case Why::CanFork:
      return "late: the program can fork (" + m_forkImporter + " imports fork)";
    case Why::Forked:
      return "late: the program forked before hetopt started the driver";
  }
  return "?";
}

bool DriverStart::enterDriver() {
  if (late()) return false;
  m_begun = m_inDriver = m_driverStarted = true;
  return true;
}

bool DriverStart::beginLoading() {
  if (m_calledOff) return false;
  m_begun = m_loading = true;
  return true;
}

bool DriverStart::forkMustWait() {
  if (busy()) return true;
  if (!m_begun) {
    m_calledOff = true;
    if (m_why == Why::Early) m_why = Why::Forked;
  }
  return false;
}

unsigned loadVendorLibraries() {
  unsigned loaded = 0;
  std::string vendorsDir;
  for (const std::string& lib : icdLibraries(&vendorsDir, getenv("OCL_ICD_FILENAMES")))
    loaded += dlopen(lib.c_str(), RTLD_LAZY | RTLD_LOCAL) != nullptr;  // kept: the loader finds it
  return loaded;
}

}  // namespace hetopt::shim
