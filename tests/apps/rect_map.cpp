// SPDX-License-Identifier: MIT
/**
 * @file Rectangular transfers and mapped device buffers.
 * A device buffer holds a W x H float image (--size bytes). It is initialised by writing through a
 * mapped pointer (CL_MAP_WRITE_INVALIDATE_REGION). Each iteration writes a sub-rectangle from a
 * padded host image with clEnqueueWriteBufferRect (distinct host and device pitches and origins),
 * transforms the whole device image with a 2-D kernel, and reads another sub-rectangle into a
 * padded host result with clEnqueueReadBufferRect. At the end the whole device image is read
 * through a mapped pointer. A host model of the device image checks every value, and the padding
 * around the read rectangle must survive untouched (a rect copy must not write outside its region).
 */
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tests/apps/app_common.h"

using namespace hetopt::apps;

namespace {

const char* kSource = R"CL(
#pragma OPENCL FP_CONTRACT OFF
__kernel void shade(__global float* img, uint width) {
  size_t x = get_global_id(0), y = get_global_id(1);
  size_t i = y * width + x;
  img[i] = img[i] * 0.5f + (float)((x + 2 * y) % 64) * 0.0625f;
}
)CL";

/// A sub-rectangle of a row-major float image with its own row pitch (all in elements).
struct Rect {
  size_t x, y;   ///< origin of the region inside its image
  size_t w, h;   ///< region size
  size_t pitch;  ///< row pitch of the image the region lives in
  size_t at(size_t col, size_t row) const { return (y + row) * pitch + x + col; }
  // clEnqueue*BufferRect take origins and regions with the first component in bytes.
  std::array<size_t, 3> byteOrigin() const { return {x * sizeof(float), y, 0}; }
  std::array<size_t, 3> byteRegion() const { return {w * sizeof(float), h, 1}; }
};

/// Copies region `from` of `src` to region `to` of `dst` (same w, h): what a rect transfer does.
void copyRect(const float* src, const Rect& from, float* dst, const Rect& to) {
  for (size_t row = 0; row < from.h; ++row)
    for (size_t col = 0; col < from.w; ++col) dst[to.at(col, row)] = src[from.at(col, row)];
}

void shadeModel(std::vector<float>& img, size_t width, size_t height) {
  for (size_t y = 0; y < height; ++y)
    for (size_t x = 0; x < width; ++x) {
      float& v = img[y * width + x];
      v = v * 0.5f + static_cast<float>((x + 2 * y) % 64) * 0.0625f;
    }
}

/// Host work between iterations: the region written next time changes every time.
void updateHostImage(float* img, const Rect& region, int it) {
  for (size_t row = 0; row < region.h; ++row)
    for (size_t col = 0; col < region.w; ++col) {
      float& v = img[region.at(col, row)];
      v = v * 0.75f + 0.25f * static_cast<float>(it + 1);
    }
}

constexpr float kSentinel = -12345.0f;

}  // namespace

