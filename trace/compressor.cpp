// SPDX-License-Identifier: MIT
/** @file Online loop folding; see compressor.h.
 * Node arena, leaf and loop hashes, equality up to renaming, merging, foldOnce(), append(). */
#include "trace/compressor.h"

#include <algorithm>

#include "common/compiler.h"

namespace hetopt::trace {
namespace {

inline uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

}  // namespace

Compressor::Compressor(ObjectTable* objects, unsigned maxBody, unsigned stampsPerLeaf)
    : m_objects(objects), m_maxBody(std::max(1u, maxBody)), m_stampsPerLeaf(stampsPerLeaf) {
  m_nodes.emplace_back();  // id 0 is "no node"
}

NodeId Compressor::alloc() {
  NodeId id;
  if (!m_free.empty()) {
    id = m_free.back();
    m_free.pop_back();
  } else {
    id = static_cast<NodeId>(m_nodes.size());
    m_nodes.emplace_back();
  }
  Node& n = m_nodes[id];  // empty: new, or reset by freeTree()
  n.live = true;
  ++m_live;
  return id;
}

void Compressor::freeTree(NodeId id) {
  Node& n = m_nodes[id];
  if (!n.live) return;
  for (NodeId c : n.body) freeTree(c);
  if (n.pending) {  // written out while timings were pending: they are dropped
    for (NodeId& s : m_slots)
      if (s == id) s = kNoNode;
  }
  n.reset();
  m_free.push_back(id);
  --m_live;
}

// `id` was merged into `into`: its timing slots follow, then it goes.
void Compressor::retire(NodeId id, NodeId into) {
  Node& n = m_nodes[id];
  if (n.pending) {
    for (NodeId& s : m_slots)
      if (s == id) s = into;
    m_nodes[into].pending += n.pending;
    n.pending = 0;
  }
  n.body.clear();
  freeTree(id);
}

uint64_t Compressor::leafHash(const Leaf& l) const {
  uint64_t h = mix(static_cast<uint64_t>(l.type) + 1, l.code);
  h = mix(h, l.site);
  h = mix(h, l.refs.size());
  for (const Ref& r : l.refs)
    h = mix(h,
            (uint64_t{r.arg} << 16) | (uint64_t{r.flags} << 8) | static_cast<uint64_t>(r.access));
  return h;
}

bool Compressor::equalLeaf(const Leaf& x, const Leaf& y, Bijection& bij) const {
  if (x.type != y.type || x.code != y.code || x.site != y.site || x.refs.size() != y.refs.size())
    return false;
  for (size_t i = 0; i < x.refs.size(); ++i) {
    const Ref& a = x.refs[i];
    const Ref& b = y.refs[i];
    if (a.arg != b.arg || a.flags != b.flags || a.access != b.access) return false;
  }
  // Objects created by these calls first: they are the ones that may differ (renaming).
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < x.refs.size(); ++i) {
      const bool create = x.refs[i].flags & kRefCreate;
      if (create != (pass == 0)) continue;
      ObjectId rx = x.refs[i].obj, ry = y.refs[i].obj;
      bool matched = false, decided = false;
      for (const auto& p : bij.pairs) {
        if (p.first == rx || p.second == ry) {
          matched = !create && p.first == rx && p.second == ry;
          decided = true;
          break;
        }
      }
      if (!decided) {
        if (create) {
          bij.pairs.emplace_back(rx, ry);
          matched = true;
        } else {
          matched = rx == ry;
        }
      }
      if (!matched) return false;
    }
  }
  return true;
}

bool Compressor::equal(NodeId x, NodeId y, Bijection& bij) const {
  const Node& a = m_nodes[x];
  const Node& b = m_nodes[y];
  if (a.hash != b.hash) return false;
  // A call is a loop of one iteration: the first pass of a loop whose inner loop ran once must
  // match the passes where it ran more often.
  if (a.loop != b.loop) {
    const Node& l = a.loop ? a : b;
    if (l.body.size() != 1) return false;
    return a.loop ? equal(a.body[0], y, bij) : equal(x, b.body[0], bij);
  }
  if (!a.loop) return equalLeaf(a.leaf, b.leaf, bij);
  if (a.body.size() != b.body.size()) return false;
  return equalSeq(a.body.data(), b.body.data(), a.body.size(), bij);
}

bool Compressor::equalSeq(const NodeId* x, const NodeId* y, size_t k, Bijection& bij) const {
  for (size_t i = 0; i < k; ++i)
    if (!equal(x[i], y[i], bij)) return false;
  return true;
}

