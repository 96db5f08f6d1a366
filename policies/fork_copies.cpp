// SPDX-License-Identifier: MIT
/** @file ForkCopies (fork_copies.h): mappings only, no allocation.
 * Copies made before fork() are placed over the shared pages in the child, or dropped. */
#include "policies/fork_copies.h"

#include <cstring>

#include "policies/os_memory.h"

namespace hetopt::policies {

bool ForkCopies::grow() {
  const size_t capacity = m_capacity ? 2 * m_capacity : os::pageSize() / sizeof(Copy);
  auto* copies = static_cast<Copy*>(os::mapPrivate(capacity * sizeof(Copy)));
  if (!copies) return false;
  if (m_copies) {
    memcpy(copies, m_copies, m_count * sizeof(Copy));
    os::unmap(m_copies, m_capacity * sizeof(Copy));
  }
  m_copies = copies;
  m_capacity = capacity;
  return true;
}

void* ForkCopies::add(void* base, size_t bytes) {
  const size_t page = os::pageSize();
  const auto b = reinterpret_cast<uintptr_t>(base);
  if (b % page || bytes == 0) return nullptr;  // mremap moves whole pages only
  if (m_count == m_capacity && !grow()) return nullptr;
  const size_t pages = os::roundUpToPages(bytes);
  void* copy = os::mapPrivate(pages);
  if (!copy) return nullptr;
  m_copies[m_count++] = {base, copy, pages};
  return copy;
}

bool ForkCopies::placeInChild() {
  bool all = true;
  for (size_t i = 0; i < m_count; ++i) {
    const Copy& c = m_copies[i];
    if (!os::moveMapping(c.copy, c.bytes, c.base)) {
      os::unmap(c.copy, c.bytes);
      all = false;
    }
  }
  m_count = 0;
  return all;
}

void ForkCopies::dropInParent() {
  for (size_t i = 0; i < m_count; ++i) os::unmap(m_copies[i].copy, m_copies[i].bytes);
  m_count = 0;
}

}  // namespace hetopt::policies
