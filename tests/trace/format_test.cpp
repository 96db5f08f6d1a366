// SPDX-License-Identifier: MIT
/** @file The trace file format: round trip, and rejection of truncated, corrupt, foreign files. */
#include "trace/format.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <iterator>

#include "hetopt/version.h"
#include "tests/trace/synthetic.h"
#include "trace/time_sampler.h"
#include "trace/writer.h"

using namespace hetopt::trace;
using namespace hetopt::trace::testing;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A small but complete trace: modules, sites, segments, untracked memory, loops.
std::string sampleTrace() {
  std::string path = tempPath("sample");
  {
    Synth s(path);
    ObjectId mem = s.buffer(0xa0, 1 << 16);
    ObjectId k = s.recorder().createHandle(ObjectKind::Kernel, 0xb0);
    s.recorder().objects().info(k).fields |= kObjLabel;
    s.recorder().objects().info(k).label = "axpb";
    s.malloc(0x10000, 1 << 16, 0x401000);
    for (int i = 0; i < 20; ++i) {
      s.write(mem, 0x10000, 1 << 16);
      s.kernel(k, mem);
      s.read(mem, 0x10000, 1 << 16);
    }
    s.write(mem, 0x7fff0000, 256);  // untracked memory
    s.free(0x10000);
    s.recorder().createHandle(ObjectKind::Queue, 0xc0);
    s.recorder().noteClock(0xc0, ClockMethod::Timer, -1234567890123, 7);
    s.recorder().noteRecordingCost(7, 7700);
    s.recorder().noteStartup(123456, 654321);
    s.finish();
  }
  std::string data = slurp(path);
  unlink(path.c_str());
  return data;
}

/// A file of format `version` (header as that version writes it) whose one Records chunk holds
/// `records` as they are: to see a reader refuse a record its version does not have.
std::string recordsOfVersion(const std::string& records, uint32_t version) {
  std::string path = tempPath("records");
  {
    TraceFileWriter w;
    FileHeader h;
    h.writerVersion = "test";
    std::string error;
    EXPECT_TRUE(w.open(path, h, &error)) << error;
    EXPECT_TRUE(w.write(records, nullptr));
    w.close();
  }
  std::string data = slurp(path);
  unlink(path.c_str());
  auto* p = reinterpret_cast<unsigned char*>(data.data());
  putU32(p + 8, version);
  const uint32_t headerBytes = getU32(p + 12);
  putU32(p + headerBytes - 4, crc32(p, headerBytes - 4));
  return data;
}

std::string parseError(const std::string& data) {
  Trace t;
  std::string error;
  EXPECT_FALSE(parseTrace(data.data(), data.size(), &t, &error));
  return error;
}

}  // namespace

TEST(TraceFormat, RoundTrip) {
  std::string data = sampleTrace();
  Trace t;
  std::string error;
  ASSERT_TRUE(parseTrace(data.data(), data.size(), &t, &error)) << error;
  EXPECT_TRUE(t.complete);
  EXPECT_EQ(t.formatVersion, static_cast<uint32_t>(HETOPT_TRACE_FORMAT_VERSION));
  EXPECT_EQ(t.writerVersion, "test");
  EXPECT_EQ(t.header.pid, 4242u);
  EXPECT_EQ(t.header.program, "/usr/bin/fake_app");
  ASSERT_EQ(t.threads.size(), 1u);
  EXPECT_EQ(t.threads[0].tid, 1000u);
  ASSERT_EQ(t.modules.size(), 1u);
  EXPECT_EQ(t.modules[0].path, "/usr/bin/fake_app");
  EXPECT_EQ(t.modules[0].buildId, "00112233445566778899aabbccddeeff00112233");
  ASSERT_EQ(t.sites.size(), 1u);
  EXPECT_EQ(t.sites[0].frames[0].module, 0);
  EXPECT_EQ(t.sites[0].frames[0].offset, 0x1000u);
  EXPECT_EQ(callCount(t, "clEnqueueWriteBuffer"), 21u);
  TraceSummary s = summarize(t);
  EXPECT_EQ(s.h2dBytes, 20u * 65536 + 256);
  EXPECT_EQ(s.d2hBytes, 20u * 65536);
  EXPECT_EQ(s.allocations, 1u);
  EXPECT_EQ(s.frees, 1u);
  bool sawUntracked = false, sawLabel = false;
  for (const auto& [id, o] : t.objects) {
    if (o.kind == ObjectKind::Untracked) {
      sawUntracked = true;
      EXPECT_EQ(o.info.address, 0x7fff0000u);
      EXPECT_EQ(o.info.size, 256u);
      EXPECT_EQ(s.byObject.at(id).h2dBytes, 256u);
    }
    if (o.kind == ObjectKind::Kernel && o.info.label == "axpb") sawLabel = true;
  }
  EXPECT_TRUE(sawUntracked);
  EXPECT_TRUE(sawLabel);
  EXPECT_EQ(t.recordingSampledCalls, 7u);
  EXPECT_EQ(t.recordingSampledNs, 7700u);
  EXPECT_EQ(t.firstCallNs, 123456u);  // the Startup record (format 4)
  EXPECT_EQ(t.firstContextNs, 654321u);
}

