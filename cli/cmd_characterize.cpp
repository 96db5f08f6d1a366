// SPDX-License-Identifier: MIT
/**
 * @file `hetopt characterize`: measure each allocation policy on this machine's OpenCL devices, fit
 * curves, store everything in the DB and print the decision table; `--show` prints what is stored.
 */
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "characterize/bench.h"
#include "characterize/decide.h"
#include "characterize/plot.h"
#include "characterize/records.h"
#include "common/units.h"
#include "cli/commands.h"
#include "common/gnuplot.h"
#include "cli/icd_doctor.h"
#include "cli/json_output.h"
#include "common/cl_select.h"
#include "store/db.h"
#include "common/log.h"
#include "common/paths.h"

namespace hetopt::cli {
namespace {

using namespace hetopt::characterize;

struct Args {
  std::string device;
  bool quick = false;
  bool force = false;
  bool show = false;
  bool json = false;
  bool noPlots = false;
  bool plotsGiven = false;
  uint64_t maxSize = 0;
  std::string db;
  std::string plots = "hetopt-plots";
  PlotFormat format = PlotFormat::Png;
};

void usage() {
  printf(
      "usage: hetopt characterize [--device FILTER] [--quick] [--max-size SIZE] [--force]\n"
      "                           [--db PATH] [--plots DIR | --no-plots] [--plot-format png|svg]\n"
      "       hetopt characterize --show [--json] [--device FILTER] [--db PATH] [--plots DIR]\n\n"
      "Measures, once per machine, what each host-memory allocation policy costs and how fast\n"
      "data moves from it to each OpenCL device and back (1-4 concurrent transfers), fits a\n"
      "cost function per curve, derives which policy to use per size, and stores it all in the\n"
      "DB. Later runs reuse the stored result while platform, device, driver, CPU model and\n"
      "kernel are unchanged.\n\n"
      "Policies: standard (malloc), locked (malloc+mlock), opencl (CL_MEM_ALLOC_HOST_PTR buffer,\n"
      "mapped), hybrid (malloc+mlock+CL_MEM_USE_HOST_PTR buffer, mapped), register (existing\n"
      "memory under a CL_MEM_USE_HOST_PTR buffer). A policy this machine refuses (e.g. mlock\n"
      "beyond RLIMIT_MEMLOCK) is recorded as unavailable, with the reason.\n\n"
      "  --device FILTER    'gpu', 'cpu' or a substring of 'platform / device' (default: all)\n"
      "  --quick            fewer sizes (1 KiB..16 MiB) and repetitions: CI, a first look\n"
      "  --max-size SIZE    largest allocation/transfer, e.g. 64M (default 768 MiB / 256 MiB)\n"
      "  --force            measure again even if the DB has a result for this key\n"
      "  --show             print the stored results (any host's) instead of measuring\n"
      "  --json             with --show: one JSON object, {\"db\", \"runs\": [...]}; each run has id,\n"
      "                     device, platform, platform_version, device_name, device_vendor,\n"
      "                     device_type, driver_version, cpu_model, kernel, hostname, hetopt_version,\n"
      "                     measured_utc, quick, duration_s, memlock_limit (null: unlimited),\n"
      "                     lock_beyond_limit, policies [policy, state, reason, max_size], fits\n"
      "                     [measure, policy, concurrency, rms_rel_err, max_rel_err, points,\n"
      "                     size_min, size_max, segments [size_lo, latency_ns, ns_per_byte]],\n"
      "                     decisions [direction, size_lo, size_hi (null: no bound), policy, alloc,\n"
      "                     predicted_ns, standard_ns, ref_size, speedup, reason] and samples\n"
      "                     [measure, policy, concurrency, size, reps, median_ns, q1_ns, q3_ns,\n"
      "                     min_ns, max_ns]; sizes in bytes, times in ns\n"
      "  --db PATH          DB file (default $HETOPT_DB, else $XDG_DATA_HOME/hetopt/hetopt.db)\n"
      "  --plots DIR        where plot data, gnuplot scripts and images go (default ./hetopt-plots;\n"
      "                     with --show, plots are written only when --plots is given)\n"
      "  --no-plots         write no plot files\n"
      "  --plot-format F    png (default; falls back to svg without a png terminal) or svg\n\n"
      "Exit status: 0 success, 1 nothing stored matches (--show), 2 hetopt's own errors.\n");
}

// Parses the command line; returns -1 to go on, else the exit status.
int parseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        warn("characterize: %s needs a value", name);
        return nullptr;
      }
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      usage();
      return 0;
    } else if (arg == "--device") {
      const char* v = value("--device");
      if (!v) return 2;
      a->device = v;
    } else if (arg == "--quick") {
      a->quick = true;
    } else if (arg == "--force") {
      a->force = true;
    } else if (arg == "--show") {
      a->show = true;
    } else if (arg == "--json") {
      a->json = true;
    } else if (arg == "--no-plots") {
      a->noPlots = true;
    } else if (arg == "--max-size") {
      const char* v = value("--max-size");
      if (!v) return 2;
      if (!parseByteSize(v, &a->maxSize)) {
        warn("characterize: --max-size '%s' is not a size (e.g. 64M, 1G, 4096)", v);
        return 2;
      }
    } else if (arg == "--db") {
      const char* v = value("--db");
      if (!v) return 2;
      a->db = v;
    } else if (arg == "--plots") {
      const char* v = value("--plots");
      if (!v) return 2;
      a->plots = v;
      a->plotsGiven = true;
    } else if (arg == "--plot-format") {
      const char* v = value("--plot-format");
      if (!v) return 2;
      if (!strcmp(v, "png")) {
        a->format = PlotFormat::Png;
      } else if (!strcmp(v, "svg")) {
        a->format = PlotFormat::Svg;
      } else {
        warn("characterize: --plot-format must be png or svg, not '%s'", v);
        return 2;
      }
    } else {
      warn("characterize: unknown argument %s (see hetopt characterize --help)", arg.c_str());
      return 2;
    }
  }
  if (a->db.empty()) a->db = defaultDbPath();
  if (a->json && !a->show) {
    warn("characterize: --json goes with --show");
    return 2;
  }
  return -1;
}

