// SPDX-License-Identifier: MIT
/**
 * @file Writes valid traces (synthetic streams through the real writer) into a directory: the seed
 * corpus of the reader's fuzz target. Usage: trace_corpus DIR
 */
#include <sys/stat.h>
#include <zstd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/trace/synthetic.h"
#include "trace/time_sampler.h"

using namespace hetopt::trace;
using namespace hetopt::trace::testing;

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: trace_corpus DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  for (size_t slash = dir.find('/', 1); slash != std::string::npos;
       slash = dir.find('/', slash + 1))
    mkdir(dir.substr(0, slash).c_str(), 0700);
  mkdir(dir.c_str(), 0700);
  {
    Synth s(dir + "/loops.trace");
    if (!s.ok()) {
      fprintf(stderr, "trace_corpus: cannot write into %s\n", dir.c_str());
      return 1;
    }
    ObjectId mem = s.buffer(0xa0, 4096), other = s.buffer(0xa8, 4096);
    ObjectId k = s.recorder().createHandle(ObjectKind::Kernel, 0xb0);
    s.malloc(0x10000, 4096);
    for (int i = 0; i < 30; ++i) {
      s.write(mem, 0x10000, 4096);
      for (int j = 0; j < 3; ++j) s.kernel(k, other);
      s.read(other, 0x10000, 4096);
    }
    s.write(mem, 0x7fff0000, 64);
    s.free(0x10000);
    s.recorder().noteRecordingCost(12, 9600);  // format 3's RecordingCost record
    s.finish();
  }
  {
    // Sampled device timings (HETOPT_TIME_SAMPLE): the format-2 golden trace.
    Synth s(dir + "/sampled.trace");
    TimeSampler sampler(16, 1);
    ObjectId mem = s.buffer(0xa0, 4096);
    ObjectId k = s.recorder().createHandle(ObjectKind::Kernel, 0xb0);
    s.malloc(0x10000, 4096);
    for (int i = 0; i < 100; ++i) {
      s.write(mem, 0x10000, 4096, deviceTiming(sampler.weight(1), 1000 + 10 * (i % 4)));
      s.kernel(k, mem, deviceTiming(sampler.weight(2), 5000));
      s.read(mem, 0x10000, 4096, deviceTiming(sampler.weight(3), 2000));
    }
    s.free(0x10000);
    s.finish();
  }
  {
    // A checkpoint only (what a killed program leaves): copy the file before finishing.
    const std::string path = dir + "/tail.trace.tmp";
    Synth s(path, 0);
    ObjectId mem = s.buffer(0xa0, 4096);
    for (int i = 0; i < 200; ++i) {
      s.malloc(0x20000 + 0x1000 * (i % 3), 8192, 0x401000 + 16 * (i % 5));
      s.write(mem, 0x20000 + 0x1000 * (i % 3), 8192);
      s.free(0x20000 + 0x1000 * (i % 3));
    }
    std::ifstream in(path, std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(dir + "/tail.trace", std::ios::binary) << data;
    s.finish();
    remove(path.c_str());
  }
  // The same records as raw record bytes ('R' + records: the fuzz target wraps them in a file).
  for (const char* name : {"loops", "tail"}) {
    hetopt::trace::Trace t;
    std::ifstream in(dir + "/" + name + ".trace", std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), {});
    // Skip the header and the first chunk header; keep the decompressed records of chunk 0.
    const auto* p = reinterpret_cast<const unsigned char*>(data.data());
    if (data.size() < kFixedHeaderBytes + kChunkHeaderBytes) return 1;
    const uint32_t header = getU32(p + 12);
    const unsigned char* c = p + header;
    const uint32_t payload = getU32(c + 8), raw = getU32(c + 12);
    std::string records(raw, '\0');
    if (ZSTD_isError(ZSTD_decompress(records.data(), raw, c + kChunkHeaderBytes, payload)))
      return 1;
    std::ofstream(dir + "/" + name + ".records", std::ios::binary) << "R" << records;
  }
  return 0;
}