int main(int argc, char** argv) {
  Options opt = parseOptions(argc, argv, 1 << 20, 10);
  const size_t n = std::max<size_t>(opt.sizeBytes / sizeof(float), 64 * 64);
  const size_t width = std::max<size_t>(64, static_cast<size_t>(std::sqrt(double(n))) / 16 * 16);
  const size_t height = n / width;
  const size_t imgBytes = width * height * sizeof(float);

  // Device-side write target and read source: both inside the image, at different places.
  const size_t rw = width / 2, rh = height / 2;
  const Rect devIn{width / 8, height / 4, rw, rh, width};
  const Rect devOut{width / 8 + rw / 4, height / 4 + rh / 8, rw, rh, width};
  // Host images are padded and the regions sit at an offset, so pitches and origins all matter.
  const size_t inPitch = rw + 24, inRows = rh + 3;
  const size_t outPitch = rw + 8, outRows = rh + 2;
  const Rect hostIn{5, 2, rw, rh, inPitch};
  const Rect hostOut{3, 1, rw, rh, outPitch};
  const size_t inBytes = inPitch * inRows * sizeof(float);
  const size_t outBytes = outPitch * outRows * sizeof(float);

  ClEnv env;
  cl_command_queue q = env.queue();
  double start = nowMs();

  auto pinIn = pinnedIf(opt.pinned, env, inBytes);
  auto pinOut = pinnedIf(opt.pinned, env, outBytes);
  float* hostImg =
      pinIn ? pinIn->as<float>() : static_cast<float*>(malloc(inBytes));  // hetopt:transfer
  float* hostRes =
      pinOut ? pinOut->as<float>() : static_cast<float*>(malloc(outBytes));  // hetopt:transfer
  APP_CHECK(hostImg && hostRes);
  fillPattern(hostImg, inPitch * inRows, 31);
  std::fill(hostRes, hostRes + outPitch * outRows, kSentinel);

  cl_mem dImg = env.buffer(CL_MEM_READ_WRITE, imgBytes);
  {
    cl_int err = CL_SUCCESS;
    auto* mapped = static_cast<float*>(clEnqueueMapBuffer(
        q, dImg, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, 0, imgBytes, 0, nullptr, nullptr, &err));
    APP_CL(err);
    fillPattern(mapped, width * height, 32);
    APP_CL(clEnqueueUnmapMemObject(q, dImg, mapped, 0, nullptr, nullptr));
  }

  cl_program prog = env.build(kSource);
  cl_kernel k = env.kernel(prog, "shade");
  setKernelArgs(k, dImg, static_cast<cl_uint>(width));
  const size_t global[2] = {width, height};

  for (int it = 0; it < opt.iters; ++it) {
    APP_CL(clEnqueueWriteBufferRect(q, dImg, CL_FALSE, devIn.byteOrigin().data(),
                                    hostIn.byteOrigin().data(), devIn.byteRegion().data(),
                                    width * sizeof(float), 0, inPitch * sizeof(float), 0, hostImg,
                                    0, nullptr, nullptr));
    APP_CL(clEnqueueNDRangeKernel(q, k, 2, nullptr, global, nullptr, 0, nullptr, nullptr));
    APP_CL(clEnqueueReadBufferRect(q, dImg, CL_TRUE, devOut.byteOrigin().data(),
                                   hostOut.byteOrigin().data(), devOut.byteRegion().data(),
                                   width * sizeof(float), 0, outPitch * sizeof(float), 0, hostRes,
                                   0, nullptr, nullptr));
    updateHostImage(hostImg, hostIn, it);
  }

  // The whole image back through a mapping, checked against the model.
  cl_int err = CL_SUCCESS;
  auto* view = static_cast<float*>(
      clEnqueueMapBuffer(q, dImg, CL_TRUE, CL_MAP_READ, 0, imgBytes, 0, nullptr, nullptr, &err));
  APP_CL(err);
  reportElapsed(start);

  // Replay on a host model of the device image, outside the timed part.
  std::vector<float> model(width * height);  // hetopt:host-only
  fillPattern(model.data(), model.size(), 32);
  std::vector<float> img(inPitch * inRows);  // hetopt:host-only
  fillPattern(img.data(), img.size(), 31);
  std::vector<float> expectRes(outPitch * outRows, kSentinel);  // hetopt:host-only
  for (int it = 0; it < opt.iters; ++it) {
    copyRect(img.data(), hostIn, model.data(), devIn);
    shadeModel(model, width, height);
    copyRect(model.data(), devOut, expectRes.data(), hostOut);
    updateHostImage(img.data(), hostIn, it);
  }
  APP_CHECK(nearlyEqual(hostRes, expectRes.data(), expectRes.size()));
  APP_CHECK(nearlyEqual(hostImg, img.data(), img.size()));
  APP_CHECK(nearlyEqual(view, model.data(), model.size()));
  printResult("image", width * height, view, imgBytes);
  APP_CL(clEnqueueUnmapMemObject(q, dImg, view, 0, nullptr, nullptr));
  printResult("rect", rw * rh, hostRes, outBytes);
  APP_CL(clFinish(q));

  clReleaseKernel(k);
  clReleaseProgram(prog);
  clReleaseMemObject(dImg);
  if (!opt.pinned) {
    free(hostImg);
    free(hostRes);
  }
  return 0;
}
