// SPDX-License-Identifier: MIT
/**
 * @file Private copies, for a forked child, of pinned memory that fork() would not copy. A program
 * that forks expects its child to get a copy of every page (copy on write); pinned memory a driver
 * made may not follow that rule (os::ForkInheritance), so the fork protocol makes the copy itself.
 * Runs inside fork(): no allocation (the table of copies is itself a mapping), no lock.
 */
#pragma once
#include <cstddef>
#include <cstdint>

namespace hetopt::policies {

/// NVIDIA maps CL_MEM_ALLOC_HOST_PTR memory shared, so a child of a program whose blocks came from
/// such a pool would write into the parent's blocks, and into the pool's own headers and tree (the
/// child then crashed on the parent's pointers, or the parent on the child's). So in the parent,
/// right before fork() and with the allocator's lock held (its headers consistent), each such range
/// is copied into a fresh private mapping; in the child that mapping is moved over the range
/// (mremap), and in the parent it is dropped.
class ForkCopies {
 public:
  constexpr ForkCopies() = default;  // the table, once made, stays for the process's life
  ForkCopies(const ForkCopies&) = delete;
  ForkCopies& operator=(const ForkCopies&) = delete;

  /// Parent, before fork(): a private mapping standing for the pages of [base, base + bytes),
  /// for the caller to fill at the same offsets (untouched pages read as zero in the child).
  /// Null when none could be made: the child then keeps what fork() gives it.
  void* add(void* base, size_t bytes);
  /// In the child: every copy moved over its range. False when any could not be (its range is
  /// then what fork() gave, and the caller must not write there).
  bool placeInChild();
  /// In the parent after fork(): the copies dropped.
  void dropInParent();

 private:
  struct Copy {
    void* base;
    void* copy;
    size_t bytes;
  };
  bool grow();
  Copy* m_copies = nullptr;  ///< a mapping of m_capacity entries
  size_t m_count = 0;
  size_t m_capacity = 0;
};

}  // namespace hetopt::policies
