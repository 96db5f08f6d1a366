// SPDX-License-Identifier: MIT
/**
 * @file libFuzzer target for the trace reader: any bytes must be accepted or rejected with a
 * message, never crash, hang or read out of bounds (built with clang -fsanitize=fuzzer,address).
 */
#include <cstddef>
#include <cstdint>
#include <string>

#include "trace/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hetopt::trace;
  for (bool salvage : {false, true}) {
    Trace t;
    std::string error;
    ReadOptions options;
    options.salvage = salvage;
    if (parseTrace(data, size, &t, &error, options)) {
      TraceSummary s = summarize(t);
      (void)s;
      for (const TraceNode& n : t.nodes) (void)t.leafName(n);
    } else if (error.empty()) {
      __builtin_trap();  // a rejection must say why
    }
  }
  return 0;
}
