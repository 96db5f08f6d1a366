// SPDX-License-Identifier: MIT
/**
 * @file Image transfers from malloc'd memory (shim.optimize.image_app): a 256x256 RGBA float image
 * (1 MiB) is written from one block with clEnqueueWriteImage and read back into another with
 * clEnqueueReadImage, 4 times, then a second image is created from the first block
 * (CL_MEM_COPY_HOST_PTR) and read back; the shim's --stats must count their bytes, the image's
 * creation as a transfer too. stdout: the device and a checksum; exits 2 when the device has no
 * image support.
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tests/apps/app_common.h"

using namespace hetopt::apps;

int main() {
  const size_t side = 256, floats = side * side * 4, bytes = floats * sizeof(float);
  ClEnv env;
  cl_bool images = CL_FALSE;
  APP_CL(clGetDeviceInfo(env.device(), CL_DEVICE_IMAGE_SUPPORT, sizeof images, &images, nullptr));
  if (!images) {
    fprintf(stderr, "image_app: the device has no image support\n");
    return 2;
  }
  auto* src = static_cast<float*>(malloc(bytes));  // hetopt:transfer
  auto* dst = static_cast<float*>(malloc(bytes));  // hetopt:transfer
  APP_CHECK(src && dst);
  const cl_image_format format{CL_RGBA, CL_FLOAT};
  cl_image_desc desc{};
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = desc.image_height = side;
  cl_int err = CL_SUCCESS;
  cl_mem image = clCreateImage(env.context(), CL_MEM_READ_WRITE, &format, &desc, nullptr, &err);
  APP_CL(err);
  const size_t origin[3] = {0, 0, 0}, region[3] = {side, side, 1};
  double sum = 0;
  for (int it = 0; it < 4; ++it) {
    for (size_t i = 0; i < floats; ++i) src[i] = static_cast<float>((i * 7 + it) % 1000);
    APP_CL(clEnqueueWriteImage(env.queue(), image, CL_TRUE, origin, region, 0, 0, src, 0, nullptr,
                               nullptr));
    memset(dst, 0, bytes);
    APP_CL(clEnqueueReadImage(env.queue(), image, CL_TRUE, origin, region, 0, 0, dst, 0, nullptr,
                              nullptr));
    APP_CHECK(memcmp(src, dst, bytes) == 0);
    for (size_t i = 0; i < floats; i += 97) sum += dst[i];
  }
  // An image made from host memory: a host->device copy at creation.
  for (size_t i = 0; i < floats; ++i) src[i] = static_cast<float>((i * 13 + 5) % 1000);
  cl_mem copied = clCreateImage(env.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, &format,
                                &desc, src, &err);
  APP_CL(err);
  memset(dst, 0, bytes);
  APP_CL(clEnqueueReadImage(env.queue(), copied, CL_TRUE, origin, region, 0, 0, dst, 0, nullptr,
                            nullptr));
  APP_CHECK(memcmp(src, dst, bytes) == 0);
  for (size_t i = 0; i < floats; i += 97) sum += dst[i];
  printf("result: image checksum %.0f\n", sum);
  clReleaseMemObject(copied);
  clReleaseMemObject(image);
  free(src);
  free(dst);
  return 0;
}
