// SPDX-License-Identifier: MIT
/**
 * @file Reading the numbers of hetopt's small line-based formats (plan, run record, run ledger):
 * unsigned decimal or hex words, nothing signed, nothing trailing. Header-only, lean (the shim
 * reads plans with it).
 */
#pragma once
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <sstream>
#include <string>

namespace hetopt::text {

/// One unsigned number in `base`, the whole word: no sign, no blank, no overflow.
inline bool parseU64(const std::string& s, int base, uint64_t* out) {
  if (s.empty() || s[0] == '-' || s[0] == '+' || isspace(static_cast<unsigned char>(s[0])))
    return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = strtoull(s.c_str(), &end, base);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

/// The next words of `words` as numbers (the first in hex when `hexFirst`); with `whole`, nothing
/// may follow them.
inline bool readNumbers(std::istringstream& words, std::initializer_list<uint64_t*> out,
                        bool hexFirst = false, bool whole = true) {
  bool first = true;
  for (uint64_t* v : out) {
    std::string w;
    if (!(words >> w) || !parseU64(w, first && hexFirst ? 16 : 10, v)) return false;
    first = false;
  }
  std::string extra;
  return !whole || !(words >> extra);
}

}  // namespace hetopt::text
