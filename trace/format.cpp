// SPDX-License-Identifier: MIT
/** @file CRC-32 and the names of format enums; see format.h.
 * A table-driven CRC-32 and each format enum's name. */
#include "trace/format.h"

namespace hetopt::trace {
namespace {

struct CrcTable {
  uint32_t v[256];
  constexpr CrcTable() : v() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      v[i] = c;
    }
  }
};
constexpr CrcTable kCrc;

}  // namespace

uint32_t crc32(const void* data, size_t n, uint32_t crc) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = kCrc.v[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

const char* objectKindName(ObjectKind kind) {
  switch (kind) {
    case ObjectKind::Segment:
      return "segment";
    case ObjectKind::Untracked:
      return "untracked";
    case ObjectKind::Svm:
      return "svm";
    case ObjectKind::Platform:
      return "platform";
    case ObjectKind::Device:
      return "device";
    case ObjectKind::Context:
      return "context";
    case ObjectKind::Queue:
      return "queue";
    case ObjectKind::Mem:
      return "mem";
    case ObjectKind::Program:
      return "program";
    case ObjectKind::Kernel:
      return "kernel";
    case ObjectKind::Sampler:
      return "sampler";
    case ObjectKind::Count:
      break;
  }
  return "?";
}

const char* regionClassName(RegionClass c) {
  switch (c) {
    case RegionClass::Unknown:
      return "unknown";
    case RegionClass::Static:
      return "static";
    case RegionClass::Stack:
      return "stack";
    case RegionClass::Heap:
      return "heap";
    case RegionClass::Mmap:
      return "mmap";
    case RegionClass::File:
      return "file";
  }
  return "?";
}

const char* clockMethodName(ClockMethod m) {
  switch (m) {
    case ClockMethod::Timer:
      return "clGetDeviceAndHostTimer";
    case ClockMethod::Estimated:
      return "estimated from the queued timestamps of timed commands";
  }
  return "?";
}

const char* hostAccessName(HostAccess a) {
  switch (a) {
    case HostAccess::None:
      return "none";
    case HostAccess::Read:
      return "h2d";
    case HostAccess::Write:
      return "d2h";
    case HostAccess::Wrap:
      return "wrap";
    case HostAccess::Mapped:
      return "mapped";
    case HostAccess::Unmap:
      return "unmap";
  }
  return "?";
}

}  // namespace hetopt::trace
