// SPDX-License-Identifier: MIT
/**
 * @file Eligibility, candidate sites, peak live bytes and untracked memory on synthetic traces,
 * recorded through the trace library the way the shim records them and read back from disk.
 */
#include "analyzer/analysis.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <set>

#include "analyzer/analyze_file.h"
#include "analyzer/plots.h"
#include "analyzer/profile_store.h"
#include "analyzer/report.h"
#include "contracts/site_key.h"
#include "tests/analyzer/test_util.h"
#include "tests/trace/synthetic.h"
#include "trace/time_sampler.h"

namespace hetopt::analyzer {
namespace {

using api::ApiId;
using trace::HostAccess;
using trace::Leaf;
using trace::ObjectId;
using trace::ObjectKind;

constexpr uint64_t kSiteA = 0x401234;  // transfer-feeding
constexpr uint64_t kSiteB = 0x401300;  // host-only
constexpr uint64_t kSiteC = 0x401400;

/// A recorder with device timings: each command gets `exec` ns on the device.
class App {
 public:
  /// `checkpointNs` 1: a checkpoint after every event, so that a trace never finished reads back
  /// (incomplete) up to its last event.
  explicit App(const std::string& path, uint64_t checkpointNs = ~0ull >> 1)
      : m_synth(path, checkpointNs), m_path(path) {
    m_thread = rec().thread(1000);
    m_queue = rec().createHandle(ObjectKind::Queue, 0x9000);
    m_kernel = rec().createHandle(ObjectKind::Kernel, 0x9100);
    rec().objects().info(m_kernel).fields |= trace::kObjLabel;
    rec().objects().info(m_kernel).label = "axpb";
    rec().noteClock(0x9000, trace::ClockMethod::Estimated, -kDeviceEpoch, 100);
  }
  /// The queue's device clock stands this far ahead of the trace's.
  static constexpr int64_t kDeviceEpoch = 5000000000;
  bool ok() const { return m_synth.ok(); }
  trace::Recorder& rec() { return m_synth.recorder(); }
  trace::testing::Synth& synth() { return m_synth; }

  ObjectId buffer(uint64_t handle, uint64_t size) { return m_synth.buffer(handle, size); }
  ObjectId malloc(uint64_t ptr, uint64_t size, uint64_t pc) {
    uint32_t site = rec().internSite(&pc, 1);
    return rec().recordAlloc(m_thread, 0, ptr, size, 0, site, 50);
  }
  void free(uint64_t ptr) { rec().recordFree(m_thread, ptr); }
  /// Later events come from the thread with system id `tid`.
  void onThread(uint64_t tid) { m_thread = rec().thread(tid); }
  void realloc(uint64_t oldPtr, uint64_t newPtr, uint64_t size, uint64_t pc) {
    uint32_t site = rec().internSite(&pc, 1);
    rec().recordRealloc(m_thread, oldPtr, newPtr, size, site, 40);
  }

  /// A call that takes `hostNs` on the host and refers to nothing (set-up: builds, contexts).
  void hostCall(ApiId id, uint64_t hostNs) {
    Leaf l = m_synth.call(id);
    l.host = {};
    l.host.add(hostNs);
    rec().append(m_thread, std::move(l));
  }

  /// Later commands are timed as the shim's sampler decides (HETOPT_TIME_SAMPLE=period).
  void sample(uint64_t period, uint64_t seed = 1) { m_sampler = trace::TimeSampler(period, seed); }

  void transfer(ApiId id, ObjectId mem, uint64_t ptr, uint64_t bytes, uint64_t execNs,
                HostAccess access) {
    Leaf l = m_synth.call(id);
    l.refs.push_back(m_synth.ref(m_queue, 0, trace::kRefRead));
    l.refs.push_back(
        m_synth.ref(mem, 1, access == HostAccess::Read ? trace::kRefWrite : trace::kRefRead));
    l.refs.push_back(m_synth.hostRef(ptr, bytes, 5, access));
    if (m_transferHostNs) {
      l.host = {};
      l.host.add(m_transferHostNs);
    }
    timed(&l, execNs, trace::TimeSampler::combine(static_cast<uint64_t>(id), mem));
    rec().append(m_thread, std::move(l));
  }
  void write(ObjectId mem, uint64_t ptr, uint64_t bytes, uint64_t execNs) {
    transfer(ApiId::clEnqueueWriteBuffer, mem, ptr, bytes, execNs, HostAccess::Read);
  }
  void read(ObjectId mem, uint64_t ptr, uint64_t bytes, uint64_t execNs) {
    transfer(ApiId::clEnqueueReadBuffer, mem, ptr, bytes, execNs, HostAccess::Write);
  }
  void kernel(ObjectId mem, uint64_t execNs) {
    Leaf l = m_synth.call(ApiId::clEnqueueNDRangeKernel);
    l.refs.push_back(m_synth.ref(m_queue, 0, trace::kRefRead));
    l.refs.push_back(m_synth.ref(m_kernel, 1, trace::kRefRead));
    l.refs.push_back(m_synth.ref(mem, trace::kRefArgBound, trace::kRefWrite));
    timed(&l, execNs,
          trace::TimeSampler::combine(static_cast<uint64_t>(ApiId::clEnqueueNDRangeKernel), mem));
    if (l.device.exec.count) {
      l.device.submitToStart = 7;
      l.device.weightedSubmitToStart = 7 * l.device.weight;
    }
    rec().append(m_thread, std::move(l));
  }
  /// clCreateBuffer(CL_MEM_USE_HOST_PTR, host): the buffer lives in the application's memory.
  ObjectId wrap(uint64_t handle, uint64_t ptr, uint64_t size) {
    ObjectId m = rec().createHandle(ObjectKind::Mem, handle);
    Leaf l = m_synth.call(ApiId::clCreateBuffer);
    l.args[2] = trace::ArgAgg::of(size);
    l.refs.push_back(m_synth.hostRef(ptr, size, 3, HostAccess::Wrap));
    l.refs.push_back(m_synth.ref(m, trace::kRefArgReturn, trace::kRefCreate));
    rec().append(m_thread, std::move(l));
    return m;
  }
  /// A map of a device buffer: the returned host range is driver memory.
  void mapDeviceBuffer(ObjectId mem, uint64_t mapped, uint64_t bytes) {
    Leaf l = m_synth.call(ApiId::clEnqueueMapBuffer);
    l.refs.push_back(m_synth.ref(m_queue, 0, trace::kRefRead));
    l.refs.push_back(m_synth.ref(mem, 1, trace::kRefRead));
    l.refs.push_back(m_synth.hostRef(mapped, bytes, trace::kRefArgReturn, HostAccess::Mapped));
    timed(&l, 10, 0);
    rec().append(m_thread, std::move(l));
  }
  void finish() { m_synth.finish(); }

  trace::Trace read() {
    trace::Trace t;
    std::string error;
    EXPECT_TRUE(trace::readTraceFile(m_path, &t, &error)) << error;
    return t;
  }

 private:
  void timed(Leaf* l, uint64_t execNs, uint64_t key) {
    const uint64_t w = m_skipTiming ? 0 : m_sampler.weight(key);
    if (!execNs)
      l->device.missing = 1;
    else if (!w)
      l->device.unsampled = 1;
    else
      l->device = trace::DeviceAgg::command(execNs, 0, 0, w);
    if (execNs && w) {  // on the device 100 ns after the call began
      trace::Stamp& s = l->stamps.back();
      s.deviceStart = s.startNs + 100 + kDeviceEpoch;
      s.deviceEnd = s.deviceStart + execNs;
    }
  }
  trace::TimeSampler m_sampler{1};

