// SPDX-License-Identifier: MIT
/**
 * @file A program that ends early, as real ones do before their work (faults.exit_while_loading):
 * `platforms` lists the OpenCL platforms and exits 0 without making a context (a device query, a
 * --list-devices); `usage` exits 2 before any OpenCL call (a usage error). Under a plan, hetopt's
 * thread may still be loading the driver or making a context when either exits.
 */
#include <CL/cl.h>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc == 2 && !strcmp(argv[1], "platforms")) {
    cl_platform_id platforms[16];
    cl_uint n = 0;
    if (clGetPlatformIDs(16, platforms, &n) != CL_SUCCESS || n == 0) {
      fprintf(stderr, "early_exit_app: no OpenCL platform\n");
      return 1;
    }
    for (cl_uint i = 0; i < n && i < 16; ++i) {
      char name[256] = {};
      clGetPlatformInfo(platforms[i], CL_PLATFORM_NAME, sizeof name - 1, name, nullptr);
      printf("platform %u: %s\n", i, name);
    }
    return 0;
  }
  fprintf(stderr, "usage: %s platforms\n", argv[0]);
  return 2;
}
