// SPDX-License-Identifier: MIT
/**
 * @file `hetopt trace`: runs a program under the shim in trace mode and summarizes the trace it
 * left (read back through the trace reader, like every other consumer).
 */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/command_line.h"
#include "cli/commands.h"
#ifdef HETOPT_HAVE_ANALYZER
#include "analyzer/analyze_file.h"
#include "analyzer/profile_store.h"
#include "analyzer/warmup.h"
#include "store/db.h"
#endif
#include "cli/launch.h"
#include "cli/trace_phases.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/phase_times.h"
#include "common/private_file.h"
#include "common/program_identity.h"
#include "contracts/trace_marks.h"
#include "trace/dump.h"
#include "trace/format.h"
#include "trace/reader.h"

namespace hetopt::cli {
namespace {

/// Traces of children: FILE.<pid> beside FILE (the shim names them so).
std::vector<std::string> childTraces(const std::string& file) {
  std::vector<std::string> out;
  const std::string dir = dirName(file), base = baseName(file) + ".";
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() <= base.size() || name.compare(0, base.size(), base) != 0) continue;
    if (name.find_first_not_of("0123456789", base.size()) != std::string::npos) continue;
    out.push_back(dir + "/" + name);
  }
  closedir(d);
  // By pid: the order the processes started in, mostly.
  std::sort(out.begin(), out.end(), [&](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  return out;
}

/// Summary lines of a trace on stderr, each prefixed "hetopt:   ".
void printSummary(const trace::Trace& t) {
  std::string text;
  char* buf = nullptr;
  size_t len = 0;
  if (FILE* mem = open_memstream(&buf, &len)) {
    trace::dumpSummary(t, mem);
    fclose(mem);
    text.assign(buf, len);
    free(buf);
  }
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    fprintf(stderr, "hetopt:   %s\n", text.substr(start, end - start).c_str());
    start = end + 1;
  }
}

/// One process's trace of the run: the main one or a child's.
struct ProcessTrace {
  std::string file;
  trace::Trace t;
  bool readable = false;
  uint64_t calls = 0;    ///< OpenCL calls it recorded
  std::string runs;      ///< the program and what it ran, for people
  std::string identity;  ///< its program within the run: executable path and script
  ScriptRef script;      ///< what it ran, when it is an interpreter
};

ProcessTrace readProcessTrace(const std::string& file) {
  ProcessTrace p;
  p.file = file;
  std::string error;
  p.readable = trace::readTraceFile(file, &p.t, &error, {.salvage = true});
  if (!p.readable) return p;
  p.calls = trace::summarize(p.t).calls;
  ProgramIdentity id;
  id.path = p.t.header.program;
  const trace::FileHeader& h = p.t.header;
  if (h.scriptKind > 0 && h.scriptKind <= static_cast<uint8_t>(ScriptRef::Kind::Code))
    id.script = {static_cast<ScriptRef::Kind>(h.scriptKind), h.scriptName, h.scriptHash};
  p.script = id.script;
  p.runs = id.describe();
  // The executable's path stands for it: a trace maps only the modules it needed (a forked child
  // that made no OpenCL call may not name the executable's build id), and one run sees one file.
  id.contentHash = h.program;
  p.identity = id.key();
  return p;
}

#ifdef HETOPT_HAVE_ANALYZER
/// How many processes of the run forked from a process of the same program and made OpenCL calls
/// themselves, per program identity. Counted across every process of the run, not only among the
/// children of the process whose trace a profile is taken from: when the parent makes no OpenCL
/// call and forks workers that do, the profile is a worker's, and the forks are its parent's. A
/// copy that makes no OpenCL call is left out: it never touches the driver it inherits (and a
/// fork() waits while hetopt's thread is inside it), so it needs no late driver.
std::map<std::string, uint64_t> forkedCopiesCallingOpenCL(
    const std::vector<ProcessTrace>& processes) {
  std::map<uint64_t, const ProcessTrace*> byPid;
  for (const ProcessTrace& p : processes)
    if (p.readable) byPid.emplace(p.t.header.pid, &p);
  std::map<std::string, uint64_t> copies;
  for (const ProcessTrace& c : processes) {
    if (!c.readable || c.calls == 0) continue;
    auto parent = byPid.find(c.t.header.parentPid);
    if (parent != byPid.end() && parent->second != &c && parent->second->identity == c.identity)
      ++copies[c.identity];
  }
  return copies;
}

/// Analyses every process of the run that made OpenCL calls, each profile under its own identity
/// (once per identity: forked workers of one program share it); the main trace alone when none
/// did. When the traced command is not itself the one program that made them (a wrapper script,
/// a launcher), or the profile is named, the DB links the command to their profiles.
void analyzeProcesses(const std::vector<std::string>& program,
                      const std::vector<ProcessTrace>& processes, const std::string& dbPath,
                      const std::string& profileName, const std::string& runFailed,
                      const analyzer::OpenedDb* opened) {
  std::vector<const ProcessTrace*> chosen;
  std::map<std::string, uint64_t> pidOf;
  for (const ProcessTrace& p : processes) {
    if (!p.readable || p.calls == 0) continue;
    auto [first, fresh] = pidOf.emplace(p.identity, p.t.header.pid);
    if (fresh) {
      chosen.push_back(&p);
      continue;
    }
    fprintf(stderr,
            "hetopt: pid %llu runs the same program as pid %llu: one profile for both, from pid "
            "%llu (`hetopt analyze %s` analyses it alone)\n",
            static_cast<unsigned long long>(p.t.header.pid),
            static_cast<unsigned long long>(first->second),
            static_cast<unsigned long long>(first->second), p.file.c_str());
  }
  const bool anyCalls = !chosen.empty();
  std::map<std::string, uint64_t> forkedCopies = forkedCopiesCallingOpenCL(processes);
  if (!anyCalls) chosen.push_back(&processes.front());  // its own report says why not eligible
  analyzer::LauncherRecord record;
  for (size_t i = 0; i < chosen.size(); ++i) {
    const ProcessTrace& p = *chosen[i];
    if (&p != &processes.front() || chosen.size() > 1)
      fprintf(stderr,
              "hetopt: process %llu (%s) made %llu OpenCL calls; its analysis (trace %s):\n",
              static_cast<unsigned long long>(p.t.header.pid), p.runs.c_str(),
              static_cast<unsigned long long>(p.calls), p.file.c_str());
    analyzer::AnalyzeRequest request;
    request.tracePath = p.file;
    request.dbPath = dbPath;
    request.opened = opened;
    request.salvage = !p.t.complete;
    request.forkedChildren = forkedCopies[p.identity];
    request.runFailed = runFailed;
    if (!profileName.empty())
      request.profileName = i == 0 ? profileName : profileName + "." + std::to_string(i + 1);
    analyzer::AnalyzeResult result;
    fflush(stderr);
    analyzer::runAnalysis(request, stderr, &result);
    const ProgramIdentity& id = result.profile.program;
    record.createdUtc = result.profile.createdUtc;
    if (result.stored)
      record.launched.push_back({p.t.header.pid, id.profilePath(), id.key(), id.describe()});
  }
  if (record.launched.empty() || (!anyCalls && profileName.empty())) return;
  ProgramIdentity launcher, wrapper;
  std::string error;
  if (!identifyCommand(program, &launcher, &wrapper, &error)) {
    warn("trace: cannot identify %s (%s): `hetopt run` of it will not find these profiles",
         program[0].c_str(), error.c_str());
    return;
  }
  launcher.profileName = profileName;
  const analyzer::LaunchedProgram& only = record.launched.front();
  if (profileName.empty() && record.launched.size() == 1 && only.key == launcher.key() &&
      only.profilePath == launcher.profilePath())
    return;  // the command itself made the calls: its profile is found directly
  record.launcherPath = launcher.profilePath();
  record.launcherKey = launcher.key();
  std::unique_ptr<Db> db =
      Db::open(dbPath.empty() ? defaultDbPath() : dbPath, Db::Mode::ReadWriteCreate, &error);
  if (!db || !analyzer::storeLauncher(*db, record, &error)) {
    warn("trace: launcher record not stored: %s", error.c_str());
    return;
  }
  fprintf(stderr, "hetopt: `hetopt run%s%s -- %s` will optimize ",
          profileName.empty() ? "" : " --profile ", profileName.c_str(), program[0].c_str());
  for (size_t i = 0; i < record.launched.size(); ++i)
    fprintf(stderr, "%s%s (pid %llu when traced)", i ? ", " : "",
            record.launched[i].description.c_str(),
            static_cast<unsigned long long>(record.launched[i].pid));
  fprintf(stderr, " where its profile says so\n");
}
#endif

/// When the command passes its arguments on to an interpreter one of its processes ran (a pyenv
/// shim, `exec python3 "$@"`), marks it so that run and report identify it as that interpreter
/// running them, and returns the line saying so; else removes an earlier mark of it.
std::string noteForwarding(const std::vector<std::string>& program,
                           const std::vector<ProcessTrace>& processes) {
  ProgramIdentity wrapper, resolved, via;
  std::string error;
  if (!commandIdentity(program, &wrapper, &error, identityCacheDir())) return {};
  removeForwarding(wrapper);
  for (const ProcessTrace& p : processes) {
    const trace::FileHeader& h = p.t.header;
    Forwarding f;
    if (!p.readable || p.script.kind == ScriptRef::Kind::None || h.program == wrapper.path ||
        !forwardsArguments(program, h.program, splitCommandLine(h.arguments), &f))
      continue;
    if (!writeForwarding(wrapper, f, &error)) {
      warn("trace: %s is not marked as passing its arguments on to %s: %s", program[0].c_str(),
           h.program.c_str(), error.c_str());
      return {};
    }
    // What `hetopt run` will take the command for must be what this process was.
    if (identifyCommand(program, &resolved, &via, &error) && !via.path.empty() &&
        resolved.path == h.program && resolved.script == p.script)
      return "hetopt: " + program[0] + " passes its arguments on to " + h.program +
             ": `hetopt run` and `hetopt report` of `" + program[0] +
             " ...` use the profile of what they name (here " + resolved.describe() + ")";
    removeForwarding(wrapper);
  }
  return {};
}

/// How the traced run failed, from its wait status: "exited with status 2", "was killed by
/// signal 9 (Killed)"; empty when it exited 0.
std::string failedRunWords(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status) ? "exited with status " + std::to_string(WEXITSTATUS(status)) : "";
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  return "ended with wait status " + std::to_string(status);
}

