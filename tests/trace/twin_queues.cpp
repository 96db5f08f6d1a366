// SPDX-License-Identifier: MIT
/**
 * @file What a program can see of its queues, run under `hetopt trace` (HETOPT_TIME_QUEUE=twin
 * sends timed commands to a profiling twin of their queue; nothing of it may show).
 *
 * Queues: in-order (clCreateCommandQueue and ...WithProperties, with and without a properties
 * list), out-of-order where the device has it, and one the program made with profiling itself.
 * Each must answer its own properties. On each, rounds of order-dependent work: a non-blocking
 * write, two kernels that do not commute (x*3+k, then x*x+k), a non-blocking read, the next
 * round's write into the same buffer right behind it; on the out-of-order queue the order comes
 * from the program's events. Blocking transfers, map/unmap, a user event in a wait list, events as
 * outputs (their queue, context and profiling answers) and clFinish covering everything are
 * checked, and every result against a host reference. A twin command without its fence (or
 * without the barrier behind it) lets the kernels, the write and the read of a round overtake each
 * other: wrong results. Two threads then run their rounds on one queue at once (each with its own
 * kernels and buffer: the program's own order is per thread). Exit 0 when all is right, 1 on a
 * mismatch, 2 on set-up errors.
 */
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>

#include "tests/apps/app_common.h"

using namespace hetopt::apps;

namespace {

const char* kSource = R"CL(
__kernel void affine(__global float* a, float k) {
  size_t i = get_global_id(0);
  float x = a[i];
  for (int r = 0; r < 64; ++r) x = x * 0.5f + 0.5f * x;  // some work, same value
  a[i] = x * 3.0f + k;
}
__kernel void square(__global float* a, float k) {
  size_t i = get_global_id(0);
  a[i] = a[i] * a[i] * 0.001f + k;
}
)CL";

constexpr size_t kN = 1 << 14;
constexpr int kRounds = 48;
std::atomic<int> s_failures{0};

void check(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "twin_queues: FAILED: %s\n", what);
    ++s_failures;
  }
}

float expected(float x, float k1, float k2) {
  x = x * 3.0f + k1;
  return x * x * 0.001f + k2;
}

bool near(const std::vector<float>& got, const std::vector<float>& want) {
  for (size_t i = 0; i < got.size(); ++i)
    if (std::fabs(got[i] - want[i]) > 1e-3f * std::max(1.0f, std::fabs(want[i]))) {
      fprintf(stderr, "twin_queues: [%zu] %g, expected %g\n", i, got[i], want[i]);
      return false;
    }
  return true;
}

struct Kernels {
  cl_kernel affine, square;
};

void setArgs(cl_kernel k, cl_mem buf, float v) {
  APP_CL(clSetKernelArg(k, 0, sizeof buf, &buf));
  APP_CL(clSetKernelArg(k, 1, sizeof v, &v));
}