// `--device` on stored runs: the same words as for live devices.
bool storedRunMatches(const CharacterizationRun& run, const std::string& filter) {
  if (filter.empty()) return true;
  ClDevice d;
  d.platformName = run.info.key.platformName;
  d.deviceName = run.info.key.deviceName;
  d.type = run.info.deviceType == "GPU"   ? CL_DEVICE_TYPE_GPU
           : run.info.deviceType == "CPU" ? CL_DEVICE_TYPE_CPU
           : run.info.deviceType == "ACCELERATOR" ? CL_DEVICE_TYPE_ACCELERATOR
                                                  : CL_DEVICE_TYPE_CUSTOM;
  return clDeviceMatches(d, filter);
}

void printRun(const CharacterizationRun& run) {
  const RunInfo& i = run.info;
  printf("  measured %s on %s (%s, Linux %s) by hetopt %s%s in %.1f s\n", i.createdUtc.c_str(),
         i.hostname.c_str(), i.key.cpuModel.c_str(), i.key.kernel.c_str(), i.hetoptVersion.c_str(),
         i.quick ? " (--quick)" : "", i.durationS);
  printf("  policies:\n%s", formatPolicySummary(run).c_str());
  const Fit* worst = nullptr;
  for (const Fit& f : run.fits)
    if (!worst || f.fn.rmsRelErr > worst->fn.rmsRelErr) worst = &f;
  if (worst)
    printf("  fits: %zu curves; largest RMS relative error %.1f%% (%s %s x%d)\n", run.fits.size(),
           worst->fn.rmsRelErr * 100, measureName(worst->kind), policyName(worst->policy),
           worst->concurrency);
  printf("%s", formatMeasuredSummary(run).c_str());
  printf("  decisions (one transfer at a time; 'pool': allocation costs more than one transfer saves):\n%s",
         formatDecisionTable(run).c_str());
}

void writePlots(const CharacterizationRun& run, const Args& args,
                std::map<std::string, int>* slugs) {
  std::string slug = plotSlug(run);
  int n = ++(*slugs)[slug];
  if (n > 1) slug += "-" + std::to_string(n);
  PlotFiles files;
  std::string error;
  if (!writePlotFiles(run, args.plots, slug, args.format, &files, &error)) {
    warn("characterize: plots: %s", error.c_str());
    return;
  }
  std::string gnuplot = findGnuplot();
  if (gnuplot.empty()) {
    printf("  plots: gnuplot not found; data and script written, render with: cd %s && gnuplot %s.gp\n",
           args.plots.c_str(), slug.c_str());
    return;
  }
  fflush(stdout);
  if (!runGnuplot(gnuplot, files.script, &error)) {
    warn("characterize: %s", error.c_str());
    return;
  }
  printf("  plots:");
  for (const std::string& img : files.images) {
    if (access(img.c_str(), R_OK) == 0) printf(" %s", img.c_str());
  }
  printf("\n");
}

