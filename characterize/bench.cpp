// SPDX-License-Identifier: MIT
/** @file Allocation and transfer micro-benchmarks; see bench.h.
 * ClSession (context, queues, buffers), DeviceBench (sizes outer, policies interleaved). */
#include "characterize/bench.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>

#include "characterize/host_info.h"
#include "common/log.h"
#include "common/units.h"
#include "hetopt/version.h"
#include "policies/os_memory.h"
#include "policies/policy.h"

namespace hetopt::characterize {
namespace {

constexpr size_t kChunk = 64 * 1024;

/// Ends the device's run: an OpenCL failure or a wrong transfer result.
struct BenchError {
  std::string what;
};

void clCheck(cl_int status, const char* what) {
  if (status != CL_SUCCESS) throw BenchError{std::string(what) + " failed: " + clErrorName(status)};
}

double nowNs() {
  return std::chrono::duration<double, std::nano>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string reasonText(const PolicyStatus& st) {
  std::string r = st.reason;
  if (st.clStatus != CL_SUCCESS) r += std::string(" = ") + clErrorName(st.clStatus);
  return r;
}

uint32_t blockSeed(PolicyKind p, size_t block, uint64_t size) {
  uint64_t x = (static_cast<uint64_t>(p) + 1) * 0x9e3779b97f4a7c15ull ^
               (block + 1) * 0xbf58476d1ce4e5b9ull ^ size * 0x94d049bb133111ebull;
  return static_cast<uint32_t>(x ^ (x >> 32)) | 1u;
}

void makeChunk(uint8_t* chunk, uint32_t seed) {
  uint32_t x = seed;
  for (size_t i = 0; i < kChunk; i += 4) {
    x = x * 1664525u + 1013904223u;
    uint32_t v = x ^ (x >> 15);
    memcpy(chunk + i, &v, 4);
  }
}

// The first 8 bytes of each chunk carry the chunk's index, so that data landing at the wrong offset
// (a multiple of the chunk size) is still caught.
void stampChunk(uint8_t* p, size_t avail, uint32_t seed, uint64_t index) {
  uint64_t stamp = (index << 32 | seed) ^ 0xa5a5a5a55a5a5a5aull;
  memcpy(p, &stamp, std::min<size_t>(avail, 8));
}

/// The device's context and queues, released in the destructor.
class ClSession {
 public:
  ClSession(const ClDevice& dev, int queues) {
    try {
      create(dev, queues);
    } catch (...) {
      release();
      throw;
    }
  }
  ~ClSession() { release(); }
  ClSession(const ClSession&) = delete;
  ClSession& operator=(const ClSession&) = delete;
  cl_context context() const { return m_context; }
  cl_command_queue queue(int i) const { return m_queues[i]; }

 private:
  void create(const ClDevice& dev, int queues) {
    cl_int st = CL_SUCCESS;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                     reinterpret_cast<cl_context_properties>(dev.platform), 0};
    m_context = clCreateContext(props, 1, &dev.device, nullptr, nullptr, &st);
    clCheck(st, "clCreateContext");
    for (int i = 0; i < queues; ++i) {
      cl_command_queue q = clCreateCommandQueue(m_context, dev.device, 0, &st);
      clCheck(st, "clCreateCommandQueue");
      m_queues.push_back(q);
    }
  }
  // Failures here can no longer change a result: they are reported, not thrown.
  void release() {
    auto report = [](cl_int st, const char* what) {
      if (st != CL_SUCCESS) warn("characterize: %s failed: %s", what, clErrorName(st));
    };
    for (cl_command_queue q : m_queues) report(clFinish(q), "clFinish");
    for (cl_command_queue q : m_queues) report(clReleaseCommandQueue(q), "clReleaseCommandQueue");
    if (m_context) report(clReleaseContext(m_context), "clReleaseContext");
    m_queues.clear();
    m_context = nullptr;
  }

  cl_context m_context = nullptr;
  std::vector<cl_command_queue> m_queues;
};

/// Availability of one policy, from what its allocations did at each size.
class Tracker {
 public:
  explicit Tracker(PolicyKind p) : m_policy(p) {}
  void ok(uint64_t size) { m_ok.push_back(size); }
  void fail(uint64_t size, const std::string& reason) {
    if (size < m_firstFail) {
      m_firstFail = size;
      m_failReason = reason;
    }
  }
  void note(const std::string& text) {
    if (m_note.empty()) m_note = text;
  }
  /// False when the policy failed its probe (recorded as a failure at size 0).
  bool probed() const { return m_firstFail != 0; }
  PolicyAvailability result() const {
    PolicyAvailability a;
    a.policy = m_policy;
    for (uint64_t s : m_ok)
      if (s < m_firstFail) a.maxSize = std::max(a.maxSize, s);
    if (m_failReason.empty()) {
      a.state = PolicyAvailability::State::Available;
      a.reason = m_note;
    } else {
      a.state =
          a.maxSize ? PolicyAvailability::State::Partial : PolicyAvailability::State::Unavailable;
      a.reason =
          a.maxSize ? "fails at " + formatBytes(m_firstFail) + ": " + m_failReason : m_failReason;
    }
    return a;
  }