// A record newer than the file's version is rejected, not misread: RecordingCost (format 3) in
// format 2, Startup (4) in 3, Clock (5) in 4.
TEST(TraceFormat, RecordsNeedTheirFormat) {
  const std::string cost = {static_cast<char>(RecordTag::RecordingCost), 1, 1};
  const std::string startup = {static_cast<char>(RecordTag::Startup), 1, 1};
  const std::string clock = {static_cast<char>(RecordTag::Clock), 1, 1, 0, 0};
  std::string error = parseError(recordsOfVersion(cost, 2));
  EXPECT_NE(error.find("unknown record tag 8"), std::string::npos) << error;
  error = parseError(recordsOfVersion(startup, 3));
  EXPECT_NE(error.find("unknown record tag 9"), std::string::npos) << error;
  error = parseError(recordsOfVersion(clock, kTimelineFormatVersion - 1));
  EXPECT_NE(error.find("unknown record tag 10"), std::string::npos) << error;
  // In its own version a clock must name a defined object and a known method.
  error = parseError(recordsOfVersion(clock, kTimelineFormatVersion));
  EXPECT_NE(error.find("clock of undefined object 1"), std::string::npos) << error;
}

// Format 6: each leaf's first calls' times, in call order, and the queue's clock.
TEST(TraceFormat, LeavesKeepTheirCallsTimesAndQueuesTheirClocks) {
  std::string data = sampleTrace();
  Trace t;
  std::string error;
  ASSERT_TRUE(parseTrace(data.data(), data.size(), &t, &error)) << error;
  size_t leaves = 0;
  for (const TraceNode& n : t.nodes) {
    if (n.loop || n.type != LeafType::Call) continue;
    ++leaves;
    ASSERT_EQ(n.stamps.size(), std::min<uint64_t>(n.host.count, 32)) << t.leafName(n);
    for (size_t i = 1; i < n.stamps.size(); ++i)
      EXPECT_GT(n.stamps[i].startNs, n.stamps[i - 1].startNs);
    EXPECT_EQ(n.endNs, n.stamps.back().startNs + n.stamps.back().hostNs)
        << "Synth: at most 32 calls per leaf";
  }
  EXPECT_GT(leaves, 3u);
  ASSERT_EQ(t.clocks.size(), 1u);
  const TraceClock& c = t.clocks.begin()->second;
  EXPECT_EQ(t.object(t.clocks.begin()->first)->kind, ObjectKind::Queue);
  EXPECT_EQ(c.method, ClockMethod::Timer);
  EXPECT_EQ(c.offsetNs, -1234567890123);
  EXPECT_EQ(c.uncertaintyNs, 7u);
}