/// Rounds of write -> affine -> square -> read on `q`; out-of-order queues chain events.
void rounds(const ClEnv& env, cl_command_queue q, const Kernels& ks, bool outOfOrder,
            const char* name) {
  cl_mem buf = env.buffer(CL_MEM_READ_WRITE, kN * sizeof(float));
  std::vector<std::vector<float>> in(kRounds, std::vector<float>(kN)),
      out(kRounds, std::vector<float>(kN));
  const size_t global = kN;
  cl_event last = nullptr;  // out-of-order: the previous round's read (the buffer is reused)
  for (int r = 0; r < kRounds; ++r) {
    for (size_t i = 0; i < kN; ++i) in[r][i] = static_cast<float>((i * 7 + r * 13) % 101) * 0.25f;
    cl_event w = nullptr, a = nullptr, s = nullptr, rd = nullptr;
    APP_CL(clEnqueueWriteBuffer(q, buf, CL_FALSE, 0, kN * sizeof(float), in[r].data(), last ? 1 : 0,
                                last ? &last : nullptr, outOfOrder ? &w : nullptr));
    // Kernel arguments are captured at enqueue: each launch sets its own.
    setArgs(ks.affine, buf, static_cast<float>(r));
    APP_CL(clEnqueueNDRangeKernel(q, ks.affine, 1, nullptr, &global, nullptr, w ? 1 : 0,
                                  w ? &w : nullptr, outOfOrder ? &a : nullptr));
    setArgs(ks.square, buf, 1.0f + r);
    APP_CL(clEnqueueNDRangeKernel(q, ks.square, 1, nullptr, &global, nullptr, a ? 1 : 0,
                                  a ? &a : nullptr, outOfOrder ? &s : nullptr));
    APP_CL(clEnqueueReadBuffer(q, buf, CL_FALSE, 0, kN * sizeof(float), out[r].data(), s ? 1 : 0,
                               s ? &s : nullptr, outOfOrder ? &rd : nullptr));
    for (cl_event e : {w, a, s, last})
      if (e) APP_CL(clReleaseEvent(e));
    last = rd;
  }
  if (last) APP_CL(clReleaseEvent(last));
  APP_CL(clFinish(q));  // covers every read, wherever it ran
  bool ok = true;
  for (int r = 0; r < kRounds && ok; ++r) {
    std::vector<float> want(kN);
    for (size_t i = 0; i < kN; ++i) want[i] = expected(in[r][i], static_cast<float>(r), 1.0f + r);
    ok = near(out[r], want);
  }
  char what[128];
  snprintf(what, sizeof what, "%s: rounds of write -> kernel -> kernel -> read", name);
  check(ok, what);
  APP_CL(clReleaseMemObject(buf));
}

