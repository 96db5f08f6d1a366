// SPDX-License-Identifier: MIT
/**
 * @file What one alloc+free pair costs in PinnedPool against glibc malloc+free, for the sizes
 * candidate allocations have (4 KiB .. 64 MiB), in a heap that a long run has fragmented: ~1000
 * live blocks of candidate sizes with ~1000 holes of mixed sizes between them. Both allocators get
 * the same fragmentation pattern and the same requests in one process; neither touches the
 * blocks' memory, so the cost of the allocator itself is measured. scripts/bench/pool_alloc.sh
 * runs the binary with interleaved repetitions and prints the medians.
 */
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "policies/pool.h"

namespace {

using hetopt::policies::PinnedPool;

constexpr size_t kRegionBytes = size_t{32} << 30;  // address space: 2000 blocks of ~7 MiB mean
constexpr int kLiveBlocks = 1000;
constexpr double kMinLog2 = 12, kMaxLog2 = 26;  // 4 KiB .. 64 MiB
constexpr size_t kMixedSizes = 4096;

/// Log-uniform sizes over the candidate range (as many small as large blocks per octave),
/// deterministic so that both allocators see the same sequence.
std::vector<size_t> candidateSizes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> exponent(kMinLog2, kMaxLog2);
  std::vector<size_t> sizes(n);
  for (size_t& s : sizes) s = static_cast<size_t>(std::exp2(exponent(rng)));
  return sizes;
}

/// Allocates 2 * kLiveBlocks candidate-sized blocks and frees every other one: ~1000 live blocks
/// separated by ~1000 holes of mixed sizes, what a long-running application leaves behind.
template <class Allocate, class Deallocate>
std::vector<void*> fragment(Allocate allocate, Deallocate deallocate) {
  std::vector<void*> blocks;
  for (size_t size : candidateSizes(2 * kLiveBlocks, 7)) {
    void* p = allocate(size);
    if (p == nullptr) {
      fprintf(stderr, "pool_bench: could not allocate %zu bytes while fragmenting\n", size);
      abort();
    }
    blocks.push_back(p);
  }
  std::vector<void*> live;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (i % 2 == 0)
      deallocate(blocks[i]);
    else
      live.push_back(blocks[i]);
  }
  return live;
}

// The pool writes only chunk headers (glibc's large blocks are mmap'ed lazily), so its region is a
// MAP_NORESERVE reservation that never becomes resident beyond its headers.
struct PoolHeap {
  PinnedPool pool;
  std::vector<void*> live;
  PoolHeap() {
    void* region = mmap(nullptr, kRegionBytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (region == MAP_FAILED || !pool.addRegion(region, kRegionBytes)) {
      perror("pool_bench: reserving the region");
      abort();
    }
    live = fragment([this](size_t n) { return pool.allocate(n); },
                    [this](void* p) { pool.deallocate(p); });
  }
};

struct GlibcHeap {
  std::vector<void*> live;
  GlibcHeap() {
    live = fragment([](size_t n) { return malloc(n); }, [](void* p) { free(p); });
  }
};

// Made once per process, before the first measurement; shared by the threads of a benchmark. An
// alloc+free pair leaves either heap as it found it, so every benchmark sees the same
// fragmentation.
PoolHeap& poolHeap() {
  static PoolHeap heap;
  return heap;
}
GlibcHeap& glibcHeap() {
  static GlibcHeap heap;
  return heap;
}
const std::vector<size_t>& mixedSizes() {
  static const std::vector<size_t> sizes = candidateSizes(kMixedSizes, 11);
  return sizes;
}

void poolAllocFree(benchmark::State& state, size_t size) {
  PinnedPool& pool = poolHeap().pool;
  for (auto _ : state) {
    void* p = pool.allocate(size);
    if (HETOPT_UNLIKELY(p == nullptr)) {
      state.SkipWithError("pool exhausted");
      break;
    }
    benchmark::DoNotOptimize(p);
    pool.deallocate(p);
  }
  if (state.thread_index() == 0) state.counters["free_chunks"] = pool.stats().freeChunks;
}

void glibcAllocFree(benchmark::State& state, size_t size) {
  (void)glibcHeap();
  for (auto _ : state) {
    void* p = malloc(size);
    benchmark::DoNotOptimize(p);
    free(p);
  }
}

void poolMixed(benchmark::State& state) {
  PinnedPool& pool = poolHeap().pool;
  const std::vector<size_t>& sizes = mixedSizes();
  size_t i = static_cast<size_t>(state.thread_index()) * 997;
  for (auto _ : state) {
    void* p = pool.allocate(sizes[i++ % kMixedSizes]);
    if (HETOPT_UNLIKELY(p == nullptr)) {
      state.SkipWithError("pool exhausted");
      break;
    }
    benchmark::DoNotOptimize(p);
    pool.deallocate(p);
  }
}

void glibcMixed(benchmark::State& state) {
  (void)glibcHeap();
  const std::vector<size_t>& sizes = mixedSizes();
  size_t i = static_cast<size_t>(state.thread_index()) * 997;
  for (auto _ : state) {
    void* p = malloc(sizes[i++ % kMixedSizes]);
    benchmark::DoNotOptimize(p);
    free(p);
  }
}

void registerAll() {
  const struct {
    const char* name;
    size_t bytes;
  } sizes[] = {{"4KiB", 4 << 10},
               {"64KiB", 64 << 10},
               {"1MiB", 1 << 20},
               {"16MiB", 16 << 20},
               {"64MiB", 64 << 20}};
  for (const auto& s : sizes) {
    const size_t bytes = s.bytes;
    benchmark::RegisterBenchmark((std::string("pool/") + s.name).c_str(),
                                 [bytes](benchmark::State& st) { poolAllocFree(st, bytes); })
        ->Threads(1)
        ->Threads(2);
    benchmark::RegisterBenchmark((std::string("glibc/") + s.name).c_str(),
                                 [bytes](benchmark::State& st) { glibcAllocFree(st, bytes); })
        ->Threads(1)
        ->Threads(2);
  }
  benchmark::RegisterBenchmark("pool/mixed", poolMixed)->Threads(1)->Threads(2);
  benchmark::RegisterBenchmark("glibc/mixed", glibcMixed)->Threads(1)->Threads(2);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // Fragment both heaps before any timing (and before any benchmark thread exists).
  (void)poolHeap();
  (void)glibcHeap();
  (void)mixedSizes();
  registerAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
