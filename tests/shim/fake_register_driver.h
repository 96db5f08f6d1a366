// SPDX-License-Identifier: MIT
/**
 * @file The part of a fake OpenCL that in-place registration tests share: every call a
 * registration makes besides creating and releasing its USE_HOST_PTR buffer (maps are refused:
 * registration never maps), and the policy environment around a test's own create and release.
 */
#pragma once
#include "policies/policy.h"

namespace hetopt::shim::testing {

inline void* CL_API_CALL refusedMap(cl_command_queue, cl_mem, cl_bool, cl_map_flags, size_t, size_t,
                                    cl_uint, const cl_event*, cl_event*, cl_int* err) {
  *err = CL_INVALID_OPERATION;
  return nullptr;
}
inline cl_int CL_API_CALL refusedUnmap(cl_command_queue, cl_mem, void*, cl_uint, const cl_event*,
                                       cl_event*) {
  return CL_INVALID_OPERATION;
}
inline cl_int CL_API_CALL finished(cl_command_queue) { return CL_SUCCESS; }

/// A context-only environment whose buffers come from `create` and go through `release`.
inline PolicyEnv fakeRegisterEnv(decltype(&clCreateBuffer) create,
                                 decltype(&clReleaseMemObject) release) {
  PolicyEnv env;
  env.cl = {create, release, &refusedMap, &refusedUnmap, &finished};
  env.context = reinterpret_cast<cl_context>(0x1);
  return env;
}

}  // namespace hetopt::shim::testing
