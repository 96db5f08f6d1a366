// SPDX-License-Identifier: MIT
/**
 * @file Every command's options, as data: the parser reads these tables, and `--help`, the man page
 * and the bash completion are written from them (cli/command_line.h). To add an option, add its
 * row here and read it in the command's cmd_<name>.cpp with ParsedArgs. Help texts are one
 * paragraph each, unwrapped; numbers that live in code elsewhere are pinned there by a
 * static_assert beside the code.
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli/command_line.h"

namespace hetopt::cli {
namespace {

using K = ValueKind;

// Options every command has, spelled and described once.
constexpr OptionSpec kHelp{"help", 'h', K::None, "", "print this help and exit"};
constexpr OptionSpec kVersion{"version", 'V', K::None, "", "print hetopt's version and exit"};
#define HETOPT_DB_DEFAULT \
  "$HETOPT_DB, else $XDG_DATA_HOME/hetopt/hetopt.db, else ~/.local/share/hetopt/hetopt.db"
constexpr OptionSpec kDb{"db", 0, K::File, "PATH",
                         "the DB of characterizations and profiles (default " HETOPT_DB_DEFAULT
                         ")"};
constexpr OptionSpec kDbNeverCreated{
    "db", 0, K::File, "PATH",
    "the DB of characterizations and profiles (default " HETOPT_DB_DEFAULT
    "); never created: a missing DB is exit status 1"};
#define HETOPT_DEVICE_WORDS "'gpu', 'cpu' or a case-insensitive substring of 'platform / device'"
constexpr OptionSpec kDeviceForProgram{
    "device", 0, K::Text, "FILTER",
    "the OpenCL device the program's calls are made for: " HETOPT_DEVICE_WORDS
    " (default $HETOPT_DEVICE, else the first GPU, else the first device); sets HETOPT_DEVICE"};
constexpr OptionSpec kNoPlots{"no-plots", 0, K::None, "", "write no plot files"};
constexpr OptionSpec kNoPlot{"no-plot", 0, K::None, "", "", "", 0, 0, false, "no-plots"};

constexpr OptionSpec kHetoptOptions[] = {
    kHelp,
    kVersion,
    {"help-env", 0, K::None, "",
     "list the HETOPT_* environment variables the shim reads, and exit"},
};

constexpr OptionSpec kDevicesOptions[] = {
    {"device", 0, K::Text, "FILTER",
     "which device to mark: " HETOPT_DEVICE_WORDS
     " (default $HETOPT_DEVICE, else the first GPU, else the "
     "first device)"},
    {"json", 0, K::None, "",
     "print one JSON object instead: \"devices\" (each with platform_index, platform, "
     "platform_version, "
     "device_index, device, vendor, type, driver_version, global_mem_bytes, max_alloc_bytes, "
     "host_unified_memory, selected), \"selected\" (platform_index, device_index, description; "
     "null when "
     "none matches), \"error\" (why no device or no match; null otherwise) and \"findings\" (the "
     "diagnosis: "
     "level \"warning\" or \"note\", text)"},
    kHelp,
    kVersion,
};

constexpr OptionSpec kRunOptions[] = {
    {"dry-run", 0, K::None, "",
     "print the plan (each candidate site: where, how much, strategy, when it pins, predicted "
     "saving and "
     "why) and the decision; run nothing"},
    kDeviceForProgram,
    {"stats", 0, K::File, "FILE.json",
     "--stats: print what the shim did at exit (HETOPT_STATS=1); --stats=FILE.json: write the same "
     "facts "
     "as JSON to FILE.json at exit (fields: README, \"Run statistics as JSON\"; a relative FILE "
     "from the "
     "directory hetopt started in); both forms together do both",
     "", 0, 0, true},
    kDb,
    {"profile", 0, K::Name, "NAME",
     "use the profile `hetopt trace --profile NAME` stored, even if the program changed since "
     "(said on "
     "stderr)"},
    {"policy", 0, K::Choice, "P",
     "pin every candidate site with P whatever the prices say, for experiments: a pool of P "
     "(opencl, "
     "hybrid, locked), or 'register': each block registered in place, and every static array and "
     "anonymous mapping that crossed too",
     "opencl|hybrid|locked|register"},
    {"force", 0, K::None, "", "optimize even when the predicted saving is below the minimums"},
    {"no-pool", 0, K::None, "",
     "no pool: allocate every candidate block with the policy itself, on the program's thread (the "
     "naive "
     "variant; plan line pool-mode direct)"},
    {"no-build-ahead", 0, K::None, "",
     "do not build the program's kernels ahead (by default, with the early context, the programs "
     "the trace saw it build from source are built while it starts; plan line build-ahead)"},
    {"no-early-context", 0, K::None, "",
     "pin only in the context the program makes, when it makes it (by default a program that makes "
     "one "
     "context gets it made at start-up)"},
    {"passthrough", 0, K::None, "",
     "load the shim but only forward every call (shows it is transparent)"},
    {"verify", 0, K::Choice, "on|off",
     "the closed loop (default on, or $HETOPT_VERIFY): every run of a planned program is timed and "
     "kept "
     "in its run ledger; while the plan has no verdict, runs alternate between optimized and "
     "control runs "
     "(untouched), and a paired test keeps the plan (faster with 90% confidence), reverts it "
     "(slower with "
     "95%), or calls it inconclusive after 10 pairs (it keeps optimizing when the estimate is not "
     "slower); "
     "a reverted plan gives way to a smaller one (without the early driver start, then without the "
     "site "
     "that pins the most), an optimized run that ends unlike the control runs (exit status, "
     "signal) "
     "reverts it at once; after a verdict one run in 10 is a control run. off: no control runs, "
     "nothing "
     "timed or kept (benchmarks)",
     "on|off"},
    {"untouched", 0, K::None, "",
     "run the program exactly as natively (no shim, no plan), timed and kept beside its plan as a "
     "control "
     "run, for the verdict and `hetopt report` (needs the program's profile); takes no option but "
     "--db "
     "and --verify"},
    kHelp,
    kVersion,
};

constexpr OptionSpec kTraceOptions[] = {
    {"output", 'o', K::File, "FILE",
     "trace file (default ./hetopt-<program>-<pid>.trace), created 0600; a FILE that cannot be "
     "created "
     "stops hetopt before the program runs; children's traces are FILE.<pid> (not kept for "
     "processes that made no OpenCL call, unless --no-analyze)"},
    {"force", 0, K::None, "", "overwrite a FILE that holds something other than a hetopt trace"},
    kDeviceForProgram,
    kDb,
    {"profile", 0, K::Name, "NAME",
     "store the profile under NAME instead of the program's identity (one per name; `hetopt run "
     "--profile NAME` uses it); several processes with OpenCL calls get NAME, NAME.2, ..."},
    {"no-analyze", 0, K::None, "", "only record the trace: no analysis, no profile"},
    kHelp,
    kVersion,
};

constexpr OptionSpec kShowOptions[] = {
    {"json", 0, K::None, "", "the whole trace as one JSON object (for tools)"},
    {"salvage", 0, K::None, "", "show what precedes a damaged part instead of refusing the file"},
    kHelp,
    kVersion,
};

constexpr OptionSpec kCharacterizeOptions[] = {
    {"device", 0, K::Text, "FILTER",
     "which devices to measure: " HETOPT_DEVICE_WORDS " (default: all)"},
    {"quick", 0, K::None, "", "fewer sizes (1 KiB..16 MiB) and repetitions: CI, a first look"},
    {"max-size", 0, K::Size, "SIZE",
     "largest allocation/transfer, e.g. 64M (default 768 MiB / 1 GiB)"},
    {"max-memory", 0, K::Size, "SIZE",
     "host memory the measurements may hold at once, e.g. 2G (default: a quarter of the free "
     "memory); large transfer sizes then run fewer concurrent transfers or policies at once, and "
     "the largest sizes are those whose blocks fit"},
    {"force", 0, K::None, "", "measure again even if the DB has a result for this key"},
    {"show", 0, K::None, "", "print the stored results (any host's) instead of measuring"},
    {"json", 0, K::None, "",
     "with --show: one JSON object, {\"db\", \"runs\": [...]}; each run has id, device, platform, "
     "platform_version, device_name, device_vendor, device_type, driver_version, cpu_model, "
     "kernel, "
     "hostname, hetopt_version, measured_utc, quick, duration_s, memlock_limit (null: unlimited), "
     "lock_beyond_limit, policies [policy, state, reason, max_size], fits [measure, policy, "
     "concurrency, "
     "rms_rel_err, max_rel_err, points, outliers, size_min, size_max, segments [size_lo, "
     "latency_ns, "
     "ns_per_byte]], "
     "decisions [direction, size_lo, size_hi (null: no bound), policy, alloc, predicted_ns, "
     "standard_ns, "
     "ref_size, speedup, reason] and samples [measure, policy, concurrency, size, reps, median_ns, "
     "q1_ns, "
     "q3_ns, min_ns, max_ns]; sizes in bytes, times in ns"},
    kDb,
    {"plots", 0, K::Dir, "DIR",
     "where plot data, gnuplot scripts and images go (default ./hetopt-plots; with --show, plots "
     "are "
     "written only when --plots is given)"},
    kNoPlots,
    {"plot-format", 0, K::Choice, "png|svg",
     "png (default; falls back to svg without a png terminal) or svg", "png|svg"},
    kHelp,
    kVersion,
};

constexpr OptionSpec kAnalyzeOptions[] = {
    {"json", 0, K::None, "", "print the profile as JSON instead of the report"},
    {"threshold", 0, K::Number, "R",
     "eligible when communication/computation time >= R (default 0.1)", "", 0, 1e9},
    kDb,
    {"no-store", 0, K::None, "", "analyse and print only: do not touch the DB"},
    {"timeline", 0, K::File, "FILE", "write a timeline for ui.perfetto.dev / chrome://tracing"},
    {"plots", 0, K::Dir, "DIR", "write the execution breakdown plot (gnuplot) into DIR"},
    {"no-symbols", 0, K::None, "", "report sites as module+offset (no debug info lookup)"},
    {"salvage", 0, K::None, "",
     "analyse what precedes a corrupt part of the trace instead of failing"},
    {"profile", 0, K::Program, "PROGRAM",
     "print the profile stored for PROGRAM as it is now (a rebuilt binary has none) instead of "
     "analysing a "
     "trace; with --plots, its breakdown, standard and optimized side by side once `hetopt run` "
     "stored "
     "them"},
    kHelp,
    kVersion,
};

constexpr OptionSpec kReportOptions[] = {
    kDbNeverCreated,
    {"last", 0, K::Count, "N",
     "how many of the newest runs of each kind to show (default 5; the measured saving is the "
     "verdict's, whatever is shown)",
     "", 1, 50},
    {"plots", 0, K::Dir, "DIR",
     "where the breakdown plot goes (default ./hetopt-plots): gnuplot data and script, SVG and PNG "
     "when "
     "gnuplot is on PATH, titled with device and date"},
    kNoPlots,
    kNoPlot,
    {"json", 0, K::None, "",
     "print one JSON object instead (no plot; format 2): program, program_key, device, "
     "traced_utc; verdict (the plan the newest run followed, null before any: plan, state "
     "exploring|kept|reverted|inconclusive, pairs, paired_median, ci_low and ci_high (one-sided "
     "90% and 95% bounds), window_pairs, failed, optimized_runs); plans (each plan the closed loop "
     "ran, the same fields); declined (runs, reason); untouched_after_revert; runs (untouched, "
     "optimized: records kept; untouched_shown, optimized_shown: the newest --last of them); "
     "measured (the verdict's plan and pairs: plan, pairs, paired_median, control_median_ns, "
     "saving_ns, from_utc, to_utc, null without pairs; traced_less_optimized_ns: without pairs, "
     "the "
     "traced run less its recording cost less the optimized runs' median, not a measurement); "
     "pairs "
     "(plan, control_seq, optimized_seq, control_ns, optimized_ns, in_verdict)"},
    kHelp,
    kVersion,
};

constexpr CommandSpec kSpecs[] = {
    {"", "make unmodified OpenCL programs transfer at the speed of hand-pinned code",
     Operands::Program, "<command> [options] [--] [program args...]", 0, 0,
     "hetopt makes unmodified OpenCL programs move data between host and device at the speed of "
     "hand-pinned "
     "code: `hetopt characterize` once per machine, `hetopt trace` once per program, `hetopt run` "
     "every run.",
     kHetoptOptions,
     "A program's exit status (or signal) is hetopt's; hetopt's own errors exit 2 with one line on "
     "stderr."},
    {"devices",
     "list OpenCL platforms/devices, show which one hetopt picks, diagnose ICD set-up problems",
     Operands::None, "", 0, 0,
     "Lists every OpenCL platform and device, marks the one hetopt commands and test apps use, and "
     "diagnoses "
     "common set-up problems (vendor library without an ICD file, a CPU platform listed before the "
     "GPU).",
     kDevicesOptions,
     "0 when a device matches; 1 when none does, or there is none; 2 on hetopt's own errors."},
    {"run",
     "run a program, serving its transfer-feeding allocations from pinned memory (every run)",
     Operands::Program, "[--] program [args...]", 1, 0,
     "Runs the program. With a profile from `hetopt trace` (same build of the program), the "
     "allocation sites "
     "whose memory feeds transfers are pinned where that pays on this machine (priced from the "
     "traced "
     "transfer times and the curves of `hetopt characterize`): large, long-lived blocks registered "
     "in place "
     "on a background thread, repeatedly allocated ones served from a pinned pool; static arrays "
     "and "
     "anonymous mappings that crossed are pinned in place; everything else is untouched, and no "
     "transfer "
     "waits for pinning longer than pageable memory would have cost. Where no site pays but the "
     "start-up does (its one context made early while it still computes, its kernels built "
     "ahead), the plan is start-up only and pins nothing. Otherwise the program runs "
     "untouched "
     "(no shim at all), after one line saying which numbers decided. Once the program behaves "
     "unlike its "
     "profile (sizes, live memory, no transfers), no new allocation is redirected. Exit status and "
     "signals "
     "pass through.\n\n"
     "A program that made no OpenCL calls itself when traced (a wrapper script that execs the real "
     "program, "
     "a launcher) is run with the shim waiting in every process it starts: the ones whose profiles "
     "`hetopt "
     "trace` linked to it are optimized, every other process runs untouched. An interpreter's "
     "profile is its "
     "script's (module's, code's) own.\n\n"
     "Options end at the program (its first argument that is not an option) or at `--`: the "
     "program's own "
     "options are never read as hetopt's.",
     kRunOptions,
     "The program's exit status (or its signal, raised again); 2 on hetopt's own errors."},
    {"trace",
     "run a program recording its OpenCL calls and host allocations into a compressed trace (once)",
     Operands::Program, "[--] program [args...]", 1, 0,
     "Runs the program with every OpenCL call and host allocation recorded into a compressed, "
     "SSA-versioned "
     "trace with host and device timings (OpenCL profiling is switched on for its queues without "
     "the program "
     "seeing it). Children it forks or executes get their own traces, FILE.<pid>. The program's "
     "exit status "
     "and signals pass through; a summary goes to stderr at the end, followed by the analysis "
     "(`hetopt "
     "analyze`), whose profile `hetopt run` uses. Read the trace with `hetopt show FILE`.\n\n"
     "Every process of the run that made OpenCL calls gets its own profile, under its own identity "
     "(an "
     "interpreter's includes the script it ran). When the program itself made none (a wrapper "
     "script, a "
     "launcher), the DB links it to those processes' profiles, and `hetopt run` of the same "
     "command "
     "optimizes them.\n\n"
     "Options end at the program (its first argument that is not an option) or at `--`: the "
     "program's own "
     "options are never read as hetopt's.",
     kTraceOptions,
     "The program's exit status (or its signal, raised again); 2 on hetopt's own errors."},
    {"show", "print a trace: calls, objects defined and used, loops, times (--json)",
     Operands::Files, "FILE", 1, 1,
     "Prints a trace written by `hetopt trace`: per thread, every call and host allocation with "
     "its loop "
     "counts, the objects it defines (def) and uses (use) with their SSA versions, bytes moved and "
     "host/device times; then host memory, allocation sites and a summary.",
     kShowOptions,
     "0 on success; 2 when the trace cannot be read (with --salvage: when nothing precedes the "
     "damage) and on hetopt's own errors."},
    {"characterize",
     "measure this machine's allocation policies and transfers once; fit, store, plot (once per "
     "machine)",
     Operands::None, "", 0, 0,
     "Measures, once per machine, what each host-memory allocation policy costs and how fast data "
     "moves from "
     "it to each OpenCL device and back (1-4 concurrent transfers), fits a cost function per "
     "curve, derives "
     "which policy to use per size, and stores it all in the DB. Later runs reuse the stored "
     "result while "
     "platform, device, driver, CPU model and kernel are unchanged. With --show, prints what is "
     "stored "
     "instead.\n\n"
     "Policies: standard (malloc), locked (malloc+mlock), opencl (CL_MEM_ALLOC_HOST_PTR buffer, "
     "mapped), "
     "hybrid (malloc+mlock+CL_MEM_USE_HOST_PTR buffer, mapped), register (existing memory under a "
     "CL_MEM_USE_HOST_PTR buffer). A policy this machine refuses (e.g. mlock beyond "
     "RLIMIT_MEMLOCK) is "
     "recorded as unavailable, with the reason.",
     kCharacterizeOptions,
     "0 on success; 1 when nothing stored matches (--show); 2 on hetopt's own errors."},
    {"analyze",
     "analyse a trace: eligibility, transfer-feeding allocation sites, profile, report, plots",
     Operands::Files, "TRACE", 0, 1,
     "Decides whether the traced program is worth optimizing and which of its allocation sites "
     "feed "
     "host<->device transfers, stores that as the program's profile in the DB (used by `hetopt "
     "run`) and "
     "prints why: eligibility with its numbers, the candidate sites at their source lines, where "
     "the time "
     "went. `hetopt trace` runs this at its end. With --profile PROGRAM it prints a stored profile "
     "instead, "
     "and takes no TRACE.",
     kAnalyzeOptions,
     "0 on success; 1 when --profile finds no current profile; 2 when the trace cannot be read or "
     "the profile "
     "cannot be stored, and on hetopt's own errors."},
    {"report",
     "before and after: the traced run against the last optimized runs, predicted and measured",
     Operands::Program, "[--] program [args...]", 1, 0,
     "Before and after for a program that `hetopt trace` profiled and `hetopt run` optimized: the "
     "traced run, then the newest untouched runs (control runs of the closed loop, `hetopt run "
     "--untouched`: no shim) and optimized runs, oldest first, the header counting the runs "
     "recorded and saying which are shown. Per run: the wall time measured; kernel and "
     "communication as traced, an optimized run's communication less what its pinned transfers are "
     "predicted to save (marked ~: a prediction); cpu+sync the rest; the transfers each optimized "
     "run made from pinned memory, went ahead pageable or from other memory, its plan, and its "
     "pair "
     "(the control run and the optimized run next to it in the run ledger, with what the optimized "
     "one saved; * marks the pairs the measured saving is over). Then the closed loop's verdict on "
     "each plan it ran (state, pairs, the median of the pairs' speedups and its bounds) and the "
     "runs `hetopt run` declined, with why; then the saving `hetopt run` predicted against the one "
     "measured, which is the verdict's own estimate: the paired median of the newest run's plan "
     "over the pairs its verdict is over, applied to the median of their control runs (never of "
     "another sign than the verdict's median; --last does not change it). Without pairs nothing "
     "is measured, and the report says so; the optimized runs are then set against the traced run "
     "less its recording cost, which tracing slowed: an upper bound when it is a saving, said to "
     "be one; a loss is a loss.\n\n"
     "Every run leaves a small run record beside its plan; this command moves them into the DB "
     "(the newest "
     "50 of each kind per program are kept). The program is identified as `hetopt run` does (its "
     "arguments "
     "only matter for an interpreter's script); nothing is run.",
     kReportOptions,
     "0 on success; 1 when the program has no current profile (or there is no DB); 2 on hetopt's "
     "own errors."},
};

}  // namespace

std::span<const CommandSpec> commandSpecs() { return kSpecs; }

const CommandSpec& commandSpec(const char* name) {
  for (const CommandSpec& s : kSpecs)
    if (!strcmp(s.name, name)) return s;
  fprintf(stderr, "hetopt: internal error: no option table for `hetopt %s`\n", name);
  abort();
}

}  // namespace hetopt::cli