/// A process that made no OpenCL call and whose trace is whole (a wrapper's helpers): counted in
/// one line, not listed, and its trace not kept.
bool madeNoCalls(const ProcessTrace& p) {
  return p.readable && p.calls == 0 && (p.t.complete || p.t.endedByExec);
}

/// The main trace's state for its summary line. The wait status says how the program ended: one
/// that exited (whatever its status) is not said to have ended abnormally. A process that exec'd
/// went on under its pid as another program, in a trace of its own.
std::string endWords(const trace::Trace& t, const std::vector<ProcessTrace>& processes,
                     int status) {
  if (t.endedByExec) {
    const std::string pid = std::to_string(t.header.pid);
    for (size_t i = 1; i < processes.size(); ++i)
      if (processes[i].readable && processes[i].t.header.pid == t.header.pid)
        return "ended by exec: pid " + pid + " went on as " + processes[i].runs +
               (madeNoCalls(processes[i]) ? "" : ", trace " + processes[i].file);
    return "ended by exec of " + t.execProgram + " (pid " + pid + ")";
  }
  if (t.complete) return "complete";
  if (WIFSIGNALED(status)) return "incomplete: the program " + failedRunWords(status);
  return "incomplete: the program exited, but the trace could not be written to its end";
}

/// Whether `path` holds something other than a hetopt trace (an empty file holds nothing).
bool holdsOtherData(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  char magic[sizeof trace::kFileMagic];
  ssize_t n = read(fd, magic, sizeof magic);
  close(fd);
  return n > 0 && (n != static_cast<ssize_t>(sizeof magic) ||
                   memcmp(magic, trace::kFileMagic, sizeof magic) != 0);
}

}  // namespace

