// SPDX-License-Identifier: MIT
/**
 * @file clCreateProgramWithSource's strings as the driver reads them (a length of 0, or no lengths,
 * means up to the string's NUL): one reading for the trace mode, which keeps the source, and for
 * optimize mode, which matches it against the programs built ahead.
 */
#pragma once
#include <CL/cl.h>

#include <cstring>
#include <string>

#include "contracts/program_recipe.h"
#include "shim/core/interceptor.h"

namespace hetopt::shim {

struct SourceStrings {
  cl_uint count;
  const char** strings;
  const size_t* lengths;

  /// clCreateProgramWithSource(context, count, strings, lengths, errcode_ret)'s.
  static SourceStrings of(const CallRecord& call) {
    return {call.arg<cl_uint>(1), call.arg<const char**>(2), call.arg<const size_t*>(3)};
  }
  /// False when the driver would refuse them (no strings, a null one).
  bool valid() const {
    if (!count || !strings) return false;
    for (cl_uint i = 0; i < count; ++i)
      if (!strings[i]) return false;
    return true;
  }
  size_t length(cl_uint i) const { return lengths && lengths[i] ? lengths[i] : strlen(strings[i]); }
  /// sourceHash() of the strings as one, and their bytes in all.
  uint64_t hash(size_t* bytes) const {
    uint64_t h = sourceHash(nullptr, 0);
    *bytes = 0;
    for (cl_uint i = 0; i < count; ++i) {
      h = sourceHash(strings[i], length(i), h);
      *bytes += length(i);
    }
    return h;
  }
  /// The strings hold exactly `source`, byte for byte.
  bool equals(const std::string& source) const {
    size_t at = 0;
    for (cl_uint i = 0; i < count; ++i) {
      const size_t n = length(i);
      if (n > source.size() - at || memcmp(source.data() + at, strings[i], n) != 0) return false;
      at += n;
    }
    return at == source.size();
  }
  /// The strings as one.
  std::string joined() const {
    std::string out;
    for (cl_uint i = 0; i < count; ++i) out.append(strings[i], length(i));
    return out;
  }
};

}  // namespace hetopt::shim
