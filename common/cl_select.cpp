// SPDX-License-Identifier: MIT
/** @file Device listing and selection by name; see cl_select.h.
 * Every platform's devices through ClQueryFunctions, HETOPT_DEVICE filters, error names. */
#include "common/cl_select.h"

#include <CL/cl_ext.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "common/options.h"

namespace hetopt {
namespace {

template <typename Getter, typename Handle, typename Param>
std::string infoString(Getter get, Handle h, Param p) {
  size_t n = 0;
  if (get(h, p, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  if (get(h, p, n, s.data(), nullptr) != CL_SUCCESS) return {};
  while (!s.empty() && (s.back() == '\0' || isspace(static_cast<unsigned char>(s.back()))))
    s.pop_back();
  return s;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

std::string ClDevice::typeName() const {
  if (type & CL_DEVICE_TYPE_GPU) return "GPU";
  if (type & CL_DEVICE_TYPE_CPU) return "CPU";
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return "ACCELERATOR";
  if (type & CL_DEVICE_TYPE_CUSTOM) return "CUSTOM";
  return "OTHER";
}

std::string ClDevice::describe() const {
  return platformName + " / " + deviceName + " [" + typeName() + ", driver " + driverVersion + "]";
}

std::vector<ClDevice> listClDevices(std::string* error, const ClQueryFunctions& cl) {
  std::vector<ClDevice> out;
  cl_uint numPlatforms = 0;
  cl_int st = cl.getPlatformIDs(0, nullptr, &numPlatforms);
  if (st != CL_SUCCESS || numPlatforms == 0) {
    if (error)
      *error = st == CL_SUCCESS || st == CL_PLATFORM_NOT_FOUND_KHR
                   ? "no OpenCL platform found (is an ICD installed in /etc/OpenCL/vendors?)"
                   : std::string("clGetPlatformIDs failed: ") + clErrorName(st);
    return out;
  }
  std::vector<cl_platform_id> platforms(numPlatforms);
  cl.getPlatformIDs(numPlatforms, platforms.data(), nullptr);
  for (cl_uint p = 0; p < numPlatforms; ++p) {
    cl_uint numDevices = 0;
    if (cl.getDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &numDevices) != CL_SUCCESS)
      continue;
    std::vector<cl_device_id> devices(numDevices);
    cl.getDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, numDevices, devices.data(), nullptr);
    for (cl_uint d = 0; d < numDevices; ++d) {
      ClDevice dev;
      dev.platform = platforms[p];
      dev.device = devices[d];
      dev.platformIndex = p;
      dev.deviceIndex = d;
      dev.platformName = infoString(cl.getPlatformInfo, platforms[p], CL_PLATFORM_NAME);
      dev.platformVersion = infoString(cl.getPlatformInfo, platforms[p], CL_PLATFORM_VERSION);
      dev.deviceName = infoString(cl.getDeviceInfo, devices[d], CL_DEVICE_NAME);
      dev.deviceVendor = infoString(cl.getDeviceInfo, devices[d], CL_DEVICE_VENDOR);
      dev.driverVersion = infoString(cl.getDeviceInfo, devices[d], CL_DRIVER_VERSION);
      cl.getDeviceInfo(devices[d], CL_DEVICE_TYPE, sizeof(dev.type), &dev.type, nullptr);
      cl.getDeviceInfo(devices[d], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(dev.globalMemBytes),
                       &dev.globalMemBytes, nullptr);
      cl.getDeviceInfo(devices[d], CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(dev.maxAllocBytes),
                       &dev.maxAllocBytes, nullptr);
      cl.getDeviceInfo(devices[d], CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof(dev.hostUnifiedMemory),
                       &dev.hostUnifiedMemory, nullptr);
      out.push_back(std::move(dev));
    }
  }
  if (out.empty() && error) *error = "OpenCL platforms found, but no devices";
  return out;
}

bool clDeviceMatches(const ClDevice& d, const std::string& filter) {
  std::string f = lower(filter);
  if (f == "gpu") return d.type & CL_DEVICE_TYPE_GPU;
  if (f == "cpu") return d.type & CL_DEVICE_TYPE_CPU;
  if (f == "accelerator") return d.type & CL_DEVICE_TYPE_ACCELERATOR;
  return lower(d.platformName + " / " + d.deviceName).find(f) != std::string::npos;
}

bool selectClDevice(const std::string& filter, ClDevice* out, std::string* error,
                    const ClQueryFunctions& cl) {
  std::string f = filter.empty() ? optionString(Option::DEVICE) : filter;
  std::vector<ClDevice> all = listClDevices(error, cl);
  if (all.empty()) return false;
  if (f.empty()) {
    auto gpu = std::find_if(all.begin(), all.end(),
                            [](const ClDevice& d) { return d.type & CL_DEVICE_TYPE_GPU; });
    *out = gpu != all.end() ? *gpu : all.front();
    return true;
  }
  for (const ClDevice& d : all) {
    if (clDeviceMatches(d, f)) {
      *out = d;
      return true;
    }
  }
  if (error) {
    *error = "no OpenCL device matches '" + f + "' (have:";
    for (const ClDevice& d : all) *error += " '" + d.platformName + " / " + d.deviceName + "'";
    *error += ")";
  }
  return false;
}

const char* clErrorName(cl_int status) {
  switch (status) {
#define HETOPT_CL_ERR(x) \
  case x:                \
    return #x;
    HETOPT_CL_ERR(CL_SUCCESS)
    HETOPT_CL_ERR(CL_DEVICE_NOT_FOUND)
    HETOPT_CL_ERR(CL_DEVICE_NOT_AVAILABLE)
    HETOPT_CL_ERR(CL_COMPILER_NOT_AVAILABLE)
    HETOPT_CL_ERR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    HETOPT_CL_ERR(CL_OUT_OF_RESOURCES)
    HETOPT_CL_ERR(CL_OUT_OF_HOST_MEMORY)
    HETOPT_CL_ERR(CL_PROFILING_INFO_NOT_AVAILABLE)
    HETOPT_CL_ERR(CL_MEM_COPY_OVERLAP)
    HETOPT_CL_ERR(CL_BUILD_PROGRAM_FAILURE)
    HETOPT_CL_ERR(CL_MAP_FAILURE)
    HETOPT_CL_ERR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    HETOPT_CL_ERR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    HETOPT_CL_ERR(CL_INVALID_VALUE)
    HETOPT_CL_ERR(CL_INVALID_DEVICE_TYPE)
    HETOPT_CL_ERR(CL_INVALID_PLATFORM)
    HETOPT_CL_ERR(CL_INVALID_DEVICE)
    HETOPT_CL_ERR(CL_INVALID_CONTEXT)
    HETOPT_CL_ERR(CL_INVALID_QUEUE_PROPERTIES)
    HETOPT_CL_ERR(CL_INVALID_COMMAND_QUEUE)
    HETOPT_CL_ERR(CL_INVALID_HOST_PTR)
    HETOPT_CL_ERR(CL_INVALID_MEM_OBJECT)
    HETOPT_CL_ERR(CL_INVALID_BUFFER_SIZE)
    HETOPT_CL_ERR(CL_INVALID_PROGRAM)
    HETOPT_CL_ERR(CL_INVALID_PROGRAM_EXECUTABLE)
    HETOPT_CL_ERR(CL_INVALID_KERNEL_NAME)
    HETOPT_CL_ERR(CL_INVALID_KERNEL)
    HETOPT_CL_ERR(CL_INVALID_ARG_INDEX)
    HETOPT_CL_ERR(CL_INVALID_ARG_VALUE)
    HETOPT_CL_ERR(CL_INVALID_ARG_SIZE)
    HETOPT_CL_ERR(CL_INVALID_KERNEL_ARGS)
    HETOPT_CL_ERR(CL_INVALID_WORK_DIMENSION)
    HETOPT_CL_ERR(CL_INVALID_WORK_GROUP_SIZE)
    HETOPT_CL_ERR(CL_INVALID_WORK_ITEM_SIZE)
    HETOPT_CL_ERR(CL_INVALID_GLOBAL_OFFSET)
    HETOPT_CL_ERR(CL_INVALID_EVENT_WAIT_LIST)
    HETOPT_CL_ERR(CL_INVALID_EVENT)
    HETOPT_CL_ERR(CL_INVALID_OPERATION)
    HETOPT_CL_ERR(CL_INVALID_GLOBAL_WORK_SIZE)
    HETOPT_CL_ERR(CL_INVALID_MIP_LEVEL)
    HETOPT_CL_ERR(CL_INVALID_PROPERTY)
    HETOPT_CL_ERR(CL_PLATFORM_NOT_FOUND_KHR)
#undef HETOPT_CL_ERR
    default:
      return "CL error (unknown code)";
  }
}

}  // namespace hetopt
