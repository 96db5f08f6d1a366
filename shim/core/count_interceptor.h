// SPDX-License-Identifier: MIT
/**
 * @file HETOPT_MODE=count: how many times each OpenCL function was called and where the tracked
 * allocations came from, printed at exit. The cheapest mode that proves interception works (every
 * call seen exactly once on both routes, sites resolved to module+offset); also handy to users
 * as a first look at a program.
 */
#pragma once
#include <atomic>
#include <mutex>

#include "shim/core/callsite.h"
#include "shim/core/interceptor.h"

namespace hetopt::shim {

class CountInterceptor final : public Interceptor {
 public:
  void callBegin(CallRecord& call) override;
  void allocated(const AllocEvent& event) override;
  void freeing(void* ptr) override;
  void processExit() override;
  /// The fork protocol (lifecycle.cpp): the site table's mutex is held across fork().
  void forkPrepare() override { m_sitesMutex.lock(); }
  void forkParent() override { m_sitesMutex.unlock(); }
  void forkChild() override { m_sitesMutex.unlock(); }

  uint64_t calls(api::ApiId id) const {
    return m_calls[static_cast<size_t>(id)].load(std::memory_order_relaxed);
  }

 private:
  struct SiteStats {
    uint64_t key = 0;
    uint64_t count = 0;
    uint64_t bytes = 0;
    CallSite site;
  };
  static constexpr size_t kMaxSites = 256;

  std::atomic<uint64_t> m_calls[api::kApiCount] = {};
  std::atomic<uint64_t> m_trackedAllocs{0};
  std::atomic<uint64_t> m_trackedBytes{0};
  std::atomic<uint64_t> m_frees{0};
  std::mutex m_sitesMutex;
  SiteStats m_sites[kMaxSites];
  size_t m_numSites = 0;
  uint64_t m_droppedSites = 0;
};

}  // namespace hetopt::shim
