// SPDX-License-Identifier: MIT
/** @file Call-site capture and the module map; see callsite.h.
 * The module map (dl_iterate_phdr, build ids), unwinding a call site, its key. */
#include "shim/core/callsite.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <unistd.h>
#include <unwind.h>

#include <algorithm>
#include <cstring>

#include "common/compiler.h"
#include "contracts/site_key.h"

namespace hetopt::shim {
namespace {

// The C/C++ runtime, the dynamic loader and the shim itself (libhetopt_shim): frames there are
// malloc/new/wrappers, never the site.
bool isRuntimeLibrary(const std::string& path) {
  const char* base = strrchr(path.c_str(), '/');
  base = base ? base + 1 : path.c_str();
  for (const char* prefix : {"libc.so", "libc-", "libstdc++", "libgcc_s", "ld-linux", "libm.so",
                             "libpthread", "libhetopt_shim", "linux-vdso"}) {
    if (strncmp(base, prefix, strlen(prefix)) == 0) return true;
  }
  return false;
}

// OpenCL loaders and implementations (and the compilers they load). Allocations made from their
// own threads (e.g. PoCL's device workers) are never application sites.
bool isOpenClDriver(const std::string& path) {
  const char* base = strrchr(path.c_str(), '/');
  base = base ? base + 1 : path.c_str();
  for (const char* prefix : {"libOpenCL", "libpocl", "libnvidia-", "libcuda", "libamdocl",
                             "libamdhip", "libhsa-", "libigdrcl", "libigc", "libintelocl",
                             "libLLVM", "libclang", "libMesaOpenCL", "librusticl"}) {
    if (strncmp(base, prefix, strlen(prefix)) == 0) return true;
  }
  return path.find("/pocl/") != std::string::npos;
}

std::string readBuildId(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const char* name = p + sizeof(ElfW(Nhdr));
      const unsigned char* desc =
          reinterpret_cast<const unsigned char*>(name + ((nh->n_namesz + 3) & ~3u));
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
        static const char hex[] = "0123456789abcdef";
        std::string id;
        for (unsigned k = 0; k < nh->n_descsz; ++k) {
          id += hex[desc[k] >> 4];
          id += hex[desc[k] & 15];
        }
        return id;
      }
      p = reinterpret_cast<const char*>(desc) + ((nh->n_descsz + 3) & ~3u);
    }
  }
  return {};
}

struct BuildContext {
  std::vector<Module>* out;
  std::string exe;
};

int collectModule(dl_phdr_info* info, size_t, void* data) {
  auto* ctx = static_cast<BuildContext*>(data);
  Module m;
  m.bias = info->dlpi_addr;
  m.start = UINTPTR_MAX;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    m.start = std::min<uintptr_t>(m.start, info->dlpi_addr + ph.p_vaddr);
    m.end = std::max<uintptr_t>(m.end, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  if (m.start == UINTPTR_MAX) return 0;
  m.path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : ctx->exe;
  m.buildId = readBuildId(info);
  m.skipped = isRuntimeLibrary(m.path);
  m.driver = !m.skipped && isOpenClDriver(m.path);
  m.identity = moduleIdentity(m.buildId, m.path);
  ctx->out->push_back(std::move(m));
  return 0;
}

// dlopen/dlclose counters of the dynamic loader: a map miss with unchanged counters is code
// outside any module (JIT), not a new library, and must not trigger a rebuild.
int readLoadCounters(dl_phdr_info* info, size_t size, void* data) {
  if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs))
    *static_cast<uint64_t*>(data) = info->dlpi_adds + info->dlpi_subs;
  return 1;  // the first object is enough
}

uint64_t loadCounters() {
  uint64_t stamp = 0;
  dl_iterate_phdr(readLoadCounters, &stamp);
  return stamp;
}

std::string executablePath() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, n) : std::string("[exe]");
}

struct UnwindState {
  CallSite* site;
  unsigned want;
  ModuleMap* map;
  unsigned skip;  ///< captureCallSite's own frame (it is in the shim's module only in the .so)
  unsigned seen = 0;
};

// How far to look for driver frames beyond the site's own depth.
constexpr unsigned kDriverScanFrames = 12;

_Unwind_Reason_Code unwindStep(_Unwind_Context* ctx, void* arg) {
  auto* st = static_cast<UnwindState*>(arg);
  uintptr_t pc = _Unwind_GetIP(ctx);
  if (pc == 0) return _URC_END_OF_STACK;
  if (st->skip > 0) {
    --st->skip;
    return _URC_NO_REASON;
  }
  const Module* m = st->map->find(pc);
  if (m && m->skipped) return _URC_NO_REASON;  // still inside malloc/new/the shim
  // Driver threads allocate through helper libraries (PoCL -> hwloc): a driver frame anywhere in
  // the first frames makes the allocation the driver's own.
  if (m && m->driver) {
    st->site->fromDriver = true;
    return _URC_END_OF_STACK;
  }
  if (st->site->depth < st->want) st->site->pcs[st->site->depth++] = pc;
  return ++st->seen >= kDriverScanFrames ? _URC_END_OF_STACK : _URC_NO_REASON;
}

}  // namespace

ModuleMap& ModuleMap::instance() {
  // Leaked on purpose: allocations during static destruction still look up modules.
  static ModuleMap* map = new ModuleMap();
  return *map;
}

void ModuleMap::refresh() {
  std::lock_guard<std::mutex> lock(m_refreshMutex);
  uint64_t stamp = loadCounters();
  if (m_current.load(std::memory_order_acquire) && stamp == m_loadStamp) return;
  m_loadStamp = stamp;
  auto* fresh = new Snapshot();
  BuildContext ctx{fresh, executablePath()};
  dl_iterate_phdr(collectModule, &ctx);
  std::sort(fresh->begin(), fresh->end(),
            [](const Module& a, const Module& b) { return a.start < b.start; });
  m_current.store(fresh, std::memory_order_release);
  m_generation.fetch_add(1, std::memory_order_acq_rel);
}

const Module* ModuleMap::find(uintptr_t pc) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const Snapshot* snap = m_current.load(std::memory_order_acquire);
    if (snap) {
      auto it = std::upper_bound(snap->begin(), snap->end(), pc,
                                 [](uintptr_t v, const Module& m) { return v < m.start; });
      if (it != snap->begin() && pc < std::prev(it)->end) return &*std::prev(it);
    }
    if (attempt == 0) refresh();  // a module loaded since the last snapshot
  }
  return nullptr;
}

std::vector<Module> ModuleMap::modules(uint64_t* generation) {
  if (!m_current.load(std::memory_order_acquire)) refresh();
  if (generation) *generation = m_generation.load(std::memory_order_acquire);
  return *m_current.load(std::memory_order_acquire);
}

HETOPT_NOINLINE void captureCallSite(CallSite* site, unsigned depth) {
  site->depth = 0;
  site->fromDriver = false;
  UnwindState st{site, std::min(std::max(depth, 1u), kMaxSiteDepth), &ModuleMap::instance(), 1};
  _Unwind_Backtrace(unwindStep, &st);
}

uint64_t siteKey(const CallSite& site) {
  uint64_t key = kSiteKeySeed;
  ModuleMap& map = ModuleMap::instance();
  for (unsigned i = 0; i < site.depth; ++i) {
    const Module* m = map.find(site.pcs[i]);
    key = siteKeyFold(key, m ? m->identity : 0, m ? site.pcs[i] - m->bias : site.pcs[i]);
  }
  return key;
}

}  // namespace hetopt::shim
