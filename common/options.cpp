// SPDX-License-Identifier: MIT
/** @file The HETOPT_* environment table.
 * Each option's name, default and meaning come from options.def, which README's table mirrors. */
#include "common/options.h"

#include <cerrno>
#include <cstdlib>

namespace hetopt {
namespace {
constexpr OptionInfo kOptions[] = {
#define HETOPT_OPTION(name, def, doc) {"HETOPT_" #name, def, doc},
#include "common/options.def"
#undef HETOPT_OPTION
};
static_assert(sizeof(kOptions) / sizeof(kOptions[0]) == static_cast<size_t>(Option::Count));
}  // namespace

const OptionInfo& optionInfo(Option o) { return kOptions[static_cast<size_t>(o)]; }

const char* optionString(Option o) {
  const OptionInfo& info = optionInfo(o);
  const char* v = getenv(info.envName);
  return (v && *v) ? v : info.defaultValue;
}

uint64_t optionUnsigned(Option o, uint64_t minValue, uint64_t maxValue, bool* valid) {
  const OptionInfo& info = optionInfo(o);
  uint64_t fallback = strtoull(info.defaultValue, nullptr, 10);
  const char* v = optionString(o);
  char* end = nullptr;
  errno = 0;
  unsigned long long parsed = strtoull(v, &end, 10);
  bool ok = errno == 0 && end != v && *end == '\0' && v[0] != '-' && parsed >= minValue &&
            parsed <= maxValue;
  if (valid) *valid = ok;
  return ok ? parsed : fallback;
}

bool optionFlag(Option o) {
  const char* v = optionString(o);
  return v[0] == '1' || v[0] == 'y' || v[0] == 'Y' || v[0] == 't' || v[0] == 'T';
}

}  // namespace hetopt