// Device times are stored as deltas between a leaf's stamps: an out-of-order queue's later command
// may start first, and a device clock may be far from the trace's.
TEST(TraceFormat, DeviceTimesOfStampsRoundTrip) {
  const std::string path = tempPath("device-stamps");
  const uint64_t starts[4] = {1ull << 62, (1ull << 62) - 5000, (1ull << 62) + 90000, 0};
  {
    Synth s(path);
    const uint32_t thread = s.recorder().thread(1000);
    for (uint64_t start : starts) {
      Leaf l = s.call(ApiId::clFinish);
      if (start) {
        l.stamps[0].deviceStart = start;
        l.stamps[0].deviceEnd = start + 321;
      }
      s.recorder().append(thread, std::move(l));
    }
    s.finish();
  }
  Trace t;
  std::string error;
  ASSERT_TRUE(readTraceFile(path, &t, &error)) << error;
  unlink(path.c_str());
  const TraceNode* leaf = nullptr;
  for (const TraceNode& n : t.nodes)
    if (!n.loop && n.stamps.size() == 4) leaf = &n;
  ASSERT_NE(leaf, nullptr) << "the four calls fold into one leaf";
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(leaf->stamps[i].deviceStart, starts[i]);
    EXPECT_EQ(leaf->stamps[i].deviceEnd, starts[i] ? starts[i] + 321 : 0);
    EXPECT_EQ(leaf->stamps[i].hostNs, 1000u);
  }
}

// Format 5: the header says what an interpreter ran; older headers have no such fields.
TEST(TraceFormat, HeaderNamesTheScriptFromFormatFive) {
  FileHeader h;
  h.pid = 7;
  h.program = "/usr/bin/python3.11";
  h.arguments = std::string("python3\0a.py", 12);
  h.scriptKind = 1;
  h.scriptName = "/w/a.py";
  h.scriptHash = std::string(64, 'a');
  for (uint32_t version : {4u, 5u}) {
    std::string data = encodeHeader(h, version);
    Trace t;
    std::string error;
    ASSERT_TRUE(parseTrace(data.data(), data.size(), &t, &error)) << error;
    EXPECT_EQ(t.header.program, h.program);
    EXPECT_EQ(t.header.scriptKind, version >= 5 ? 1 : 0);
    EXPECT_EQ(t.header.scriptName, version >= 5 ? h.scriptName : "");
    EXPECT_EQ(t.header.scriptHash, version >= 5 ? h.scriptHash : "");
  }
  h.scriptKind = 9;
  std::string data = encodeHeader(h, 5);
  Trace t;
  std::string error;
  EXPECT_FALSE(parseTrace(data.data(), data.size(), &t, &error));
  EXPECT_NE(error.find("unknown script kind 9"), std::string::npos) << error;
}

TEST(TraceFormat, EveryTruncationIsRejectedOrAnIncompletePrefix) {
  std::string data = sampleTrace();
  for (size_t cut = 0; cut < data.size(); ++cut) {
    Trace t;
    std::string error;
    bool ok = parseTrace(data.data(), cut, &t, &error);
    if (ok) {
      // Only a cut exactly between chunks parses: then it is a prefix, never "complete".
      EXPECT_FALSE(t.complete) << "cut at " << cut;
    } else {
      EXPECT_TRUE(error.find("truncated") != std::string::npos ||
                  error.find("not a hetopt trace") != std::string::npos)
          << "cut at " << cut << ": " << error;
    }
  }
}

TEST(TraceFormat, EveryFlippedByteIsRejected) {
  std::string data = sampleTrace();
  for (size_t i = 0; i < data.size(); ++i) {
    std::string bad = data;
    bad[i] = static_cast<char>(bad[i] ^ 0x20);
    Trace t;
    std::string error;
    EXPECT_FALSE(parseTrace(bad.data(), bad.size(), &t, &error)) << "flip at " << i;
    EXPECT_FALSE(error.empty());
  }
}

