// SPDX-License-Identifier: MIT
/**
 * @file A lock-free "may this address be a tracked block's start?" filter: open addressing over
 * 64-bit keys. Trace mode's free() asks it for every block the program frees, so a lookup is a few
 * acquire loads and never takes a lock; insert() and erase() are serialized by the owner's lock.
 */
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace hetopt::trace {

/// mayContain() may run on any thread at any time. A full rebuild publishes a new table and
/// leaves the old one in place (a reader may still be probing it): tables grow geometrically, so
/// the few left behind stay small.
///
/// Invariants (validate() checks them; HETOPT_DEBUG_LEVEL 3 after every insert and erase):
///   A1  keys are never 0 (empty) or 1 (tombstone); each live key is in the table once
///   A2  every live key is reached from its home slot without crossing an empty slot
///   A3  the counts are the table's: m_live live keys, m_used live keys + tombstones
///   A4  m_used stays at most 3/4 of the slots, so every probe meets an empty slot
class AddressSet {
 public:
  AddressSet();
  AddressSet(const AddressSet&) = delete;
  AddressSet& operator=(const AddressSet&) = delete;

  /// True when `p` was inserted and not erased since; may also be true for a key being erased,
  /// or when the table is full of other keys (the caller then checks under its lock).
  bool mayContain(uint64_t p) const;
  /// Under the owner's lock. Keys 0 and 1 are ignored (no block starts there).
  void insert(uint64_t p);
  void erase(uint64_t p);

  /// Live keys.
  size_t size() const { return m_live; }
  /// Checks A1-A4 (under the owner's lock); false with the first broken one in `why`.
  bool validate(char* why = nullptr, size_t whyBytes = 0) const;

 private:
  struct Table {
    size_t mask;
    std::atomic<uint64_t>* slots;
  };
  static Table* makeTable(size_t capacity);
  void rebuild(size_t capacity);

  std::atomic<Table*> m_table{nullptr};
  size_t m_used = 0;  ///< keys + tombstones
  size_t m_live = 0;
};

}  // namespace hetopt::trace
