// SPDX-License-Identifier: MIT
/**
 * @file hetopt's one JSON writer: every `--json` output (analyze, show, devices, characterize)
 * and the Chrome trace-event timeline. A minimal streaming writer: commas and escaping are handled
 * here so callers cannot produce invalid JSON by forgetting one.
 */
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace hetopt {

class JsonWriter {
 public:
  explicit JsonWriter(std::string* out) : m_out(out) {}
  JsonWriter& beginObject() { return open('{'); }
  JsonWriter& endObject() { return close('}'); }
  JsonWriter& beginArray() { return open('['); }
  JsonWriter& endArray() { return close(']'); }
  /// The next value is this member of the enclosing object.
  JsonWriter& key(const std::string& k);
  JsonWriter& value(const std::string& s);
  JsonWriter& value(const char* s) { return value(std::string(s)); }
  JsonWriter& value(double d);  ///< non-finite numbers become null (JSON has no NaN/Infinity)
  JsonWriter& value(bool b);
  /// Any integer, written exactly.
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  JsonWriter& value(T i) {
    if constexpr (std::is_signed_v<T>)
      return integer(static_cast<int64_t>(i));
    else
      return integer(static_cast<uint64_t>(i));
  }
  JsonWriter& null();
  template <typename T>
  JsonWriter& member(const std::string& k, const T& v) {
    key(k);
    return value(v);
  }
  static std::string escape(const std::string& s);

 private:
  void separator();
  JsonWriter& open(char bracket);
  JsonWriter& close(char bracket);
  JsonWriter& integer(uint64_t u);
  JsonWriter& integer(int64_t i);
  std::string* m_out;
  std::vector<bool> m_first;  ///< per open container: no element written yet
  bool m_afterKey = false;
};

}  // namespace hetopt
