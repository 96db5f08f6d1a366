// SPDX-License-Identifier: MIT
/**
 * @file Which device commands get their profiling timestamps read in trace mode
 * (HETOPT_TIME_SAMPLE). Timing a command costs, and the folded trace keeps one aggregate per loop
 * leaf anyway, so a stratified sample of each leaf's commands, each timed one carrying its weight,
 * gives the same means. One sampler per thread (the compressor folds per thread): a fixed table,
 * no allocation and no lock per decision.
 */
#pragma once
#include <algorithm>
#include <cstdint>

namespace hetopt::trace {

/// What a timed command costs: on a profiling queue an event read (NVIDIA H100: an event on every
/// command of a profiling queue ~7 us per command, and the profiling queue itself ~4.8 us on every
/// command, timed or not); on a twin queue (HETOPT_TIME_QUEUE=twin, the default) the fence around
/// it, ~15 us per timed command and nothing on the others. Hence the default period, 64: the most
/// call-bound loop measured (bench/queue_cost: blocking 4 KiB write -> kernel -> read, 9.2 us per
/// command on the H100) then pays 15 / 64 / 9.2 = 2.5% (loop_wkr 4K, 17 us per command: 1.4%),
/// where 16 cost 10% and 5.5%. A short loop has its 32-command census plus one per 64 after; a
/// long one's period grows (20,000 iterations: 32 + 158 timed per key instead of 32 + 312).
class TimeSampler {
 public:
  static constexpr unsigned kWays = 4;  ///< keys kept per set
  static constexpr unsigned kSets = 64;
  static constexpr unsigned kSlots =
      kWays * kSets;                       ///< distinct (call, objects) keys kept per thread
  static constexpr uint64_t kCensus = 32;  ///< commands of a key timed before sampling starts
  static constexpr uint64_t kDefaultPeriod = 64;  ///< keep common/options.def's default equal
  /// Blocks a key is sampled in at one period before its period doubles, up to kMaxGrowth times
  /// the base: a long loop's later commands are timed more sparsely (each timed command costs the
  /// driver ~12-15 us on an H100; a 20,000-iteration loop went from 312 to 158 per key) while its
  /// estimate rests on more than a hundred samples.
  static constexpr uint64_t kBlocksPerStep = 64;
  static constexpr uint64_t kMaxGrowth = 16;

  /// `period` <= 1 times every command.
  explicit TimeSampler(uint64_t period = kDefaultPeriod, uint64_t seed = 0x9e3779b97f4a7c15ull)
      : m_period(period), m_rng(seed | 1) {}

  uint64_t period() const { return m_period; }

  /// Whether the next command of `key` is to be timed, as its sampling weight (the inverse of
  /// the probability it had): 0 not timed, 1 timed in the census, its block's length timed as the
  /// sample of its block (the block's length). The caller computes the key from what the compressor
  /// folds on (the function and the OpenCL objects it names) and, for a buffer transfer, its size
  /// class (a factor of 4: shim/core/device_timing.cpp). Each key's first kCensus commands are all
  /// timed (short runs and one-off commands stay exact); after that its commands are cut into
  /// blocks of `period` (doubling every kBlocksPerStep blocks, up to kMaxGrowth x period) and
  /// exactly one per block is timed, at a random position drawn when the block starts. Every later
  /// command is so timed with probability 1/(its block's length) whatever the loop's shape: a fixed
  /// stride would alias with loop bodies that repeat a key with a period sharing a factor with it
  /// (ping-pong buffers, every other iteration of size X) and time only one phase of them. The
  /// analysis extrapolates: a leaf's device time = weighted mean of its timed commands x its
  /// commands (trace/FORMAT.md), so the census (often the slow first iterations) counts for its
  /// share only.
  uint64_t weight(uint64_t key) {
    if (m_period <= 1) return 1;
    Slot& s = slotOf(key);
    if (s.seen < kCensus) {
      ++s.seen;
      return 1;
    }
    // The command's place in its block, counted rather than divided (a division per command
    // was a third of the sampler's cost).
    const uint64_t pos = s.phase;
    if (pos == 0) {
      if (s.blocks == kBlocksPerStep && s.period < m_period * kMaxGrowth) {
        s.period *= 2;
        s.blocks = 0;
      }
      ++s.blocks;
      s.pick = next() % s.period;
    }
    s.phase = pos + 1 == s.period ? 0 : pos + 1;
    return pos == s.pick ? s.period : 0;
  }
  bool shouldTime(uint64_t key) { return weight(key) != 0; }

  /// The schedule above: of `commands` commands of one key, how many are timed, counting the
  /// census and every whole block; a last block cut short adds one more or none.
  static uint64_t timedInWholeBlocks(uint64_t period, uint64_t commands) {
    if (period <= 1 || commands <= kCensus) return commands;
    uint64_t left = commands - kCensus, timed = kCensus;
    for (uint64_t length = period;; length *= 2) {
      const bool last = length >= period * kMaxGrowth;
      const uint64_t blocks = last ? left / length : std::min(left / length, kBlocksPerStep);
      timed += blocks;
      left -= blocks * length;
      if (last || blocks < kBlocksPerStep) return timed;
    }
  }

  /// The set `key` is kept in (public for the tests that make keys collide).
  static unsigned setOf(uint64_t key) { return static_cast<unsigned>(mix(key) & (kSets - 1)); }

  /// Folds one value (the function id, an object handle) into a key.
  static uint64_t combine(uint64_t key, uint64_t value) {
    return mix(key ^ (value + 0x9e3779b97f4a7c15ull + (key << 6) + (key >> 2)));
  }

 private:
  struct Slot {
    uint64_t key = 0;
    uint64_t seen = 0;    ///< commands of `key` in its census so far (0: slot empty)
    uint64_t pick = 0;    ///< position timed in the current block
    uint64_t phase = 0;   ///< after the census: the next command's position in its block
    uint64_t used = 0;    ///< m_tick at the key's last command (least recently used goes first)
    uint64_t period = 0;  ///< after the census: the length of the current block
    uint64_t blocks = 0;  ///< blocks started at that length
  };
  /// The key's slot: its own if kept, else an empty or the least recently used one of its set,
  /// started afresh. 4-way set-associative: a loop's keys (a handful) land in 64 sets, and a
  /// direct-mapped table let two of them share a slot often enough (object handles differ every
  /// run) that they evicted each other on every command and timed every command for good. A key
  /// evicted anyway (a fifth key of one set) restarts its census: more commands timed, never fewer.
  Slot& slotOf(uint64_t key) {
    Slot* set = &m_slots[setOf(key) * kWays];
    Slot* victim = set;
    ++m_tick;
    for (unsigned w = 0; w < kWays; ++w) {
      Slot& s = set[w];
      if (s.seen != 0 && s.key == key) {
        s.used = m_tick;
        return s;
      }
      if (s.used < victim->used) victim = &s;
    }
    *victim = Slot{key, 0, 0, 0, m_tick, m_period, 0};
    return *victim;
  }
  static uint64_t mix(uint64_t h) {  // splitmix64 finalizer
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    return h ^ (h >> 31);
  }
  uint64_t next() {  // xorshift64*: cheap, and its low bits are good enough for a block position
    m_rng ^= m_rng >> 12;
    m_rng ^= m_rng << 25;
    m_rng ^= m_rng >> 27;
    return (m_rng * 0x2545f4914f6cdd1dull) >> 32;
  }

  uint64_t m_period;
  uint64_t m_rng;
  uint64_t m_tick = 0;
  Slot m_slots[kSlots];
};

}  // namespace hetopt::trace
