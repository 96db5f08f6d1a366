// SPDX-License-Identifier: MIT
/**
 * @file What one characterization of one device holds: the key it is stored under, per-policy
 * availability, the raw samples, the fitted cost functions and the decision table. Shared by the
 * benchmarks, fitting, decisions, DB records and plots.
 */
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "characterize/fit.h"
#include "policies/policy.h"

namespace hetopt::characterize {

/// What a sample or a fit measures.
enum class Measure : uint8_t { Alloc, Free, H2D, D2H };
const char* measureName(Measure m);  ///< "alloc", "free", "h2d", "d2h"
bool measureFromName(const std::string& name, Measure* out);

/// A stored characterization is reused only while all of these are unchanged.
struct PlatformKey {
  std::string platformName;
  std::string platformVersion;
  std::string deviceName;
  std::string driverVersion;
  std::string cpuModel;
  std::string kernel;  ///< uname -r
  bool operator==(const PlatformKey&) const = default;
};

struct RunInfo {
  PlatformKey key;
  std::string deviceVendor;
  std::string deviceType;  ///< "GPU", "CPU", ...
  std::string hostname;
  std::string hetoptVersion;
  std::string createdUtc;  ///< ISO 8601
  bool quick = false;
  double durationS = 0;
  uint64_t memlockLimit = 0;     ///< RLIMIT_MEMLOCK at measurement time (UINT64_MAX unlimited)
  bool lockBeyondLimit = false;  ///< CAP_IPC_LOCK held
  /// "platform / device [TYPE, driver X]", as printed.
  std::string describe() const;
};

struct PolicyAvailability {
  PolicyKind policy = PolicyKind::Standard;
  enum class State : uint8_t { Available, Partial, Unavailable } state = State::Available;
  std::string reason;    ///< why not (unavailable) or why it stops (partial); empty otherwise
  uint64_t maxSize = 0;  ///< largest size measured for this policy (0: none)
};
const char* availabilityName(PolicyAvailability::State s);

/// One measurement point: `reps` timings of the same operation.
struct Sample {
  Measure kind = Measure::H2D;
  PolicyKind policy = PolicyKind::Standard;
  int concurrency = 1;          ///< concurrent transfers (separate queues); 1 for alloc/free
  uint64_t size = 0;            ///< bytes per transfer (per queue) or per allocation
  std::vector<double> timesNs;  ///< every repetition, in order
  double medianNs = 0, q1Ns = 0, q3Ns = 0, minNs = 0, maxNs = 0;
  /// Fills the statistics from timesNs.
  void summarize();
  /// Aggregate bandwidth of the point (concurrency * size / median), GB/s.
  double bandwidthGBs() const;
};

struct Fit {
  Measure kind = Measure::H2D;
  PolicyKind policy = PolicyKind::Standard;
  int concurrency = 1;
  CostFunction fn;
};

/// Which transfers a decision is for: one direction, or data that goes both ways (the usual case
/// for a buffer written to the device, computed on, and read back).
enum class Direction : uint8_t { H2D, D2H, RoundTrip };
const char* directionName(Direction d);  ///< "h2d", "d2h", "roundtrip"
bool directionFromName(const std::string& name, Direction* out);

/// How a policy's memory should be obtained for a size range.
enum class AllocMode : uint8_t {
  Plain,   ///< standard malloc: nothing to do
  Direct,  ///< allocate with the policy at the allocation site; its cost is repaid by one transfer
  Pool,    ///< too expensive per allocation: serve from a pool prepared ahead
};
const char* allocModeName(AllocMode m);
bool allocModeFromName(const std::string& name, AllocMode* out);

struct Decision {
  Direction direction = Direction::RoundTrip;
  uint64_t sizeLo = 0;  ///< inclusive
  uint64_t sizeHi = 0;  ///< exclusive; UINT64_MAX: no upper bound
  PolicyKind policy = PolicyKind::Standard;
  double predictedNs = 0;  ///< the policy's predicted transfer time at the range's reference size
  double standardNs = 0;   ///< standard's, same size
  uint64_t refSize = 0;    ///< where the two predictions were taken
  AllocMode alloc = AllocMode::Plain;
  std::string reason;
  double speedup() const { return predictedNs > 0 ? standardNs / predictedNs : 1.0; }
};

struct CharacterizationRun {
  int64_t id = 0;  ///< DB row id once stored
  RunInfo info;
  std::vector<PolicyAvailability> policies;
  std::vector<Sample> samples;
  std::vector<Fit> fits;
  std::vector<Decision> decisions;

  const Fit* findFit(Measure kind, PolicyKind policy, int concurrency = 1) const;
  const PolicyAvailability* findPolicy(PolicyKind policy) const;
};

}  // namespace hetopt::characterize
