// SPDX-License-Identifier: MIT
/** @file Count mode; see count_interceptor.h.
 * Relaxed counters per OpenCL function, tracked allocations per call site; the report at exit. */
#include "shim/core/count_interceptor.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "common/log.h"
#include "common/options.h"
#include "common/private_file.h"
#include "common/sigxfsz_block.h"
#include "shim/core/modes.h"

namespace hetopt::shim {

void CountInterceptor::callBegin(CallRecord& call) {
  m_calls[static_cast<size_t>(call.id)].fetch_add(1, std::memory_order_relaxed);
}

void CountInterceptor::allocated(const AllocEvent& event) {
  if (!event.site) return;  // below the tracked size (a realloc that shrank)
  m_trackedAllocs.fetch_add(1, std::memory_order_relaxed);
  m_trackedBytes.fetch_add(event.size, std::memory_order_relaxed);
  uint64_t key = siteKey(*event.site);
  std::lock_guard<std::mutex> lock(m_sitesMutex);
  for (size_t i = 0; i < m_numSites; ++i) {
    if (m_sites[i].key == key) {
      ++m_sites[i].count;
      m_sites[i].bytes += event.size;
      return;
    }
  }
  if (m_numSites == kMaxSites) {
    ++m_droppedSites;
    return;
  }
  m_sites[m_numSites++] = {key, 1, event.size, *event.site};
}

void CountInterceptor::freeing(void*) { m_frees.fetch_add(1, std::memory_order_relaxed); }

void CountInterceptor::processExit() {
  std::string out = "hetopt count report (pid " + std::to_string(getpid()) + ")\n";
  for (size_t i = 0; i < api::kApiCount; ++i) {
    uint64_t n = m_calls[i].load(std::memory_order_relaxed);
    if (n)
      out += "call " + std::string(api::apiName(static_cast<api::ApiId>(i))) + " " +
             std::to_string(n) + "\n";
  }
  out += "tracked_allocations " + std::to_string(m_trackedAllocs.load()) + " bytes " +
         std::to_string(m_trackedBytes.load()) + "\n";
  ModuleMap& map = ModuleMap::instance();
  std::lock_guard<std::mutex> lock(m_sitesMutex);
  for (size_t i = 0; i < m_numSites; ++i) {
    const SiteStats& s = m_sites[i];
    char head[96];
    snprintf(head, sizeof head, "site %016llx count %llu bytes %llu frames",
             static_cast<unsigned long long>(s.key), static_cast<unsigned long long>(s.count),
             static_cast<unsigned long long>(s.bytes));
    out += head;
    for (unsigned f = 0; f < s.site.depth; ++f) {
      const Module* m = map.find(s.site.pcs[f]);
      char frame[64];
      snprintf(frame, sizeof frame, "+0x%llx",
               static_cast<unsigned long long>(m ? s.site.pcs[f] - m->bias : s.site.pcs[f]));
      out += " " + (m ? m->path : std::string("?")) + frame;
    }
    out += "\n";
  }
  if (m_droppedSites) out += "sites_dropped " + std::to_string(m_droppedSites) + "\n";

  const char* path = optionString(Option::REPORT_FILE);
  const char* why = nullptr;
  int fd = *path ? openPrivateFile(path, false, true, &why) : 2;
  if (fd < 0) {
    warn("cannot write the count report to %s: %s; writing it to stderr", path, why);
    fd = 2;
  }
  SigxfszBlock block;  // past a file size limit the report is cut, the program lives
  ssize_t w = write(fd, out.data(), out.size());
  (void)w;
  if (fd != 2) close(fd);
}

Interceptor* makeCountInterceptor() { return new CountInterceptor(); }

}  // namespace hetopt::shim