 public:
  /// Later commands are all sampled out (what a short loop late in a long run can get).
  bool m_skipTiming = false;
  /// Nonzero: later transfer calls take this long on the host (a blocking call waits for its copy).
  uint64_t m_transferHostNs = 0;
  trace::testing::Synth m_synth;
  std::string m_path;
  uint32_t m_thread = 0;
  ObjectId m_queue = 0, m_kernel = 0;
};

class Analysis : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = testing::makeTempDir();
    m_trace = m_dir + "/app.trace";
  }
  void TearDown() override { system(("rm -rf '" + m_dir + "'").c_str()); }

  AppProfile analyze(const trace::Trace& t, double threshold = 0.1) {
    AnalysisOptions o;
    o.threshold = threshold;
    o.symbolize = false;  // fake modules: nothing to symbolize
    AppProfile p;
    analyzeTrace(t, o, &p);
    return p;
  }
  const CandidateSite* siteAt(const AppProfile& p, uint64_t pc) {
    for (const CandidateSite& c : p.candidates)
      if (!c.frames.empty() && c.frames[0].offset == pc - 0x400000) return &c;
    return nullptr;
  }

  std::string m_dir, m_trace;
};

/// The classic loop: host buffer A written, computed on, read back `iters` times; B host-only.
void writeKernelRead(App& app, int iters, uint64_t transferNs, uint64_t kernelNs) {
  const uint64_t n = 256 << 10;
  ObjectId dev = app.buffer(0x7000, n);
  app.malloc(0x10000000, n, kSiteA);
  app.malloc(0x20000000, 2 * n, kSiteB);
  for (int i = 0; i < iters; ++i) {
    app.write(dev, 0x10000000, n, transferNs);
    app.kernel(dev, kernelNs);
    app.read(dev, 0x10000000, n, transferNs);
  }
  app.free(0x20000000);
  app.free(0x10000000);
  app.finish();
}

TEST_F(Analysis, CandidatesAreTheTransferFeedingSitesOnly) {
  App app(m_trace);
  ASSERT_TRUE(app.ok());
  writeKernelRead(app, 5, 1000, 4000);
  AppProfile p = analyze(app.read());
  ASSERT_EQ(p.candidates.size(), 1u);
  const CandidateSite& c = p.candidates[0];
  ASSERT_NE(siteAt(p, kSiteA), nullptr);
  EXPECT_EQ(c.allocator, "malloc");
  EXPECT_EQ(c.allocations, 1u);
  EXPECT_EQ(c.feedingAllocations, 1u);
  EXPECT_EQ(c.h2d.transfers, 5u);
  EXPECT_EQ(c.d2h.transfers, 5u);
  EXPECT_EQ(c.h2d.bytes, 5u * (256 << 10));
  EXPECT_EQ(c.h2d.typicalBytes, 256u << 10);
  EXPECT_DOUBLE_EQ(c.h2d.deviceNs, 5000);
  EXPECT_EQ(c.peakLiveBytes, 256u << 10);
  EXPECT_EQ(c.peakLiveBlocks, 1u);
  EXPECT_EQ(c.location.modulePath, "/usr/bin/fake_app");
  EXPECT_EQ(c.location.offset, kSiteA - 0x400000);
  // The key the shim computes for the same frame at run time.
  uint64_t key =
      siteKeyFold(kSiteKeySeed, moduleIdentity("00112233445566778899aabbccddeeff00112233", ""),
                  kSiteA - 0x400000);
  EXPECT_EQ(c.siteKey, key);
  EXPECT_EQ(p.hostOnlySites, 1u);
  EXPECT_EQ(p.hostOnlyAllocations, 1u);
  EXPECT_EQ(p.trackedAllocations, 2u);
  EXPECT_TRUE(p.untracked.empty());
  EXPECT_FALSE(c.gain.known);
  EXPECT_NE(c.gain.note.find("hetopt characterize"), std::string::npos);
}

TEST_F(Analysis, TheProgramsContextsAndStartUpAreKeptForTheRun) {
  App app(m_trace);
  ASSERT_TRUE(app.ok());
  ObjectId device = app.rec().createHandle(ObjectKind::Device, 0xd0);
  app.synth().startup(600'000'000, 365'000'000, 970'000'000, 276'000'000, device);
  writeKernelRead(app, 1, 1000, 4000);
  AppProfile p = analyze(app.read());
  EXPECT_EQ(p.contextsCreated, 1u);
  EXPECT_EQ(p.firstContextDevices, 1u);
  EXPECT_EQ(p.startup.firstCallNs, 600'000'000u);
  EXPECT_EQ(p.startup.firstContextNs, 970'000'000u);
  EXPECT_EQ(p.startup.enumerateNs, 365'000'000u);
  EXPECT_EQ(p.startup.contextNs, 276'000'000u);
}

// How early each site's first block could be pinned, in program order: before any OpenCL call,
// and the OpenCL time between the later of the context and the block and the first transfer.
TEST_F(Analysis, EachSitesLeadBeforeItsFirstTransferIsMeasuredInProgramOrder) {
  App app(m_trace);
  ASSERT_TRUE(app.ok());
  const uint64_t n = 1 << 20;
  app.malloc(0x10000000, n, kSiteA);  // made and filled before any OpenCL call
  app.hostCall(ApiId::clGetPlatformIDs, 100'000'000);
  app.hostCall(ApiId::clCreateContext, 50'000'000);
  app.hostCall(ApiId::clBuildProgram, 200'000'000);
  ObjectId dev = app.buffer(0x7000, n);  // 1 us (every synthesized call's host time)
  app.malloc(0x30000000, n, kSiteC);     // made after the build: the build cannot hide its pinning
  app.write(dev, 0x10000000, n, 1000);
  app.hostCall(ApiId::clFinish, 30'000'000);
  app.write(dev, 0x30000000, n, 1000);
  app.write(dev, 0x10000000, n, 1000);  // later transfers change nothing
  app.finish();
  AppProfile p = analyze(app.read());
  const CandidateSite* a = siteAt(p, kSiteA);
  const CandidateSite* c = siteAt(p, kSiteC);
  ASSERT_TRUE(a && c);
  EXPECT_TRUE(a->allocatedBeforeOpenCL);
  EXPECT_FALSE(c->allocatedBeforeOpenCL);
  EXPECT_EQ(a->leadNs, 200'001'000u);  // the build and the buffer, after the context
  EXPECT_EQ(c->leadNs, 30'001'000u);   // the first site's write and the finish
  // The profile keeps them.
  std::string error;
  const std::string db = m_dir + "/hetopt.db";
  auto handle = Db::open(db, Db::Mode::ReadWriteCreate, &error);
  ASSERT_TRUE(handle) << error;
  ASSERT_TRUE(storeProfile(*handle, p, nullptr, &error)) << error;
  AppProfile back;
  ProfileLookup lookup;
  ASSERT_TRUE(loadProfile(*handle, p.program, &back, &lookup, &error)) << error;
  ASSERT_EQ(lookup.status, ProfileLookup::Status::Found);
  const CandidateSite* b = siteAt(back, kSiteA);
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->allocatedBeforeOpenCL);
  EXPECT_EQ(b->leadNs, 200'001'000u);
}

