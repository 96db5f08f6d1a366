// SPDX-License-Identifier: MIT
/** @file The recording side of a trace; see recorder.h and FORMAT.md.
 * Threads, handles, classifying host memory, modules and sites, segments, leaves; validation. */
#include "trace/recorder.h"

#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/check.h"
#include "common/clock.h"
#include "contracts/alloc_fn.h"
#include "trace/call_model.h"

namespace hetopt::trace {

// ---- Recorder -----------------------------------------------------------------------------------

namespace {

template <typename Map>
typename Map::iterator containing(Map& map, uint64_t p) {
  auto it = map.upper_bound(p);
  if (it == map.begin()) return map.end();
  --it;
  return p < it->second.end ? it : map.end();
}

}  // namespace

bool Recorder::open(const RecorderConfig& config, std::string* error) {
  m_config = config;
  if (!m_writer.open(config.path, config.header, error)) return false;
  m_startMono = m_lastCheckpoint = monotonicNs();
  m_finished = false;
  uint32_t programModule = 0;
  if (config.programAddress) emitModuleFor(config.programAddress, &programModule);
  return true;
}

uint64_t Recorder::elapsedNs() const { return monotonicNs() - m_startMono; }

uint32_t Recorder::thread(uint64_t tid) {
  auto it = m_threadByTid.find(tid);
  if (it != m_threadByTid.end()) return it->second;
  uint32_t index = static_cast<uint32_t>(m_threads.size());
  m_threads.push_back(new ThreadState(&m_objects, m_config.maxBody, m_config.stampsPerLeaf));
  m_threads.back()->tid = tid;
  m_threadByTid[tid] = index;
  ByteWriter w(&m_records);
  w.u8(static_cast<uint8_t>(RecordTag::Thread));
  w.var(index);
  w.var(tid);
  return index;
}

ObjectId Recorder::createHandle(ObjectKind kind, uint64_t handle) {
  ObjectId id = m_objects.create(kind);
  if (handle) m_handles[handle] = id;
  return id;
}

ObjectId Recorder::handle(ObjectKind kind, uint64_t handle, bool* created) {
  if (created) *created = false;
  if (!handle) return kNoObject;
  auto it = m_handles.find(handle);
  if (it != m_handles.end() && m_objects.kind(it->second) == kind) return it->second;
  if (created) *created = true;
  return createHandle(kind, handle);
}

ObjectId Recorder::findHandle(uint64_t handle) const {
  auto it = m_handles.find(handle);
  return it == m_handles.end() ? kNoObject : it->second;
}

void Recorder::classify(uint64_t address, ObjectInfo* info) {
  info->fields |= kObjRegion;
  info->region = RegionClass::Unknown;
  if (!m_config.classifyRegions) return;
  // The calling thread's own stack first: /proc/self/maps names only the main thread's.
  pthread_attr_t attr;
  if (m_callerStackHi) {
    if (address >= m_callerStackLo && address < m_callerStackHi) {
      info->region = RegionClass::Stack;
      info->mapStart = m_callerStackLo;
      info->mapEnd = m_callerStackHi;
      info->mapName = "[stack]";
      return;
    }
  } else if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* base = nullptr;
    size_t size = 0;
    pthread_attr_getstack(&attr, &base, &size);
    pthread_attr_destroy(&attr);
    uint64_t lo = reinterpret_cast<uint64_t>(base);
    if (address >= lo && address < lo + size) {
      info->region = RegionClass::Stack;
      info->mapStart = lo;
      info->mapEnd = lo + size;
      info->mapName = "[stack]";
      return;
    }
  }
  int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  std::string text;
  char buf[8192];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    unsigned long long lo = 0, hi = 0, off = 0;
    char perms[8] = {};
    int nameAt = 0;
    if (sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %n", &lo, &hi, perms, &off, &nameAt) < 4)
      continue;
    if (address < lo || address >= hi) continue;
    std::string name =
        nameAt > 0 && static_cast<size_t>(nameAt) <= line.size() ? line.substr(nameAt) : "";
    info->mapStart = lo;
    info->mapEnd = hi;
    info->mapOffset = off;
    info->mapName = name;
    if (name == "[heap]")
      info->region = RegionClass::Heap;
    else if (name.rfind("[stack", 0) == 0)
      info->region = RegionClass::Stack;
    else if (!name.empty() && name[0] == '/')
      info->region = RegionClass::File;
    else
      info->region = RegionClass::Mmap;
    break;
  }
  // Static data: inside a loaded module's range (.data/.bss), whatever the mapping says.
  uint32_t module = 0;
  if (m_config.modules) {
    ModuleRecord m;
    if (m_config.modules(address, &m) && address >= m.start && address < m.end) {
      info->region = RegionClass::Static;
      emitModuleFor(address, &module);
    }
  }
  if (module) {
    info->fields |= kObjModule;
    info->module = module;
  }
}

