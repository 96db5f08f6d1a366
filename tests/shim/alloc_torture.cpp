// SPDX-License-Identifier: MIT
/**
 * @file Exercises every interposed allocation function from several threads while another thread
 * runs OpenCL commands, across fork(), fork()+exec() and posix_spawn(), and checks what the C
 * library promises (contents kept by realloc, calloc zeroes, alignment, usable size) and the
 * OpenCL results. Run natively and under the shim in each mode; exits 1 on any violation.
 *   alloc_torture [ROUNDS] [leaf]     leaf: allocation threads only (what the spawned child runs)
 */
#include <malloc.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "tests/apps/app_common.h"

extern char** environ;

namespace {

std::atomic<int> g_failures{0};

void fail(const char* what, size_t detail) {
  fprintf(stderr, "alloc_torture: %s (%zu)\n", what, detail);
  g_failures.fetch_add(1);
}

bool aligned(void* p, size_t a) { return (reinterpret_cast<uintptr_t>(p) & (a - 1)) == 0; }

void worker(unsigned seed, int rounds) {
  uint32_t x = seed * 2654435761u + 1;
  auto next = [&] { return x = x * 1664525u + 1013904223u; };
  std::vector<std::pair<unsigned char*, size_t>> live;
  for (int r = 0; r < rounds; ++r) {
    size_t size = (next() >> 8) % ((next() & 7) == 0 ? (1u << 20) : 8192) + 1;
    unsigned char* p = nullptr;
    switch (next() % 8) {
      case 0:
        p = static_cast<unsigned char*>(malloc(size));
        break;
      case 1: {
        p = static_cast<unsigned char*>(calloc(1, size));
        for (size_t i = 0; p && i < size; i += 97)
          if (p[i] != 0) {
            fail("calloc memory not zero", i);
            break;
          }
        break;
      }
      case 2: {
        void* q = nullptr;
        if (posix_memalign(&q, 256, size) != 0 || !aligned(q, 256)) fail("posix_memalign", size);
        p = static_cast<unsigned char*>(q);
        break;
      }
      case 3:
        p = static_cast<unsigned char*>(aligned_alloc(64, (size + 63) & ~size_t{63}));
        if (!aligned(p, 64)) fail("aligned_alloc alignment", size);
        break;
      case 4:
        p = static_cast<unsigned char*>(memalign(4096, size));
        if (!aligned(p, 4096)) fail("memalign alignment", size);
        break;
      case 5:
        p = static_cast<unsigned char*>(valloc(size));
        if (!aligned(p, 4096)) fail("valloc alignment", size);
        break;
      case 6:
        p = static_cast<unsigned char*>(pvalloc(size));
        if (!aligned(p, 4096)) fail("pvalloc alignment", size);
        break;
      default:
        p = new unsigned char[size];
        delete[] p;
        p = static_cast<unsigned char*>(malloc(size));
        break;
    }
    if (!p) {
      fail("allocation returned null", size);
      continue;
    }
    if (malloc_usable_size(p) < size) fail("usable size below request", size);
    memset(p, static_cast<int>(size & 0xff), size);
    live.push_back({p, size});
    if (live.size() > 32 || (next() & 3) == 0) {
      size_t k = next() % live.size();
      auto [q, n] = live[k];
      if (live.size() <= 32 && (next() & 1)) {  // grow or shrink: contents must survive
        // Bounded: repeated growth of one block must not double without limit.
        size_t m = (next() >> 8) % std::min<size_t>(2 * n + 4096, 4u << 20) + 1;
        unsigned char* g = static_cast<unsigned char*>(realloc(q, m));
        if (!g) {
          fail("realloc returned null", m);
          continue;
        }
        for (size_t i = 0; i < std::min(n, m); i += 61)
          if (g[i] != static_cast<unsigned char>(n & 0xff)) {
            fail("realloc lost contents", i);
            break;
          }
        memset(g, static_cast<int>(m & 0xff), m);
        live[k] = {g, m};
      } else {
        for (size_t i = 0; i < n; i += 113)
          if (q[i] != static_cast<unsigned char>(n & 0xff)) {
            fail("block corrupted", i);
            break;
          }
        free(q);
        live.erase(live.begin() + k);
      }
    }
  }
  for (auto [q, n] : live) free(q);
  free(realloc(nullptr, 100));  // realloc(NULL) is malloc
  void* z = malloc(10);
  z = realloc(z, 0);  // glibc: frees, returns null
  free(z);
}

// OpenCL from its own thread while the others allocate and free: a write -> kernel -> read loop
// over a heap block (itself from the interposed allocator), every result checked.
void openclWorker(int iters) {
  using namespace hetopt::apps;
  ClEnv env;
  cl_program prog = env.build(R"CL(
__kernel void mirror(__global float* x) { size_t i = get_global_id(0); x[i] = 1000.0f - x[i]; }
)CL");
  cl_kernel k = env.kernel(prog, "mirror");
  const size_t n = 16384, bytes = n * sizeof(float);
  float* host = static_cast<float*>(malloc(bytes));
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<float>(i % 997);
  cl_mem dev = env.buffer(CL_MEM_READ_WRITE, bytes);
  APP_CL(clSetKernelArg(k, 0, sizeof dev, &dev));
  for (int it = 0; it < iters; ++it) {
    APP_CL(clEnqueueWriteBuffer(env.queue(), dev, CL_FALSE, 0, bytes, host, 0, nullptr, nullptr));
    APP_CL(clEnqueueNDRangeKernel(env.queue(), k, 1, nullptr, &n, nullptr, 0, nullptr, nullptr));
    APP_CL(clEnqueueReadBuffer(env.queue(), dev, CL_TRUE, 0, bytes, host, 0, nullptr, nullptr));
    const bool mirrored = it % 2 == 0;  // exact in float: 1000 - v for v < 1000
    for (size_t i = 0; i < n; ++i) {
      const float v = static_cast<float>(i % 997);
      if (host[i] != (mirrored ? 1000.0f - v : v)) {
        fail("OpenCL result wrong", i);
        it = iters;
        break;
      }
    }
  }
  clReleaseMemObject(dev);
  clReleaseKernel(k);
  clReleaseProgram(prog);
  free(host);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 20000;
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 4; ++t) threads.emplace_back(worker, t + 1, rounds);
  if (argc > 2 && !strcmp(argv[2], "leaf")) {
    for (auto& t : threads) t.join();
    return g_failures.load() ? 1 : 0;
  }
  threads.emplace_back(openclWorker, std::max(rounds / 100, 10));