TEST_F(Analysis, EligibleWhenCommunicationIsATenthOfComputation) {
  App app(m_trace);
  writeKernelRead(app, 5, 1000, 4000);  // 10 us of transfers / 20 us of kernels
  AppProfile p = analyze(app.read());
  EXPECT_TRUE(p.eligibility.eligible) << p.eligibility.reason;
  EXPECT_DOUBLE_EQ(p.eligibility.ratio, 0.5);
  EXPECT_DOUBLE_EQ(p.eligibility.communicationNs, 10000);
  EXPECT_DOUBLE_EQ(p.eligibility.computationNs, 20000);
  EXPECT_NE(p.eligibility.reason.find("dispatch ratio 0.50"), std::string::npos)
      << p.eligibility.reason;
  EXPECT_TRUE(p.breakdown.hasDeviceTimes);
  EXPECT_EQ(p.breakdown.kernels, 5u);
  EXPECT_DOUBLE_EQ(p.breakdown.h2dNs, 5000);
  EXPECT_DOUBLE_EQ(p.breakdown.d2hNs, 5000);
  EXPECT_DOUBLE_EQ(p.breakdown.launchNs, 35);
  // A stricter threshold turns the same trace down.
  AppProfile strict = analyze(app.read(), 0.6);
  EXPECT_FALSE(strict.eligibility.eligible);
}

// Blocking transfers and a clFinish after each kernel, one thread, nothing else: the wall time is
// the calls' host time laid end to end. The overhead rows share it without counting a transfer
// twice (its device time and the host time its blocking call waited for it).
TEST_F(Analysis, OffloadOverheadRowsNeverSumOverTheTotal) {
  App app(m_trace);
  app.m_transferHostNs = 1200;  // 1000 ns of device transfer, 200 ns of the call's own work
  const uint64_t n = 256 << 10;
  ObjectId dev = app.buffer(0x7000, n);
  app.malloc(0x10000000, n, kSiteA);
  for (int i = 0; i < 5; ++i) {
    app.write(dev, 0x10000000, n, 1000);
    app.kernel(dev, 4000);  // 1000 ns on the host
    app.hostCall(ApiId::clFinish, 4100);
    app.read(dev, 0x10000000, n, 1000);
  }
  app.finish();
  trace::Trace t = app.read();
  // The wall time: the loop's calls and the set-up's (the buffer's creation).
  t.durationNs = 5 * (1200 + 1000 + 4100 + 1200);
  t.durationNs += static_cast<uint64_t>(analyze(t).breakdown.setupNs);
  const AppProfile p = analyze(t);
  Breakdown b = p.breakdown;
  EXPECT_DOUBLE_EQ(b.h2dNs, 5000);
  EXPECT_DOUBLE_EQ(b.d2hNs, 5000);
  // What is not a transfer's own time stays: the enqueues' work, the kernel calls, the waits.
  EXPECT_DOUBLE_EQ(b.dispatchSyncNs, 5 * (200 + 1000 + 4100 + 200));
  b.fitOverheads();
  const double sum = b.h2dNs + b.d2hNs + b.launchNs + b.dispatchSyncNs;
  EXPECT_LE(sum, b.totalNs) << "h2d " << b.h2dNs << " d2h " << b.d2hNs << " launch " << b.launchNs
                            << " dispatch/sync " << b.dispatchSyncNs;
  EXPECT_GE(b.dispatchSyncNs, 5 * (200 + 1000 + 4100 + 200) - 35);
  // The report's rows, as printed: at most 100% together.
  const std::string r = formatReport(p);
  size_t at = r.find("Offload overhead");
  ASSERT_NE(at, std::string::npos) << r;
  double percents = 0;
  for (const char* row : {"host-to-device", "kernel launch", "device-to-host", "dispatch/sync"}) {
    at = r.find(row, at);
    ASSERT_NE(at, std::string::npos) << row << "\n" << r;
    const size_t end = r.find('%', at);
    const size_t start = r.rfind(' ', end) + 1;
    percents += std::stod(r.substr(start, end - start));
  }
  EXPECT_LE(percents, 100.0 + 0.2) << r;  // each row rounded to 0.1%
  // With the OpenCL set-up beside them, as a real PoCL run has it (launch latencies the host
  // waits through, a set-up of most of the run): all the rows, set-up included, at most 100%.
  AppProfile startup = p;
  startup.breakdown.setupNs = 0.9 * startup.breakdown.totalNs;
  startup.breakdown.launchNs = 0.07 * startup.breakdown.totalNs;
  startup.breakdown.dispatchSyncNs = 0.08 * startup.breakdown.totalNs;
  const std::string s = formatReport(startup);
  at = s.find("Offload overhead");
  percents = 0;
  for (const char* row :
       {"host-to-device", "kernel launch", "device-to-host", "dispatch/sync", "OpenCL set-up"}) {
    at = s.find(row, at);
    ASSERT_NE(at, std::string::npos) << row << "\n" << s;
    const size_t end = s.find('%', at);
    const size_t start = s.rfind(' ', end) + 1;
    percents += std::stod(s.substr(start, end - start));
  }
  EXPECT_LE(percents, 100.0 + 0.25) << s;
  const size_t setupRow = s.find("  OpenCL set-up ");
  ASSERT_NE(setupRow, std::string::npos) << s;
  EXPECT_EQ(s.substr(s.find('%', setupRow) - 4, 5), "90.0%") << s;
  // Overlapping device times (several queues) are scaled down together to the wall time.
  Breakdown over;
  over.totalNs = 100;
  over.h2dNs = 80;
  over.d2hNs = 60;
  over.launchNs = 20;
  over.dispatchSyncNs = 90;
  over.fitOverheads();
  EXPECT_NEAR(over.h2dNs + over.d2hNs + over.launchNs + over.dispatchSyncNs, 100, 1e-9);
  EXPECT_NEAR(over.h2dNs, 50, 1e-9);
  EXPECT_EQ(over.dispatchSyncNs, 0);
  // The set-up's host time leaves the rest less room.
  Breakdown busy;
  busy.totalNs = 100;
  busy.setupNs = 90;
  busy.launchNs = 7;
  busy.dispatchSyncNs = 8;
  busy.fitOverheads();
  EXPECT_EQ(busy.setupNs, 90);
  EXPECT_EQ(busy.launchNs, 7);
  EXPECT_NEAR(busy.dispatchSyncNs, 3, 1e-9);
}

TEST_F(Analysis, ComputeBoundIsIneligibleWithItsRatio) {
  App app(m_trace);
  writeKernelRead(app, 3, 100, 1000000);  // 0.6 us of transfers / 3 ms of kernels
  AppProfile p = analyze(app.read());
  EXPECT_FALSE(p.eligibility.eligible);
  EXPECT_NEAR(p.eligibility.ratio, 0.0002, 1e-9);
  EXPECT_NE(p.eligibility.reason.find("0.00 = communication"), std::string::npos)
      << p.eligibility.reason;
  EXPECT_NE(p.eligibility.reason.find("compute-bound"), std::string::npos);
  // Still knows its sites: eligibility and candidates are separate questions.
  EXPECT_EQ(p.candidates.size(), 1u);
  EXPECT_NE(formatReport(p).find("NOT ELIGIBLE"), std::string::npos);
}

