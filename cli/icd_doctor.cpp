// SPDX-License-Identifier: MIT
/** @file ICD set-up diagnosis; see icd_doctor.h.
 * ICD files, the vendor libraries they name and the loader; findings worded for the user. */
#include "cli/icd_doctor.h"

#include <CL/cl.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <set>

#include "common/icd_files.h"

namespace hetopt::cli {
namespace {

struct VendorLibrary {
  const char* file;
  const char* vendor;
};

// Vendor OpenCL implementations that are commonly installed by a driver package without an ICD
// file in containers (the driver is bind-mounted, /etc/OpenCL/vendors comes from the image).
constexpr VendorLibrary kVendorLibraries[] = {
    {"libnvidia-opencl.so.1", "NVIDIA"}, {"libamdocl64.so", "AMD"},  {"libigdrcl.so", "Intel GPU"},
    {"libintelocl.so", "Intel CPU"},     {"libmali.so", "Arm Mali"},
};

std::vector<std::string> librarySearchDirs() {
  std::vector<std::string> dirs;
  if (const char* ld = getenv("LD_LIBRARY_PATH")) {
    std::string s = ld;
    size_t start = 0;
    while (start <= s.size()) {
      size_t colon = s.find(':', start);
      std::string d =
          s.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!d.empty()) dirs.push_back(d);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  for (const char* d : {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64",
                        "/usr/lib", "/usr/local/lib", "/usr/local/nvidia/lib64",
                        "/usr/local/nvidia/lib", "/opt/rocm/lib", "/opt/amdgpu-pro/lib64"})
    dirs.push_back(d);
  return dirs;
}

bool exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

// ocl-icd (Debian's and Ubuntu's loader, hetopt's chosen one) reads only ICD files: it has no
// OCL_ICD_FILENAMES (2.3.1 at least), which the Khronos loader (the CUDA toolkit's) has. It
// answers for its own extension function, the Khronos loader does not.
bool loaderIsOclIcd() {
  return clGetExtensionFunctionAddress("clGetICDLoaderInfoOCLICD") != nullptr;
}

bool mentions(const std::vector<std::string>& libs, const std::string& file) {
  for (const std::string& l : libs)
    if (l.find(file) != std::string::npos) return true;
  return false;
}

}  // namespace

std::vector<IcdFinding> diagnoseIcdSetup(const std::vector<ClDevice>& devices) {
  std::vector<IcdFinding> out;
  std::string vendorsDir;
  const bool oclIcd = loaderIsOclIcd();
  const char* files = getenv("OCL_ICD_FILENAMES");
  std::vector<std::string> libs = icdLibraries(&vendorsDir, oclIcd ? nullptr : files);

  // Which loader is this process using? (The CUDA toolkit ships its own libOpenCL.so.1.)
  Dl_info info{};
  void* sym = dlsym(RTLD_DEFAULT, "clGetPlatformIDs");
  if (sym && dladdr(sym, &info) && info.dli_fname)
    out.push_back({IcdFinding::Level::Info,
                   std::string("OpenCL loader: ") + info.dli_fname + (oclIcd ? " (ocl-icd)" : "")});
  out.push_back({IcdFinding::Level::Info, "ICD vendor files read from: " + vendorsDir});
  if (oclIcd && files && *files)
    out.push_back(
        {IcdFinding::Level::Warning,
         "OCL_ICD_FILENAMES is set, but this loader (ocl-icd) does not read it: name the "
         "library in an .icd file of the vendors directory (or of a directory of your own "
         "given as OCL_ICD_VENDORS) instead"});

  std::set<std::string> reported;
  for (const VendorLibrary& v : kVendorLibraries) {
    if (mentions(libs, v.file)) continue;
    for (const std::string& dir : librarySearchDirs()) {
      std::string path = dir + "/" + v.file;
      if (!exists(path) || !reported.insert(v.file).second) continue;
      const std::string icd =
          std::string(std::string(v.vendor) == "NVIDIA" ? "nvidia" : "vendor") + ".icd";
      out.push_back(
          {IcdFinding::Level::Warning,
           std::string(v.vendor) + "'s OpenCL library is installed (" + path +
               ") but no ICD file names it, so no program can see that device. Fix (as root):\n"
               "    echo " +
               v.file + " > /etc/OpenCL/vendors/" + icd +
               "\n  or, for one shell (every loader; only the ICDs in that directory are then "
               "loaded):\n    mkdir -p ~/.opencl-vendors && echo " +
               path + " > ~/.opencl-vendors/" + icd +
               " && export OCL_ICD_VENDORS=~/.opencl-vendors"});
      break;
    }
  }

  bool anyGpu = false;
  for (const ClDevice& d : devices) anyGpu |= (d.type & CL_DEVICE_TYPE_GPU) != 0;
  if (anyGpu && !devices.empty() && !(devices.front().type & CL_DEVICE_TYPE_GPU)) {
    out.push_back(
        {IcdFinding::Level::Warning,
         "platform 0 is '" + devices.front().platformName + "' (" + devices.front().typeName() +
             "), not the GPU: programs that take the first platform run on the " +
             devices.front().typeName() +
             ". hetopt picks devices by name (HETOPT_DEVICE, default the first GPU); to make the "
             "GPU platform 0 for everyone, list only its ICD (OCL_ICD_VENDORS=<dir with only "
             "that .icd>) or, with the Khronos loader, put it first with OCL_ICD_FILENAMES."});
  }
  if (devices.empty())
    out.push_back({IcdFinding::Level::Warning,
                   "no OpenCL device is visible; install an ICD (on Debian: apt-get install "
                   "pocl-opencl-icd for the CPU) or fix the vendor set-up above"});
  return out;
}

}  // namespace hetopt::cli