uint64_t Compressor::loopHash(const std::vector<NodeId>& body) const {
  if (body.size() == 1) return m_nodes[body[0]].hash;  // equal to its only call (see equal())
  uint64_t h = 0x6c6f6f70ull;                          // "loop"
  for (NodeId c : body) h = mix(h, m_nodes[c].hash);
  return h;
}

void Compressor::merge(NodeId x, NodeId y) {
  if (m_nodes[x].loop && !m_nodes[y].loop) {  // one more iteration of a one-call loop
    m_nodes[x].iterations += 1;
    m_nodes[x].instances += 1;
    merge(m_nodes[x].body[0], y);
    return;
  }
  if (!m_nodes[x].loop && m_nodes[y].loop) {
    // The kept side is a lone call: it becomes a loop of one iteration around that call, in place.
    NodeId inner = alloc();
    m_nodes[inner] = std::move(m_nodes[x]);
    if (m_nodes[inner].pending) {
      for (NodeId& s : m_slots)
        if (s == x) s = inner;
    }
    Node& l = m_nodes[x];
    l = Node{};
    l.live = true;
    l.loop = true;
    l.iterations = 1;
    l.instances = 1;
    l.body = {inner};
    l.hash = m_nodes[inner].hash;
  }
  Node& a = m_nodes[x];
  Node& b = m_nodes[y];
  if (a.loop) {
    a.iterations += b.iterations;
    a.instances += b.instances;
    for (size_t i = 0; i < a.body.size(); ++i) merge(m_nodes[x].body[i], m_nodes[y].body[i]);
  } else {
    Leaf& l = a.leaf;
    const Leaf& o = b.leaf;
    l.host.merge(o.host);
    l.device.merge(o.device);
    for (size_t i = 0; i < l.args.size() && i < o.args.size(); ++i) l.args[i].merge(o.args[i]);
    l.result.merge(o.result);
    // `o`'s calls came after `l`'s: the kept times stay a prefix of the calls. Past the first
    // calls (a long loop's usual case) this is one compare.
    if (HETOPT_UNLIKELY(l.stamps.size() < m_stampsPerLeaf)) keepStamps(l, o);
    if (o.endNs > l.endNs) l.endNs = o.endNs;
    for (size_t i = 0; i < l.refs.size(); ++i) {
      Ref& r = l.refs[i];
      const Ref& s = o.refs[i];
      r.vLast = s.vLast;
      r.offMin = std::min(r.offMin, s.offMin);
      r.endMax = std::max(r.endMax, s.endMax);
      r.bytes += s.bytes;
    }
  }
  retire(y, x);
}

void Compressor::keepStamps(Leaf& l, const Leaf& o) {
  for (size_t i = 0; i < o.stamps.size() && l.stamps.size() < m_stampsPerLeaf; ++i)
    l.stamps.push_back(o.stamps[i]);
}

void Compressor::windowPush(NodeId id) {
  const Node& n = m_nodes[id];
  m_window.push_back(id);
  m_windowKeys.push_back({n.hash, n.loop ? static_cast<uint32_t>(n.body.size()) : 0u});
}

void Compressor::windowTruncate(size_t n) {
  m_window.resize(n);
  m_windowKeys.resize(n);
}

bool Compressor::foldOnce() {
  const size_t n = m_window.size();
  if (n < 2) return false;
  const WindowKey* keys = m_windowKeys.data();
  const uint64_t lastHash = keys[n - 1].hash;
  // 1. One more iteration of the loop right before the last k nodes.
  const size_t lowest = n - 1 > m_maxBody ? n - 1 - m_maxBody : 0;
  for (size_t p = n - 1; p-- > lowest;) {
    const size_t k = n - 1 - p;
    if (keys[p].loopBody != k) continue;
    const Node& l = m_nodes[m_window[p]];
    if (m_nodes[l.body.back()].hash != lastHash) continue;
    Bijection bij;
    if (!equalSeq(l.body.data(), &m_window[p + 1], k, bij)) continue;
    NodeId loop = m_window[p];
    for (size_t i = 0; i < k; ++i) merge(m_nodes[loop].body[i], m_window[p + 1 + i]);
    m_nodes[loop].iterations += 1;
    windowTruncate(p + 1);
    return true;
  }
  // 2. The last k nodes repeat the k before them.
  for (size_t k = 1; k <= m_maxBody && 2 * k <= n; ++k) {
    if (keys[n - 1 - k].hash != lastHash) continue;
    Bijection bij;
    const NodeId* first = &m_window[n - 2 * k];
    if (!equalSeq(first, first + k, k, bij)) continue;
    NodeId loop = alloc();
    Node& l = m_nodes[loop];
    l.loop = true;
    l.iterations = 2;
    l.instances = 1;
    l.body.assign(first, first + k);
    l.hash = loopHash(l.body);
    for (size_t i = 0; i < k; ++i) merge(m_window[n - 2 * k + i], m_window[n - k + i]);
    windowTruncate(n - 2 * k);
    windowPush(loop);
    return true;
  }
  return false;
}

