// SPDX-License-Identifier: MIT
/**
 * @file What device timing costs the driver per command, without hetopt in the process: the
 * question behind trace mode's overhead on call-bound loops (docs/results.md, Tracing overhead).
 * One small write -> kernel -> read loop (blocking transfers, like tests/apps/loop_wkr) is timed
 * on in-order queues of one context, in interleaved rounds, once per way of timing (Variant).
 * Prints the median microseconds per iteration of each and their cost over `plain`; the kernel's
 * result is checked against a host reference after every round (exit 1 on a mismatch).
 *   queue_cost [--size 4K] [--iters 2000] [--rounds 7] [--sample 16]
 */
#include <CL/cl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/apps/app_common.h"

using namespace hetopt::apps;

namespace {

const char* kSource = R"CL(
__kernel void inc(__global float* x, uint n) {
  size_t i = get_global_id(0);
  if (i < n) x[i] = x[i] + 1.0f;
}
)CL";

/// One way of timing:
///   plain      queue without CL_QUEUE_PROFILING_ENABLE, no events
///   profiling  queue with profiling enabled, no events (what trace mode's untimed commands cost)
///   events     profiling queue, an event on every command, its four timestamps read, released
///   sampled    profiling queue, an event on 1 command in `--sample` (default 16)
///   twin       plain queue; 1 command in `--sample` moves to a profiling queue of the same
///              context, fenced by a marker before it and a barrier on its event after it (the app
///              queue's order kept), so that only the timed commands pay for profiling
struct Variant {
  const char* name;
  bool profiling;
  unsigned eventEvery;  ///< 0: no events; 1: every command; k: one in k
  bool twin;            ///< timed commands go to a profiling queue beside the plain one
};

