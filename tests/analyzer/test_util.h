// SPDX-License-Identifier: MIT
/** @file Helpers shared by the analyzer's unit tests: a filled-in profile, temp dirs, JSON checks.
 */
#pragma once
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "analyzer/profile.h"

namespace hetopt::analyzer::testing {

/// Every field set to something distinguishable, including awkward strings.
inline AppProfile sampleProfile() {
  AppProfile p;
  p.program.path = "/opt/app/bin/solver \"v2\"";
  p.program.buildId = "0123456789abcdef0123456789abcdef01234567";
  p.traceFile = "/tmp/hetopt-solver-42.trace";
  p.device = "Portable Computing Language / cpu-haswell";
  p.createdUtc = "2026-11-22T05:00:00Z";
  p.hetoptVersion = "0.1.0";
  p.eligibility = {12e6, 30e6, 0.4, 0.1, true, "dispatch ratio 0.40 >= 0.10"};
  Breakdown& b = p.breakdown;
  b.totalNs = 100e6;
  b.kernelNs = 30e6;
  b.communicationNs = 10e6;
  b.cpuSyncNs = 60e6;
  b.h2dNs = 7e6;
  b.d2hNs = 5e6;
  b.launchNs = 0.5e6;
  b.dispatchSyncNs = 20e6;
  b.kernels = 25;
  b.hasDeviceTimes = true;
  CandidateSite c;
  c.siteKey = 0xfedcba9876543210ull;  // above INT64_MAX: tests the unsigned round trip
  c.frames = {{"/opt/app/bin/solver", "0123456789abcdef0123456789abcdef01234567", 0x1234, true},
              {"/opt/app/lib/libio.so", "", 0xffffffffffff0000ull, true}};
  c.location.hasSource = true;
  c.location.source = {"main", "/src/solver/main.cpp", 29, 7};
  c.location.modulePath = "/opt/app/bin/solver";
  c.location.offset = 0x1234;
  c.allocator = "malloc";
  c.allocations = 3;
  c.feedingAllocations = 2;
  c.minAllocBytes = 4096;
  c.maxAllocBytes = 1 << 20;
  c.typicalAllocBytes = 1 << 20;
  c.peakLiveBytes = (1 << 20) + 4096;
  c.peakLiveBlocks = 2;
  c.h2d.add(1 << 20, 10, 4e6);
  c.h2d.add(4096, 3, 0.1e6);
  c.h2d.finish();
  c.d2h.add(1 << 20, 10, 3e6);
  c.d2h.finish();
  c.gain = {true, "characterized 2026-11-20", "hybrid", "pool", 7e6, 2e6};
  p.candidates.push_back(c);
  CandidateSite d;
  d.siteKey = 7;
  d.location.modulePath = "/opt/app/lib/libio.so";
  d.location.offset = 0x99;
  d.location.note = "libio.so: no symbols";
  d.allocator = "calloc";
  d.allocations = 1;
  d.feedingAllocations = 1;
  d.minAllocBytes = d.maxAllocBytes = d.typicalAllocBytes = 256;
  d.h2d.add(256, 1, 0);
  d.h2d.finish();
  d.gain.note = "no characterization for this device; run hetopt characterize";
  p.candidates.push_back(d);
  p.hostOnlySites = 12;
  p.hostOnlyAllocations = 250;
  p.trackedAllocations = 254;
  UntrackedMemory u;
  u.kind = UntrackedMemory::Kind::Static;
  u.what = "g_weights (main.cpp:12)";
  u.modulePath = "/opt/app/bin/solver";
  u.regionBytes = 64 << 20;
  u.h2d.add(1 << 20, 5, 1e6);
  u.h2d.finish();
  p.untracked.push_back(u);
  p.warnings = {"trace ended early (crash?)", "tab\there"};
  return p;
}

/// A fresh private directory under /tmp, removed by the caller's TearDown (rm -rf).
inline std::string makeTempDir() {
  char dir[] = "/tmp/hetopt-ana-XXXXXX";
  return mkdtemp(dir) ? dir : "";
}

inline std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// True when Python's json module parses the file (the strict check a JSON consumer makes).
inline bool pythonParsesJson(const std::string& path) {
  std::string cmd = std::string(HETOPT_PYTHON3) +
                    " -c 'import json,sys; json.load(open(sys.argv[1], encoding=\"utf-8\"))' '" +
                    path + "'";
  return system(cmd.c_str()) == 0;
}

}  // namespace hetopt::analyzer::testing