uint32_t Compressor::append(Leaf&& leaf, bool wantSlot) {
  NodeId id = alloc();
  Node& n = m_nodes[id];
  n.hash = leafHash(leaf);
  n.leaf.take(leaf);  // the caller gets the recycled node's empty vectors and their memory
  uint32_t slot = 0;
  if (wantSlot) {
    if (!m_freeSlots.empty()) {
      slot = m_freeSlots.back();
      m_freeSlots.pop_back();
    } else {
      slot = static_cast<uint32_t>(m_slots.size());
      m_slots.push_back(kNoNode);
    }
    m_slots[slot] = id;
    n.pending = 1;
    if (!n.leaf.stamps.empty()) n.leaf.stamps.back().slot = slot;
  }
  windowPush(id);
  while (foldOnce()) {
  }
  return slot;
}

void Compressor::deliver(uint32_t slot, const DeviceAgg* timing, uint64_t deviceStart,
                         uint64_t deviceEnd) {
  if (slot == 0 || slot >= m_slots.size()) return;
  NodeId id = m_slots[slot];
  m_slots[slot] = kNoNode;
  m_freeSlots.push_back(slot);
  if (id == kNoNode) return;  // its leaf was written out already
  Node& n = m_nodes[id];
  // The call's kept times, if it is among the first ones (a freed slot number comes back: the
  // stamp lets go of it now).
  for (Stamp& s : n.leaf.stamps) {
    if (s.slot != slot) continue;
    s.slot = 0;
    if (timing && deviceEnd >= deviceStart) {
      s.deviceStart = deviceStart;
      s.deviceEnd = deviceEnd;
    }
    break;
  }
  if (timing)
    n.leaf.device.merge(*timing);
  else
    ++n.leaf.device.missing;
  if (n.pending) --n.pending;
}

bool Compressor::hasPending(NodeId id) const {
  const Node& n = m_nodes[id];
  if (n.pending) return true;
  for (NodeId c : n.body)
    if (hasPending(c)) return true;
  return false;
}

std::vector<NodeId> Compressor::takeFinal(bool all) {
  std::vector<NodeId> out;
  if (all) {
    out.swap(m_window);
    m_windowKeys.clear();
    for (NodeId id : out) settlePending(id);
    return out;
  }
  const size_t keep = 2 * static_cast<size_t>(m_maxBody) + 2;
  size_t count = 0;
  while (m_window.size() - count > keep) {
    // A command still running keeps its leaf in memory for a while, so its device time lands
    // (deep queues: hundreds of non-blocking commands in flight).
    if (hasPending(m_window[count]) &&
        m_window.size() - count <= std::max(4 * keep, kHoldForTimings))
      break;
    ++count;
  }
  out.assign(m_window.begin(), m_window.begin() + static_cast<long>(count));
  m_window.erase(m_window.begin(), m_window.begin() + static_cast<long>(count));
  m_windowKeys.erase(m_windowKeys.begin(), m_windowKeys.begin() + static_cast<long>(count));
  for (NodeId id : out) settlePending(id);
  return out;
}

void Compressor::settlePending(NodeId id) {
  Node& n = m_nodes[id];
  for (NodeId c : n.body) settlePending(c);
  if (!n.pending) return;
  // Written out before their timings came (more commands in flight than the window holds): they
  // can no longer land, so they count as missing, and the leaf's census stays whole.
  n.leaf.device.missing += n.pending;
  n.pending = 0;
  for (NodeId& s : m_slots)
    if (s == id) s = kNoNode;  // deliver() then only frees the slot
}

void Compressor::release(const std::vector<NodeId>& roots) {
  for (NodeId id : roots) freeTree(id);
}

}  // namespace hetopt::trace
