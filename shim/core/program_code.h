// SPDX-License-Identifier: MIT
/**
 * @file The bytes a program is created from, as the driver reads them: clCreateProgramWithSource's
 * strings (a length of 0, or no lengths, means up to the string's NUL), clCreateProgramWithBinary's
 * binary for one device, or clCreateProgramWithIL's IL. One reading for the trace mode, which keeps
 * the code, and for optimize mode, which matches it against the programs built ahead.
 */
#pragma once
#include <CL/cl.h>

#include <cstring>
#include <string>

#include "contracts/program_recipe.h"
#include "shim/core/interceptor.h"

namespace hetopt::shim {

struct ProgramCode {
  ProgramForm form = ProgramForm::Source;
  cl_context context = nullptr;
  // Source: the strings.
  cl_uint count = 0;
  const char** strings = nullptr;
  const size_t* lengths = nullptr;
  // Binary and IL: the bytes; Binary: for this one device.
  const unsigned char* bytes = nullptr;
  size_t length = 0;
  cl_device_id device = nullptr;

  /// The code of a clCreateProgramWithSource, clCreateProgramWithBinary (one device only) or
  /// clCreateProgramWithIL call; false for any other call, and for arguments the driver would
  /// refuse (no strings, a null one, no binary or IL).
  static bool of(const CallRecord& call, ProgramCode* out) {
    ProgramCode c;
    c.context = call.arg<cl_context>(0);
    switch (call.id) {
      case api::ApiId::clCreateProgramWithSource:
        c.count = call.arg<cl_uint>(1);
        c.strings = call.arg<const char**>(2);
        c.lengths = call.arg<const size_t*>(3);
        if (!c.count || !c.strings) return false;
        for (cl_uint i = 0; i < c.count; ++i)
          if (!c.strings[i]) return false;
        break;
      case api::ApiId::clCreateProgramWithBinary: {
        const auto* devices = call.arg<const cl_device_id*>(2);
        const auto* lengths = call.arg<const size_t*>(3);
        const auto* binaries = call.arg<const unsigned char**>(4);
        if (call.arg<cl_uint>(1) != 1 || !devices || !lengths || !binaries || !binaries[0] ||
            !lengths[0])
          return false;
        c.form = ProgramForm::Binary;
        c.device = devices[0];
        c.bytes = binaries[0];
        c.length = lengths[0];
        break;
      }
      case api::ApiId::clCreateProgramWithIL:
        c.form = ProgramForm::IL;
        c.bytes = call.arg<const unsigned char*>(1);
        c.length = call.arg<size_t>(2);
        if (!c.bytes || !c.length) return false;
        break;
      default:
        return false;
    }
    *out = c;
    return true;
  }

  /// Where the creation call takes its errcode_ret.
  static unsigned errorArg(ProgramForm form) {
    return form == ProgramForm::Source ? 4 : form == ProgramForm::Binary ? 6 : 3;
  }

  size_t stringLength(cl_uint i) const {
    return lengths && lengths[i] ? lengths[i] : strlen(strings[i]);
  }
  /// sourceHash() of the code as one byte string, and its bytes in all.
  uint64_t hash(size_t* total) const {
    if (form != ProgramForm::Source) {
      *total = length;
      return sourceHash(reinterpret_cast<const char*>(bytes), length);
    }
    uint64_t h = sourceHash(nullptr, 0);
    *total = 0;
    for (cl_uint i = 0; i < count; ++i) {
      h = sourceHash(strings[i], stringLength(i), h);
      *total += stringLength(i);
    }
    return h;
  }
  /// The code is exactly `code`, byte for byte.
  bool equals(const std::string& code) const {
    if (form != ProgramForm::Source)
      return code.size() == length && memcmp(code.data(), bytes, length) == 0;
    size_t at = 0;
    for (cl_uint i = 0; i < count; ++i) {
      const size_t n = stringLength(i);
      if (n > code.size() - at || memcmp(code.data() + at, strings[i], n) != 0) return false;
      at += n;
    }
    return at == code.size();
  }
  /// The code as one byte string.
  std::string joined() const {
    if (form != ProgramForm::Source)
      return std::string(reinterpret_cast<const char*>(bytes), length);
    std::string out;
    for (cl_uint i = 0; i < count; ++i) out.append(strings[i], stringLength(i));
    return out;
  }
};

}  // namespace hetopt::shim