TEST(TraceFormat, SalvageKeepsWhatPrecedesACorruptChunk) {
  std::string data = sampleTrace();
  Trace whole;
  std::string error;
  ASSERT_TRUE(parseTrace(data.data(), data.size(), &whole, &error));
  std::string bad = data + std::string("CHNK\x01\0\0\0\xff\xff\0\0", 12) + std::string(12, '\0');
  Trace t;
  EXPECT_FALSE(parseTrace(bad.data(), bad.size(), &t, &error));
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;
  EXPECT_NE(error.find("--salvage reads what precedes it"), std::string::npos) << error;
  ReadOptions salvage;
  salvage.salvage = true;
  error.clear();
  ASSERT_TRUE(parseTrace(bad.data(), bad.size(), &t, &error, salvage)) << error;
  EXPECT_FALSE(t.complete);
  EXPECT_EQ(callCount(t, "clEnqueueWriteBuffer"), 21u);
  EXPECT_NE(error.find("truncated"), std::string::npos) << "what was cut off: " << error;
  // Cut in its first chunk: nothing precedes the damage, for every command that salvages.
  const std::string nothing = data.substr(0, data.find("CHNK") + 10);
  Trace none;
  EXPECT_FALSE(parseTrace(nothing.data(), nothing.size(), &none, &error, salvage));
  EXPECT_NE(error.find("nothing to salvage"), std::string::npos) << error;
}

TEST(TraceFormat, OtherVersionsAreRejectedNamingBoth) {
  std::string data = sampleTrace();
  putU32(reinterpret_cast<unsigned char*>(data.data()) + 8, HETOPT_TRACE_FORMAT_VERSION + 1);
  Trace t;
  std::string error;
  EXPECT_FALSE(parseTrace(data.data(), data.size(), &t, &error));
  EXPECT_NE(error.find("version " + std::to_string(HETOPT_TRACE_FORMAT_VERSION + 1)),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("reads versions 1 to " + std::to_string(HETOPT_TRACE_FORMAT_VERSION)),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("written by hetopt test"), std::string::npos) << error;
}

TEST(TraceFormat, ForeignFilesAreRejected) {
  Trace t;
  std::string error;
  const char junk[] = "#!/bin/sh\necho not a trace\n";
  EXPECT_FALSE(parseTrace(junk, sizeof junk, &t, &error));
  EXPECT_NE(error.find("not a hetopt trace"), std::string::npos);
  EXPECT_FALSE(parseTrace(junk, 0, &t, &error));
  EXPECT_FALSE(readTraceFile("/nonexistent/x.trace", &t, &error));
  EXPECT_NE(error.find("cannot open"), std::string::npos);
}

TEST(TraceFormat, KilledWriterLeavesTheLastCheckpoint) {
  std::string path = tempPath("killed");
  std::string snapshot;
  {
    Synth s(path, 0);  // a tail snapshot at every opportunity
    ObjectId mem = s.buffer(0xa0, 4096);
    s.malloc(0x10000, 4096);
    for (int i = 0; i < 5000; ++i) s.write(mem, 0x10000, 4096);
    snapshot = slurp(path);  // what a SIGKILL here would leave
    s.finish();
  }
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  unlink(path.c_str());
  Trace t;
  std::string error;
  ASSERT_TRUE(parseTrace(snapshot.data(), snapshot.size(), &t, &error)) << error;
  EXPECT_FALSE(t.complete);
  uint64_t writes = callCount(t, "clEnqueueWriteBuffer");
  EXPECT_GE(writes, 4900u);  // the last checkpoint is at most 16 events old
  EXPECT_LE(writes, 5000u);
  EXPECT_LT(snapshot.size(), 2048u) << "tail snapshots overwrite each other";
}