 private:
  PolicyKind m_policy;
  std::vector<uint64_t> m_ok;
  uint64_t m_firstFail = UINT64_MAX;
  std::string m_failReason, m_note;
};

/// One measured operation of an interleaved set: returns the ns it measured, or < 0 when it failed
/// (and recorded why); `record` is false for warm-up runs.
using Op = std::function<double(bool record)>;

struct Repeated {
  std::vector<bool> ok;  ///< per op, whether it succeeded
  int runs = 0;          ///< ops run in all, warm-up included
};

/// Runs every op per the plan, interleaved: each round runs each unfinished op once, starting at a
/// rotating position. Time-correlated noise (a neighbour on the CPU, a vCPU waking up, the driver's
/// worker thread going to sleep) then hits every policy alike instead of whole points of one
/// policy.
Repeated repeatInterleaved(const RepPlan& plan, const std::vector<Op>& ops) {
  const size_t n = ops.size();
  Repeated out;
  std::vector<bool>& ok = out.ok;
  ok.assign(n, true);
  std::vector<bool> done(n, false);
  std::vector<double> slowest(n, 0), total(n, 0);
  std::vector<int> reps(n, 0);
  for (int w = 0; w < plan.warmup; ++w) {
    for (size_t i = 0; i < n; ++i) {
      if (!ok[i]) continue;
      double t = ops[i](false);
      ++out.runs;
      if (t < 0) ok[i] = false;
      slowest[i] = std::max(slowest[i], t);
    }
  }
  for (size_t i = 0; i < n; ++i) done[i] = !ok[i];
  for (size_t round = 0;; ++round) {
    bool any = false;
    for (size_t k = 0; k < n; ++k) {
      size_t i = (round + k) % n;
      if (done[i]) continue;
      double t = ops[i](true);
      ++out.runs;
      if (t < 0) {
        ok[i] = false;
        done[i] = true;
        continue;
      }
      total[i] += t;
      ++reps[i];
      int minReps = slowest[i] > plan.slowNs ? plan.slowMinReps : plan.minReps;
      done[i] = reps[i] >= plan.maxReps || (reps[i] >= minReps && total[i] >= plan.targetNs);
      any = true;
    }
    if (!any) break;
  }
  return out;
}

/// Host blocks of one policy for one size and the device buffers they transfer to (one per
/// queue: each policy reads back its own data), released (and checked) when the size's group is
/// done.
struct Blocks {
  AllocationPolicy* policy = nullptr;
  std::vector<Allocation> allocs;
  std::vector<void*> owned;  // register: the "application's" memory under each allocation
  std::vector<cl_mem> buffers;
  Blocks() = default;
  Blocks(const Blocks&) = delete;
  Blocks& operator=(const Blocks&) = delete;
  Blocks(Blocks&& o) noexcept
      : policy(o.policy),
        allocs(std::move(o.allocs)),
        owned(std::move(o.owned)),
        buffers(std::move(o.buffers)) {
    o.allocs.clear();
    o.owned.clear();
    o.buffers.clear();
  }
  ~Blocks() {  // error path only; see releaseAll()
    for (Allocation& a : allocs) policy->release(&a);
    for (void* p : owned) free(p);
    for (cl_mem b : buffers) clReleaseMemObject(b);
  }
  void releaseAll() {
    for (Allocation& a : allocs) {
      PolicyStatus r = policy->release(&a);
      if (!r)
        throw BenchError{std::string("releasing ") + policyName(policy->kind()) +
                         " memory failed: " + reasonText(r)};
    }
    allocs.clear();
    for (void* p : owned) free(p);
    owned.clear();
    // Taken out first: a failure throws, and the destructor must not release them again.
    std::vector<cl_mem> releasing = std::move(buffers);
    buffers.clear();
    for (cl_mem b : releasing) clCheck(clReleaseMemObject(b), "clReleaseMemObject (device buffer)");
  }
};

// Sizes are the outer loop; at each size every policy (of a group, where the memory budget
// splits them) is measured, interleaved rep by rep (see repeatInterleaved), so that the
// comparison between policies is fair even on a noisy machine.
class DeviceBench {
 public:
  DeviceBench(const BenchPlan& plan, ClSession& session, Progress* progress,
              CharacterizationRun* run)
      : m_plan(plan),
        m_session(session),
        m_progress(progress),
        m_run(run),
        m_alloc(allocationSteps(plan), plan.reps),
        m_transfers(transferSteps(plan), plan.reps) {}

