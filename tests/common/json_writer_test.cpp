// SPDX-License-Identifier: MIT
/** @file The one JSON writer: commas, nesting, numbers of every type, and strings that stay valid.
 */
#include "common/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace hetopt {
namespace {

TEST(JsonWriter, CommasAndNesting) {
  std::string out;
  JsonWriter j(&out);
  j.beginObject().member("a", 1).key("b").beginArray().value(true).null().beginObject().endObject();
  j.endArray().member("c", "x").key("d").beginArray().endArray().endObject();
  EXPECT_EQ(out, "{\"a\":1,\"b\":[true,null,{}],\"c\":\"x\",\"d\":[]}");
}

TEST(JsonWriter, NumbersOfEveryType) {
  std::string out;
  JsonWriter j(&out);
  j.beginArray()
      .value(uint8_t{200})
      .value(int32_t{-5})
      .value(uint32_t{4000000000u})
      .value(size_t{7});
  j.value(UINT64_MAX)
      .value(INT64_MIN)
      .value(0.5)
      .value(HUGE_VAL)
      .value(NAN)
      .value(false)
      .endArray();
  EXPECT_EQ(out,
            "[200,-5,4000000000,7,18446744073709551615,-9223372036854775808,0.5,null,null,false]");
}

TEST(JsonWriter, StringsStayValid) {
  std::string out;
  JsonWriter j(&out);
  j.beginObject().member("k\"ey", std::string("a\\b\n\t\x01\xe2\x82\xac\xff")).endObject();
  // Quotes, backslashes and controls escaped; valid UTF-8 kept; an invalid byte becomes U+FFFD.
  EXPECT_EQ(out, "{\"k\\\"ey\":\"a\\\\b\\n\\t\\u0001\xe2\x82\xac\\ufffd\"}");
}

}  // namespace
}  // namespace hetopt