int cmdTrace(int argc, char** argv) {
  const CommandSpec& spec = commandSpec("trace");
  ParsedArgs args;
  if (int rc = parseOrExit(spec, argc, argv, &args); rc >= 0) return rc;
  const std::vector<std::string>& program = args.operands;
  const std::string device = args.value("device"), dbPath = args.value("db"),
                    profileName = args.value("profile");
  const bool analyze = !args.flag("no-analyze"), force = args.flag("force");
  std::string error;
  const std::string output = args.value(
      "output", "./hetopt-" + baseName(program[0]) + "-" + std::to_string(getpid()) + ".trace");
  if (output.find("%p") != std::string::npos)
    return usageError(spec, "-o FILE may not contain %p (children's traces are named FILE.<pid>)");
  // A stale trace from an earlier run must not be summarized as this one's; anything else at the
  // path (a mistyped -o naming a source file) is not hetopt's to delete.
  struct stat st;
  if (lstat(output.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    if (!force && holdsOtherData(output)) {
      warn(
          "trace: %s exists and is not a hetopt trace; not overwriting it (--force does); nothing "
          "was run",
          output.c_str());
      return 2;
    }
    unlink(output.c_str());
  }
  unlink((output + ".programs").c_str());  // the programs an earlier run of it built
  for (const std::string& old : childTraces(output)) {
    if (force || !holdsOtherData(old)) unlink(old.c_str());
    unlink((old + ".programs").c_str());
  }

  // A trace path that cannot be created: one line, exit 2, and the program is not run (a long run
  // without its trace is wasted). The probe has the shim writer's rules (openPrivateFile: no
  // symbolic link, no file of another user's).
  const char* why = nullptr;
  int probe = openPrivateFile(output.c_str(), false, false, &why);
  if (probe >= 0 && (fstat(probe, &st) != 0 || !S_ISREG(st.st_mode))) {
    close(probe);
    probe = -1;
    why = "not a regular file";
  }
  if (probe < 0) {
    warn("trace: cannot create %s: %s; nothing was run", output.c_str(), why);
    return 2;
  }
  close(probe);
  unlink(output.c_str());

  warnUnmatchedDevice("trace", device);
  Launch launch;
  launch.argv = program;
  launch.env.push_back({"HETOPT_MODE", "trace"});
  launch.env.push_back({"HETOPT_TRACE_FILE", output});
  if (!device.empty()) launch.env.push_back({"HETOPT_DEVICE", device});
  TracePhases timing;
#ifdef HETOPT_HAVE_ANALYZER
  std::unique_ptr<analyzer::AnalysisWarmup> warmup;
#endif
  launch.started = [&] {
    timing.programStarted();
#ifdef HETOPT_HAVE_ANALYZER
    if (analyze)
      warmup =
          std::make_unique<analyzer::AnalysisWarmup>(dbPath.empty() ? defaultDbPath() : dbPath);
#endif
  };
  TimedRun run;
  const bool ran = runTimed(launch, &run, &error);
  timing.programEnded();
  if (!ran) {
    warn("trace: %s", error.c_str());
    return 2;
  }
  // It could not be executed: it said why, and there is no trace to read.
  if (run.notStarted) return run.notStarted;
  const int status = run.status;
  trace::Trace t;
  phases::Scope reading("read traces and summary");
  const bool readable = trace::readTraceFile(output, &t, &error);
  if (!readable) warn("trace: no usable trace: %s", error.c_str());
  // Every process of the run: the main one, then its children by pid.
  std::vector<ProcessTrace> processes;
  processes.push_back(readProcessTrace(output));
  for (const std::string& child : childTraces(output)) processes.push_back(readProcessTrace(child));
  // Whether the run made no OpenCL call for certain: every trace complete (or ended at exec: it
  // holds all its process did) and without one (a trace cut short may have lost them).
  bool anyCalls = false, allComplete = true;
  for (const ProcessTrace& p : processes) {
    anyCalls |= p.readable && p.calls > 0;
    allComplete &= p.readable && (p.t.complete || p.t.endedByExec);
  }
  if (readable) {
    fprintf(stderr, "hetopt: trace %s (%llu bytes, %s)\n", output.c_str(),
            static_cast<unsigned long long>(t.fileBytes), endWords(t, processes, status).c_str());
    if (processes.front().calls > 0) printSummary(t);  // a wrapper's would be all zeros
  }
  size_t quiet = 0;
  for (size_t i = 1; i < processes.size(); ++i) {
    const ProcessTrace& c = processes[i];
    if (madeNoCalls(c)) {
      ++quiet;
      if (analyze) unlink(c.file.c_str());  // --no-analyze asked for the traces themselves
      continue;
    }
    if (!c.readable) {
      fprintf(stderr, "hetopt: child trace %s (unreadable)\n", c.file.c_str());
      continue;
    }
    fprintf(stderr, "hetopt: child trace %s: pid %llu, %s, %llu OpenCL calls\n", c.file.c_str(),
            static_cast<unsigned long long>(c.t.header.pid), c.runs.c_str(),
            static_cast<unsigned long long>(c.calls));
  }
  if (quiet)
    fprintf(stderr, "hetopt: %zu process%s it started made no OpenCL calls%s\n", quiet,
            quiet == 1 ? "" : "es", analyze ? " (their traces are not kept)" : "");
  const std::string forwarding = analyze ? noteForwarding(program, processes) : std::string();
  if (allComplete && !anyCalls) {
    // Nothing to analyse: no profile (an all-zero one would stand for the program in the DB).
    fprintf(stderr, "hetopt: %s%s made no OpenCL calls: nothing to optimize, no profile stored\n",
            program[0].c_str(), processes.size() > 1 ? " and the processes it started" : "");
    // So that `hetopt run` and `hetopt report` say it was traced, rather than ask for a trace.
    ProgramIdentity traced, wrapper;
    if (analyze && (!identifyCommand(program, &traced, &wrapper, &error) ||
                    !writeNoOpenClMark(traced, &error)))
      warn("trace: run and report will not know that it was traced: %s", error.c_str());
    if (!forwarding.empty()) fprintf(stderr, "%s\n", forwarding.c_str());
    reading.end();
#ifdef HETOPT_HAVE_ANALYZER
    warmup.reset();
#endif
    timing.print();
    fflush(stderr);
    exitLikeChild(status);
  }
  reading.end();
#ifdef HETOPT_HAVE_ANALYZER
  if (analyze && t.fileBytes > 0) {
    phases::Scope timed("analysis");  // the parts above and the report
    analyzeProcesses(program, processes, dbPath, profileName, failedRunWords(status),
                     warmup ? warmup->opened() : nullptr);
  }
  if (!forwarding.empty()) fprintf(stderr, "%s\n", forwarding.c_str());
  warmup.reset();
#endif
  timing.print();
  fflush(stderr);
  exitLikeChild(status);
}

}  // namespace hetopt::cli