int show(const Args& args) {
  std::string error;
  std::unique_ptr<Db> db = Db::open(args.db, Db::Mode::ReadOnly, &error);
  if (!db) {
    warn("characterize: %s", error.c_str());
    return 2;
  }
  std::vector<CharacterizationRun> runs;
  if (!loadAllRuns(*db, &runs, &error)) {
    warn("characterize: %s", error.c_str());
    return 2;
  }
  std::map<std::string, int> slugs;
  int shown = 0;
  std::vector<const CharacterizationRun*> matching;
  for (const CharacterizationRun& run : runs) {
    if (!storedRunMatches(run, args.device)) continue;
    ++shown;
    if (args.json) {
      matching.push_back(&run);
      continue;
    }
    printf("device: %s\n", run.info.describe().c_str());
    printRun(run);
    if (args.plotsGiven && !args.noPlots) writePlots(run, args, &slugs);
  }
  if (args.json) fputs(characterizationJson(args.db, matching).c_str(), stdout);
  if (shown == 0) {
    warn("characterize: %s holds no characterization%s%s (run `hetopt characterize`)",
         args.db.c_str(), args.device.empty() ? "" : " matching ", args.device.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int cmdCharacterize(int argc, char** argv) {
  Args args;
  int rc = parseArgs(argc, argv, &args);
  if (rc >= 0) return rc;
  if (args.show) return show(args);

  double start = monotonicSeconds();
  std::string error;
  std::vector<ClDevice> all = listClDevices(&error);
  if (all.empty()) {
    warn("characterize: %s", error.c_str());
    return 2;
  }
  for (const IcdFinding& f : diagnoseIcdSetup(all))
    if (f.level == IcdFinding::Level::Warning) fprintf(stderr, "warning: %s\n", f.text.c_str());
  std::vector<ClDevice> devices;
  for (const ClDevice& d : all)
    if (args.device.empty() || clDeviceMatches(d, args.device)) devices.push_back(d);
  if (devices.empty()) {
    std::string have;
    for (const ClDevice& d : all) have += " '" + d.platformName + " / " + d.deviceName + "'";
    warn("characterize: no OpenCL device matches '%s' (have:%s)", args.device.c_str(), have.c_str());
    return 2;
  }
  // The DB is opened before measuring so that a bad DB costs no measurement time.
  std::unique_ptr<Db> db = Db::open(args.db, Db::Mode::ReadWriteCreate, &error);
  if (!db || !ensureCharacterizeTables(*db, &error)) {
    warn("characterize: %s", error.c_str());
    return 2;
  }
  printf("DB: %s\n", args.db.c_str());
  Progress progress(stderr, isatty(fileno(stderr)) != 0);
  std::map<std::string, int> slugs;
  int failures = 0;
  for (const ClDevice& dev : devices) {
    printf("device %u.%u: %s\n", dev.platformIndex, dev.deviceIndex, dev.describe().c_str());
    fflush(stdout);
    CharacterizationRun run;
    bool found = false;
    if (!args.force) {
      if (!loadRun(*db, describeRun(dev, args.quick).key, &run, &found, &error)) {
        warn("characterize: %s", error.c_str());
        return 2;
      }
      // A quick result is not reused for a full request: it has fewer sizes and repetitions.
      if (found && run.info.quick && !args.quick) found = false;
      if (found)
        printf("  using the stored characterization (run %lld; --force measures again)\n",
               static_cast<long long>(run.id));
    }
    if (!found) {
      BenchConfig config;
      config.quick = args.quick;
      config.maxSize = args.maxSize;
      if (!runBenchmarks(dev, config, &progress, &run, &error)) {
        warn("characterize: %s: %s", dev.describe().c_str(), error.c_str());
        ++failures;
        continue;
      }
      fitSamples(&run);
      run.decisions = decide(run);
      if (!storeRun(*db, &run, &error)) {
        warn("characterize: %s", error.c_str());
        return 2;
      }
      printf("  measured in %.1f s; stored as run %lld\n", run.info.durationS,
             static_cast<long long>(run.id));
    }
    printRun(run);
    if (!args.noPlots) writePlots(run, args, &slugs);
    fflush(stdout);
  }
  printf("total %.1f s\n", monotonicSeconds() - start);
  return failures ? 2 : 0;
}

}  // namespace hetopt::cli