HostTarget Recorder::resolveHost(uint64_t ptr, uint64_t len) {
  if (!ptr) return {};
  auto seg = containing(m_segments, ptr);
  if (seg != m_segments.end()) return {seg->second.obj, ptr - seg->first};
  auto svm = containing(m_svm, ptr);
  if (svm != m_svm.end()) return {svm->second.obj, ptr - svm->first};
  const uint64_t end = ptr + std::max<uint64_t>(len, 1);
  // An untracked region overlapping [ptr, end) is the same memory: widen it.
  auto it = m_untracked.upper_bound(ptr);
  if (it != m_untracked.begin()) {
    auto prev = std::prev(it);
    if (ptr < prev->second.end) {
      if (end > prev->second.end) {
        prev->second.end = end;
        ObjectInfo& info = m_objects.info(prev->second.obj);
        info.size = end - prev->first;
        m_objects.touch(prev->second.obj);
      }
      return {prev->second.obj, ptr - prev->first};
    }
  }
  if (it != m_untracked.end() && it->first < end) {
    // Starts inside [ptr, end): re-key the region at the lower start (same object).
    Range r = it->second;
    m_untracked.erase(it);
    r.end = std::max(r.end, end);
    m_untracked[ptr] = r;
    ObjectInfo& info = m_objects.info(r.obj);
    info.address = ptr;
    info.size = r.end - ptr;
    m_objects.touch(r.obj);
    return {r.obj, 0};
  }
  ObjectId id = m_objects.create(ObjectKind::Untracked);
  ObjectInfo& info = m_objects.info(id);
  info.fields |= kObjAddress;
  info.address = ptr;
  info.size = end - ptr;
  classify(ptr, &m_objects.info(id));
  m_untracked[ptr] = Range{end, id};
  return {id, 0};
}

void Recorder::emitModuleFor(uint64_t address, uint32_t* moduleId) {
  *moduleId = 0;
  if (!m_config.modules) return;
  ModuleRecord m;
  if (!m_config.modules(address, &m)) return;
  auto key = std::make_pair(m.start, m.path);
  auto it = m_modules.find(key);
  if (it != m_modules.end()) {
    *moduleId = it->second;
    return;
  }
  uint32_t id = static_cast<uint32_t>(m_modules.size()) + 1;
  m_modules[key] = id;
  m_moduleRecords.push_back(m);
  writeModule(id);
  *moduleId = id;
}

void Recorder::writeModule(uint32_t id) {
  const ModuleRecord& m = m_moduleRecords[id - 1];
  ByteWriter w(&m_records);
  w.u8(static_cast<uint8_t>(RecordTag::Module));
  w.var(id - 1);
  w.var(m.start);
  w.var(m.end);
  w.var(m.bias);
  w.str(m.path);
  w.str(m.buildId);
}

void Recorder::writeSite(uint32_t id, const std::vector<uint64_t>& pcs) {
  std::vector<uint32_t> modules(pcs.size());
  for (size_t i = 0; i < pcs.size(); ++i) emitModuleFor(pcs[i], &modules[i]);
  ByteWriter w(&m_records);
  w.u8(static_cast<uint8_t>(RecordTag::Site));
  w.var(id - 1);
  w.var(pcs.size());
  for (size_t i = 0; i < pcs.size(); ++i) {
    w.var(pcs[i]);
    w.var(modules[i]);  // module id + 1, 0: none
  }
}

