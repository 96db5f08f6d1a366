// SPDX-License-Identifier: MIT
/**
 * @file What recording costs per OpenCL call in trace mode, without any OpenCL driver: the trace
 * interceptor sees the call stream of loop_wkr's loop (write, kernel launch, read) exactly as the
 * shim's entry points hand it over, and the count interceptor (interception only) sees the same
 * stream as the baseline. Driver-free, so the numbers are the shim's own work, repeatable on any
 * machine; scripts/bench/trace_variants.sh measures what the driver adds on the real one.
 *   record_cost [--iters N] [--rounds R] [--program-only]
 */
#include <CL/cl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "shim/core/count_interceptor.h"
#include "shim/core/trace_interceptor.h"

namespace {

using hetopt::api::ApiId;
using hetopt::shim::CallRecord;
using hetopt::shim::Interceptor;

// Fake handles: the interceptors only compare them (no driver is behind them).
const uint64_t kContext = 0x800, kQueue = 0x1000, kBuffer = 0x2000, kKernel = 0x3000;

void call(Interceptor* i, ApiId id, std::initializer_list<uint64_t> values,
          uint64_t result = CL_SUCCESS) {
  uint64_t args[16] = {};
  std::copy(values.begin(), values.end(), args);
  CallRecord c{id, static_cast<unsigned>(values.size()), args};
  i->callBegin(c);
  c.result = result;  // the driver's answer
  i->callEnd(c);
}

/// loop_wkr's loop, `iters` times (3 calls each); returns ns per call. With `burst`, only bursts
/// of that many iterations are timed and `settle` runs between them.
double loop(Interceptor* i, float* host, size_t bytes, size_t iters, size_t burst = 0,
            const std::function<void()>& settle = {}) {
  const size_t global = bytes / sizeof(float);
  std::chrono::duration<double, std::nano> took{0};
  for (size_t done = 0; done < iters;) {
    const size_t n = burst ? std::min(burst, iters - done) : iters;
    const auto start = std::chrono::steady_clock::now();
    for (size_t k = 0; k < n; ++k) {
      call(i, ApiId::clEnqueueWriteBuffer,
           {kQueue, kBuffer, CL_TRUE, 0, bytes, reinterpret_cast<uint64_t>(host), 0, 0, 0});
      call(i, ApiId::clEnqueueNDRangeKernel,
           {kQueue, kKernel, 1, 0, reinterpret_cast<uint64_t>(&global), 0, 0, 0, 0});
      call(i, ApiId::clEnqueueReadBuffer,
           {kQueue, kBuffer, CL_TRUE, 0, bytes, reinterpret_cast<uint64_t>(host), 0, 0, 0});
    }
    took += std::chrono::steady_clock::now() - start;
    done += n;
    if (settle) settle();
  }
  return took.count() / static_cast<double>(3 * iters);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
double fastest(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

}  // namespace

// Prints ns per call (median of R rounds) per mode, and what one clock read costs (trace mode
// reads two per call). Trace mode records on a thread of its own: the program's thread pays for a
// copy of the call into the record stream. Without a driver the loop calls far faster than any
// program, so the recording thread falls behind and the loop then runs at its pace
// (back-pressure). Two numbers: the program's thread, timed in bursts that fit the stream (the
// recording thread catches up between them, untimed), and the back-to-back loop, whose pace is the
// recording thread's. --program-only skips the back-to-back loop (for a profiler: the program's
// thread then never helps the recording thread drain).
int main(int argc, char** argv) {
  size_t iters = 50000, rounds = 11;
  bool programOnly = false;
  for (int a = 1; a < argc; ++a) {
    if (!strcmp(argv[a], "--program-only"))
      programOnly = true;
    else if (!strcmp(argv[a], "--iters") && a + 1 < argc)
      iters = strtoull(argv[++a], nullptr, 10);
    else if (!strcmp(argv[a], "--rounds") && a + 1 < argc)
      rounds = strtoull(argv[++a], nullptr, 10);
  }
  char dir[] = "/tmp/hetopt-record-cost.XXXXXX";
  if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
  const std::string tracePath = std::string(dir) + "/t.trace";
  setenv("HETOPT_TRACE_FILE", tracePath.c_str(), 1);
  // The queue as trace mode makes it without twins (no driver to make one): its commands are
  // sampled for device timing, as a program's are (the sampled ones get an event slot that no
  // driver fills, so nothing is timed).
  setenv("HETOPT_TIME_QUEUE", "profiled", 1);

  const size_t bytes = 4096;
  std::vector<float> host(bytes / sizeof(float), 1.0f);
  hetopt::shim::CountInterceptor count;
  hetopt::shim::TraceInterceptor* trace = hetopt::shim::TraceInterceptor::create();
  // The host buffer is a tracked allocation of the program, as the malloc entry point reports it.
  hetopt::shim::CallSite site;
  site.depth = 1;
  site.pcs[0] = reinterpret_cast<uintptr_t>(&main);
  trace->allocated({hetopt::AllocFn::Malloc, host.data(), bytes, 0, nullptr, &site});
  const float a = 2.0f;
  // As in a program, a context first (trace mode notes the start-up until it sees one).
  for (Interceptor* i : {static_cast<Interceptor*>(&count), static_cast<Interceptor*>(trace)}) {
    call(i, ApiId::clCreateContext, {0, 0, 0, 0, 0, 0}, kContext);
    call(i, ApiId::clCreateCommandQueue, {kContext, 0, 0, 0}, kQueue);
    call(i, ApiId::clSetKernelArg,
         {kKernel, 0, sizeof(cl_mem), reinterpret_cast<uint64_t>(&kBuffer)});
    call(i, ApiId::clSetKernelArg, {kKernel, 1, sizeof a, reinterpret_cast<uint64_t>(&a)});
  }

  std::vector<double> countNs, traceNs, programNs;
  // The recording thread has taken everything queued (the ring is empty again).
  const auto caughtUp = [&] {
    while (!trace->stream().ring().empty())
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  };
  const size_t burst = 256;                     // 768 calls: a fraction of the ring
  loop(trace, host.data(), bytes, iters / 10);  // warm-up: the trace's loop structure settles
  for (size_t r = 0; r < rounds; ++r) {         // interleaved, so drift hits all alike
    countNs.push_back(loop(&count, host.data(), bytes, iters));
    caughtUp();
    programNs.push_back(loop(trace, host.data(), bytes, iters, burst, caughtUp));
    if (!programOnly) traceNs.push_back(loop(trace, host.data(), bytes, iters));
  }
  // Two clock reads per call are trace mode's host-time bracket: what one costs on this machine.
  const auto clockStart = std::chrono::steady_clock::now();
  volatile uint64_t sink = 0;  // kept: the reads are not optimized away
  for (int k = 0; k < 1000000; ++k) sink = sink + hetopt::trace::monotonicNs();
  const double clockNs =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - clockStart)
          .count() /
      1e6;
  trace->processExit();
  printf(
      "record_cost: loop_wkr's calls (write, launch, read of 4 KiB), %zu iterations x %zu rounds "
      "(median), no driver\n",
      iters, rounds);
  // The fastest round too: on a shared machine it is the steadier estimate of the work itself.
  printf("count mode (interception)  %7.1f ns/call  (fastest round %.1f)\n", median(countNs),
         fastest(countNs));
  printf("trace mode, program thread %7.1f ns/call  (fastest round %.1f; +%.1f over count)\n",
         median(programNs), fastest(programNs), median(programNs) - median(countNs));
  printf("one clock read             %7.1f ns       (trace mode reads two per call; %s)\n", clockNs,
         hetopt::trace::TscClock::scaling() ? "the TSC, scaled" : "clock_gettime");
  if (!programOnly)
    printf(
        "trace mode, back to back   %7.1f ns/call  (fastest round %.1f: the recording thread's "
        "pace)\n",
        median(traceNs), fastest(traceNs));
  unlink(tracePath.c_str());
  rmdir(dir);
  return 0;
}
