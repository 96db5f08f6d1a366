// SPDX-License-Identifier: MIT
/**
 * @file fork() while threads allocate (tests/integration/fork.sh). Three worker threads loop:
 * allocate a 64 KiB block at one site (a transfer-feeding one, so `hetopt run` serves it), mark
 * it, write every 64th one to the device (rarely: a thread waiting for the device holds no lock
 * worth testing), and free it or leave it for the next child. Forked children write into and free
 * a block the parent allocated there (the parent's must not change: a driver's pinned memory may be
 * a shared mapping), allocate and free one of their own, then exit; the parent waits for each.
 * Modes, by where fork() is called:
 *   threads    from the main thread (the reported hang: a child freeing an inherited pool block
 *              spun forever on the pool's lock, held by a parent thread at fork time)
 *   callback   from an event callback, on the driver's thread
 *   preparing  from the start, before the program has a context and its workers have a block
 *              (the shim's pool thread enumerates the devices, waits for a context, then makes
 *              its own and the pool), then with the program's context
 *   before-opencl  FORKS children first, before any OpenCL call of the program, each asking for
 *              the platforms (natively a child's first call starts a driver of its own; where
 *              hetopt started the driver early before the first fork, it meets the parent's: one
 *              warning, and the mark for next time);
 *              each child's call is bounded by alarm(), and what it got goes to stderr only (a
 *              child killed by the alarm is hetopt's known limit, not the program's failure);
 *              then the workers run as in `threads` with no more forks
 * Children end with exit() where no other thread may be inside the driver, else with _exit(): a
 * driver's start-up registers exit handlers under glibc's lock, which a child forked meanwhile
 * inherits held (exit() is no async-signal-safe call, all a child of threads may rely on).
 * stdout: the "device:" line and "result: MODE forks=N through-exit=M" (M children ran exit());
 * exits 1 when a child failed or a block came back changed.
 *   fork_app threads|callback|preparing|before-opencl FORKS [opencl-children]
 *   (FORKS 0: threads and callback only)
 * opencl-children: each child also calls clGetPlatformIDs (an OpenCL call in a forked copy).
 * Built twice (fork_process.h): `fork_app` imports fork, so the shim leaves the driver to it;
 * `fork_app_dlsym` does not, so the shim starts the driver early, as these modes were written for.
 */
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "tests/apps/app_common.h"
#include "tests/integration/fork_process.h"

using namespace hetopt::apps;

namespace {

constexpr size_t kBlockBytes = 64 << 10;
constexpr size_t kBlockFloats = kBlockBytes / sizeof(float);
constexpr int kWorkers = 3;

std::atomic<const ClEnv*> g_env{nullptr};  ///< set once the program has its context
std::atomic<bool> g_stop{false};
std::atomic<float*> g_handoff{nullptr};  ///< a worker's block left for the next child
std::atomic<int> g_transfers{0};         ///< blocks written to the device so far

/// The one allocation site of every block.
__attribute__((noinline)) float* newBlock() {
  return static_cast<float*>(malloc(kBlockBytes));  // hetopt:transfer
}

void mark(float* b, float value) { b[0] = b[kBlockFloats - 1] = value; }
bool marked(const float* b) { return b[0] == b[kBlockFloats - 1]; }

void worker(int t) {
  cl_mem dev = nullptr;
  for (unsigned n = 0; !g_stop.load(std::memory_order_relaxed); ++n) {
    float* b = newBlock();
    APP_CHECK(b != nullptr);
    mark(b, static_cast<float>(n * kWorkers + t));
    const ClEnv* env = g_env.load(std::memory_order_acquire);
    if (!env) {
      // No context yet: a block now and then. Blocks by the hundred thousand that feed no transfer
      // would make the shim stop serving the site (it no longer looks like its profile).
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } else if (n % 64 == 0) {
      if (!dev) dev = env->buffer(CL_MEM_READ_WRITE, kBlockBytes);
      APP_CL(
          clEnqueueWriteBuffer(env->queue(), dev, CL_TRUE, 0, kBlockBytes, b, 0, nullptr, nullptr));
      g_transfers.fetch_add(1, std::memory_order_relaxed);
    }
    // Written only when empty: a thread writing a page fork() has already copied waits until
    // fork() returns, and a write here on every block would park every worker at this line, not
    // inside the allocator, whenever the parent forks.
    float* none = nullptr;
    if (g_handoff.load(std::memory_order_relaxed) || !g_handoff.compare_exchange_strong(none, b))
      free(b);
  }
  if (dev) clReleaseMemObject(dev);
}

constexpr float kChildsMark = -1.0f;  ///< what a child writes into its copy of an inherited block

/// A child's whole life: the inherited block is still there, is its own copy to write (the
/// parent's must not change) and can be freed; a block of its own.
bool g_childrenCallOpenCL = false;  ///< `opencl-children`: each child asks for the platforms

[[noreturn]] void childLife(float* inherited, bool runExitHandlers) {
  bool ok = !inherited || marked(inherited);
  if (g_childrenCallOpenCL) {
    // The loader answers from the list it made in the parent: no driver work in the child.
    cl_uint platforms = 0;
    ok = ok && clGetPlatformIDs(0, nullptr, &platforms) == CL_SUCCESS && platforms > 0;
  }
  if (inherited) mark(inherited, kChildsMark);
  free(inherited);
  float* own = newBlock();
  ok = ok && own;
  if (own) mark(own, 1.0f);
  free(own);
  if (runExitHandlers) exit(ok ? 0 : 1);
  _exit(ok ? 0 : 1);
}

/// A worker's block; waits for one when `wait`, else may be null.
float* takeBlock(bool wait) {
  float* b = g_handoff.exchange(nullptr);
  while (wait && !b) {
    std::this_thread::yield();
    b = g_handoff.exchange(nullptr);
  }
  return b;
}

int g_failedChildren = 0;

void reap(pid_t pid) {
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    fprintf(stderr, "fork_app: child %d failed (status 0x%x)\n", static_cast<int>(pid), status);
    ++g_failedChildren;
  }
}