  void measure(const PolicyEnv& env) {
    for (PolicyKind p : kAllPolicies) {
      State st{makePolicy(p, env), Tracker(p), true};
      PolicyStatus probe = probePolicy(*st.policy);
      if (!probe) {
        st.tracker.fail(0, reasonText(probe));
        st.active = false;
      }
      m_states.push_back(std::move(st));
    }
    m_progress->phase("allocation", m_alloc.plannedSeconds());
    for (uint64_t size : m_plan.allocSizes) allocationSize(size);
    // A policy that stopped during allocation may still serve the (smaller) transfer sizes.
    for (State& st : m_states) st.active = st.tracker.probed();
    m_progress->phase("transfers", m_transfers.plannedSeconds());
    for (const TransferStep& t : m_plan.transfers)
      for (size_t first = 0; first < m_states.size(); first += t.policiesAtOnce)
        transferGroup(t, first, std::min(m_states.size(), first + t.policiesAtOnce));
    for (const State& st : m_states) m_run->policies.push_back(st.tracker.result());
  }

 private:
  struct State {
    std::unique_ptr<AllocationPolicy> policy;
    Tracker tracker;
    bool active;
  };

  // The next step of `phase` is done, in `ns` and `runs` runs of its operations: the estimate
  // learns from it, the bar moves by what the step was planned to take.
  void stepDone(PhaseEstimate& phase, double ns, int runs) {
    const size_t step = phase.stepsDone();
    phase.done(ns, runs);
    m_progress->expect(m_alloc.secondsLeft() + m_transfers.secondsLeft());
    m_progress->advance(phase.plannedSeconds(step), phase.steps()[step].detail);
  }

