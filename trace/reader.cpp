// SPDX-License-Identifier: MIT
/** @file Trace reading and summary; see reader.h and FORMAT.md.
 * The Parser over chunks and records, lending sampled-out leaves their means, summarize(). */
#include "trace/reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <memory>

#include "api_table.h"
#include "contracts/alloc_fn.h"
#include "hetopt/version.h"

namespace hetopt::trace {
namespace {

constexpr int kMaxDepth = 64;
constexpr size_t kMaxNodes = 50u << 20;

class Parser {
 public:
  Parser(Trace* t, std::string* error) : m_t(t), m_error(error) {}

  bool fail(const std::string& msg) {
    if (m_error->empty()) *m_error = msg;
    return false;
  }

  /// Parses one chunk's records. Tail chunks go to a provisional buffer.
  bool records(const unsigned char* p, size_t n, bool tail, size_t chunkIndex) {
    m_chunk = chunkIndex;
    if (m_haveTail) {  // a later chunk supersedes the previous tail snapshot
      m_t->nodes.resize(m_tailNodeStart);
      m_tailEntries.clear();
      m_tailExec = {};
      m_haveTail = false;
    }
    if (tail) {
      m_haveTail = true;
      m_tailNodeStart = m_t->nodes.size();
    }
    ByteReader r(p, n);
    while (!r.atEnd()) {
      uint8_t tag = r.u8();
      switch (static_cast<RecordTag>(tag)) {
        case RecordTag::Thread: {
          uint64_t index = r.varMax(1u << 20), tid = r.var();
          if (!r.ok()) break;
          if (index > m_t->threads.size()) return fail(where() + "thread record out of order");
          if (index == m_t->threads.size()) m_t->threads.push_back({});
          m_t->threads[index].index = static_cast<uint32_t>(index);
          m_t->threads[index].tid = tid;
          break;
        }
        case RecordTag::Module: {
          uint64_t id = r.varMax(1u << 20);
          TraceModule m;
          m.start = r.var();
          m.end = r.var();
          m.bias = r.var();
          m.path = r.str(4096);
          m.buildId = r.str(256);
          if (!r.ok()) break;
          if (id > m_t->modules.size()) return fail(where() + "module record out of order");
          if (id == m_t->modules.size())
            m_t->modules.push_back(std::move(m));
          else
            m_t->modules[id] = std::move(m);
          break;
        }
        case RecordTag::Site: {
          uint64_t id = r.varMax(1u << 24);
          uint64_t depth = r.varMax(64);
          TraceSite s;
          for (uint64_t i = 0; i < depth && r.ok(); ++i) {
            TraceFrame f;
            f.pc = r.var();
            uint64_t module = r.varMax(m_t->modules.size());
            f.module = static_cast<int32_t>(module) - 1;
            f.offset = f.module >= 0 ? f.pc - m_t->modules[f.module].bias : f.pc;
            s.frames.push_back(f);
          }
          if (!r.ok()) break;
          if (id > m_t->sites.size()) return fail(where() + "site record out of order");
          if (id == m_t->sites.size())
            m_t->sites.push_back(std::move(s));
          else
            m_t->sites[id] = std::move(s);
          break;
        }
        case RecordTag::Object: {
          TraceObject o;
          o.id = static_cast<ObjectId>(r.varMax(UINT32_MAX));
          uint8_t kind = r.u8();
          if (kind >= static_cast<uint8_t>(ObjectKind::Count))
            return fail(where() + "unknown object kind");
          o.kind = static_cast<ObjectKind>(kind);
          ObjectInfo& i = o.info;
          i.fields = r.u8();
          if (i.fields & ~0x3f) return fail(where() + "unknown object fields");
          if (i.fields & kObjAddress) {
            i.address = r.var();
            i.size = r.var();
          }
          if (i.fields & kObjSite) {
            i.site = static_cast<uint32_t>(r.varMax(m_t->sites.size()));
            i.allocFn = r.u8();
          }
          if (i.fields & kObjLabel) i.label = r.str(4096);
          if (i.fields & kObjRegion) {
            uint8_t c = r.u8();
            if (c > static_cast<uint8_t>(RegionClass::File))
              return fail(where() + "unknown region class");
            i.region = static_cast<RegionClass>(c);
            i.mapStart = r.var();
            i.mapEnd = r.var();
            i.mapOffset = r.var();
            i.mapName = r.str(4096);
          }
          if (i.fields & kObjParent) i.related = static_cast<ObjectId>(r.varMax(UINT32_MAX));
          if (i.fields & kObjModule)
            i.module = static_cast<uint32_t>(r.varMax(m_t->modules.size()));
          if (!r.ok()) break;
          if (o.id == kNoObject) return fail(where() + "object id 0");
          m_t->objects[o.id] = std::move(o);
          break;
        }
        case RecordTag::Entry: {
          uint64_t thread = r.var();
          if (!r.ok()) break;
          if (thread >= m_t->threads.size()) return fail(where() + "entry of an undeclared thread");
          uint32_t node = 0;
          if (!parseNode(r, static_cast<uint32_t>(thread), tail, 0, &node)) return false;
          if (tail)
            m_tailEntries.emplace_back(static_cast<uint32_t>(thread), node);
          else
            m_t->threads[thread].entries.push_back(node);
          break;
        }
        case RecordTag::End: {
          uint64_t duration = r.var();
          r.var();  // events
          if (!r.ok()) break;
          m_t->durationNs = duration;
          m_t->complete = true;
          break;
        }
        case RecordTag::RecordingCost: {
          if (m_t->formatVersion < 3)
            return fail(where() + "unknown record tag " + std::to_string(tag));
          const uint64_t calls = r.var(), ns = r.var();
          if (!r.ok()) break;
          m_t->recordingSampledCalls = calls;
          m_t->recordingSampledNs = ns;
          break;
        }
        case RecordTag::Startup: {
          if (m_t->formatVersion < 4)
            return fail(where() + "unknown record tag " + std::to_string(tag));
          const uint64_t first = r.var(), context = r.var();
          if (!r.ok()) break;
          m_t->firstCallNs = first;
          m_t->firstContextNs = context;
          break;
        }
        case RecordTag::Clock: {
          if (m_t->formatVersion < kTimelineFormatVersion)
            return fail(where() + "unknown record tag " + std::to_string(tag));
          const auto id = static_cast<ObjectId>(r.varMax(UINT32_MAX));
          const uint8_t method = r.u8();
          TraceClock c;
          c.offsetNs = unzigzag(r.var());
          c.uncertaintyNs = r.var();
          if (!r.ok()) break;
          if (!m_t->objects.count(id))
            return fail(where() + "clock of undefined object " + std::to_string(id));
          if (method < 1 || method > 2)
            return fail(where() + "unknown clock method " + std::to_string(method));
          c.method = static_cast<ClockMethod>(method);
          m_t->clocks[id] = c;
          break;
        }
        case RecordTag::Exec: {
          // Only a tail says it: an exec that failed is superseded by the next checkpoint.
          if (m_t->formatVersion < kExecFormatVersion || !tail)
            return fail(where() + "unknown record tag " + std::to_string(tag));
          m_tailExec.ns = r.var();
          m_tailExec.program = r.str(4096);
          m_tailExec.seen = r.ok();
          break;
        }
        case RecordTag::Time: {
          uint64_t t = r.var();
          if (r.ok() && !m_t->complete) m_t->durationNs = t;
          break;
        }
        default:
          return fail(where() + "unknown record tag " + std::to_string(tag));
      }
      if (!r.ok()) return fail(where() + "record cut short");
    }
    return true;
  }