/// After the child's end: its write into its copy of `inherited` must not show in the parent's.
void checkUnchanged(const float* inherited) {
  if (inherited && inherited[0] == kChildsMark) {
    fprintf(stderr, "fork_app: a child's write reached the parent's block\n");
    ++g_failedChildren;
  }
}

int g_childrenThroughExit = 0;

/// fork() from the main thread; the child lives childLife().
void forkFromMainThread(int forks, bool waitForBlock, bool runExitHandlers) {
  for (int i = 0; i < forks; ++i) {
    float* inherited = takeBlock(waitForBlock);
    fflush(nullptr);  // the child's exit() must not write the parent's buffered output again
    pid_t pid = forkProcess();
    if (pid == 0) childLife(inherited, runExitHandlers);
    reap(pid);
    checkUnchanged(inherited);
    free(inherited);
    g_childrenThroughExit += runExitHandlers;
  }
}

struct CallbackFork {
  float* inherited;
  pid_t pid = -1;
  std::atomic<bool> done{false};
};

void CL_CALLBACK forkInCallback(cl_event, cl_int, void* data) {
  auto* f = static_cast<CallbackFork*>(data);
  pid_t pid = forkProcess();
  if (pid == 0) childLife(f->inherited, false);  // a copy of the driver's thread
  f->pid = pid;
  f->done.store(true, std::memory_order_release);
}

void forkFromCallbacks(const ClEnv& env, int forks) {
  cl_mem dev = env.buffer(CL_MEM_READ_WRITE, kBlockBytes);
  for (int i = 0; i < forks; ++i) {
    float* source = newBlock();
    APP_CHECK(source != nullptr);
    mark(source, static_cast<float>(i));
    CallbackFork f{takeBlock(true)};
    fflush(nullptr);
    cl_event written = nullptr;
    APP_CL(clEnqueueWriteBuffer(env.queue(), dev, CL_FALSE, 0, kBlockBytes, source, 0, nullptr,
                                &written));
    APP_CL(clSetEventCallback(written, CL_COMPLETE, forkInCallback, &f));
    APP_CL(clWaitForEvents(1, &written));
    while (!f.done.load(std::memory_order_acquire)) std::this_thread::yield();
    reap(f.pid);
    checkUnchanged(f.inherited);
    free(f.inherited);
    free(source);
    clReleaseEvent(written);
  }
  clReleaseMemObject(dev);
}

/// before-opencl: children whose first OpenCL call comes before any of the parent's.
void forkBeforeOpenCL(int forks) {
  for (int i = 0; i < forks; ++i) {
    fflush(nullptr);
    pid_t pid = forkProcess();
    if (pid == 0) {
      alarm(10);  // a child that inherited a driver mid-start may never return from it
      cl_uint platforms = 0;
      _exit(clGetPlatformIDs(0, nullptr, &platforms) == CL_SUCCESS && platforms > 0 ? 0 : 3);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
      ++g_failedChildren;
      continue;
    }
    fprintf(stderr, "fork_app: child %d before OpenCL: %s\n", i,
            WIFEXITED(status)
                ? (WEXITSTATUS(status) == 0 ? "platforms found" : "clGetPlatformIDs failed")
                : "killed (its OpenCL call did not return)");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  const int forks = argc > 2 ? atoi(argv[2]) : 0;
  g_childrenCallOpenCL = argc > 3 && !strcmp(argv[3], "opencl-children");
  const bool preparing = !strcmp(mode, "preparing"), beforeOpenCL = !strcmp(mode, "before-opencl");
  if ((!preparing && !beforeOpenCL && strcmp(mode, "threads") && strcmp(mode, "callback")) ||
      forks < 0 || (forks == 0 && (preparing || beforeOpenCL))) {
    fprintf(stderr,
            "usage: fork_app threads|callback|preparing|before-opencl FORKS [opencl-children]\n");
    return 2;
  }
  if (beforeOpenCL) forkBeforeOpenCL(forks);
  std::vector<std::thread> workers;
  auto startWorkers = [&] {
    for (int t = 0; t < kWorkers; ++t) workers.emplace_back(worker, t);
  };
  if (preparing) {
    // No context and no candidate allocation yet: the pool thread enumerates, then waits.
    forkFromMainThread(forks / 3, false, false);
    // The workers' first blocks make it create its own context and the pool; forks go on meanwhile.
    startWorkers();
    forkFromMainThread(forks / 3, false, false);
  }
  ClEnv env;
  g_env.store(&env, std::memory_order_release);
  if (!preparing) startWorkers();
  if (!strcmp(mode, "callback"))
    forkFromCallbacks(env, forks);
  else
    forkFromMainThread(preparing ? forks - 2 * (forks / 3) : beforeOpenCL ? 0 : forks, true, true);
  // Every worker's site fed the device at least once (so that a run without forks still has a
  // transfer-feeding site to trace).
  while (g_transfers.load(std::memory_order_relaxed) < kWorkers) std::this_thread::yield();
  g_stop.store(true);
  for (std::thread& w : workers) w.join();
  free(g_handoff.exchange(nullptr));
  APP_CHECK(g_failedChildren == 0);
  printf("result: %s forks=%d through-exit=%d\n", mode, forks, g_childrenThroughExit);
  return 0;
}