// Format 7: a process that exec'd says so in its last tail, and holds everything before it; an
// exec that failed (the program went on and exited) leaves a complete trace that says nothing of
// it.
TEST(TraceFormat, ATraceEndedByExecSaysSo) {
  std::string path = tempPath("exec");
  std::string atExec, afterFailedExec;
  {
    Synth s(path);
    ObjectId mem = s.buffer(0xa0, 4096);
    s.malloc(0x10000, 4096);
    for (int i = 0; i < 3; ++i) s.write(mem, 0x10000, 4096);
    s.recorder().snapshotBeforeExec("/usr/bin/python3");
    atExec = slurp(path);  // what the exec'd process leaves behind
    s.write(mem, 0x10000, 4096);
    s.recorder().snapshot();
    afterFailedExec = slurp(path);
    s.finish();
  }
  std::string complete = slurp(path);
  unlink(path.c_str());
  Trace t;
  std::string error;
  ASSERT_TRUE(parseTrace(atExec.data(), atExec.size(), &t, &error)) << error;
  EXPECT_FALSE(t.complete);
  EXPECT_TRUE(t.endedByExec);
  EXPECT_EQ(t.execProgram, "/usr/bin/python3");
  EXPECT_EQ(callCount(t, "clEnqueueWriteBuffer"), 3u);
  for (const std::string* data : {&afterFailedExec, &complete}) {
    Trace other;
    ASSERT_TRUE(parseTrace(data->data(), data->size(), &other, &error)) << error;
    EXPECT_FALSE(other.endedByExec);
    EXPECT_EQ(callCount(other, "clEnqueueWriteBuffer"), 4u);
  }
  // Only a tail says it, and only from format 7.
  const std::string exec = {static_cast<char>(RecordTag::Exec), 1, 0};
  error = parseError(recordsOfVersion(exec, kExecFormatVersion));
  EXPECT_NE(error.find("unknown record tag 11"), std::string::npos) << error;
}

TEST(TraceFormat, ForkedChildRedefinesSitesAndModules) {
  std::string parent = tempPath("parent"), child = tempPath("child");
  {
    Synth s(parent);
    // Interned in decreasing address order: the site map's order is not the id order.
    s.malloc(0x10000, 8192, 0x403000);
    s.malloc(0x20000, 8192, 0x402000);
    s.malloc(0x30000, 8192, 0x401000);
    RecorderConfig c;
    c.path = child;
    c.header.pid = 4343;
    c.header.writerVersion = "test";
    c.modules = fakeModules;
    c.classifyRegions = false;
    std::string error;
    ASSERT_TRUE(s.recorder().restartInChild(c, &error)) << error;
    uint32_t t = s.recorder().thread(2000);
    s.recorder().recordFree(t, 0x20000);  // a block the parent allocated, freed in the child
    s.recorder().finish();
  }
  Trace t;
  std::string error;
  ASSERT_TRUE(readTraceFile(child, &t, &error)) << error;
  EXPECT_TRUE(t.complete);
  EXPECT_EQ(t.header.pid, 4343u);
  ASSERT_EQ(t.sites.size(), 3u);
  EXPECT_EQ(t.sites[0].frames[0].offset, 0x3000u);
  EXPECT_EQ(t.sites[2].frames[0].offset, 0x1000u);
  EXPECT_EQ(callCount(t, "free"), 1u);
  EXPECT_EQ(callCount(t, "malloc"), 0u) << "the parent's events stay in the parent's file";
  for (const auto& [id, o] : t.objects) {
    if (o.kind == ObjectKind::Segment) {
      EXPECT_EQ(o.info.site, 2u);  // the freed block's site
    }
  }
  unlink(parent.c_str());
  unlink(child.c_str());
}

