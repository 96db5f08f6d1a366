// SPDX-License-Identifier: MIT
/**
 * @file A program as real ones start: it fills its input, then makes one context, builds its
 * kernel from source and scales the input on the device, checking every result. Its source and
 * build options come from the command line (`--variant N` changes the source, `--options O` the
 * options, `--broken` makes a source that fails to build: it prints the status and log, exits 3;
 * `--binary F` creates it from the binary in F, or builds from source and writes its binary to F,
 * as PyOpenCL's cache does), so that runs can differ from the traced one (build_ahead.sh).
 */
#include <CL/cl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace {

[[noreturn]] void die(const char* what, cl_int err) {
  fprintf(stderr, "build_ahead_app: %s failed (%d)\n", what, err);
  exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  int variant = 0;
  std::string options = "-DSCALE=2";
  bool broken = false;
  std::string binaryFile;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--variant") && i + 1 < argc)
      variant = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--options") && i + 1 < argc)
      options = argv[++i];
    else if (!strcmp(argv[i], "--broken"))
      broken = true;
    else if (!strcmp(argv[i], "--binary") && i + 1 < argc)
      binaryFile = argv[++i];
    else {
      fprintf(stderr, "usage: %s [--variant N] [--options O] [--broken] [--binary F]\n", argv[0]);
      return 2;
    }
  }
  const size_t n = size_t{1} << 20;
  std::vector<float> data(n);  // filled before any OpenCL call, as real programs do
  for (size_t i = 0; i < n; ++i) data[i] = static_cast<float>(i % 1000);

  cl_platform_id platform;
  cl_device_id device;
  cl_int err = clGetPlatformIDs(1, &platform, nullptr);
  if (err != CL_SUCCESS) die("clGetPlatformIDs", err);
  if ((err = clGetDeviceIDs(platform, CL_DEVICE_TYPE_DEFAULT, 1, &device, nullptr)) != CL_SUCCESS)
    die("clGetDeviceIDs", err);
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  if (err != CL_SUCCESS) die("clCreateContext", err);
  cl_command_queue queue = clCreateCommandQueueWithProperties(context, device, nullptr, &err);
  if (err != CL_SUCCESS) die("clCreateCommandQueueWithProperties", err);
  cl_mem buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, n * sizeof(float), nullptr, &err);
  if (err != CL_SUCCESS) die("clCreateBuffer", err);
  err = clEnqueueWriteBuffer(queue, buffer, CL_TRUE, 0, n * sizeof(float), data.data(), 0, nullptr,
                             nullptr);
  if (err != CL_SUCCESS) die("clEnqueueWriteBuffer", err);

  // Real programs read their kernel files here; the pause gives hetopt's builder, which starts
  // with the early context, time to reach the program even on a loaded machine.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // Two strings, the second made at run time: the source is what the strings hold together.
  const std::string body = "  x[get_global_id(0)] *= SCALE + " + std::to_string(variant) +
                           (broken ? " +\n" : ";\n") + "}\n";
  const char* strings[] = {"__kernel void scale(__global float* x) {\n", body.c_str()};
  std::string binary;
  if (!binaryFile.empty()) {
    std::ifstream in(binaryFile, std::ios::binary);
    binary.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  cl_program program;
  if (!binary.empty()) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(binary.data());
    const size_t length = binary.size();
    cl_int binaryStatus = CL_INVALID_VALUE;
    program = clCreateProgramWithBinary(context, 1, &device, &length, &bytes, &binaryStatus, &err);
    if (err != CL_SUCCESS || binaryStatus != CL_SUCCESS) die("clCreateProgramWithBinary", err);
  } else {
    program = clCreateProgramWithSource(context, 2, strings, nullptr, &err);
    if (err != CL_SUCCESS) die("clCreateProgramWithSource", err);
  }
  err = clBuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr);
  if (err == CL_SUCCESS && !binaryFile.empty() && binary.empty()) {
    size_t bytes = 0;
    clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof bytes, &bytes, nullptr);
    std::string built(bytes, '\0');
    auto* at = reinterpret_cast<unsigned char*>(built.data());
    if (!bytes ||
        clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof at, &at, nullptr) != CL_SUCCESS)
      die("clGetProgramInfo(CL_PROGRAM_BINARIES)", CL_INVALID_VALUE);
    std::ofstream(binaryFile, std::ios::binary)
        .write(built.data(), static_cast<std::streamsize>(bytes));
  }
  cl_build_status status = CL_BUILD_NONE;
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_STATUS, sizeof status, &status, nullptr);
  if (err != CL_SUCCESS) {
    size_t bytes = 0;
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &bytes);
    std::string log(bytes, '\0');
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, bytes, log.data(), nullptr);
    printf("build failed: status %d, build status %d\n%s\n", err, status, log.c_str());
    return 3;
  }
  cl_kernel kernel = clCreateKernel(program, "scale", &err);
  if (err != CL_SUCCESS) die("clCreateKernel", err);
  clSetKernelArg(kernel, 0, sizeof buffer, &buffer);
  if ((err = clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &n, nullptr, 0, nullptr, nullptr)) !=
      CL_SUCCESS)
    die("clEnqueueNDRangeKernel", err);
  std::vector<float> out(n);
  err = clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, n * sizeof(float), out.data(), 0, nullptr,
                            nullptr);
  if (err != CL_SUCCESS) die("clEnqueueReadBuffer", err);
  float scale = 0;
  for (const char* p = strstr(options.c_str(), "SCALE="); p; p = nullptr) scale = atof(p + 6);
  scale += static_cast<float>(variant);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    if (out[i] != data[i] * scale) {
      fprintf(stderr, "build_ahead_app: x[%zu] = %g, expected %g\n", i, out[i], data[i] * scale);
      return 1;
    }
    sum += out[i];
  }
  printf("build status %d; scaled %zu values by %g; sum %.0f\n", status, n, scale, sum);
  clReleaseKernel(kernel);
  clReleaseProgram(program);
  clReleaseMemObject(buffer);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  return 0;
}
