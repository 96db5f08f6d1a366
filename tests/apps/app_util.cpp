// SPDX-License-Identifier: MIT
/** @file OpenCL-free part of the test-app harness; see app_util.h. */
#include "tests/apps/app_util.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "common/cl_select.h"

namespace hetopt::apps {

void failCl(cl_int status, const char* expr, const char* file, int line) {
  fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", file, line, expr, clErrorName(status), status);
  exit(2);
}

void failCheck(const char* what, const char* file, int line) {
  fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
  exit(1);
}

size_t parseSize(const std::string& s) {
  if (s.empty()) return 0;
  char* end = nullptr;
  unsigned long long v = strtoull(s.c_str(), &end, 10);
  if (end == s.c_str()) return 0;
  switch (*end) {
    case 'k':
    case 'K':
      v <<= 10;
      ++end;
      break;
    case 'm':
    case 'M':
      v <<= 20;
      ++end;
      break;
    case 'g':
    case 'G':
      v <<= 30;
      ++end;
      break;
    default:
      break;
  }
  if (*end == 'i') ++end;  // accept KiB/MiB spelled "Ki"/"Mi"
  if (*end == 'B' || *end == 'b') ++end;
  return *end == '\0' ? static_cast<size_t>(v) : 0;
}

Options parseOptions(int argc, char** argv, size_t defaultSize, int defaultIters) {
  Options o;
  o.sizeBytes = defaultSize;
  o.iters = defaultIters;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* name) -> std::string {
      if (i + 1 >= argc) {
        fprintf(stderr, "%s needs a value\n", name);
        exit(2);
      }
      return argv[++i];
    };
    if (a == "--size") {
      o.sizeBytes = parseSize(value("--size"));
      if (o.sizeBytes == 0) {
        fprintf(stderr, "bad --size\n");
        exit(2);
      }
    } else if (a == "--iters") {
      o.iters = atoi(value("--iters").c_str());
      if (o.iters <= 0) {
        fprintf(stderr, "bad --iters\n");
        exit(2);
      }
    } else if (a == "--pinned") {
      o.pinned = true;
    } else if (a == "--help" || a == "-h") {
      printf("usage: %s [--size BYTES[K|M|G]] [--iters N] [--pinned]\n", argv[0]);
      exit(0);
    } else {
      o.rest.push_back(a);
    }
  }
  return o;
}

void fillPattern(float* data, size_t n, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    data[i] = static_cast<float>((x >> 8) % 2000) / 100.0f - 10.0f + 0.25f;  // [-9.75, 10.24]
  }
}

void fillPattern(int32_t* data, size_t n, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 777u;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    data[i] = static_cast<int32_t>((x >> 4) % 100000) - 50000 + 1;
  }
}

uint64_t checksum(const void* data, size_t bytes) {
  // FNV-1a over the bytes: order-sensitive and identical wherever the data is identical.
  const unsigned char* p = static_cast<const unsigned char*>(data);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

bool nearlyEqual(const float* got, const float* want, size_t n, float relTol) {
  for (size_t i = 0; i < n; ++i) {
    float d = std::fabs(got[i] - want[i]);
    float scale = std::fmax(1.0f, std::fabs(want[i]));
    if (!(d <= relTol * scale)) {
      fprintf(stderr, "mismatch at %zu: got %.8g want %.8g\n", i, got[i], want[i]);
      return false;
    }
  }
  return true;
}

double nowMs() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

double unixMs() {
  using namespace std::chrono;
  return duration<double, std::milli>(system_clock::now().time_since_epoch()).count();
}

void reportElapsed(double startMs) { reportElapsed(startMs, nowMs()); }

void reportElapsed(double startMs, double endMs) {
  fprintf(stderr, "elapsed_ms=%.3f\n", endMs - startMs);
}

void printDevice(const ClDevice& device) {
  printf("device: %s / %s\n", device.platformName.c_str(), device.deviceName.c_str());
  fflush(stdout);  // before any OpenCL work, so a crash still shows which device it ran on
}

void printResult(const char* label, size_t count, const void* data, size_t bytes) {
  printf("result: %s n=%zu checksum=%016llx\n", label, count,
         static_cast<unsigned long long>(checksum(data, bytes)));
}

}  // namespace hetopt::apps