// Format 2: a folded leaf keeps how many commands were timed and how many sampling skipped, and
// summarize() extrapolates the timed mean to all of them.
TEST(TraceFormat, SampledDeviceTimesRoundTripAndExtrapolate) {
  const std::string path = tempPath("sampled");
  uint64_t timedWrites = 0, timedKernels = 0;
  {
    Synth s(path);
    TimeSampler sampler(16, 7);
    ObjectId mem = s.buffer(0xa0, 4096);
    ObjectId k = s.recorder().createHandle(ObjectKind::Kernel, 0xb0);
    s.malloc(0x10000, 4096, 0x401000);
    for (int i = 0; i < 1000; ++i) {
      const uint64_t w = sampler.weight(1), kn = sampler.weight(2);
      timedWrites += w != 0;
      timedKernels += kn != 0;
      s.write(mem, 0x10000, 4096, deviceTiming(w, 1000));
      s.kernel(k, mem, deviceTiming(kn, 5000));
    }
    s.free(0x10000);
    s.finish();
  }
  Trace t;
  std::string error;
  ASSERT_TRUE(readTraceFile(path, &t, &error)) << error;
  unlink(path.c_str());
  EXPECT_GE(timedWrites, TimeSampler::timedInWholeBlocks(16, 1000));
  EXPECT_LE(timedWrites, TimeSampler::timedInWholeBlocks(16, 1000) + 1);
  for (const TraceNode& n : t.nodes) {
    if (n.loop || n.type != LeafType::Call || t.leafName(n) == "clCreateBuffer") continue;
    const bool write = t.leafName(n) == "clEnqueueWriteBuffer";
    EXPECT_EQ(n.host.count, 1000u);
    EXPECT_EQ(n.device.exec.count, write ? timedWrites : timedKernels);
    EXPECT_EQ(n.device.exec.count + n.device.unsampled, 1000u);
    EXPECT_EQ(n.device.missing, 0u);
    EXPECT_DOUBLE_EQ(n.device.execNs(), write ? 1000.0 * 1000 : 5000.0 * 1000);
    EXPECT_DOUBLE_EQ(n.device.submitToStartNs(), write ? 100.0 * 1000 : 500.0 * 1000);
  }
  TraceSummary sum = summarize(t);
  EXPECT_EQ(sum.kernelNs, 5000u * 1000);
  EXPECT_EQ(sum.transferNs, 1000u * 1000);
  EXPECT_EQ(sum.deviceTimed, timedWrites + timedKernels);
  EXPECT_EQ(sum.deviceTimed + sum.deviceUnsampled, 2000u);
  EXPECT_EQ(sum.deviceUnestimated, 0u);
}

// Format 1 (no sampling field) still reads: the committed golden trace.
TEST(TraceFormat, FormatOneStillReads) {
  Trace t;
  std::string error;
  ASSERT_TRUE(readTraceFile(HETOPT_TRACE_GOLDEN_DIR "/format1-loops.trace", &t, &error)) << error;
  EXPECT_EQ(t.formatVersion, 1u);
  EXPECT_TRUE(t.complete);
  EXPECT_EQ(callCount(t, "clEnqueueNDRangeKernel"), 90u);
  for (const TraceNode& n : t.nodes) EXPECT_EQ(n.device.unsampled, 0u);
}

// A real format-6 trace (loop_wkr --size 4K --iters 40 on PoCL): every leaf keeps its first
// calls' times (at most 32), in order, within the traced time, and the loop's timed commands
// their device times on the queue whose clock the file holds.
TEST(TraceFormat, ReadsFormatSixGoldenTimes) {
  Trace t;
  std::string error;
  ASSERT_TRUE(readTraceFile(HETOPT_TRACE_GOLDEN_DIR "/format6-timeline.trace", &t, &error))
      << error;
  EXPECT_EQ(t.formatVersion, kTimelineFormatVersion);
  ASSERT_TRUE(t.complete);
  ASSERT_EQ(t.clocks.size(), 1u);
  EXPECT_EQ(t.clocks.begin()->second.method, ClockMethod::Estimated);
  uint64_t deviceTimed = 0;
  for (const TraceNode& n : t.nodes) {
    if (n.loop) continue;
    ASSERT_EQ(n.stamps.size(), std::min<uint64_t>(n.host.count, 32)) << t.leafName(n);
    for (size_t i = 1; i < n.stamps.size(); ++i)
      EXPECT_GE(n.stamps[i].startNs, n.stamps[i - 1].startNs + n.stamps[i - 1].hostNs);
    EXPECT_LE(n.endNs, t.durationNs);
    for (const Stamp& s : n.stamps) deviceTimed += s.deviceEnd != 0;
  }
  EXPECT_EQ(deviceTimed, 3u * 32) << "the loop's write, kernel and read: their first 32 commands";
}