  void finishTail() {
    for (const auto& [thread, node] : m_tailEntries) m_t->threads[thread].entries.push_back(node);
    if (m_haveTail) m_t->complete = false;
    if (m_haveTail && m_tailExec.seen) {
      m_t->endedByExec = true;
      m_t->execNs = m_tailExec.ns;
      m_t->execProgram = m_tailExec.program;
    }
    m_tailEntries.clear();
    m_tailExec = {};
    m_haveTail = false;
  }

 private:
  std::string where() const { return "corrupt trace: chunk " + std::to_string(m_chunk) + ": "; }

  bool readArg(ByteReader& r, ArgAgg* a) {
    a->first = r.var();
    uint8_t v = r.u8();
    if (v > 1) return fail(where() + "bad argument encoding");
    a->varies = v != 0;
    if (a->varies) {
      a->min = r.var();
      a->max = r.var();
    } else {
      a->min = a->max = a->first;
    }
    return true;
  }

  /// A leaf's times of its first calls (format 6; FORMAT.md "Nodes").
  bool readStamps(ByteReader& r, TraceNode* n) {
    const uint64_t count = r.varMax(1u << 20);
    if (!r.ok()) return fail(where() + "leaf cut short");
    if (count > n->host.count) return fail(where() + "more call times than calls");
    uint64_t start = 0, device = 0;
    bool firstDevice = true;
    for (uint64_t i = 0; i < count && r.ok(); ++i) {
      Stamp s;
      start += r.var();
      s.startNs = start;
      s.hostNs = r.var();
      const uint8_t hasDevice = r.u8();
      if (hasDevice > 1) return fail(where() + "bad device time flag");
      if (hasDevice) {
        const uint64_t v = r.var();
        device = firstDevice ? v : device + static_cast<uint64_t>(unzigzag(v));
        firstDevice = false;
        s.deviceStart = device;
        s.deviceEnd = device + r.var();
        if (s.deviceEnd == 0) s.deviceEnd = 1;  // 0 means "none"
      }
      n->stamps.push_back(s);
    }
    n->endNs = r.var();
    return r.ok() || fail(where() + "leaf times cut short");
  }

