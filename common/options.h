// SPDX-License-Identifier: MIT
/** @file Typed access to the HETOPT_* environment table in options.def. Allocation-free: safe in
 * the shim. */
#pragma once
#include <cstddef>
#include <cstdint>

namespace hetopt {

enum class Option {
#define HETOPT_OPTION(name, def, doc) name,
#include "common/options.def"
#undef HETOPT_OPTION
  Count
};

struct OptionInfo {
  const char* envName;  ///< "HETOPT_MODE"
  const char* defaultValue;
  const char* doc;
};

const OptionInfo& optionInfo(Option o);

/// The variable's value, or its default when unset or empty. Never null.
const char* optionString(Option o);

/// Parses an unsigned integer option. On garbage or out-of-range values returns the default and
/// sets *valid=false (callers warn once); never throws.
uint64_t optionUnsigned(Option o, uint64_t minValue, uint64_t maxValue, bool* valid = nullptr);

bool optionFlag(Option o);

}  // namespace hetopt