uint32_t Recorder::internSite(const uint64_t* pcs, unsigned depth) {
  std::vector<uint64_t> key(pcs, pcs + depth);
  auto it = m_sites.find(key);
  if (it != m_sites.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(m_sites.size()) + 1;
  writeSite(id, key);
  m_sites.emplace(std::move(key), id);
  return id;
}

ObjectId Recorder::createSegment(uint64_t ptr, uint64_t size, uint32_t site, uint8_t allocFn) {
  auto stale = m_segments.find(ptr);
  if (stale != m_segments.end()) {
    m_segments.erase(stale);
  }
  ObjectId id = m_objects.create(ObjectKind::Segment);
  ObjectInfo& info = m_objects.info(id);
  info.fields = kObjAddress | kObjSite;
  info.address = ptr;
  info.size = size;
  info.site = site;
  info.allocFn = allocFn;
  m_segments[ptr] = Range{ptr + std::max<uint64_t>(size, 1), id};
  return id;
}

ObjectId Recorder::recordAlloc(uint32_t thread, uint8_t allocFn, uint64_t ptr, uint64_t size,
                               uint64_t alignment, uint32_t site, uint64_t hostNs, uint64_t atNs) {
  ObjectId id = createSegment(ptr, size, site, allocFn);

  Leaf leaf;
  leaf.type = LeafType::Alloc;
  leaf.code = allocFn;
  leaf.site = site;
  leaf.thread = thread;
  leaf.host.add(hostNs);
  stamp(leaf, atNs ? atNs : monotonicNs(), hostNs);
  leaf.args = {ArgAgg::of(size), ArgAgg::of(alignment)};
  leaf.refs.push_back(makeRef(m_objects, id, kRefArgReturn, kRefCreate));
  append(thread, std::move(leaf));
  return id;
}

bool Recorder::recordFree(uint32_t thread, uint64_t ptr, uint64_t atNs) {
  auto it = m_segments.find(ptr);
  if (it == m_segments.end()) return false;
  ObjectId id = it->second.obj;
  m_segments.erase(it);
  Leaf leaf;
  leaf.type = LeafType::Free;
  leaf.thread = thread;
  leaf.host.add(0);
  stamp(leaf, atNs ? atNs : monotonicNs(), 0);
  leaf.refs.push_back(makeRef(m_objects, id, 0, kRefDestroy));
  append(thread, std::move(leaf));
  return true;
}

void Recorder::recordRealloc(uint32_t thread, uint64_t oldPtr, uint64_t newPtr, uint64_t size,
                             uint32_t site, uint64_t hostNs, uint64_t atNs) {
  ObjectId oldObj = kNoObject;
  if (oldPtr) {
    auto it = m_segments.find(oldPtr);
    if (it != m_segments.end()) {
      oldObj = it->second.obj;
      m_segments.erase(it);
    }
  }
  if (!site && !oldObj) return;  // neither side tracked
  Leaf leaf;
  leaf.type = LeafType::Realloc;
  leaf.code = static_cast<uint16_t>(AllocFn::Realloc);
  leaf.site = site;
  leaf.thread = thread;
  leaf.host.add(hostNs);
  stamp(leaf, atNs ? atNs : monotonicNs(), hostNs);
  leaf.args = {ArgAgg::of(size), ArgAgg::of(0)};
  if (oldObj) leaf.refs.push_back(makeRef(m_objects, oldObj, 0, kRefDestroy));
  if (site) {
    ObjectId id = createSegment(newPtr, size, site, static_cast<uint8_t>(AllocFn::Realloc));
    if (oldObj) {
      ObjectInfo& info = m_objects.info(id);
      info.fields |= kObjParent;
      info.related = oldObj;
    }
    leaf.refs.push_back(makeRef(m_objects, id, kRefArgReturn, kRefCreate));
  }
  append(thread, std::move(leaf));
}

ObjectId Recorder::addSvm(uint64_t ptr, uint64_t size) {
  ObjectId id = m_objects.create(ObjectKind::Svm);
  ObjectInfo& info = m_objects.info(id);
  info.fields = kObjAddress;
  info.address = ptr;
  info.size = size;
  m_svm[ptr] = Range{ptr + std::max<uint64_t>(size, 1), id};
  return id;
}

ObjectId Recorder::removeSvm(uint64_t ptr) {
  auto it = m_svm.find(ptr);
  if (it == m_svm.end()) return kNoObject;
  ObjectId id = it->second.obj;
  m_svm.erase(it);
  return id;
}

uint32_t Recorder::append(uint32_t thread, Leaf&& leaf, bool wantSlot) {
  if (thread >= m_threads.size() || m_finished) return 0;
  leaf.thread = thread;
  ++m_events;
  uint32_t slot = m_threads[thread]->compressor.append(std::move(leaf), wantSlot);
  afterAppend(thread);
  HETOPT_VALIDATE(*this, "recorder check failed");
  return slot;
}

void Recorder::deliver(uint32_t thread, uint32_t slot, const DeviceAgg* timing,
                       uint64_t deviceStart, uint64_t deviceEnd) {
  if (thread < m_threads.size())
    m_threads[thread]->compressor.deliver(slot, timing, deviceStart, deviceEnd);
}

void Recorder::noteClock(uint64_t queue, ClockMethod method, int64_t offsetNs,
                         uint64_t uncertaintyNs) {
  const ObjectId id = findHandle(queue);
  if (id == kNoObject) return;
  m_clocks[id] = Clock{method, offsetNs, uncertaintyNs, false};
  m_clocksChanged = true;
}

void Recorder::writeClocks() {
  if (!m_clocksChanged) return;
  m_clocksChanged = false;
  for (auto& [id, c] : m_clocks) {
    if (c.written) continue;
    c.written = true;
    emitObject(&m_records, id, true);
    ByteWriter w(&m_records);
    w.u8(static_cast<uint8_t>(RecordTag::Clock));
    w.var(id);
    w.u8(static_cast<uint8_t>(c.method));
    w.var(zigzag(c.offsetNs));
    w.var(c.uncertaintyNs);
  }
}

void Recorder::afterAppend(uint32_t thread) {
  writeFinal(thread, false);
  if (m_records.size() >= m_config.chunkBytes) {
    checkpoint(true);
    return;
  }
  // The clock only every few events: a tight loop of calls costs no extra syscall-free vDSO call
  // per event, and a checkpoint a little late is fine.
  if ((m_events & 15) == 0 && monotonicNs() - m_lastCheckpoint >= m_config.checkpointNs)
    checkpoint(true);
}

void Recorder::writeFinal(uint32_t thread, bool all) {
  Compressor& c = m_threads[thread]->compressor;
  std::vector<NodeId> roots = c.takeFinal(all);
  if (roots.empty()) return;
  writeEntries(&m_records, thread, c, roots, true);
  c.release(roots);
}

void Recorder::emitObject(std::string* out, ObjectId id, bool persistent, int depth) {
  uint32_t& emitted = m_objects.emittedStamp(id);
  if (emitted == m_objects.stamp(id)) return;
  const ObjectInfo& info = m_objects.info(id);
  ObjectId related = info.related;
  if (related && depth < 4) emitObject(out, related, persistent, depth + 1);
  ByteWriter w(out);
  w.u8(static_cast<uint8_t>(RecordTag::Object));
  w.var(id);
  w.u8(static_cast<uint8_t>(m_objects.kind(id)));
  uint8_t fields = info.fields & ~(related ? 0 : kObjParent);
  w.u8(fields);
  if (fields & kObjAddress) {
    w.var(info.address);
    w.var(info.size);
  }
  if (fields & kObjSite) {
    w.var(info.site);
    w.u8(info.allocFn);
  }
  if (fields & kObjLabel) w.str(info.label);
  if (fields & kObjRegion) {
    w.u8(static_cast<uint8_t>(info.region));
    w.var(info.mapStart);
    w.var(info.mapEnd);
    w.var(info.mapOffset);
    w.str(info.mapName);
  }
  if (fields & kObjParent) w.var(related);
  if (fields & kObjModule) w.var(info.module);
  if (persistent) emitted = m_objects.stamp(id);
}

void Recorder::emitObjectsOf(std::string* out, const Compressor& c, NodeId id, bool persistent) {
  const Node& n = c.node(id);
  if (n.loop) {
    for (NodeId b : n.body) emitObjectsOf(out, c, b, persistent);
    return;
  }
  for (const Ref& r : n.leaf.refs)
    if (r.obj) emitObject(out, r.obj, persistent);
}

void Recorder::writeNode(std::string* out, const Compressor& c, NodeId id) {
  const Node& n = c.node(id);
  ByteWriter w(out);
  if (n.loop) {
    w.u8(static_cast<uint8_t>(NodeTag::Loop));
    w.var(n.iterations);
    w.var(n.instances);
    w.var(n.body.size());
    for (NodeId b : n.body) writeNode(out, c, b);
    return;
  }
  const Leaf& l = n.leaf;
  w.u8(static_cast<uint8_t>(NodeTag::Leaf));
  w.u8(static_cast<uint8_t>(l.type));
  w.var(l.code);
  w.var(l.site);
  w.var(l.host.count);
  w.var(l.host.total);
  w.var(l.host.min);
  w.var(l.host.max);
  w.var(l.device.exec.count);
  if (l.device.exec.count) {
    w.var(l.device.exec.total);
    w.var(l.device.exec.min);
    w.var(l.device.exec.max);
    w.var(l.device.queuedToSubmit);
    w.var(l.device.submitToStart);
  }
  w.var(l.device.missing);
  w.var(l.device.unsampled);
  if (l.device.unsampled && l.device.exec.count) {
    w.var(l.device.weight);
    w.var(l.device.weightedExec);
    w.var(l.device.weightedQueuedToSubmit);
    w.var(l.device.weightedSubmitToStart);
  }
  auto arg = [&](const ArgAgg& a) {
    w.var(a.first);
    w.u8(a.varies ? 1 : 0);
    if (a.varies) {
      w.var(a.min);
      w.var(a.max);
    }
  };
  w.var(l.args.size());
  for (const ArgAgg& a : l.args) arg(a);
  arg(l.result);
  w.var(l.refs.size());
  for (const Ref& r : l.refs) {
    w.var(r.obj);
    w.u8(r.arg);
    w.u8(r.flags);
    w.u8(static_cast<uint8_t>(r.access));
    w.var(r.vFirst);
    w.var(r.vLast);
    if (r.flags & kRefHost) {
      w.var(r.offMin);
      w.var(r.endMax);
      w.var(r.bytes);
    }
  }
  // Times of the first calls: host starts as deltas (the calls are in order), device starts as
  // signed deltas (an out-of-order queue may run them in another order).
  w.var(l.stamps.size());
  uint64_t prevStart = 0, prevDevice = 0;
  bool firstDevice = true;
  for (const Stamp& s : l.stamps) {
    w.var(s.startNs - std::min(prevStart, s.startNs));
    prevStart = s.startNs;
    w.var(s.hostNs);
    const bool device = s.deviceEnd != 0;
    w.u8(device ? 1 : 0);
    if (!device) continue;
    w.var(firstDevice ? s.deviceStart : zigzag(static_cast<int64_t>(s.deviceStart - prevDevice)));
    w.var(s.deviceEnd - s.deviceStart);
    prevDevice = s.deviceStart;
    firstDevice = false;
  }
  w.var(l.endNs);
}

void Recorder::writeEntries(std::string* out, uint32_t thread, const Compressor& c,
                            const std::vector<NodeId>& roots, bool persistent) {
  for (NodeId id : roots) emitObjectsOf(out, c, id, persistent);
  for (NodeId id : roots) {
    ByteWriter w(out);
    w.u8(static_cast<uint8_t>(RecordTag::Entry));
    w.var(thread);
    writeNode(out, c, id);
  }
}

void Recorder::checkpoint(bool withTail, const std::string* execProgram) {
  m_lastCheckpoint = monotonicNs();
  writeClocks();
  if (m_writer.failed()) {  // nothing more can be saved: keep memory flat
    m_records.clear();
    return;
  }
  std::string records;
  if (!m_records.empty()) {
    ByteWriter w(&records);
    w.u8(static_cast<uint8_t>(RecordTag::Time));
    w.var(elapsedNs());
    records += m_records;
    m_records.clear();
  }
  std::string tail;
  if (withTail) {
    ByteWriter w(&tail);
    w.u8(static_cast<uint8_t>(RecordTag::Time));
    w.var(elapsedNs());
    for (uint32_t t = 0; t < m_threads.size(); ++t) {
      const Compressor& c = m_threads[t]->compressor;
      writeEntries(&tail, t, c, c.window(), false);
    }
    if (execProgram) {
      w.u8(static_cast<uint8_t>(RecordTag::Exec));
      w.var(elapsedNs());
      w.str(std::string_view(*execProgram).substr(0, 4096));  // the reader's bound
    }
  }
  if (!m_writer.write(records, withTail ? &tail : nullptr) && m_writer.failed() &&
      m_config.writeFailed)
    m_config.writeFailed(m_config.path, m_writer.error());
}

void Recorder::threadExit(uint32_t thread) {
  if (thread < m_threads.size() && !m_finished) writeFinal(thread, true);
}

void Recorder::finish() {
  if (m_finished || !m_writer.isOpen()) return;
  for (uint32_t t = 0; t < m_threads.size(); ++t) writeFinal(t, true);
  writeClocks();
  ByteWriter w(&m_records);
  if (m_costCalls) {
    w.u8(static_cast<uint8_t>(RecordTag::RecordingCost));
    w.var(m_costCalls);
    w.var(m_costNs);
  }
  if (m_firstCallNs) {
    w.u8(static_cast<uint8_t>(RecordTag::Startup));
    w.var(m_firstCallNs);
    w.var(m_firstContextNs);
  }
  w.u8(static_cast<uint8_t>(RecordTag::End));
  w.var(elapsedNs());
  w.var(m_events);
  checkpoint(false);
  m_writer.close();
  m_finished = true;
}

bool Recorder::restartInChild(const RecorderConfig& config, std::string* error) {
  m_writer.abandon();
  for (ThreadState* t : m_threads) {
    // The windows hold the parent's events: the parent writes them. Leaked nodes are few.
    t->compressor.takeFinal(true);
  }
  m_threads.clear();
  m_threadByTid.clear();
  m_records.clear();
  m_objects.resetEmitted();
  for (auto& [id, c] : m_clocks) c.written = false;  // the child's file needs them too
  m_clocksChanged = !m_clocks.empty();
  m_events = 0;
  ++m_generation;
  if (!open(config, error)) return false;
  // Segments alive in the child name sites and modules by the ids they had: define them again.
  for (uint32_t id = 1; id <= m_moduleRecords.size(); ++id) writeModule(id);
  std::vector<const std::vector<uint64_t>*> byId(m_sites.size());  // sites must come in id order
  for (const auto& [pcs, id] : m_sites) byId[id - 1] = &pcs;
  for (uint32_t id = 1; id <= byId.size(); ++id) writeSite(id, *byId[id - 1]);
  return true;
}

// ---- validation -----------------------------------------------------------------------------

bool Recorder::validate(char* why, size_t whyBytes) const {
  if (!m_objects.validate(why, whyBytes)) return false;
  struct Live {
    const char* name;
    const std::map<uint64_t, Range>* map;
    ObjectKind kind;
  };
  for (const Live& l : {Live{"segment", &m_segments, ObjectKind::Segment},
                        Live{"SVM allocation", &m_svm, ObjectKind::Svm},
                        Live{"untracked region", &m_untracked, ObjectKind::Untracked}}) {
    for (const auto& [start, range] : *l.map) {
      if (!m_objects.valid(range.obj) || m_objects.kind(range.obj) != l.kind)
        return invalid(why, whyBytes, "the %s at %#llx names object %u of another kind", l.name,
                       static_cast<unsigned long long>(start), range.obj);
      if (range.end <= start || m_objects.info(range.obj).address != start)
        return invalid(why, whyBytes, "the %s at %#llx is object %u at %#llx, ending at %#llx",
                       l.name, static_cast<unsigned long long>(start), range.obj,
                       static_cast<unsigned long long>(m_objects.info(range.obj).address),
                       static_cast<unsigned long long>(range.end));
    }
  }
  for (const auto& [handle, id] : m_handles)
    if (!m_objects.valid(id))
      return invalid(why, whyBytes, "handle %#llx names no object (%u)",
                     static_cast<unsigned long long>(handle), id);
  for (const ThreadState* t : m_threads)
    for (NodeId id : t->compressor.window())
      if (!validateNode(t->compressor, id, why, whyBytes)) return false;
  return true;
}

bool Recorder::validateNode(const Compressor& c, NodeId id, char* why, size_t whyBytes) const {
  const Node& n = c.node(id);
  if (!n.live) return invalid(why, whyBytes, "node %u in a window is not live", id);
  if (n.loop) {
    for (NodeId b : n.body)
      if (!validateNode(c, b, why, whyBytes)) return false;
    return true;
  }
  for (const Ref& r : n.leaf.refs) {
    if (r.obj == kNoObject) continue;
    if (!m_objects.valid(r.obj))
      return invalid(why, whyBytes, "node %u refers to no object (%u)", id, r.obj);
    const uint32_t now = m_objects.version(r.obj);
    if (r.vFirst > r.vLast || r.vLast > now)
      return invalid(why, whyBytes,
                     "node %u uses object %u at versions %u..%u; it is at version %u", id, r.obj,
                     r.vFirst, r.vLast, now);
  }
  return true;
}

}  // namespace hetopt::trace