// Transfers without any kernel: the ratio has no finite value, and the reason says what that
// means in words (it once printed "dispatch ratio inf").
TEST_F(Analysis, NoKernelTimeIsSaidAsNoDeviceComputeNotAsInfinity) {
  App app(m_trace);
  const uint64_t n = 256 << 10;
  ObjectId dev = app.buffer(0x7000, n);
  app.malloc(0x10000000, n, kSiteA);
  for (int i = 0; i < 3; ++i) {
    app.write(dev, 0x10000000, n, 1000);
    app.read(dev, 0x10000000, n, 1000);
  }
  app.free(0x10000000);
  app.finish();
  AppProfile p = analyze(app.read());
  EXPECT_FALSE(std::isfinite(p.eligibility.ratio));
  EXPECT_TRUE(p.eligibility.eligible) << p.eligibility.reason;
  EXPECT_EQ(p.eligibility.reason.find("inf"), std::string::npos) << p.eligibility.reason;
  EXPECT_NE(p.eligibility.reason.find("no device compute (communication " + formatDuration(6000) +
                                      ", no kernel time)"),
            std::string::npos)
      << p.eligibility.reason;
  EXPECT_EQ(formatReport(p).find("ratio inf"), std::string::npos) << formatReport(p);
}

TEST_F(Analysis, NoDeviceTimesFallsBackToHostTimesAndSaysSo) {
  App app(m_trace);
  writeKernelRead(app, 2, 0, 0);
  AppProfile p = analyze(app.read());
  EXPECT_FALSE(p.breakdown.hasDeviceTimes);
  EXPECT_NE(p.eligibility.reason.find("host times"), std::string::npos) << p.eligibility.reason;
}

// Sampled device timings (HETOPT_TIME_SAMPLE): every total the analysis derives from device
// times is extrapolated from the timed commands. With constant per-command times the sampled
// trace must give exactly what the all-timed trace of the same run gives.
TEST_F(Analysis, SampledTraceExtrapolatesToTheAllTimedTotals) {
  AppProfile all, sampled;
  for (uint64_t period : {1u, 16u}) {
    const std::string path = m_dir + "/p" + std::to_string(period) + ".trace";
    App app(path);
    ASSERT_TRUE(app.ok());
    app.sample(period);
    writeKernelRead(app, 2000, 1000, 4000);
    (period == 1 ? all : sampled) = analyze(app.read());
  }
  const Breakdown &a = all.breakdown, &s = sampled.breakdown;
  EXPECT_EQ(a.deviceTimed, 6000u);
  EXPECT_EQ(a.deviceUnsampled, 0u);
  EXPECT_EQ(s.deviceTimed + s.deviceUnsampled, 6000u);
  EXPECT_LT(s.deviceTimed, 600u);  // 3 x (32 + 123)
  EXPECT_DOUBLE_EQ(a.h2dNs, 2000.0 * 1000);
  EXPECT_DOUBLE_EQ(s.h2dNs, a.h2dNs);
  EXPECT_DOUBLE_EQ(s.d2hNs, a.d2hNs);
  EXPECT_DOUBLE_EQ(s.launchNs, a.launchNs);
  EXPECT_DOUBLE_EQ(a.launchNs, 7.0 * 2000);
  EXPECT_DOUBLE_EQ(sampled.eligibility.communicationNs, all.eligibility.communicationNs);
  EXPECT_DOUBLE_EQ(sampled.eligibility.computationNs, 4000.0 * 2000);
  EXPECT_DOUBLE_EQ(sampled.eligibility.ratio, all.eligibility.ratio);
  EXPECT_EQ(sampled.eligibility.eligible, all.eligibility.eligible);
  ASSERT_EQ(sampled.candidates.size(), 1u);
  EXPECT_DOUBLE_EQ(sampled.candidates[0].h2d.deviceNs, all.candidates[0].h2d.deviceNs);
  EXPECT_DOUBLE_EQ(sampled.candidates[0].d2h.deviceNs, 2000.0 * 1000);
  EXPECT_EQ(sampled.candidates[0].h2d.transfers, 2000u);
  EXPECT_TRUE(sampled.warnings.empty()) << sampled.warnings[0];
  // Said where it matters: the report, the JSON and the eligibility reason.
  EXPECT_NE(formatReport(sampled).find("device times sampled: " + std::to_string(s.deviceTimed) +
                                       " of 6000"),
            std::string::npos)
      << formatReport(sampled);
  EXPECT_EQ(formatReport(all).find("sampled"), std::string::npos);
  EXPECT_NE(profileToJson(sampled).find("\"device_sampled_out_commands\":" +
                                        std::to_string(s.deviceUnsampled)),
            std::string::npos);
  EXPECT_NE(sampled.eligibility.reason.find("sampled"), std::string::npos);
}

// Two leaves of one sampler key (one buffer written alternately from two host blocks of different
// sites, 1 us and 3 us per write): both get timed commands and both sites' transfer times come
// out right, where a fixed stride of 16 would have timed only one of them after the census.
TEST_F(Analysis, SampledPingPongLeavesAreBothEstimated) {
  App app(m_trace);
  ASSERT_TRUE(app.ok());
  app.sample(16, 5);
  const uint64_t n = 64 << 10, iters = 20000;
  ObjectId dev = app.buffer(0x7000, n);
  app.malloc(0x10000000, n, kSiteA);
  app.malloc(0x20000000, n, kSiteC);
  for (uint64_t i = 0; i < iters; ++i) {
    app.write(dev, 0x10000000, n, 1000);
    app.write(dev, 0x20000000, n, 3000);
  }
  app.finish();
  trace::Trace t = app.read();
  uint64_t leavesWithTimes = 0;
  for (const trace::TraceNode& node : t.nodes)
    if (!node.loop && node.type == trace::LeafType::Call && node.host.count == iters) {
      // One key (same call, buffer and size): its timed commands split between the two leaves.
      EXPECT_GT(node.device.exec.count, trace::TimeSampler::timedInWholeBlocks(16, 2 * iters) / 3);
      EXPECT_EQ(node.device.exec.count + node.device.unsampled, iters);
      ++leavesWithTimes;
    }
  EXPECT_EQ(leavesWithTimes, 2u);
  AppProfile p = analyze(t);
  ASSERT_NE(siteAt(p, kSiteA), nullptr);
  ASSERT_NE(siteAt(p, kSiteC), nullptr);
  EXPECT_DOUBLE_EQ(siteAt(p, kSiteA)->h2d.deviceNs, 1000.0 * iters);
  EXPECT_DOUBLE_EQ(siteAt(p, kSiteC)->h2d.deviceNs, 3000.0 * iters);
}

