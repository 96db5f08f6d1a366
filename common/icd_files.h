// SPDX-License-Identifier: MIT
/**
 * @file Which OpenCL implementations an ICD loader loads: the libraries the ICD files of its
 * vendors directory name. Read by `hetopt devices`' diagnosis (cli/icd_doctor) and by the shim,
 * which loads them early where the driver itself must wait (shim/core/driver_start.h). Reentrant.
 */
#pragma once
#include <string>
#include <vector>

namespace hetopt {

/// The library names (as written, a path or a name for the dynamic loader's search) that the ICD
/// files of $OCL_ICD_VENDORS (a directory or one file), else /etc/OpenCL/vendors, name; then the
/// entries of `filenames` ($OCL_ICD_FILENAMES where the loader reads it, else null). *vendorsDir:
/// where the ICD files were read from.
std::vector<std::string> icdLibraries(std::string* vendorsDir, const char* filenames);

}  // namespace hetopt