/// Reads the four timestamps the way trace mode does, then releases the event.
void readTimes(cl_event e) {
  cl_ulong t = 0;
  const cl_profiling_info which[] = {CL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_SUBMIT,
                                     CL_PROFILING_COMMAND_START, CL_PROFILING_COMMAND_END};
  for (cl_profiling_info w : which) APP_CL(clGetEventProfilingInfo(e, w, sizeof t, &t, nullptr));
  APP_CL(clReleaseEvent(e));
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = parseOptions(argc, argv, 4096, 2000);
  int rounds = 7;
  unsigned sample = 16;
  for (size_t i = 0; i + 1 < opt.rest.size(); i += 2) {
    if (opt.rest[i] == "--rounds") rounds = std::max(1, atoi(opt.rest[i + 1].c_str()));
    if (opt.rest[i] == "--sample") sample = std::max(2, atoi(opt.rest[i + 1].c_str()));
  }
  const size_t n = std::max<size_t>(opt.sizeBytes / sizeof(float), 1);
  const size_t bytes = n * sizeof(float);
  // Two contexts on the one device hetopt's rule picks: one queue without profiling, one with.
  ClEnv plainEnv(1, 0);
  ClEnv profEnv(1, CL_QUEUE_PROFILING_ENABLE);
  cl_int err = CL_SUCCESS;
  const cl_queue_properties twinProps[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
  cl_command_queue twinQueue =
      clCreateCommandQueueWithProperties(plainEnv.context(), plainEnv.device(), twinProps, &err);
  APP_CL(err);
  const Variant variants[] = {{"plain", false, 0, false},
                              {"profiling", true, 0, false},
                              {"events", true, 1, false},
                              {"sampled", true, sample, false},
                              {"twin", false, sample, true}};
  std::vector<std::vector<double>> perIter(std::size(variants));
  std::vector<float> host(n), expect(n);
  cl_uint count = static_cast<cl_uint>(n);
  size_t global = (n + 63) / 64 * 64;

  for (int r = 0; r < rounds; ++r) {
    for (size_t v = 0; v < std::size(variants); ++v) {
      const Variant& var = variants[v];
      const ClEnv& env = var.profiling ? profEnv : plainEnv;
      cl_program prog = env.build(kSource);
      cl_kernel k = env.kernel(prog, "inc");
      cl_mem dev = env.buffer(CL_MEM_READ_WRITE, bytes);
      APP_CL(clSetKernelArg(k, 0, sizeof dev, &dev));
      APP_CL(clSetKernelArg(k, 1, sizeof count, &count));
      fillPattern(host.data(), n, 7 + r);
      expect = host;
      cl_command_queue q = env.queue();
      unsigned command = 0;
      cl_event pendingFence = nullptr;  // the marker a twin command waits for
      auto fenceList = [&]() -> cl_uint { return pendingFence ? 1 : 0; };
      auto fencePtr = [&]() -> const cl_event* { return pendingFence ? &pendingFence : nullptr; };
      auto dropFence = [&] {
        if (pendingFence) clReleaseEvent(pendingFence);
        pendingFence = nullptr;
      };
      // An event for this command? (null: the program passed none)
      auto ev = [&](cl_event* e) -> cl_event* {
        return var.eventEvery && command++ % var.eventEvery == 0 ? e : nullptr;
      };
      auto done = [&](cl_event e) {
        if (e) readTimes(e);
      };
      // The queue a command goes to: the twin for a timed command (fenced on both sides).
      auto to = [&](cl_event* e) -> cl_command_queue {
        if (!var.twin || !e) return q;
        cl_event fence = nullptr;
        APP_CL(clEnqueueMarkerWithWaitList(q, 0, nullptr, &fence));
        APP_CL(clFlush(q));
        pendingFence = fence;
        return twinQueue;
      };
      auto after = [&](cl_event* e) {
        if (!var.twin || !e || !*e) return;
        APP_CL(clEnqueueBarrierWithWaitList(q, 1, e, nullptr));
        APP_CL(clFlush(twinQueue));
      };
      double start = nowMs();
      for (int it = 0; it < opt.iters; ++it) {
        cl_event e1 = nullptr, e2 = nullptr, e3 = nullptr;
        cl_event* p = ev(&e1);
        cl_command_queue cq = to(p);
        APP_CL(clEnqueueWriteBuffer(cq, dev, CL_TRUE, 0, bytes, host.data(), fenceList(),
                                    fencePtr(), p));
        after(p), dropFence();
        p = ev(&e2), cq = to(p);
        APP_CL(clEnqueueNDRangeKernel(cq, k, 1, nullptr, &global, nullptr, fenceList(), fencePtr(),
                                      p));
        after(p), dropFence();
        p = ev(&e3), cq = to(p);
        APP_CL(clEnqueueReadBuffer(cq, dev, CL_TRUE, 0, bytes, host.data(), fenceList(), fencePtr(),
                                   p));
        after(p), dropFence();
        done(e1), done(e2), done(e3);
      }
      APP_CL(clFinish(q));
      perIter[v].push_back((nowMs() - start) * 1e3 / opt.iters);
      for (int it = 0; it < opt.iters; ++it)  // each iteration reads back what its kernel made
        for (float& x : expect) x += 1.0f;
      APP_CHECK(nearlyEqual(host.data(), expect.data(), n));
      clReleaseMemObject(dev);
      clReleaseKernel(k);
      clReleaseProgram(prog);
    }
  }
  clReleaseCommandQueue(twinQueue);
  // Trace mode reads the clock twice per call: what that costs here (a VM whose clocksource has
  // no vDSO path pays a system call for each).
  const double clockStart = nowMs();
  double sink = 0;
  constexpr int kClockReads = 1000000;
  for (int i = 0; i < kClockReads; ++i) sink += nowMs();
  const double clockNs = (nowMs() - clockStart) * 1e6 / kClockReads;
  char clocksource[64] = "?";
  if (FILE* f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r")) {
    if (fscanf(f, "%63s", clocksource) != 1) snprintf(clocksource, sizeof clocksource, "?");
    fclose(f);
  }
  printf("clock: %.1f ns per steady_clock read (clocksource %s)%s\n", clockNs, clocksource,
         sink < 0 ? " " : "");
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double base = median(perIter[0]);
  printf(
      "queue_cost: %zu B per transfer, %d iterations x %d rounds (median), 3 commands/iteration\n",
      bytes, opt.iters, rounds);
  printf("%-10s %12s %14s %16s\n", "variant", "us/iter", "over plain", "per command us");
  for (size_t v = 0; v < std::size(variants); ++v) {
    const double m = median(perIter[v]);
    printf("%-10s %12.2f %13.1f%% %16.2f\n", variants[v].name, m, 100.0 * (m - base) / base,
           (m - base) / 3);
  }
  return 0;
}