/// Blocking transfers, map/unmap, a user event in a wait list, output events and their answers.
/// Out-of-order queues order commands without events by the program's barriers.
void singles(const ClEnv& env, cl_command_queue q, const Kernels& ks, bool outOfOrder,
             bool appProfiled, const char* name) {
  auto barrier = [&] {
    if (outOfOrder) APP_CL(clEnqueueBarrierWithWaitList(q, 0, nullptr, nullptr));
  };
  char what[160];
  cl_mem buf = env.buffer(CL_MEM_READ_WRITE, kN * sizeof(float));
  std::vector<float> host(kN), back(kN), want(kN);
  const size_t global = kN;
  for (int rep = 0; rep < 40; ++rep) {
    for (size_t i = 0; i < kN; ++i) host[i] = static_cast<float>((i + rep) % 37);
    cl_event w = nullptr;
    APP_CL(
        clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, kN * sizeof(float), host.data(), 0, nullptr, &w));
    // The event answers the program's queue and context, and profiling only where it asked.
    cl_command_queue eq = nullptr;
    APP_CL(clGetEventInfo(w, CL_EVENT_COMMAND_QUEUE, sizeof eq, &eq, nullptr));
    snprintf(what, sizeof what, "%s: CL_EVENT_COMMAND_QUEUE is the program's queue", name);
    check(eq == q, what);
    cl_context ec = nullptr;
    APP_CL(clGetEventInfo(w, CL_EVENT_CONTEXT, sizeof ec, &ec, nullptr));
    check(ec == env.context(), "CL_EVENT_CONTEXT");
    cl_ulong t = 0;
    const cl_int prof = clGetEventProfilingInfo(w, CL_PROFILING_COMMAND_END, sizeof t, &t, nullptr);
    snprintf(what, sizeof what, "%s: clGetEventProfilingInfo answered %d", name, prof);
    check(appProfiled ? prof == CL_SUCCESS && t > 0 : prof == CL_PROFILING_INFO_NOT_AVAILABLE,
          what);
    cl_int st = -1;
    APP_CL(clGetEventInfo(w, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, nullptr));
    snprintf(what, sizeof what, "%s: a blocking write's event is complete on return", name);
    check(st == CL_COMPLETE, what);
    // A kernel waiting for a user event and the write's event; a read of its result behind it.
    cl_int err = CL_SUCCESS;
    cl_event user = clCreateUserEvent(env.context(), &err);
    APP_CL(err);
    const cl_event waits[2] = {user, w};
    cl_event k = nullptr, rd = nullptr;
    setArgs(ks.affine, buf, 2.0f);
    APP_CL(clEnqueueNDRangeKernel(q, ks.affine, 1, nullptr, &global, nullptr, 2, waits, &k));
    APP_CL(clEnqueueReadBuffer(q, buf, CL_FALSE, 0, kN * sizeof(float), back.data(), 1, &k, &rd));
    APP_CL(clFlush(q));
    st = -1;
    APP_CL(clGetEventInfo(rd, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, nullptr));
    snprintf(what, sizeof what, "%s: a read behind a user event waits for it", name);
    check(st != CL_COMPLETE, what);
    APP_CL(clSetUserEventStatus(user, CL_COMPLETE));
    APP_CL(clWaitForEvents(1, &rd));
    for (size_t i = 0; i < kN; ++i) want[i] = host[i] * 3.0f + 2.0f;
    snprintf(what, sizeof what, "%s: kernel behind a user event, read by its event", name);
    check(near(back, want), what);
    // Map (blocking), change it on the host, unmap, a kernel, a blocking read.
    float* p =
        static_cast<float*>(clEnqueueMapBuffer(q, buf, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                               kN * sizeof(float), 0, nullptr, nullptr, &err));
    APP_CL(err);
    snprintf(what, sizeof what, "%s: a blocking map shows the kernel's result", name);
    check(p && p[5] == want[5], what);
    for (size_t i = 0; i < kN; ++i) p[i] = static_cast<float>(i % 11);
    APP_CL(clEnqueueUnmapMemObject(q, buf, p, 0, nullptr, nullptr));
    barrier();
    setArgs(ks.square, buf, 0.5f);
    APP_CL(clEnqueueNDRangeKernel(q, ks.square, 1, nullptr, &global, nullptr, 0, nullptr, nullptr));
    barrier();
    APP_CL(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, kN * sizeof(float), back.data(), 0, nullptr,
                               nullptr));
    for (size_t i = 0; i < kN; ++i)
      want[i] = static_cast<float>(i % 11) * static_cast<float>(i % 11) * 0.001f + 0.5f;
    snprintf(what, sizeof what, "%s: map -> unmap -> kernel -> blocking read", name);
    check(near(back, want), what);
    // A fill and a copy between buffers.
    const float pattern = 4.0f;
    cl_mem other = env.buffer(CL_MEM_READ_WRITE, kN * sizeof(float));
    APP_CL(clEnqueueFillBuffer(q, other, &pattern, sizeof pattern, 0, kN * sizeof(float), 0,
                               nullptr, nullptr));
    barrier();
    APP_CL(clEnqueueCopyBuffer(q, other, buf, 0, 0, kN / 2 * sizeof(float), 0, nullptr, nullptr));
    barrier();
    APP_CL(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, kN * sizeof(float), back.data(), 0, nullptr,
                               nullptr));
    for (size_t i = 0; i < kN / 2; ++i) want[i] = 4.0f;
    snprintf(what, sizeof what, "%s: fill -> copy -> read", name);
    check(near(back, want), what);
    for (cl_event e : {w, user, k, rd}) APP_CL(clReleaseEvent(e));
    APP_CL(clReleaseMemObject(other));
  }
  APP_CL(clReleaseMemObject(buf));
}

cl_command_queue_properties propertiesOf(cl_command_queue q) {
  cl_command_queue_properties p = 0;
  APP_CL(clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof p, &p, nullptr));
  return p;
}

}  // namespace

