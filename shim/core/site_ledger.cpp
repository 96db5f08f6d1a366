// SPDX-License-Identifier: MIT
/** @file See site_ledger.h.
 * The run's transfers per plan site: relaxed counters on the program's threads, read at exit. */
#include "shim/core/site_ledger.h"

#include <initializer_list>
#include <mutex>

namespace hetopt::shim {

SiteLedger::SiteLedger(size_t sites) : m_numSites(sites), m_sites(new Counts[sites ? sites : 1]) {}

void SiteLedger::served(const void* block, size_t bytes, unsigned site) {
  std::lock_guard<policies::PoolLock> lock(m_lock);
  m_blocks.insert(block, bytes, site);  // full: counted under no site
}

void SiteLedger::released(const void* block) {
  std::lock_guard<policies::PoolLock> lock(m_lock);
  m_blocks.erase(block, nullptr);
}

unsigned SiteLedger::siteOf(const void* host) const {
  std::lock_guard<policies::PoolLock> lock(m_lock);
  const unsigned* site = m_blocks.valueOf(host);
  if (!site) {
    const uintptr_t start = m_blocks.containing(host);  // a transfer from inside a block
    site = start ? m_blocks.valueOf(reinterpret_cast<const void*>(start)) : nullptr;
  }
  return site ? *site : kNoSite;
}

void SiteLedger::count(unsigned site, uint64_t bytes, Outcome outcome, bool h2d) {
  for (Total* t : {&m_totals[static_cast<int>(outcome)], &m_directions[h2d ? 0 : 1]}) {
    t->transfers.fetch_add(1, std::memory_order_relaxed);
    t->bytes.fetch_add(bytes, std::memory_order_relaxed);
  }
  if (site >= m_numSites) return;
  Counts& c = m_sites[site];
  c.transfers.fetch_add(1, std::memory_order_relaxed);
  c.bytes.fetch_add(bytes, std::memory_order_relaxed);
  if (outcome == Outcome::Pinned) c.pinned.fetch_add(1, std::memory_order_relaxed);
  if (outcome == Outcome::Pageable) c.pageable.fetch_add(1, std::memory_order_relaxed);
}

SiteLedger::Directions SiteLedger::directions() const {
  Directions d;
  d.h2d = m_directions[0].transfers.load(std::memory_order_relaxed);
  d.h2dBytes = m_directions[0].bytes.load(std::memory_order_relaxed);
  d.d2h = m_directions[1].transfers.load(std::memory_order_relaxed);
  d.d2hBytes = m_directions[1].bytes.load(std::memory_order_relaxed);
  return d;
}

void SiteLedger::fill(const Plan& plan, RunRecord* r) const {
  auto total = [this](Outcome o, uint64_t* n, uint64_t* bytes) {
    *n = m_totals[static_cast<int>(o)].transfers.load(std::memory_order_relaxed);
    *bytes = m_totals[static_cast<int>(o)].bytes.load(std::memory_order_relaxed);
  };
  total(Outcome::Pinned, &r->pinned, &r->pinnedBytes);
  total(Outcome::Pageable, &r->pageable, &r->pageableBytes);
  total(Outcome::Other, &r->other, &r->otherBytes);
  r->sites.clear();
  for (size_t i = 0; i < m_numSites && i < plan.sites.size(); ++i) {
    const Counts& c = m_sites[i];
    RunSiteCounts s;
    s.key = plan.sites[i].key;
    s.transfers = c.transfers.load(std::memory_order_relaxed);
    s.bytes = c.bytes.load(std::memory_order_relaxed);
    s.pinned = c.pinned.load(std::memory_order_relaxed);
    s.pageable = c.pageable.load(std::memory_order_relaxed);
    r->sites.push_back(s);
  }
}

}  // namespace hetopt::shim