  void allocationSize(uint64_t size) {
    struct Point {
      State* st;
      Sample alloc, release;
      std::unique_ptr<void, decltype(&free)> existing{nullptr, &free};
    };
    std::vector<std::unique_ptr<Point>> points;
    for (State& st : m_states) {
      if (!st.active) continue;
      const PolicyKind kind = st.policy->kind();
      PolicyStatus avail = st.policy->availability(size);
      if (!avail) {
        st.tracker.fail(size, reasonText(avail));
        st.active = false;
        continue;
      }
      auto pt = std::make_unique<Point>();
      pt->st = &st;
      pt->alloc.kind = Measure::Alloc;
      pt->release.kind = Measure::Free;
      pt->alloc.policy = pt->release.policy = kind;
      pt->alloc.size = pt->release.size = size;
      // Register covers memory the application already has and has written: that is the cost the
      // shim adds, so the memory is allocated and touched outside the timing.
      if (kind == PolicyKind::Register) {
        pt->existing.reset(malloc(size));
        if (!pt->existing) {
          st.tracker.fail(size, "malloc of " + formatBytes(size) + " failed");
          st.active = false;
          continue;
        }
        fillPattern(pt->existing.get(), size, blockSeed(kind, 0, size));
      }
      points.push_back(std::move(pt));
    }
    std::vector<Op> ops;
    for (auto& ptr : points) {
      Point* pt = ptr.get();
      ops.push_back([pt, size](bool record) {
        AllocationPolicy& policy = *pt->st->policy;
        Allocation a;
        double t0 = nowNs();
        PolicyStatus s = pt->existing ? adoptHostMemory(policy.env(), pt->existing.get(), size, &a)
                                      : policy.allocate(size, &a);
        double t1 = nowNs();
        if (!s) {
          pt->st->tracker.fail(size, reasonText(s));
          return -1.0;
        }
        PolicyStatus r = policy.release(&a);
        double t2 = nowNs();
        if (!r)
          throw BenchError{std::string("releasing ") + policyName(policy.kind()) +
                           " memory failed: " + reasonText(r)};
        if (record) {
          pt->alloc.timesNs.push_back(t1 - t0);
          pt->release.timesNs.push_back(t2 - t1);
        }
        return t2 - t0;
      });
    }
    const double t0 = nowNs();
    Repeated done = repeatInterleaved(m_plan.reps, ops);
    stepDone(m_alloc, nowNs() - t0, done.runs);
    for (size_t i = 0; i < points.size(); ++i) {
      Point& pt = *points[i];
      if (!done.ok[i]) {
        pt.st->active = false;
        continue;
      }
      pt.st->tracker.ok(size);
      pt.alloc.summarize();
      pt.release.summarize();
      m_run->samples.push_back(std::move(pt.alloc));
      m_run->samples.push_back(std::move(pt.release));
    }
    points.clear();
    returnFreeMemory();
  }

  // Allocates up to `count` blocks of `size` for `st`, filled with their patterns, and a device
  // buffer for each.
  Blocks allocateBlocks(State& st, uint64_t size, int count) {
    Blocks blocks;
    blocks.policy = st.policy.get();
    const PolicyKind kind = st.policy->kind();
    for (int i = 0; i < count; ++i) {
      Allocation a;
      const uint32_t seed = blockSeed(kind, i, size);
      PolicyStatus s;
      if (kind == PolicyKind::Register) {
        void* mem = malloc(size);
        if (!mem) {
          s = PolicyStatus::failure(CL_SUCCESS, ENOMEM, "malloc failed");
        } else {
          fillPattern(mem, size, seed);
          s = adoptHostMemory(st.policy->env(), mem, size, &a);
          if (s)
            blocks.owned.push_back(mem);
          else
            free(mem);
        }
      } else {
        s = st.policy->allocate(size, &a);
        if (s) fillPattern(a.ptr, size, seed);
      }
      if (!s) {
        if (i == 0) {
          st.tracker.fail(size, reasonText(s));
          st.active = false;
        } else {
          st.tracker.note("only " + std::to_string(i) + " concurrent blocks of " +
                          formatBytes(size) + ": " + reasonText(s));
        }
        break;
      }
      blocks.allocs.push_back(a);
      cl_int err = CL_SUCCESS;
      blocks.buffers.push_back(
          clCreateBuffer(m_session.context(), CL_MEM_READ_WRITE, size, nullptr, &err));
      if (err != CL_SUCCESS) blocks.buffers.pop_back();
      clCheck(err, "clCreateBuffer (device buffer)");
    }
    return blocks;
  }

