// SPDX-License-Identifier: MIT
/** @file See json_writer.h.
 * Separators, nesting, escaping and number forms of the one JSON writer. */
#include "common/json_writer.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>

namespace hetopt {

void JsonWriter::separator() {
  if (m_afterKey) {
    m_afterKey = false;
    return;
  }
  if (!m_first.empty()) {
    if (!m_first.back()) *m_out += ',';
    m_first.back() = false;
  }
}

JsonWriter& JsonWriter::open(char bracket) {
  separator();
  *m_out += bracket;
  m_first.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::close(char bracket) {
  *m_out += bracket;
  m_first.pop_back();
  return *this;
}
JsonWriter& JsonWriter::key(const std::string& k) {
  separator();
  *m_out += '"' + escape(k) + "\":";
  m_afterKey = true;
  return *this;
}
JsonWriter& JsonWriter::value(const std::string& s) {
  separator();
  *m_out += '"' + escape(s) + '"';
  return *this;
}
JsonWriter& JsonWriter::value(double d) {
  if (!std::isfinite(d)) return null();
  separator();
  char buf[40];
  snprintf(buf, sizeof buf, "%.17g", d);
  *m_out += buf;
  return *this;
}
JsonWriter& JsonWriter::integer(uint64_t u) {
  separator();
  *m_out += std::to_string(u);
  return *this;
}
JsonWriter& JsonWriter::integer(int64_t i) {
  separator();
  *m_out += std::to_string(i);
  return *this;
}
JsonWriter& JsonWriter::value(bool b) {
  separator();
  *m_out += b ? "true" : "false";
  return *this;
}
JsonWriter& JsonWriter::null() {
  separator();
  *m_out += "null";
  return *this;
}

std::string JsonWriter::escape(const std::string& s) {
  std::string r;
  r.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      // Valid UTF-8 passes through; anything else (paths are bytes, a corrupt trace is anything)
      // becomes U+FFFD so the output stays valid JSON.
      size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
      bool ok = len > 0 && c >= 0xC2 && c <= 0xF4 && i + len <= s.size();
      for (size_t k = 1; ok && k < len; ++k)
        ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
      if (ok) {
        r.append(s, i, len);
        i += len - 1;
      } else {
        r += "\\ufffd";
      }
      continue;
    }
    switch (c) {
      case '"':
        r += "\\\"";
        break;
      case '\\':
        r += "\\\\";
        break;
      case '\n':
        r += "\\n";
        break;
      case '\r':
        r += "\\r";
        break;
      case '\t':
        r += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          snprintf(buf, sizeof buf, "\\u%04x", c);
          r += buf;
        } else {
          r += static_cast<char>(c);
        }
    }
  }
  return r;
}

}  // namespace hetopt