// A later, differently shaped loop over the same calls whose commands were all sampled out:
// its leaves borrow the timed mean of the same call on the same objects, so nothing is missing.
TEST_F(Analysis, AllSampledOutLeavesBorrowTheSameCallsMean) {
  App app(m_trace);
  ASSERT_TRUE(app.ok());
  app.sample(16);
  const uint64_t n = 64 << 10;
  ObjectId dev = app.buffer(0x7000, n);
  app.malloc(0x10000000, n, kSiteA);
  for (int i = 0; i < 2000; ++i) {
    app.write(dev, 0x10000000, n, 1000);
    app.kernel(dev, 4000);
    app.read(dev, 0x10000000, n, 2000);
  }
  app.m_skipTiming = true;
  for (int i = 0; i < 5; ++i) {
    app.write(dev, 0x10000000, n, 1000);
    app.read(dev, 0x10000000, n, 2000);
  }
  app.finish();
  trace::Trace t = app.read();
  int lent = 0;
  for (const trace::TraceNode& node : t.nodes)
    if (!node.loop && node.device.lent) {
      ++lent;
      EXPECT_EQ(node.device.exec.count, 0u);
      EXPECT_EQ(node.device.commands(), 5u);
    }
  EXPECT_EQ(lent, 2);
  AppProfile p = analyze(t);
  ASSERT_NE(siteAt(p, kSiteA), nullptr);
  EXPECT_DOUBLE_EQ(siteAt(p, kSiteA)->h2d.deviceNs, 2005.0 * 1000);
  EXPECT_DOUBLE_EQ(siteAt(p, kSiteA)->d2h.deviceNs, 2005.0 * 2000);
  EXPECT_TRUE(p.warnings.empty()) << p.warnings[0];
  EXPECT_EQ(trace::summarize(t).deviceUnestimated, 0u);
}

// The census (a key's first 32 commands, always timed) is where loops are slowest (first touch,
// cold caches). Weighted by their sampling probabilities, those commands count for 32 of 1000, not
// for 32 of the ~92 timed: the estimate stays close to the truth.
TEST_F(Analysis, SlowFirstCommandsDoNotInflateTheSampledEstimate) {
  App app(m_trace);
  ASSERT_TRUE(app.ok());
  app.sample(16, 2);
  const uint64_t n = 64 << 10;
  ObjectId dev = app.buffer(0x7000, n);
  app.malloc(0x10000000, n, kSiteA);
  double truth = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t ns = i < 32 ? 20000 : 1000;
    truth += static_cast<double>(ns);
    app.write(dev, 0x10000000, n, ns);
  }
  app.finish();
  AppProfile p = analyze(app.read());
  ASSERT_NE(siteAt(p, kSiteA), nullptr);
  // Unweighted, the timed mean would be (32 x 20 us + 60 x 1 us) / 92: 4.7x the truth.
  EXPECT_NEAR(siteAt(p, kSiteA)->h2d.deviceNs, truth, 0.02 * truth);
}

// Per-command times that vary: the extrapolated total stays close to the true one.
TEST_F(Analysis, SampledTotalsOfVaryingTimesAreClose) {
  App app(m_trace);
  ASSERT_TRUE(app.ok());
  app.sample(16, 11);
  std::mt19937_64 rng(3);
  std::exponential_distribution<double> exp(1.0 / 2000);  // a long-tailed 2 us mean
  const uint64_t n = 64 << 10;
  ObjectId dev = app.buffer(0x7000, n);
  app.malloc(0x10000000, n, kSiteA);
  double truth = 0;
  for (int i = 0; i < 20000; ++i) {
    const uint64_t ns = 1 + static_cast<uint64_t>(exp(rng));
    truth += static_cast<double>(ns);
    app.write(dev, 0x10000000, n, ns);
  }
  app.finish();
  AppProfile p = analyze(app.read());
  ASSERT_NE(siteAt(p, kSiteA), nullptr);
  // ~1280 timed of 20000 with a coefficient of variation of 1: the standard error of the mean is
  // about 2.8%; 10% is more than 3 standard errors (and the seeds are fixed).
  EXPECT_NEAR(siteAt(p, kSiteA)->h2d.deviceNs, truth, 0.10 * truth);
}

TEST_F(Analysis, ReallocChainLeadsBackToTheFirstVersionsSite) {
  App app(m_trace);
  ObjectId dev = app.buffer(0x7000, 1 << 20);
  app.malloc(0x10000000, 64 << 10, kSiteA);
  app.realloc(0x10000000, 0x11000000, 128 << 10, kSiteC);
  app.realloc(0x11000000, 0x12000000, 256 << 10, kSiteC);
  app.write(dev, 0x12000000, 256 << 10, 500);
  app.kernel(dev, 1000);
  app.free(0x12000000);
  app.finish();
  AppProfile p = analyze(app.read());
  ASSERT_EQ(p.candidates.size(), 1u);
  ASSERT_NE(siteAt(p, kSiteA), nullptr) << "the site of the first version";
  EXPECT_EQ(siteAt(p, kSiteC), nullptr) << "realloc site is not where the data was born";
  EXPECT_EQ(p.candidates[0].h2d.bytes, 256u << 10);
  EXPECT_EQ(p.hostOnlySites, 0u) << "the realloc site's memory crossed: not host-only";
  // realloc replaces the block: never two versions live at once.
  EXPECT_EQ(p.candidates[0].peakLiveBlocks, 1u);
  EXPECT_EQ(p.candidates[0].peakLiveBytes, 256u << 10);
}

TEST_F(Analysis, PeakLiveBytesFollowLoops) {
  App app(m_trace);
  ObjectId dev = app.buffer(0x7000, 1 << 20);
  const uint64_t n = 8192;
  // Ten blocks from one site, all alive at the end of the loop, each transferred once.
  for (int i = 0; i < 10; ++i) {
    app.malloc(0x10000000 + i * 0x100000, n, kSiteA);
    app.write(dev, 0x10000000 + i * 0x100000, n, 100);
  }
  // A temporary allocated and freed every iteration: one block at a time.
  for (int i = 0; i < 10; ++i) {
    app.malloc(0x30000000, 3 * n, kSiteC);
    app.read(dev, 0x30000000, 3 * n, 100);
    app.free(0x30000000);
  }
  for (int i = 0; i < 10; ++i) app.free(0x10000000 + i * 0x100000);
  app.kernel(dev, 1000);
  app.finish();
  trace::Trace t = app.read();
  AppProfile p = analyze(t);
  ASSERT_EQ(p.candidates.size(), 2u);
  const CandidateSite* a = siteAt(p, kSiteA);
  const CandidateSite* c = siteAt(p, kSiteC);
  ASSERT_TRUE(a && c);
  EXPECT_EQ(a->allocations, 10u);
  EXPECT_EQ(a->peakLiveBlocks, 10u);
  EXPECT_EQ(a->peakLiveBytes, 10 * n);
  EXPECT_EQ(c->allocations, 10u);
  EXPECT_EQ(c->peakLiveBlocks, 1u);
  EXPECT_EQ(c->peakLiveBytes, 3 * n);
  EXPECT_EQ(c->d2h.transfers, 10u);
  // The loops did fold (the analysis ran on the compressed form, not on 60 separate leaves).
  bool folded = false;
  for (const trace::TraceNode& node : t.nodes) folded |= node.loop && node.iterations >= 9;
  EXPECT_TRUE(folded) << trace::testing::structure(t);
}