  // Measures the policies [first, last) of m_states at one transfer size: their blocks and
  // buffers are held from the first transfer to the check after the last.
  void transferGroup(const TransferStep& step, size_t first, size_t last) {
    const uint64_t size = step.size;
    double t0 = nowNs();
    std::vector<Blocks> held;
    for (size_t k = first; k < last; ++k) {
      State& st = m_states[k];
      if (!st.active) continue;
      PolicyStatus avail = st.policy->availability(size);
      if (!avail) {
        st.tracker.fail(size, reasonText(avail));
        st.active = false;
        continue;
      }
      Blocks b = allocateBlocks(st, size, step.concurrency);
      if (b.allocs.empty()) continue;
      st.tracker.ok(size);
      held.push_back(std::move(b));
    }
    double blocksNs = nowNs() - t0;
    for (Measure dir : {Measure::H2D, Measure::D2H}) {
      // D2H must bring the data back for the check below to mean anything.
      if (dir == Measure::D2H)
        for (Blocks& b : held)
          for (Allocation& a : b.allocs) memset(a.ptr, 0, size);
      for (int c = 1; c <= step.concurrency; ++c) {
        std::vector<Sample> samples;
        std::vector<const Blocks*> who;
        for (const Blocks& b : held) {
          if (static_cast<int>(b.allocs.size()) < c) continue;
          Sample s;
          s.kind = dir;
          s.policy = b.policy->kind();
          s.concurrency = c;
          s.size = size;
          samples.push_back(std::move(s));
          who.push_back(&b);
        }
        std::vector<Op> ops;
        for (size_t i = 0; i < who.size(); ++i) {
          Sample* sample = &samples[i];
          const Blocks* b = who[i];
          ops.push_back([this, sample, b, dir, c, size](bool record) {
            double t = transferOnce(dir, c, size, *b);
            if (record) sample->timesNs.push_back(t);
            return t;
          });
        }
        const double s0 = nowNs();
        const int runs = repeatInterleaved(m_plan.reps, ops).runs;
        stepDone(m_transfers, nowNs() - s0, runs);  // the bar moves during the large sizes too
        for (Sample& s : samples) {
          s.summarize();
          m_run->samples.push_back(std::move(s));
        }
      }
    }
    t0 = nowNs();
    for (const Blocks& b : held) {
      const PolicyKind kind = b.policy->kind();
      for (size_t i = 0; i < b.allocs.size(); ++i) {
        size_t bad = verifyPattern(b.allocs[i].ptr, size, blockSeed(kind, i, size));
        if (bad != SIZE_MAX)
          throw BenchError{std::string("wrong data after a host->device->host round trip from ") +
                           policyName(kind) + " memory (" + formatBytes(size) + ", queue " +
                           std::to_string(i) + ", first bad byte at offset " + std::to_string(bad) +
                           ")"};
      }
    }
    for (Blocks& b : held) b.releaseAll();
    returnFreeMemory();  // the next group holds what the plan says, not this one's as well
    stepDone(m_transfers, blocksNs + nowNs() - t0, 1);
  }

  double transferOnce(Measure dir, int c, uint64_t size, const Blocks& b) {
    const std::vector<Allocation>& blocks = b.allocs;
    const bool h2d = dir == Measure::H2D;
    const char* what = h2d ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer";
    double t0 = nowNs();
    if (c == 1) {
      // One transfer: blocking, as most applications issue it.
      cl_int err = h2d ? clEnqueueWriteBuffer(m_session.queue(0), b.buffers[0], CL_TRUE, 0, size,
                                              blocks[0].ptr, 0, nullptr, nullptr)
                       : clEnqueueReadBuffer(m_session.queue(0), b.buffers[0], CL_TRUE, 0, size,
                                             blocks[0].ptr, 0, nullptr, nullptr);
      clCheck(err, what);
    } else {
      // Enqueue all, flush all, then wait: finishing queue 0 first would start the others late.
      for (int i = 0; i < c; ++i) {
        cl_int err = h2d ? clEnqueueWriteBuffer(m_session.queue(i), b.buffers[i], CL_FALSE, 0, size,
                                                blocks[i].ptr, 0, nullptr, nullptr)
                         : clEnqueueReadBuffer(m_session.queue(i), b.buffers[i], CL_FALSE, 0, size,
                                               blocks[i].ptr, 0, nullptr, nullptr);
        clCheck(err, what);
      }
      for (int i = 0; i < c; ++i) clCheck(clFlush(m_session.queue(i)), "clFlush");
      for (int i = 0; i < c; ++i) clCheck(clFinish(m_session.queue(i)), "clFinish");
    }
    return nowNs() - t0;
  }