  bool parseNode(ByteReader& r, uint32_t thread, bool provisional, int depth, uint32_t* out) {
    if (depth > kMaxDepth) return fail(where() + "loops nested too deeply");
    if (m_t->nodes.size() >= kMaxNodes) return fail(where() + "too many nodes");
    uint8_t tag = r.u8();
    TraceNode n;
    n.thread = thread;
    n.provisional = provisional;
    if (tag == static_cast<uint8_t>(NodeTag::Loop)) {
      n.loop = true;
      n.iterations = r.var();
      n.instances = r.var();
      uint64_t len = r.varMax(1u << 16);
      if (!r.ok()) return fail(where() + "loop cut short");
      if (len == 0) return fail(where() + "empty loop body");
      for (uint64_t i = 0; i < len; ++i) {
        uint32_t child = 0;
        if (!parseNode(r, thread, provisional, depth + 1, &child)) return false;
        n.body.push_back(child);
      }
    } else if (tag == static_cast<uint8_t>(NodeTag::Leaf)) {
      uint8_t type = r.u8();
      if (type > static_cast<uint8_t>(LeafType::Realloc))
        return fail(where() + "unknown leaf type");
      n.type = static_cast<LeafType>(type);
      n.code = static_cast<uint16_t>(r.varMax(0xffff));
      n.site = static_cast<uint32_t>(r.varMax(m_t->sites.size()));
      n.host.count = r.var();
      n.host.total = r.var();
      n.host.min = r.var();
      n.host.max = r.var();
      n.device.exec.count = r.var();
      if (n.device.exec.count) {
        n.device.exec.total = r.var();
        n.device.exec.min = r.var();
        n.device.exec.max = r.var();
        n.device.queuedToSubmit = r.var();
        n.device.submitToStart = r.var();
      }
      n.device.missing = r.var();
      if (m_t->formatVersion >= 2) {
        n.device.unsampled = r.var();
        if (n.device.unsampled && n.device.exec.count) {
          n.device.weight = r.var();
          n.device.weightedExec = r.var();
          n.device.weightedQueuedToSubmit = r.var();
          n.device.weightedSubmitToStart = r.var();
        }
      }
      uint64_t numArgs = r.varMax(64);
      if (!r.ok()) return fail(where() + "leaf cut short");
      if (n.type == LeafType::Call) {
        if (n.code >= api::kApiCount)
          return fail(where() + "unknown OpenCL function id " + std::to_string(n.code));
        if (numArgs != api::apiInfo(static_cast<api::ApiId>(n.code)).numArgs)
          return fail(where() + "argument count does not match " +
                      api::apiName(static_cast<api::ApiId>(n.code)));
      } else if (n.code >= kAllocFnCount) {
        return fail(where() + "unknown allocator id");
      }
      n.args.resize(numArgs);
      for (ArgAgg& a : n.args)
        if (!readArg(r, &a)) return false;
      if (!readArg(r, &n.result)) return false;
      uint64_t numRefs = r.varMax(256);
      for (uint64_t i = 0; i < numRefs && r.ok(); ++i) {
        Ref ref;
        ref.obj = static_cast<ObjectId>(r.varMax(UINT32_MAX));
        ref.arg = r.u8();
        ref.flags = r.u8();
        uint8_t access = r.u8();
        if (access > static_cast<uint8_t>(HostAccess::Unmap))
          return fail(where() + "unknown host access");
        ref.access = static_cast<HostAccess>(access);
        ref.vFirst = static_cast<uint32_t>(r.varMax(UINT32_MAX));
        ref.vLast = static_cast<uint32_t>(r.varMax(UINT32_MAX));
        if (ref.flags & kRefHost) {
          ref.offMin = r.var();
          ref.endMax = r.var();
          ref.bytes = r.var();
        }
        if (!r.ok()) break;
        if (ref.obj != kNoObject && !m_t->objects.count(ref.obj))
          return fail(where() + "reference to undefined object " + std::to_string(ref.obj));
        n.refs.push_back(ref);
      }
      if (m_t->formatVersion >= kTimelineFormatVersion && !readStamps(r, &n)) return false;
    } else {
      return fail(where() + "unknown node tag " + std::to_string(tag));
    }
    if (!r.ok()) return fail(where() + "node cut short");
    *out = static_cast<uint32_t>(m_t->nodes.size());
    m_t->nodes.push_back(std::move(n));
    return true;
  }