TEST_F(Analysis, ThreadsPeaksAddUp) {
  // Two threads each hold one block from the same site: a pool must hold both at once.
  App app(m_trace);
  ObjectId dev = app.buffer(0x7000, 1 << 20);
  for (uint64_t tid : {1000, 2000}) {
    app.onThread(tid);
    uint64_t ptr = 0x10000000 + tid * 0x100000;
    app.malloc(ptr, 64 << 10, kSiteA);
    app.write(dev, ptr, 64 << 10, 100);
    app.kernel(dev, 1000);
    app.free(ptr);
  }
  app.finish();
  AppProfile p = analyze(app.read());
  ASSERT_EQ(p.candidates.size(), 1u);
  EXPECT_EQ(p.candidates[0].allocations, 2u);
  EXPECT_EQ(p.candidates[0].peakLiveBlocks, 2u);
  EXPECT_EQ(p.candidates[0].peakLiveBytes, 128u << 10);
}

TEST_F(Analysis, UseHostPtrBufferMakesACandidate) {
  App app(m_trace);
  app.malloc(0x10000000, 1 << 20, kSiteA);
  app.malloc(0x20000000, 1 << 20, kSiteB);
  ObjectId wrapped = app.wrap(0x7100, 0x10000000, 1 << 20);
  app.kernel(wrapped, 1000);
  app.finish();
  AppProfile p = analyze(app.read());
  ASSERT_EQ(p.candidates.size(), 1u);
  EXPECT_NE(siteAt(p, kSiteA), nullptr);
  EXPECT_EQ(p.candidates[0].h2d.bytes, 1u << 20);
}

TEST_F(Analysis, UntrackedMemoryIsReportedWithItsVolumeAndDriverMappingsAreNot) {
  App app(m_trace);
  ObjectId dev = app.buffer(0x7000, 1 << 20);
  // A static array or a small block: memory the trace never saw allocated.
  app.write(dev, 0x50000000, 4096, 100);
  app.write(dev, 0x50000000, 4096, 100);
  app.read(dev, 0x50000800, 2048, 50);
  // Mapping the device buffer returns driver memory: not the application's to pin.
  app.mapDeviceBuffer(dev, 0x60000000, 1 << 20);
  app.kernel(dev, 1000);
  app.finish();
  AppProfile p = analyze(app.read());
  EXPECT_TRUE(p.candidates.empty());
  ASSERT_EQ(p.untracked.size(), 1u);
  const UntrackedMemory& u = p.untracked[0];
  EXPECT_EQ(u.h2d.transfers, 2u);
  EXPECT_EQ(u.h2d.bytes, 8192u);
  EXPECT_EQ(u.d2h.bytes, 2048u);
  EXPECT_EQ(u.regionBytes, 4096u);
  EXPECT_NE(formatReport(p).find("no tracked allocation made"), std::string::npos);
  // The map's device time is still device-to-host communication in the overhead terms.
  EXPECT_DOUBLE_EQ(p.breakdown.h2dNs, 200);
  EXPECT_DOUBLE_EQ(p.breakdown.d2hNs, 50 + 10);
  EXPECT_DOUBLE_EQ(p.eligibility.communicationNs, 260);
}

TEST_F(Analysis, HandPinnedMappedMemoryIsNotUntrackedApplicationMemory) {
  // The vendor-guide pattern: map an ALLOC_HOST_PTR buffer once, transfer from the mapped memory.
  App app(m_trace);
  ObjectId pinned = app.buffer(0x7100, 1 << 20);
  ObjectId dev = app.buffer(0x7000, 1 << 20);
  app.mapDeviceBuffer(pinned, 0x60000000, 1 << 20);
  app.write(dev, 0x60000000, 1 << 20, 100);
  app.read(dev, 0x60000000, 1 << 20, 100);
  app.kernel(dev, 1000);
  app.finish();
  AppProfile p = analyze(app.read());
  EXPECT_TRUE(p.candidates.empty());
  EXPECT_TRUE(p.untracked.empty());
  EXPECT_EQ(p.openclMapped.h2d.bytes, 1u << 20);
  EXPECT_EQ(p.openclMapped.d2h.bytes, 1u << 20);
  EXPECT_NE(formatReport(p).find("already pinned, nothing to do"), std::string::npos);
}

TEST_F(Analysis, TimelineHasKernelsAndTransfersOnTheQueueAndCallsOnTheThread) {
  App app(m_trace);
  writeKernelRead(app, 3, 1000, 4000);
  trace::Trace t = app.read();
  for (uint32_t version : {4u, trace::kTimelineFormatVersion}) {
    t.formatVersion = version;  // format 4 has no times: laid out condensed
    TimelineInfo info;
    std::vector<TimelineEvent> events = timelineEvents(t, &info);
    int kernels = 0, h2d = 0, d2h = 0, api = 0;
    double kernelNs = 0;
    for (const TimelineEvent& e : events) {
      if (e.category == "kernel") ++kernels, kernelNs += e.durationNs;
      if (e.category == "h2d") ++h2d;
      if (e.category == "d2h") ++d2h;
      if (e.category == "api") ++api;
      if (e.category == "kernel") {
        EXPECT_EQ(e.name, "axpb");
        EXPECT_EQ(e.track, TimelineEvent::Track::DeviceQueue);
      }
    }
    // Folded or not, every kernel's device time is on the timeline exactly once.
    EXPECT_GE(kernels, 1);
    EXPECT_DOUBLE_EQ(kernelNs, 12000);
    EXPECT_GE(h2d, 1);
    EXPECT_GE(d2h, 1);
    EXPECT_GE(api, 4);
    EXPECT_EQ(info.program, "/usr/bin/fake_app");
    std::string path = m_dir + "/timeline.json";
    std::string error;
    ASSERT_TRUE(writeTimeline(path, info, events, &error)) << error;
    EXPECT_TRUE(testing::pythonParsesJson(path));
  }
}

// In real time (format 6): each call's first 32 occurrences at their own times, their device
// commands where the queue's clock puts them, the loop once as an aggregate of all 40 iterations,
// the candidate site's allocation as an instant, and the clock's method said in the file.
TEST_F(Analysis, RealTimeTimelineKeepsTheFirstCallsAndAggregatesTheLoop) {
  App app(m_trace);
  writeKernelRead(app, 40, 1000, 4000);
  trace::Trace t = app.read();
  const AppProfile p = analyze(t);
  ASSERT_EQ(p.candidates.size(), 1u);
  std::set<uint32_t> candidates;
  for (uint32_t site = 1; site <= t.sites.size(); ++site)
    if (traceSiteKey(t, site) == p.candidates[0].siteKey) candidates.insert(site);
  ASSERT_EQ(candidates.size(), 1u);
  TimelineInfo info;
  std::vector<TimelineEvent> events = timelineEvents(t, &info, candidates);
  std::map<std::string, const TimelineEvent*> hostAt;  // host call by start
  int kernels = 0, launches = 0, loops = 0, allocations = 0;
  for (const TimelineEvent& e : events) {
    if (e.track == TimelineEvent::Track::HostThread && e.category == "api") {
      hostAt[std::to_string(static_cast<uint64_t>(e.startNs))] = &e;
      if (e.name == "clEnqueueNDRangeKernel") ++launches;
    }
    if (e.category == "kernel") ++kernels;
    if (e.category == "alloc") {
      ++allocations;
      EXPECT_TRUE(e.instant);
      EXPECT_EQ(e.name, "malloc 256 KiB");
    }
    if (e.track == TimelineEvent::Track::HostLoops) {
      ++loops;
      EXPECT_EQ(e.name, "loop x40");
      std::map<std::string, std::string> args(e.args.begin(), e.args.end());
      EXPECT_EQ(args["calls"], "120");
      EXPECT_EQ(args["calls shown"], "96");
    }
  }
  EXPECT_EQ(launches, 32);
  EXPECT_EQ(kernels, 32);
  EXPECT_EQ(loops, 1);
  EXPECT_EQ(allocations, 1) << "only the candidate site's";
  // Each device command 100 ns after its call began: the clock maps it back exactly.
  for (const TimelineEvent& e : events) {
    if (e.track != TimelineEvent::Track::DeviceQueue) continue;
    auto host = hostAt.find(std::to_string(static_cast<uint64_t>(e.startNs - 100)));
    ASSERT_NE(host, hostAt.end()) << e.name << " at " << e.startNs;
    EXPECT_EQ(host->second->name, e.args[0].second);  // "enqueued by"
  }
  bool saysClock = false;
  for (const auto& [k, v] : info.facts)
    if (k.rfind("clock of queue", 0) == 0) saysClock = v.find("estimated") != std::string::npos;
  EXPECT_TRUE(saysClock);
  // The note names the unit of the file's ts and dur: the trace-event format's microseconds.
  std::string time;
  for (const auto& [k, v] : info.facts)
    if (k == "time") time = v;
  EXPECT_NE(time.find("microseconds since tracing started"), std::string::npos) << time;
  EXPECT_EQ(time.find("ns since"), std::string::npos) << time;
  const std::string json = timelineJson(info, events);
  const TimelineEvent& first = events.front();
  char ts[64];
  snprintf(ts, sizeof ts, "\"ts\":%.17g", first.startNs / 1e3);  // JsonWriter's form
  EXPECT_NE(json.find(ts), std::string::npos) << ts;
}

