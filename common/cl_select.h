// SPDX-License-Identifier: MIT
/**
 * @file One way to pick the OpenCL device, shared by every hetopt command and every test app.
 *
 * Never "platform 0": on the GPU machine platform 0 is PoCL on the host CPU (scripts/gpu/env.sh).
 * The filter is HETOPT_DEVICE (or a command's --device): "gpu", "cpu", or a case-insensitive
 * substring of "<platform name> / <device name>". No filter: the first GPU of any platform, else
 * the first device.
 */
#pragma once
#include <CL/cl.h>

#include <string>
#include <vector>

namespace hetopt {

struct ClDevice {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  unsigned platformIndex = 0;
  unsigned deviceIndex = 0;
  cl_device_type type = 0;
  std::string platformName;
  std::string platformVersion;
  std::string deviceName;
  std::string deviceVendor;
  std::string driverVersion;
  cl_ulong globalMemBytes = 0;
  cl_ulong maxAllocBytes =
      0;  ///< CL_DEVICE_MAX_MEM_ALLOC_SIZE: the largest buffer the device takes
  cl_bool hostUnifiedMemory = CL_FALSE;

  /// "NVIDIA CUDA / NVIDIA H200 [GPU, driver 580.159.04]"
  std::string describe() const;
  /// "GPU", "CPU", "ACCELERATOR", ...
  std::string typeName() const;
};

/// The four entry points device listing needs. Programs that dlopen() libOpenCL pass pointers they
/// resolved themselves; everyone else uses linked(), which is inline so that only its callers
/// reference the loader's symbols.
struct ClQueryFunctions {
  decltype(&::clGetPlatformIDs) getPlatformIDs;
  decltype(&::clGetPlatformInfo) getPlatformInfo;
  decltype(&::clGetDeviceIDs) getDeviceIDs;
  decltype(&::clGetDeviceInfo) getDeviceInfo;
  static ClQueryFunctions linked() {
    return {&::clGetPlatformIDs, &::clGetPlatformInfo, &::clGetDeviceIDs, &::clGetDeviceInfo};
  }
};

/// Every device of every platform, in loader order. Empty with *error set when none or on failure.
std::vector<ClDevice> listClDevices(std::string* error,
                                    const ClQueryFunctions& cl = ClQueryFunctions::linked());

/// True when `filter` selects `d` ("gpu", "cpu", "accelerator" or a name substring).
bool clDeviceMatches(const ClDevice& d, const std::string& filter);

/// Picks the device for `filter` (empty: HETOPT_DEVICE, then first GPU, else first device).
/// Returns false with a one-line *error when nothing matches.
bool selectClDevice(const std::string& filter, ClDevice* out, std::string* error,
                    const ClQueryFunctions& cl = ClQueryFunctions::linked());

/// Text of an OpenCL status code ("CL_OUT_OF_RESOURCES"), or "CL error -N".
const char* clErrorName(cl_int status);

}  // namespace hetopt