  const BenchPlan& m_plan;
  ClSession& m_session;
  Progress* m_progress;
  CharacterizationRun* m_run;
  PhaseEstimate m_alloc, m_transfers;
  std::vector<State> m_states;
};

}  // namespace

void fillPattern(void* data, size_t bytes, uint32_t seed) {
  uint8_t chunk[kChunk];
  makeChunk(chunk, seed);
  uint8_t* p = static_cast<uint8_t*>(data);
  for (size_t off = 0, index = 0; off < bytes; off += kChunk, ++index) {
    size_t n = std::min(kChunk, bytes - off);
    memcpy(p + off, chunk, n);
    stampChunk(p + off, n, seed, index);
  }
}

size_t verifyPattern(const void* data, size_t bytes, uint32_t seed) {
  uint8_t chunk[kChunk];
  makeChunk(chunk, seed);
  const uint8_t* p = static_cast<const uint8_t*>(data);
  for (size_t off = 0, index = 0; off < bytes; off += kChunk, ++index) {
    size_t n = std::min(kChunk, bytes - off);
    stampChunk(chunk, n, seed, index);
    if (memcmp(p + off, chunk, n) != 0) {
      for (size_t i = 0; i < n; ++i)
        if (p[off + i] != chunk[i]) return off + i;
    }
  }
  return SIZE_MAX;
}

RunInfo describeRun(const ClDevice& device, bool quick) {
  RunInfo info;
  info.key.platformName = device.platformName;
  info.key.platformVersion = device.platformVersion;
  info.key.deviceName = device.deviceName;
  info.key.driverVersion = device.driverVersion;
  info.key.cpuModel = hostCpuModel();
  info.key.kernel = hostKernelRelease();
  info.deviceVendor = device.deviceVendor;
  info.deviceType = device.typeName();
  info.hostname = hostName();
  info.hetoptVersion = HETOPT_VERSION_STRING;
  info.createdUtc = utcNowIso();
  info.quick = quick;
  info.memlockLimit = os::memlockLimit();
  info.lockBeyondLimit = os::canLockBeyondLimit();
  return info;
}

bool runBenchmarks(const ClDevice& device, const BenchConfig& config, Progress* progress,
                   CharacterizationRun* run, std::string* error) {
  *run = CharacterizationRun{};
  run->info = describeRun(device, config.quick);
  double start = monotonicSeconds();
  try {
    cl_ulong maxAlloc = 0;
    clCheck(clGetDeviceInfo(device.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof maxAlloc, &maxAlloc,
                            nullptr),
            "clGetDeviceInfo(CL_DEVICE_MAX_MEM_ALLOC_SIZE)");
    // A CPU device's buffers are host memory too.
    bool inHost = device.hostUnifiedMemory || (device.type & CL_DEVICE_TYPE_CPU);
    BenchPlan plan =
        makeBenchPlan(config, os::availableHostMemory(), device.globalMemBytes, maxAlloc, inHost);
    progress->say("memory: " + plan.memoryText());
    for (const std::string& n : plan.notes) progress->note(n);
    ClSession session(device, plan.maxConcurrency);
    PolicyEnv env;
    env.cl = ClPolicyFunctions::linked();
    env.context = session.context();
    env.queue = session.queue(0);
    progress->start();
    DeviceBench bench(plan, session, progress, run);
    bench.measure(env);
    progress->finish();
  } catch (const BenchError& e) {
    progress->finish();
    *error = e.what;
    return false;
  }
  run->info.durationS = monotonicSeconds() - start;
  return true;
}

}  // namespace hetopt::characterize