int main() {
  ClEnv env(0);
  cl_program prog = env.build(kSource);
  Kernels ks{env.kernel(prog, "affine"), env.kernel(prog, "square")};
  cl_int err = CL_SUCCESS;
  auto contextRefs = [&env] {
    cl_uint n = 0;
    APP_CL(clGetContextInfo(env.context(), CL_CONTEXT_REFERENCE_COUNT, sizeof n, &n, nullptr));
    return n;
  };
  const cl_uint refsBefore = contextRefs();
  cl_command_queue_properties host = 0;
  APP_CL(clGetDeviceInfo(env.device(), CL_DEVICE_QUEUE_ON_HOST_PROPERTIES, sizeof host, &host,
                         nullptr));
  struct Q {
    const char* name;
    cl_command_queue q;
    cl_command_queue_properties props;
  };
  std::vector<Q> queues;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  queues.push_back({"in-order (clCreateCommandQueue)",
                    clCreateCommandQueue(env.context(), env.device(), 0, &err), 0});
#pragma GCC diagnostic pop
  APP_CL(err);
  queues.push_back({"in-order (no properties list)",
                    clCreateCommandQueueWithProperties(env.context(), env.device(), nullptr, &err),
                    0});
  APP_CL(err);
  if (host & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) {
    const cl_queue_properties ooo[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE,
                                       0};
    queues.push_back({"out-of-order",
                      clCreateCommandQueueWithProperties(env.context(), env.device(), ooo, &err),
                      CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE});
    APP_CL(err);
  }
  const cl_queue_properties prof[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
  queues.push_back({"profiled by the program",
                    clCreateCommandQueueWithProperties(env.context(), env.device(), prof, &err),
                    CL_QUEUE_PROFILING_ENABLE});
  APP_CL(err);
  for (const Q& q : queues) {
    char what[160];
    snprintf(what, sizeof what, "%s: CL_QUEUE_PROPERTIES unchanged", q.name);
    check(propertiesOf(q.q) == q.props, what);
    rounds(env, q.q, ks, q.props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, q.name);
    singles(env, q.q, ks, q.props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE,
            q.props & CL_QUEUE_PROFILING_ENABLE, q.name);
    check(propertiesOf(q.q) == q.props, what);
  }
  // Two threads on one in-order queue at once, each its own kernels and buffer.
  {
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t)
      threads.emplace_back([&env, prog, &queues] {
        Kernels own{env.kernel(prog, "affine"), env.kernel(prog, "square")};
        rounds(env, queues[1].q, own, false, "two threads on one queue");
        APP_CL(clReleaseKernel(own.affine));
        APP_CL(clReleaseKernel(own.square));
      });
    for (std::thread& t : threads) t.join();
  }
  // A queue released and made again (its twin goes with it) still works.
  APP_CL(clReleaseCommandQueue(queues[0].q));
  queues[0].q = clCreateCommandQueueWithProperties(env.context(), env.device(), nullptr, &err);
  APP_CL(err);
  rounds(env, queues[0].q, ks, false, "queue made again");
  for (const Q& q : queues) APP_CL(clReleaseCommandQueue(q.q));
  // Every queue gone with the program's last reference (twins included): the context's count comes
  // back (PoCL frees a released queue in the background, so it may take a moment).
  cl_uint refsAfter = contextRefs();
  for (int i = 0; i < 200 && refsAfter != refsBefore; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    refsAfter = contextRefs();
  }
  if (refsAfter != refsBefore)
    fprintf(stderr, "twin_queues: context references %u, before %u\n", refsAfter, refsBefore);
  check(refsAfter == refsBefore,
        "queues released: the context holds no more references than before");
  APP_CL(clReleaseKernel(ks.affine));
  APP_CL(clReleaseKernel(ks.square));
  APP_CL(clReleaseProgram(prog));
  printf("result: %s\n", s_failures.load() ? "FAILED" : "ok");
  return s_failures.load() ? 1 : 0;
}
