// SPDX-License-Identifier: MIT
/**
 * @file A minimal streaming JSON writer for `--json` reports and Chrome trace-event timelines.
 * Commas and escaping are handled here so callers cannot produce invalid JSON by forgetting one.
 */
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace hetopt::analyzer {

class JsonWriter {
 public:
  explicit JsonWriter(std::string* out) : m_out(out) {}
  JsonWriter& beginObject();
  JsonWriter& endObject();
  JsonWriter& beginArray();
  JsonWriter& endArray();
  /// The next value is this member of the enclosing object.
  JsonWriter& key(const std::string& k);
  JsonWriter& value(const std::string& s);
  JsonWriter& value(const char* s) { return value(std::string(s)); }
  JsonWriter& value(double d);  ///< non-finite numbers become null (JSON has no NaN/Infinity)
  JsonWriter& value(uint64_t u);
  JsonWriter& value(int64_t i);
  JsonWriter& value(int i) { return value(static_cast<int64_t>(i)); }
  JsonWriter& value(bool b);
  JsonWriter& null();
  template <typename T>
  JsonWriter& member(const std::string& k, const T& v) {
    key(k);
    return value(v);
  }
  static std::string escape(const std::string& s);

 private:
  void separator();
  std::string* m_out;
  std::vector<bool> m_first;  ///< per open container: no element written yet
  bool m_afterKey = false;
};

}  // namespace hetopt::analyzer
