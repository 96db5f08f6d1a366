// SPDX-License-Identifier: MIT
/**
 * @file Exercises every interposed allocation function from several threads, across fork() and
 * fork()+exec(), and checks what the C library promises (contents kept by realloc, calloc zeroes,
 * alignment, usable size). Run natively and under the shim in each mode; exits 1 on any violation.
 */
#include <malloc.h>
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
      case 0: p = static_cast<unsigned char*>(malloc(size)); break;
      case 1: {
        p = static_cast<unsigned char*>(calloc(1, size));
        for (size_t i = 0; p && i < size; i += 97)
          if (p[i] != 0) { fail("calloc memory not zero", i); break; }
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
      default: p = new unsigned char[size]; delete[] p; p = static_cast<unsigned char*>(malloc(size)); break;
    }
    if (!p) { fail("allocation returned null", size); continue; }
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
        if (!g) { fail("realloc returned null", m); continue; }
        for (size_t i = 0; i < std::min(n, m); i += 61)
          if (g[i] != static_cast<unsigned char>(n & 0xff)) { fail("realloc lost contents", i); break; }
        memset(g, static_cast<int>(m & 0xff), m);
        live[k] = {g, m};
      } else {
        for (size_t i = 0; i < n; i += 113)
          if (q[i] != static_cast<unsigned char>(n & 0xff)) { fail("block corrupted", i); break; }
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

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 20000;
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 4; ++t) threads.emplace_back(worker, t + 1, rounds);

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
  for (auto& t : threads) t.join();
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail("forked child failed", static_cast<size_t>(status));
  if (waitpid(execChild, &status, 0) != execChild || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail("exec'd child failed", static_cast<size_t>(status));
  if (g_failures.load()) return 1;
  printf("alloc_torture: ok\n");
  return 0;
}