  Trace* m_t;
  std::string* m_error;
  size_t m_chunk = 0;
  bool m_haveTail = false;
  size_t m_tailNodeStart = 0;
  std::vector<std::pair<uint32_t, uint32_t>> m_tailEntries;
  struct {
    bool seen = false;
    uint64_t ns = 0;
    std::string program;
  } m_tailExec;  ///< the tail's Exec record
};

/// Leaves whose commands were all sampled out (a short loop over calls the sampler had already
/// seen many of) borrow the per-command means of the timed leaves with the same sampler key: the
/// same function on the same OpenCL objects (trace/time_sampler.h).
void lendSampledMeans(Trace* t) {
  bool any = false;
  for (const TraceNode& n : t->nodes)
    any =
        any || (!n.loop && n.type == LeafType::Call && !n.device.exec.count && n.device.unsampled);
  if (!any) return;
  auto keyOf = [t](const TraceNode& n) {
    std::vector<uint64_t> key{n.code};
    for (const Ref& r : n.refs) {
      if (r.arg >= kRefArgBound) continue;  // bound to the kernel, or returned: not an argument
      const TraceObject* o = t->object(r.obj);
      if (o && (o->kind == ObjectKind::Queue || o->kind == ObjectKind::Mem ||
                o->kind == ObjectKind::Kernel || o->kind == ObjectKind::Sampler))
        key.push_back(r.obj);
    }
    return key;
  };
  struct Donor {  // weighted sums, as the leaves' own estimates use them
    double count = 0, exec = 0, queuedToSubmit = 0, submitToStart = 0;
  };
  std::map<std::vector<uint64_t>, Donor> donors;
  for (const TraceNode& n : t->nodes) {
    if (n.loop || n.type != LeafType::Call || !n.device.exec.count) continue;
    Donor& d = donors[keyOf(n)];
    const DeviceAgg& a = n.device;
    const bool weighted = a.weight != 0;
    d.count += static_cast<double>(weighted ? a.weight : a.exec.count);
    d.exec += static_cast<double>(weighted ? a.weightedExec : a.exec.total);
    d.queuedToSubmit += static_cast<double>(weighted ? a.weightedQueuedToSubmit : a.queuedToSubmit);
    d.submitToStart += static_cast<double>(weighted ? a.weightedSubmitToStart : a.submitToStart);
  }
  for (TraceNode& n : t->nodes) {
    if (n.loop || n.type != LeafType::Call || n.device.exec.count || !n.device.unsampled) continue;
    auto it = donors.find(keyOf(n));
    if (it == donors.end()) continue;
    const double count = it->second.count;
    n.device.lent = true;
    n.device.lentExecMean = it->second.exec / count;
    n.device.lentQueuedToSubmitMean = it->second.queuedToSubmit / count;
    n.device.lentSubmitToStartMean = it->second.submitToStart / count;
  }
}

}  // namespace

uint32_t supportedFormatVersion() { return HETOPT_TRACE_FORMAT_VERSION; }
uint32_t oldestFormatVersion() { return 1; }

std::string Trace::leafName(const TraceNode& n) const {
  switch (n.type) {
    case LeafType::Call:
      return n.code < api::kApiCount ? api::apiName(static_cast<api::ApiId>(n.code)) : "?";
    case LeafType::Alloc:
    case LeafType::Realloc:
      return allocFnName(n.code);
    case LeafType::Free:
      return "free";
  }
  return "?";
}

bool parseTrace(const void* data, size_t size, Trace* out, std::string* error,
                const ReadOptions& options) {
  *out = Trace{};
  error->clear();
  const auto* p = static_cast<const unsigned char*>(data);
  out->fileBytes = size;
  if (size < 8 || memcmp(p, kFileMagic, sizeof kFileMagic) != 0) {
    *error = "not a hetopt trace (no HETOPTTR magic at the start)";
    return false;
  }
  if (size < kFixedHeaderBytes) {
    *error = "truncated trace: the file ends inside its header";
    return false;
  }
  out->formatVersion = getU32(p + 8);
  char writer[kWriterVersionBytes + 1] = {};
  memcpy(writer, p + 16, kWriterVersionBytes);
  for (char& c : writer)
    if (c && (c < 32 || c > 126)) c = '?';
  out->writerVersion = writer;
  if (out->formatVersion < oldestFormatVersion() || out->formatVersion > supportedFormatVersion()) {
    *error = "unsupported trace format version " + std::to_string(out->formatVersion) +
             " (written by hetopt " + (out->writerVersion.empty() ? "?" : out->writerVersion) +
             "); this reader (hetopt " HETOPT_VERSION_STRING ") reads versions " +
             std::to_string(oldestFormatVersion()) + " to " +
             std::to_string(supportedFormatVersion());
    return false;
  }
  const uint32_t headerBytes = getU32(p + 12);
  if (headerBytes < kFixedHeaderBytes + 4 || headerBytes > kMaxHeaderBytes) {
    *error = "corrupt trace: bad header length " + std::to_string(headerBytes);
    return false;
  }
  if (headerBytes > size) {
    *error = "truncated trace: the file ends inside its header";
    return false;
  }
  if (crc32(p, headerBytes - 4) != getU32(p + headerBytes - 4)) {
    *error = "corrupt trace: header checksum mismatch";
    return false;
  }
  {
    ByteReader r(p + kFixedHeaderBytes, headerBytes - 4 - kFixedHeaderBytes);
    out->header.pid = r.var();
    out->header.parentPid = r.var();
    out->header.startUnixNs = r.var();
    out->header.program = r.str(4096);
    out->header.arguments = r.str(1 << 20);
    if (out->formatVersion >= kScriptFormatVersion) {
      out->header.scriptKind = r.u8();
      out->header.scriptName = r.str(4096);
      out->header.scriptHash = r.str(64);
      if (out->header.scriptKind > 3) {
        *error = "corrupt trace: unknown script kind " + std::to_string(out->header.scriptKind);
        return false;
      }
    }
    out->header.writerVersion = out->writerVersion;
    if (!r.ok()) {
      *error = "corrupt trace: header fields cut short";
      return false;
    }
  }

  Parser parser(out, error);
  size_t pos = headerBytes;
  size_t index = 0;
  std::string raw;
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  bool ok = true;
  while (pos < size) {
    auto chunkFail = [&](const std::string& msg) {
      *error = msg + " (chunk " + std::to_string(index) + " at offset " + std::to_string(pos) + ")";
      return false;
    };
    if (size - pos < kChunkHeaderBytes) {
      ok = chunkFail("truncated trace: the file ends inside a chunk header");
      break;
    }
    const unsigned char* h = p + pos;
    if (memcmp(h, kChunkMagic, sizeof kChunkMagic) != 0) {
      ok = chunkFail("corrupt trace: no chunk marker");
      break;
    }
    const uint8_t kind = h[4];
    const uint32_t payload = getU32(h + 8), rawBytes = getU32(h + 12), sequence = getU32(h + 16),
                   crc = getU32(h + 20);
    if (kind < 1 || kind > 3 || h[5] || h[6] || h[7]) {
      ok = chunkFail("corrupt trace: unknown chunk kind " + std::to_string(kind));
      break;
    }
    if (payload > size - pos - kChunkHeaderBytes) {
      ok = chunkFail("truncated trace: chunk of " + std::to_string(payload) + " bytes, only " +
                     std::to_string(size - pos - kChunkHeaderBytes) + " left");
      break;
    }
    const unsigned char* body = h + kChunkHeaderBytes;
    if (crc32(body, payload, crc32(h, 20)) != crc) {
      ok = chunkFail("corrupt trace: chunk checksum mismatch");
      break;
    }
    if (sequence != index) {
      ok = chunkFail("corrupt trace: chunk out of sequence");
      break;
    }
    if (kind != static_cast<uint8_t>(ChunkKind::Pad)) {
      if (rawBytes > kMaxChunkRawBytes) {
        ok = chunkFail("corrupt trace: chunk claims " + std::to_string(rawBytes) + " bytes");
        break;
      }
      unsigned long long content = ZSTD_getFrameContentSize(body, payload);
      if (content != rawBytes) {
        ok = chunkFail("corrupt trace: chunk size does not match its zstd frame");
        break;
      }
      raw.resize(rawBytes);
      size_t got = ZSTD_decompressDCtx(dctx.get(), raw.data(), raw.size(), body, payload);
      if (ZSTD_isError(got) || got != rawBytes) {
        ok = chunkFail(std::string("corrupt trace: zstd: ") +
                       (ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short frame"));
        break;
      }
      const bool tail = kind == static_cast<uint8_t>(ChunkKind::Tail);
      if (!parser.records(reinterpret_cast<const unsigned char*>(raw.data()), raw.size(), tail,
                          index)) {
        *error += " (offset " + std::to_string(pos) + ")";
        ok = false;
        break;
      }
    }
    pos += kChunkHeaderBytes + payload;
    ++index;
  }
  if (!ok) {
    if (!options.salvage) {
      // The commands that read traces take --salvage; a torn last chunk is what a killed writer
      // or a full disk leaves.
      *error += "; --salvage reads what precedes it";
      return false;
    }
    out->complete = false;
  }
  parser.finishTail();
  lendSampledMeans(out);
  if (!ok && out->nodes.empty()) {
    *error = "nothing to salvage (no call or allocation precedes the damage): " + *error;
    return false;
  }
  return true;
}

bool readTraceFile(const std::string& path, Trace* out, std::string* error,
                   const ReadOptions& options) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = "cannot open " + path + ": " + strerror(errno);
    return false;
  }
  std::string data;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = "cannot read " + path + ": " + strerror(errno);
      close(fd);
      return false;
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  if (!parseTrace(data.data(), data.size(), out, error, options)) {
    *error = path + ": " + *error;
    return false;
  }
  return true;
}

TraceSummary summarize(const Trace& t) {
  TraceSummary s;
  for (const TraceNode& n : t.nodes) {
    if (n.loop) continue;
    switch (n.type) {
      case LeafType::Alloc:
        s.allocations += n.host.count;
        break;
      case LeafType::Free:
        s.frees += n.host.count;
        break;
      case LeafType::Realloc:
        s.reallocs += n.host.count;
        break;
      case LeafType::Call: {
        s.calls += n.host.count;
        s.callsByFunction[t.leafName(n)] += n.host.count;
        s.hostCallNs += n.host.total;
        s.deviceMissing += n.device.missing;
        s.deviceTimed += n.device.exec.count;
        s.deviceUnsampled += n.device.unsampled;
        if (!n.device.commands()) s.deviceUnestimated += n.device.unsampled;
        s.launchLatencyNs += static_cast<uint64_t>(std::llround(n.device.queuedToStartNs()));
        const auto deviceNs = static_cast<uint64_t>(std::llround(n.device.execNs()));
        const api::ApiKind kind = api::apiInfo(static_cast<api::ApiId>(n.code)).kind;
        if (kind == api::ApiKind::Launch) {
          s.kernels += n.host.count;
          s.kernelNs += deviceNs;
        } else if (api::isCommunicationKind(kind)) {
          s.transferNs += deviceNs;
        } else {
          s.otherDeviceNs += deviceNs;
        }
        for (const Ref& r : n.refs) {
          if (!(r.flags & kRefHost)) continue;
          const TraceObject* o = t.object(r.obj);
          const bool hostMemory =
              o && (o->kind == ObjectKind::Segment || o->kind == ObjectKind::Untracked);
          if (r.access == HostAccess::Mapped) s.mappedBytes += r.bytes;
          if (r.access == HostAccess::Wrap) s.wrappedBytes += r.bytes;
          if (!hostMemory || !isTransfer(r.access)) continue;
          if (r.access == HostAccess::Read) {
            s.h2dBytes += r.bytes;
            s.h2dTransfers += n.host.count;
            s.byObject[r.obj].h2dBytes += r.bytes;
            s.byObject[r.obj].h2dTransfers += n.host.count;
          } else {
            s.d2hBytes += r.bytes;
            s.d2hTransfers += n.host.count;
            s.byObject[r.obj].d2hBytes += r.bytes;
            s.byObject[r.obj].d2hTransfers += n.host.count;
          }
        }
        break;
      }
    }
  }
  if (t.recordingSampledCalls >= kRecordingCostMinSample)
    s.recordingNs = static_cast<double>(t.recordingSampledNs) /
                    static_cast<double>(t.recordingSampledCalls) * static_cast<double>(s.calls);
  return s;
}

}  // namespace hetopt::trace
