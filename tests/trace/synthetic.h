// SPDX-License-Identifier: MIT
/**
 * @file Synthetic call streams for trace tests: a Recorder driven the way the shim's trace mode
 * drives it (buffers, host segments, write -> kernel -> read), without OpenCL.
 */
#pragma once
#include <unistd.h>

#include <cstdio>
#include <string>

#include "api_table.h"
#include "trace/call_model.h"
#include "trace/reader.h"
#include "trace/recorder.h"

namespace hetopt::trace::testing {

using api::ApiId;

inline std::string tempPath(const std::string& name) {
  const char* dir = getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/hetopt-test-" + std::to_string(getpid()) +
         "-" + name;
}

/// Pretends every address in [0x400000, 0x500000) is code of one module.
inline bool fakeModules(uint64_t address, ModuleRecord* out) {
  if (address < 0x400000 || address >= 0x500000) return false;
  out->start = 0x400000;
  out->end = 0x500000;
  out->bias = 0x400000;
  out->path = "/usr/bin/fake_app";
  out->buildId = "00112233445566778899aabbccddeeff00112233";
  return true;
}

class Synth {
 public:
  explicit Synth(const std::string& path, uint64_t checkpointNs = ~0ull >> 1) {
    RecorderConfig c;
    c.path = path;
    c.header.pid = 4242;
    c.header.program = "/usr/bin/fake_app";
    c.header.writerVersion = "test";
    c.checkpointNs = checkpointNs;
    c.modules = fakeModules;
    c.classifyRegions = false;
    std::string error;
    m_ok = m_rec.open(c, &error);
    m_thread = m_rec.thread(1000);
  }
  bool ok() const { return m_ok; }
  Recorder& recorder() { return m_rec; }

  /// A leaf for `id` with every argument 0 except those set later. It takes 1 us and begins 1 us
  /// after the one before, on a clock of the test's own (its Stamp).
  Leaf call(ApiId id) {
    Leaf l;
    l.type = LeafType::Call;
    l.code = static_cast<uint16_t>(id);
    l.host.add(1000);
    l.args.assign(api::apiInfo(id).numArgs, ArgAgg::of(0));
    m_clockNs += 2000;
    l.stamps.push_back(Stamp{m_clockNs, 1000, 0, 0, 0});
    l.endNs = m_clockNs + 1000;
    return l;
  }
  Ref ref(ObjectId obj, uint8_t arg, uint8_t flags) {
    return makeRef(m_rec.objects(), obj, arg, flags);
  }
  Ref hostRef(uint64_t ptr, uint64_t bytes, uint8_t arg, HostAccess access) {
    return makeHostRef(m_rec.objects(), m_rec.resolveHost(ptr, bytes), arg, access, bytes, bytes);
  }

  ObjectId buffer(uint64_t handle, uint64_t size) {
    ObjectId m = m_rec.createHandle(ObjectKind::Mem, handle);
    Leaf l = call(ApiId::clCreateBuffer);
    l.args[2] = ArgAgg::of(size);
    l.refs.push_back(ref(m, kRefArgReturn, kRefCreate));
    m_rec.append(m_thread, std::move(l));
    return m;
  }
  ObjectId malloc(uint64_t ptr, uint64_t size, uint64_t pc = 0x401234) {
    uint32_t site = m_rec.internSite(&pc, 1);
    return m_rec.recordAlloc(m_thread, 0, ptr, size, 0, site, 50);
  }
  void free(uint64_t ptr) { m_rec.recordFree(m_thread, ptr); }
  /// Commands below carry `device` as their device timing (default: none).
  void write(ObjectId mem, uint64_t ptr, uint64_t bytes, const DeviceAgg& device = {}) {
    Leaf l = call(ApiId::clEnqueueWriteBuffer);
    l.args[4] = ArgAgg::of(bytes);
    l.refs.push_back(ref(mem, 1, kRefWrite));
    l.refs.push_back(hostRef(ptr, bytes, 5, HostAccess::Read));
    l.device = device;
    m_rec.append(m_thread, std::move(l));
  }
  void read(ObjectId mem, uint64_t ptr, uint64_t bytes, const DeviceAgg& device = {}) {
    Leaf l = call(ApiId::clEnqueueReadBuffer);
    l.args[4] = ArgAgg::of(bytes);
    l.refs.push_back(ref(mem, 1, kRefRead));
    l.refs.push_back(hostRef(ptr, bytes, 5, HostAccess::Write));
    l.device = device;
    m_rec.append(m_thread, std::move(l));
  }
  void kernel(ObjectId kernel, ObjectId mem, const DeviceAgg& device = {}) {
    Leaf l = call(ApiId::clEnqueueNDRangeKernel);
    l.refs.push_back(ref(kernel, 1, kRefRead));
    l.refs.push_back(ref(mem, kRefArgBound, kRefWrite));
    l.device = device;
    m_rec.append(m_thread, std::move(l));
  }
  /// A program's start-up: its platform query (loading the drivers: `enumerateNs`) and one
  /// context creation on `device` (`contextNs`), and when they began (the Startup record).
  ObjectId startup(uint64_t firstCallNs, uint64_t enumerateNs, uint64_t firstContextNs,
                   uint64_t contextNs, ObjectId device) {
    Leaf q = call(ApiId::clGetPlatformIDs);
    q.host = {};
    q.host.add(enumerateNs);
    m_rec.append(m_thread, std::move(q));
    ObjectId context = m_rec.createHandle(ObjectKind::Context, 0xc0);
    Leaf c = call(ApiId::clCreateContext);
    c.host = {};
    c.host.add(contextNs);
    c.args[1] = ArgAgg::of(1);
    c.refs.push_back(ref(device, 2, kRefRead));
    c.refs.push_back(ref(context, kRefArgReturn, kRefCreate));
    m_rec.append(m_thread, std::move(c));
    m_rec.noteStartup(firstCallNs, firstContextNs);
    return context;
  }
  void finish() { m_rec.finish(); }

 private:
  Recorder m_rec;
  uint32_t m_thread = 0;
  bool m_ok = false;
  uint64_t m_clockNs = 0;
};

/// The structure of a trace without counts: what must not depend on a loop's trip count.
inline void renderStructure(const Trace& t, uint32_t id, std::string* out) {
  const TraceNode& n = t.nodes[id];
  if (n.loop) {
    *out += "loop{";
    for (uint32_t b : n.body) renderStructure(t, b, out);
    *out += "}";
    return;
  }
  *out += t.leafName(n) + "(";
  for (const Ref& r : n.refs) *out += std::to_string(r.obj) + ":" + std::to_string(r.flags) + ",";
  *out += ")";
}
inline std::string structure(const Trace& t) {
  std::string s;
  for (const TraceThread& th : t.threads)
    for (uint32_t e : th.entries) renderStructure(t, e, &s);
  return s;
}

/// The device timing of one command as the shim records it: `ns` on the device when the
/// sampler's `weight` (TimeSampler::weight) is not 0, else a command it left untimed.
inline DeviceAgg deviceTiming(uint64_t weight, uint64_t ns) {
  if (weight) return DeviceAgg::command(ns, 0, ns / 10, weight);
  DeviceAgg d;
  d.unsampled = 1;
  return d;
}

inline uint64_t callCount(const Trace& t, const std::string& name) {
  uint64_t n = 0;
  for (const TraceNode& node : t.nodes)
    if (!node.loop && t.leafName(node) == name) n += node.host.count;
  return n;
}

}  // namespace hetopt::trace::testing
