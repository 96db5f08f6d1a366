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
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/icd_doctor.h"
#include "cli/json_output.h"
#include "common/cl_select.h"
#include "common/gnuplot.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/units.h"
#include "store/db.h"

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
  uint64_t maxMemory = 0;
  std::string db;
  std::string plots = "hetopt-plots";
  PlotFormat format = PlotFormat::Png;
};

// Reads the command line into *a; returns -1 to go on, else the exit status.
int readArgs(int argc, char** argv, Args* a) {
  const CommandSpec& spec = commandSpec("characterize");
  ParsedArgs args;
  if (int rc = parseOrExit(spec, argc, argv, &args); rc >= 0) return rc;
  a->device = args.value("device");
  a->quick = args.flag("quick");
  a->force = args.flag("force");
  a->show = args.flag("show");
  a->json = args.flag("json");
  a->noPlots = args.flag("no-plots");
  a->maxSize = args.size("max-size", 0);
  a->maxMemory = args.size("max-memory", 0);
  a->db = args.value("db", defaultDbPath());
  a->plotsGiven = args.given("plots");
  a->plots = args.value("plots", a->plots);
  a->format = args.value("plot-format") == "svg" ? PlotFormat::Svg : PlotFormat::Png;
  if (a->json && !a->show) return usageError(spec, "--json goes with --show");
  return -1;
}

// `--device` on stored runs: the same words as for live devices.
bool storedRunMatches(const CharacterizationRun& run, const std::string& filter) {
  if (filter.empty()) return true;
  ClDevice d;
  d.platformName = run.info.key.platformName;
  d.deviceName = run.info.key.deviceName;
  d.type = run.info.deviceType == "GPU"           ? CL_DEVICE_TYPE_GPU
           : run.info.deviceType == "CPU"         ? CL_DEVICE_TYPE_CPU
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
  // A median far from the sizes on both sides of it is set aside, not fitted: said, so that the
  // errors are read as the others'.
  int outliers = 0, curves = 0, points = 0;
  for (const Fit& f : run.fits) {
    outliers += f.fn.outliers;
    curves += f.fn.outliers > 0;
    points += f.fn.points;
  }
  if (outliers)
    printf(
        "  fits: %d of %d medians set aside as outliers (in %d curves), each over %.1fx off the "
        "sizes on both sides of it\n",
        outliers, points, curves, FitOptions{}.outlierRatio);
  // Farther than this from its own medians, a fit prices the sizes between them by a curve that
  // is not theirs: said, with the way to measure again.
  constexpr double kRoughFit = 0.2;
  for (const Fit& f : run.fits)
    if (f.fn.rmsRelErr > kRoughFit)
      printf(
          "  warning: the %s %s x%d fit misses its medians by %.0f%% RMS (%.0f%% at worst): its "
          "prices are "
          "rough; `hetopt characterize --force` measures again\n",
          measureName(f.kind), policyName(f.policy), f.concurrency, f.fn.rmsRelErr * 100,
          f.fn.maxRelErr * 100);
  printf("%s", formatMeasuredSummary(run).c_str());
  printf(
      "  decisions (one transfer at a time; 'pool': allocation costs more than one transfer "
      "saves):\n%s",
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
    printf(
        "  plots: gnuplot not found; data and script written, render with: cd %s && gnuplot "
        "%s.gp\n",
        args.plots.c_str(), slug.c_str());
    return;
  }
  fflush(stdout);
  if (!runGnuplot(gnuplot, files.script, files.images, &error)) {
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
  int rc = readArgs(argc, argv, &args);
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
    warn("characterize: no OpenCL device matches '%s' (have:%s)", args.device.c_str(),
         have.c_str());
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
      config.memoryBudget = args.maxMemory;
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