// ---- the whole step, from a file ----

TEST_F(Analysis, FileToStoredProfileKeyedByTheTracedBuild) {
  {
    App app(m_trace);
    writeKernelRead(app, 5, 1000, 4000);
  }
  AnalyzeRequest req;
  req.tracePath = m_trace;
  req.dbPath = m_dir + "/db/hetopt.db";
  req.timelinePath = m_dir + "/t.json";
  req.plotsDir = m_dir + "/plots";
  req.symbolize = false;
  AnalyzeResult r;
  std::string error;
  ASSERT_TRUE(analyzeTraceFile(req, &r, &error)) << error;
  EXPECT_FALSE(r.storeFailed);
  EXPECT_GT(r.profileId, 0);
  EXPECT_EQ(r.profile.program.key(), "build-id:00112233445566778899aabbccddeeff00112233");
  EXPECT_TRUE(testing::pythonParsesJson(req.timelinePath));
  EXPECT_FALSE(testing::readFile(m_dir + "/plots/fake_app-breakdown.dat").empty());

  std::unique_ptr<Db> db = Db::open(req.dbPath, Db::Mode::ReadOnly, &error);
  ASSERT_TRUE(db) << error;
  AppProfile stored;
  ProfileLookup lookup;
  ASSERT_TRUE(loadProfile(*db, r.profile.program, &stored, &lookup, &error)) << error;
  ASSERT_EQ(lookup.status, ProfileLookup::Status::Found);
  ASSERT_EQ(stored.candidates.size(), 1u);
  EXPECT_EQ(stored.candidates[0].siteKey, r.profile.candidates[0].siteKey);
  // A rebuilt binary (another build id) must not get this profile.
  ProgramIdentity rebuilt = r.profile.program;
  rebuilt.buildId = "ffffffffffffffffffffffffffffffffffffffff";
  ASSERT_TRUE(loadProfile(*db, rebuilt, &stored, &lookup, &error)) << error;
  EXPECT_EQ(lookup.status, ProfileLookup::Status::Stale);
}

