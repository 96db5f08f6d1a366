// SPDX-License-Identifier: MIT
/**
 * @file The objects a trace tracks by identity (host segments, untracked host memory, SVM
 * allocations, OpenCL handles), with SSA version counters.
 * Every object the process creates gets a fresh id, never reused. A folded loop body names the
 * objects of its first iteration; objects created by later iterations are written (Object record)
 * only if a record after the loop refers to them, so every id a file mentions is defined in it.
 * Versions are per object: the k-th write of a loop-local object has the same version number in
 * every iteration.
 */
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "trace/format.h"

namespace hetopt::trace {

using ObjectId = uint32_t;
inline constexpr ObjectId kNoObject = 0;

/// What the trace says about an object besides its kind (written in its Object record).
struct ObjectInfo {
  uint8_t fields = 0;  ///< ObjectField bits of what is set
  uint64_t address = 0, size = 0;
  uint32_t site = 0;  ///< allocation site id + 1 (0: none)
  uint8_t allocFn = 0;
  std::string label;
  RegionClass region = RegionClass::Unknown;
  uint64_t mapStart = 0, mapEnd = 0, mapOffset = 0;
  std::string mapName;
  ObjectId related = kNoObject;
  uint32_t module = 0;  ///< module id + 1 (0: none)
};

class ObjectTable {
 public:
  ObjectTable() { m_objects.emplace_back(); }  // id 0 is "no object"

  ObjectId create(ObjectKind kind) {
    Record r;
    r.kind = kind;
    m_objects.push_back(std::move(r));
    return static_cast<ObjectId>(m_objects.size() - 1);
  }
  size_t size() const { return m_objects.size() - 1; }
  bool valid(ObjectId id) const { return id != kNoObject && id < m_objects.size(); }

  ObjectKind kind(ObjectId id) const { return m_objects[id].kind; }
  uint32_t version(ObjectId id) const { return m_objects[id].version; }
  uint32_t bumpVersion(ObjectId id) { return ++m_objects[id].version; }

  ObjectInfo& info(ObjectId id) { return m_objects[id].info; }
  const ObjectInfo& info(ObjectId id) const { return m_objects[id].info; }
  /// Marks the info changed: the writer emits the Object record again before its next use.
  void touch(ObjectId id) { ++m_objects[id].stamp; }
  uint32_t stamp(ObjectId id) const { return m_objects[id].stamp; }
  uint32_t& emittedStamp(ObjectId id) { return m_objects[id].emitted; }

  /// Forget what was written (a forked child starts a new file).
  void resetEmitted() {
    for (Record& r : m_objects) r.emitted = 0;
  }
  /// Id 0 is the null record, and no object's written stamp is ahead of its info. False with the
  /// first violation in `why`.
  bool validate(char* why = nullptr, size_t whyBytes = 0) const {
    auto broken = [&](const char* what, size_t id) {
      if (why && whyBytes) snprintf(why, whyBytes, "object %zu: %s", id, what);
      return false;
    };
    if (m_objects.empty() || m_objects[0].version != 0) return broken("the null record changed", 0);
    for (size_t id = 1; id < m_objects.size(); ++id)
      if (m_objects[id].emitted > m_objects[id].stamp)
        return broken("written ahead of its info", id);
    return true;
  }

 private:
  struct Record {
    ObjectKind kind = ObjectKind::Segment;
    uint32_t version = 0;
    uint32_t stamp = 1;    ///< bumped by touch()
    uint32_t emitted = 0;  ///< stamp last written (0: never)
    ObjectInfo info;
  };
  std::vector<Record> m_objects;
};

}  // namespace hetopt::trace
