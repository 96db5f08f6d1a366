// SPDX-License-Identifier: MIT
/**
 * @file libFuzzer target for the trace reader: any bytes must be accepted or rejected with a
 * message, never crash, hang or read out of bounds (built with clang -fsanitize=fuzzer,address).
 *
 * Inputs starting with 'R' are taken as raw record bytes and wrapped into a file with a valid
 * header, zstd frame and checksums first: random bytes almost never pass the CRCs, so without this
 * the fuzzer would stop at the chunk checks and never reach the record and node parsers.
 *
 * Built with HETOPT_FUZZ_ANALYSIS (tests/analyzer: trace_analysis_fuzzer), every trace the reader
 * accepts also goes through what `hetopt analyze` does with it: the analysis ("never fails on a
 * trace the reader accepted"), the report, its JSON and the timeline.
 */
#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "hetopt/version.h"
#include "trace/format.h"
#include "trace/reader.h"
#include "trace/writer.h"

#ifdef HETOPT_FUZZ_ANALYSIS
#include "analyzer/analysis.h"
#include "analyzer/report.h"
#endif

namespace {

using namespace hetopt::trace;

std::string wrapRecords(const uint8_t* data, size_t size) {
  FileHeader h;
  h.pid = 1;
  h.writerVersion = "fuzz";
  std::string file = encodeHeader(h, HETOPT_TRACE_FORMAT_VERSION);
  std::string payload(ZSTD_compressBound(size), '\0');
  size_t n = ZSTD_compress(payload.data(), payload.size(), data, size, 1);
  if (ZSTD_isError(n)) return file;
  payload.resize(n);
  unsigned char c[kChunkHeaderBytes] = {};
  memcpy(c, kChunkMagic, sizeof kChunkMagic);
  c[4] = static_cast<unsigned char>(ChunkKind::Records);
  putU32(c + 8, static_cast<uint32_t>(payload.size()));
  putU32(c + 12, static_cast<uint32_t>(size));
  putU32(c + 16, 0);
  putU32(c + 20, crc32(payload.data(), payload.size(), crc32(c, 20)));
  file.append(reinterpret_cast<const char*>(c), sizeof c);
  file += payload;
  return file;
}

#ifdef HETOPT_FUZZ_ANALYSIS
void analyze(const Trace& t) {
  hetopt::analyzer::AnalysisOptions options;
  options.symbolize = false;  // no files to open: the trace's module paths are made up
  hetopt::analyzer::AppProfile profile;
  hetopt::analyzer::analyzeTrace(t, options, &profile);
  (void)hetopt::analyzer::formatReport(profile);
  (void)hetopt::analyzer::profileToJson(profile);
  std::set<uint32_t> sites;
  for (uint32_t i = 1; i <= t.sites.size() && i <= 8; ++i) sites.insert(i);
  hetopt::analyzer::TimelineInfo info;
  std::vector<hetopt::analyzer::TimelineEvent> events =
      hetopt::analyzer::timelineEvents(t, &info, sites);
  (void)hetopt::analyzer::timelineJson(info, events);
}
#endif

void parseBoth(const void* data, size_t size) {
  for (bool salvage : {false, true}) {
    Trace t;
    std::string error;
    ReadOptions options;
    options.salvage = salvage;
    if (parseTrace(data, size, &t, &error, options)) {
      TraceSummary s = summarize(t);
      (void)s;
      for (const TraceNode& n : t.nodes) (void)t.leafName(n);
#ifdef HETOPT_FUZZ_ANALYSIS
      analyze(t);
#endif
    } else if (error.empty()) {
      __builtin_trap();  // a rejection must say why
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 0 && data[0] == 'R') {
    std::string file = wrapRecords(data + 1, size - 1);
    parseBoth(file.data(), file.size());
  } else {
    parseBoth(data, size);
  }
  return 0;
}