TEST_F(Analysis, AnIncompleteTraceNeverReplacesAProfileFromACompleteOne) {
  AnalyzeRequest req;
  req.tracePath = m_trace;
  req.dbPath = m_dir + "/hetopt.db";
  req.symbolize = false;
  auto analyze = [&](AnalyzeResult* r) {
    std::string error;
    ASSERT_TRUE(analyzeTraceFile(req, r, &error)) << error;
  };
  ProgramIdentity program;  // the fake app's, as the first analysis names it
  auto storedWrites = [&] {
    std::string error;
    std::unique_ptr<Db> db = Db::open(req.dbPath, Db::Mode::ReadOnly, &error);
    AppProfile stored;
    ProfileLookup lookup;
    EXPECT_TRUE(db && loadProfile(*db, program, &stored, &lookup, &error)) << error;
    EXPECT_EQ(lookup.status, ProfileLookup::Status::Found);
    return stored.candidates.empty() ? uint64_t{0} : stored.candidates[0].h2d.transfers;
  };
  {
    App app(m_trace);
    writeKernelRead(app, 5, 1000, 4000);  // complete: 5 writes
  }
  AnalyzeResult complete;
  analyze(&complete);
  ASSERT_GT(complete.profileId, 0);
  program = complete.profile.program;
  EXPECT_EQ(storedWrites(), 5u);
  // The program killed after 40 writes (the recorder checkpoints every 16 events): its trace is
  // read up to its last checkpoint, and the profile stays.
  auto killedAfter = [&](int writes) {
    // In a child that ends without finishing the trace or closing its file, as a killed one does.
    pid_t pid = fork();
    if (pid == 0) {
      App app(m_trace, 1);
      ObjectId dev = app.buffer(0x7000, 256 << 10);
      app.malloc(0x10000000, 256 << 10, kSiteA);
      for (int i = 0; i < writes; ++i) app.write(dev, 0x10000000, 256 << 10, 1000);
      _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
  };
  killedAfter(40);
  AnalyzeResult killed;
  analyze(&killed);
  ASSERT_EQ(killed.profile.candidates.size(), 1u);
  // The report shows what was recorded.
  EXPECT_GE(killed.profile.candidates[0].h2d.transfers, 1u);
  EXPECT_LE(killed.profile.candidates[0].h2d.transfers, 40u);
  EXPECT_EQ(killed.profileId, 0);
  bool said = false;
  for (const std::string& n : killed.notes)
    said |= n.find("incomplete; kept the stored one") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_FALSE(killed.storeFailed);
  EXPECT_EQ(storedWrites(), 5u);
  // A complete trace replaces it; an incomplete one replaces one from an incomplete trace.
  {
    App app(m_trace);
    writeKernelRead(app, 3, 1000, 4000);
  }
  AnalyzeResult again;
  analyze(&again);
  EXPECT_EQ(storedWrites(), 3u);
  {
    std::string error;
    std::unique_ptr<Db> db = Db::open(req.dbPath, Db::Mode::ReadWriteCreate, &error);
    ASSERT_TRUE(db) << error;
    AppProfile p = killed.profile;
    ASSERT_TRUE(storeProfile(*db, p, nullptr, &error))
        << error;  // now the stored one is incomplete
  }
  killedAfter(40);
  AnalyzeResult killedAgain;
  analyze(&killedAgain);
  EXPECT_GT(killedAgain.profileId, 0);
  ASSERT_EQ(killedAgain.profile.candidates.size(), 1u);
  EXPECT_EQ(storedWrites(), killedAgain.profile.candidates[0].h2d.transfers);
}

// A run that failed (`hetopt trace` saw a non-zero exit) keeps the profile of one that went well,
// and says so; its own profile, stored where there was none, gives way to any later one.
TEST_F(Analysis, AFailedRunNeverReplacesAProfileOfOneThatSucceeded) {
  AnalyzeRequest req;
  req.tracePath = m_trace;
  req.dbPath = m_dir + "/hetopt.db";
  req.symbolize = false;
  auto traced = [&](int iters, const std::string& failed, AnalyzeResult* r) {
    {
      App app(m_trace);
      writeKernelRead(app, iters, 1000, 4000);  // complete traces, all of them
    }
    req.runFailed = failed;
    std::string error;
    ASSERT_TRUE(analyzeTraceFile(req, r, &error)) << error;
  };
  auto storedWrites = [&](const ProgramIdentity& program) {
    std::string error;
    std::unique_ptr<Db> db = Db::open(req.dbPath, Db::Mode::ReadOnly, &error);
    AppProfile stored;
    ProfileLookup lookup;
    EXPECT_TRUE(db && loadProfile(*db, program, &stored, &lookup, &error)) << error;
    return stored.candidates.empty() ? uint64_t{0} : stored.candidates[0].h2d.transfers;
  };
  AnalyzeResult good, failed, failedAgain, goodAgain;
  traced(5, "", &good);
  ASSERT_GT(good.profileId, 0);
  traced(2, "exited with status 2", &failed);
  EXPECT_EQ(failed.profileId, 0);
  EXPECT_TRUE(failed.stored) << "the kept profile answers for the program";
  EXPECT_FALSE(failed.storeFailed);
  bool said = false;
  for (const std::string& n : failed.notes)
    said |= n.find(
                "profile not stored: the traced run exited with status 2; kept the stored "
                "one, analysed ") != std::string::npos;
  EXPECT_TRUE(said) << ::testing::PrintToString(failed.notes);
  EXPECT_EQ(storedWrites(good.profile.program), 5u);
  // One that succeeds replaces it; a failed run's profile, once stored, gives way to the next.
  traced(3, "", &goodAgain);
  EXPECT_EQ(storedWrites(good.profile.program), 3u);
  {
    std::string error;
    std::unique_ptr<Db> db = Db::open(req.dbPath, Db::Mode::ReadWriteCreate, &error);
    ASSERT_TRUE(db) << error;
    ASSERT_TRUE(storeProfile(*db, failed.profile, nullptr, &error)) << error;
  }
  traced(4, "was killed by signal 15 (Terminated)", &failedAgain);
  EXPECT_GT(failedAgain.profileId, 0);
  EXPECT_EQ(storedWrites(good.profile.program), 4u);
}

TEST_F(Analysis, StoredProfileOfTheCurrentBinaryWithStandardAndOptimizedBars) {
  ProgramIdentity self;
  std::string error;
  ASSERT_TRUE(programIdentity("/proc/self/exe", &self, &error)) << error;
  AppProfile p = testing::sampleProfile();
  p.program = self;
  AnalyzeRequest req;
  req.dbPath = m_dir + "/hetopt.db";
  req.plotsDir = m_dir + "/plots";
  int64_t id = 0;
  {
    std::unique_ptr<Db> db = Db::open(req.dbPath, Db::Mode::ReadWriteCreate, &error);
    ASSERT_TRUE(db) << error;
    ASSERT_TRUE(storeProfile(*db, p, &id, &error)) << error;
    Breakdown optimized = p.breakdown;
    optimized.communicationNs /= 4;
    ASSERT_TRUE(storeRunBreakdown(*db, id, {"standard", p.breakdown}, &error)) << error;
    ASSERT_TRUE(storeRunBreakdown(*db, id, {"optimized", optimized}, &error)) << error;
  }
  std::string outPath = m_dir + "/report.txt";
  FILE* out = fopen(outPath.c_str(), "w");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(showStoredProfile("/proc/self/exe", req, out), 0);
  fclose(out);
  EXPECT_NE(testing::readFile(outPath).find("#1 main at main.cpp:29"), std::string::npos)
      << testing::readFile(outPath);
  std::string dat = testing::readFile(req.plotsDir + "/" + programSlug(self) + "-breakdown.dat");
  EXPECT_NE(dat.find("\"standard\""), std::string::npos) << dat;
  EXPECT_NE(dat.find("\"optimized\""), std::string::npos) << dat;
  EXPECT_LT(dat.find("\"standard\""), dat.find("\"optimized\""));
  // Another program has no profile: exit status 1, nothing printed.
  std::string script = m_dir + "/script.sh";
  FILE* f = fopen(script.c_str(), "w");
  fputs("#!/bin/sh\n", f);
  fclose(f);
  out = fopen(outPath.c_str(), "w");
  EXPECT_EQ(showStoredProfile(script, req, out), 1);
  fclose(out);
  EXPECT_TRUE(testing::readFile(outPath).empty());
}

TEST_F(Analysis, ForeignAndMissingFilesAreClearErrors) {
  AnalyzeRequest req;
  req.store = false;
  AnalyzeResult r;
  std::string error;
  req.tracePath = m_dir + "/missing.trace";
  EXPECT_FALSE(analyzeTraceFile(req, &r, &error));
  EXPECT_NE(error.find("missing.trace"), std::string::npos) << error;
  req.tracePath = "/proc/self/exe";  // an ELF file, not a trace
  EXPECT_FALSE(analyzeTraceFile(req, &r, &error));
  EXPECT_NE(error.find("not a hetopt trace"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << "one line";
  FILE* f = fopen((m_dir + "/empty.trace").c_str(), "w");
  fclose(f);
  req.tracePath = m_dir + "/empty.trace";
  EXPECT_FALSE(analyzeTraceFile(req, &r, &error));
  EXPECT_FALSE(error.empty());
}

TEST_F(Analysis, CorruptTracesNeverCrash) {
  {
    App app(m_trace);
    writeKernelRead(app, 5, 1000, 4000);
  }
  std::string good = testing::readFile(m_trace);
  ASSERT_GT(good.size(), 64u);
  AnalysisOptions opt;
  opt.symbolize = false;
  std::mt19937 rng(12345);
  int rejected = 0, accepted = 0;
  // Truncations at every length up to the header and beyond, then random byte damage.
  auto tryBytes = [&](const std::string& bytes, bool salvage) {
    trace::Trace t;
    std::string error;
    trace::ReadOptions ro;
    ro.salvage = salvage;
    if (!trace::parseTrace(bytes.data(), bytes.size(), &t, &error, ro)) {
      EXPECT_FALSE(error.empty());
      EXPECT_EQ(error.find('\n'), std::string::npos) << error;
      ++rejected;
      return;
    }
    AppProfile p;
    analyzeTrace(t, opt, &p);  // must not crash, whatever the reader let through
    profileToJson(p);
    formatReport(p);
    TimelineInfo info;
    timelineEvents(t, &info);
    ++accepted;
  };
  for (size_t len = 0; len < good.size(); len += std::max<size_t>(1, good.size() / 97))
    tryBytes(good.substr(0, len), len % 2 == 0);
  for (int i = 0; i < 400; ++i) {
    std::string bad = good;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) bad[rng() % bad.size()] = static_cast<char>(rng() & 0xff);
    tryBytes(bad, i % 2 == 0);
  }
  EXPECT_GT(rejected, 0);
  tryBytes(good, false);
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace hetopt::analyzer
