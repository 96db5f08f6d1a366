// SPDX-License-Identifier: MIT
/** @file The `--json` outputs of `hetopt devices` and `characterize --show`; see json_output.h.
 * Devices, the chosen one, and each characterization run with its fits, through JsonWriter. */
#include "cli/json_output.h"

#include <cstdint>

#include "common/json_writer.h"
#include "policies/policy.h"

namespace hetopt::cli {

using namespace hetopt::characterize;

std::string devicesJson(const std::vector<ClDevice>& devices, const ClDevice* chosen,
                        const std::string& error, const std::vector<IcdFinding>& findings) {
  std::string out;
  JsonWriter j(&out);
  j.beginObject();
  j.key("devices").beginArray();
  for (const ClDevice& d : devices) {
    j.beginObject();
    j.member("platform_index", static_cast<uint64_t>(d.platformIndex))
        .member("platform", d.platformName);
    j.member("platform_version", d.platformVersion);
    j.member("device_index", static_cast<uint64_t>(d.deviceIndex)).member("device", d.deviceName);
    j.member("vendor", d.deviceVendor)
        .member("type", d.typeName())
        .member("driver_version", d.driverVersion);
    j.member("global_mem_bytes", static_cast<uint64_t>(d.globalMemBytes));
    j.member("max_alloc_bytes", static_cast<uint64_t>(d.maxAllocBytes));
    j.member("host_unified_memory", d.hostUnifiedMemory == CL_TRUE);
    j.member("selected", chosen && d.device == chosen->device);
    j.endObject();
  }
  j.endArray();
  j.key("selected");
  if (chosen)
    j.beginObject()
        .member("platform_index", static_cast<uint64_t>(chosen->platformIndex))
        .member("device_index", static_cast<uint64_t>(chosen->deviceIndex))
        .member("description", chosen->describe())
        .endObject();
  else
    j.null();
  j.key("error");
  if (error.empty())
    j.null();
  else
    j.value(error);
  j.key("findings").beginArray();
  for (const IcdFinding& f : findings)
    j.beginObject()
        .member("level", f.level == IcdFinding::Level::Warning ? "warning" : "note")
        .member("text", f.text)
        .endObject();
  j.endArray();
  j.endObject();
  out += '\n';
  return out;
}

namespace {

void costFunction(JsonWriter& j, const CostFunction& fn) {
  j.member("rms_rel_err", fn.rmsRelErr)
      .member("max_rel_err", fn.maxRelErr)
      .member("points", fn.points)
      .member("outliers", fn.outliers);
  j.member("size_min", fn.sizeMin).member("size_max", fn.sizeMax);
  j.key("segments").beginArray();
  for (int i = 0; i < fn.count; ++i) {
    const Segment& s = fn.segments[static_cast<size_t>(i)];
    j.beginObject()
        .member("size_lo", s.sizeLo)
        .member("latency_ns", s.latencyNs)
        .member("ns_per_byte", s.nsPerByte);
    j.endObject();
  }
  j.endArray();
}

void run(JsonWriter& j, const CharacterizationRun& r) {
  const RunInfo& i = r.info;
  j.beginObject();
  j.member("id", r.id).member("device", i.describe());
  j.member("platform", i.key.platformName).member("platform_version", i.key.platformVersion);
  j.member("device_name", i.key.deviceName)
      .member("device_vendor", i.deviceVendor)
      .member("device_type", i.deviceType);
  j.member("driver_version", i.key.driverVersion)
      .member("cpu_model", i.key.cpuModel)
      .member("kernel", i.key.kernel);
  j.member("hostname", i.hostname)
      .member("hetopt_version", i.hetoptVersion)
      .member("measured_utc", i.createdUtc);
  j.member("quick", i.quick).member("duration_s", i.durationS);
  j.key("memlock_limit");
  if (i.memlockLimit == UINT64_MAX)
    j.null();  // unlimited
  else
    j.value(i.memlockLimit);
  j.member("lock_beyond_limit", i.lockBeyondLimit);
  j.key("policies").beginArray();
  for (const PolicyAvailability& p : r.policies)
    j.beginObject()
        .member("policy", policyName(p.policy))
        .member("state", availabilityName(p.state))
        .member("reason", p.reason)
        .member("max_size", p.maxSize)
        .endObject();
  j.endArray();
  j.key("fits").beginArray();
  for (const Fit& f : r.fits) {
    j.beginObject().member("measure", measureName(f.kind)).member("policy", policyName(f.policy));
    j.member("concurrency", f.concurrency);
    costFunction(j, f.fn);
    j.endObject();
  }
  j.endArray();
  j.key("decisions").beginArray();
  for (const Decision& d : r.decisions) {
    j.beginObject().member("direction", directionName(d.direction)).member("size_lo", d.sizeLo);
    j.key("size_hi");
    if (d.sizeHi == UINT64_MAX)
      j.null();  // no upper bound
    else
      j.value(d.sizeHi);
    j.member("policy", policyName(d.policy)).member("alloc", allocModeName(d.alloc));
    j.member("predicted_ns", d.predictedNs)
        .member("standard_ns", d.standardNs)
        .member("ref_size", d.refSize);
    j.member("speedup", d.speedup()).member("reason", d.reason);
    j.endObject();
  }
  j.endArray();
  j.key("samples").beginArray();
  for (const Sample& s : r.samples) {
    j.beginObject().member("measure", measureName(s.kind)).member("policy", policyName(s.policy));
    j.member("concurrency", s.concurrency)
        .member("size", s.size)
        .member("reps", static_cast<uint64_t>(s.timesNs.size()));
    j.member("median_ns", s.medianNs).member("q1_ns", s.q1Ns).member("q3_ns", s.q3Ns);
    j.member("min_ns", s.minNs).member("max_ns", s.maxNs);
    j.endObject();
  }
  j.endArray();
  j.endObject();
}

}  // namespace

std::string characterizationJson(const std::string& dbPath,
                                 const std::vector<const CharacterizationRun*>& runs) {
  std::string out;
  JsonWriter j(&out);
  j.beginObject().member("db", dbPath);
  j.key("runs").beginArray();
  for (const CharacterizationRun* r : runs) run(j, *r);
  j.endArray();
  j.endObject();
  out += '\n';
  return out;
}

}  // namespace hetopt::cli
