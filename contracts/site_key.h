// SPDX-License-Identifier: MIT
/**
 * @file The ASLR-independent identity of an allocation site, computed the same way by the shim
 * (at run time, from live return addresses) and by the analyzer (from a trace's frames and module
 * map): a profile written from a trace must name exactly the keys the shim computes later.
 * Header-only and allocation-free.
 */
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hetopt {

inline uint64_t fnv1a64(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/// A loaded object's identity: its GNU build id (hex) when it has one, else its path. A rebuilt
/// binary gets a new build id, so sites of a stale profile no longer match.
inline uint64_t moduleIdentity(std::string_view buildIdHex, std::string_view path) {
  std::string_view key = buildIdHex.empty() ? path : buildIdHex;
  return fnv1a64(key.data(), key.size());
}

/// Folds one frame (module identity, offset of the return address from the module's load bias)
/// into a site key; start from kSiteKeySeed and fold the frames innermost first.
inline constexpr uint64_t kSiteKeySeed = 1469598103934665603ull;
inline uint64_t siteKeyFold(uint64_t key, uint64_t moduleIdentity, uint64_t offset) {
  uint64_t parts[2] = {moduleIdentity, offset};
  return fnv1a64(parts, sizeof parts, key);
}

}  // namespace hetopt