  // fork() while other threads allocate: the child must be able to allocate and exit cleanly.
  pid_t child = fork();
  if (child == 0) {
    worker(99, 2000);
    _exit(g_failures.load() ? 1 : 0);
  }
  // fork()+exec(): a child program under the same environment (the shim follows it).
  pid_t execChild = fork();
  if (execChild == 0) {
    execl("/bin/sh", "sh", "-c", "exit 0", static_cast<char*>(nullptr));
    _exit(127);
  }
  // posix_spawn() (vfork-like in glibc: the child shares the parent's memory until it execs) of
  // this program in leaf mode: its own allocation threads, under the shim when the parent is.
  char self[] = "/proc/self/exe", leafRounds[] = "500", leaf[] = "leaf";
  char* spawnArgs[] = {argv[0], leafRounds, leaf, nullptr};
  pid_t spawned = -1;
  if (posix_spawn(&spawned, self, nullptr, nullptr, spawnArgs, environ) != 0)
    fail("posix_spawn failed", 0);
  for (auto& t : threads) t.join();
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail("forked child failed", static_cast<size_t>(status));
  if (waitpid(execChild, &status, 0) != execChild || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail("exec'd child failed", static_cast<size_t>(status));
  if (spawned > 0 &&
      (waitpid(spawned, &status, 0) != spawned || !WIFEXITED(status) || WEXITSTATUS(status) != 0))
    fail("spawned child failed", static_cast<size_t>(status));
  if (g_failures.load()) return 1;
  printf("alloc_torture: ok\n");
  return 0;
}
