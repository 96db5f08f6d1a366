// SPDX-License-Identifier: MIT
/**
 * @file `hetopt trace`: runs a program under the shim in trace mode and summarizes the trace it
 * left (read back through the trace reader, like every other consumer).
 */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/commands.h"
#ifdef HETOPT_HAVE_ANALYZER
#include "analyzer/analyze_file.h"
#endif
#include "cli/launch.h"
#include "cli/show.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/private_file.h"
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
  return out;
}

/// Whether `path` holds something other than a hetopt trace (an empty file holds nothing).
bool holdsOtherData(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  char magic[sizeof trace::kFileMagic];
  ssize_t n = read(fd, magic, sizeof magic);
  close(fd);
  return n > 0 && (n != static_cast<ssize_t>(sizeof magic) || memcmp(magic, trace::kFileMagic, sizeof magic) != 0);
}

}  // namespace

int cmdTrace(int argc, char** argv) {
  std::string output, device, dbPath, error;
  bool help = false, analyze = true, force = false;
  std::vector<std::string> program = splitProgram(
      argc, argv,
      [&](int i) -> int {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return help = true, 1;
        if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) && i + 1 < argc) return output = argv[i + 1], 2;
        if (!strcmp(argv[i], "--device") && i + 1 < argc) return device = argv[i + 1], 2;
        if (!strcmp(argv[i], "--force")) return force = true, 1;
        if (!strcmp(argv[i], "--db") && i + 1 < argc) return dbPath = argv[i + 1], 2;
        if (!strcmp(argv[i], "--no-analyze")) return analyze = false, 1;
        return 0;
      },
      &error);
  if (help) {
    printf(
        "usage: hetopt trace [-o FILE] [--device FILTER] [--] program [args...]\n\n"
        "Runs the program with every OpenCL call and host allocation recorded into a compressed,\n"
        "SSA-versioned trace with host and device timings (OpenCL profiling is switched on for its\n"
        "queues without the program seeing it). Children it forks or executes get their own\n"
        "traces, FILE.<pid>. The program's exit status and signals pass through; a summary goes to\n"
        "stderr at the end, followed by the analysis (`hetopt analyze`), whose profile `hetopt run`\n"
        "uses. Read the trace with `hetopt show FILE`.\n\n"
        "  -o FILE          trace file (default ./hetopt-<program>-<pid>.trace), created 0600;\n"
        "                   a FILE that cannot be created stops hetopt before the program runs\n"
        "  --force          overwrite a FILE that holds something other than a hetopt trace\n"
        "  --device FILTER  OpenCL device ('gpu', 'cpu' or a name substring); sets HETOPT_DEVICE\n"
        "  --db PATH        where the profile is stored (default $HETOPT_DB, else ~/.local/share)\n"
        "  --no-analyze     only record the trace\n");
    return 0;
  }
  if (program.empty()) {
    warn("trace: %s (see hetopt trace --help)", error.c_str());
    return 2;
  }
  if (output.empty()) output = "./hetopt-" + baseName(program[0]) + "-" + std::to_string(getpid()) + ".trace";
  if (output.find("%p") != std::string::npos) {
    warn("trace: -o FILE may not contain %%p (children's traces are named FILE.<pid>)");
    return 2;
  }
  // A stale trace from an earlier run must not be summarized as this one's; anything else at the
  // path (a mistyped -o naming a source file) is not hetopt's to delete.
  struct stat st;
  if (lstat(output.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    if (!force && holdsOtherData(output)) {
      warn("trace: %s exists and is not a hetopt trace; not overwriting it (--force does); nothing "
           "was run", output.c_str());
      return 2;
    }
    unlink(output.c_str());
  }
  for (const std::string& old : childTraces(output))
    if (force || !holdsOtherData(old)) unlink(old.c_str());

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

  Launch launch;
  launch.argv = program;
  launch.env.push_back({"HETOPT_MODE", "trace"});
  launch.env.push_back({"HETOPT_TRACE_FILE", output});
  if (!device.empty()) launch.env.push_back({"HETOPT_DEVICE", device});
  int status = runProgram(launch, &error);
  if (status < 0) {
    warn("trace: %s", error.c_str());
    return 2;
  }
  trace::Trace t;
  if (!trace::readTraceFile(output, &t, &error)) {
    warn("trace: no usable trace: %s", error.c_str());
  } else {
    fprintf(stderr, "hetopt: trace %s (%llu bytes, %s)\n", output.c_str(),
            static_cast<unsigned long long>(t.fileBytes),
            t.complete ? "complete" : "incomplete: the program did not exit normally or the trace could not be written to its end");
    std::string text;
    {
      char* buf = nullptr;
      size_t len = 0;
      FILE* mem = open_memstream(&buf, &len);
      if (mem) {
        printTraceSummary(t, mem);
        fclose(mem);
        text.assign(buf, len);
        free(buf);
      }
    }
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      fprintf(stderr, "hetopt:   %s\n", text.substr(start, end - start).c_str());
      start = end + 1;
    }
  }
  for (const std::string& child : childTraces(output)) fprintf(stderr, "hetopt: child trace %s\n", child.c_str());
#ifdef HETOPT_HAVE_ANALYZER
  if (analyze && t.fileBytes > 0) {
    // The report goes to stderr: the program's stdout stays exactly its own.
    analyzer::AnalyzeRequest request;
    request.tracePath = output;
    request.dbPath = dbPath;
    request.salvage = !t.complete;
    fflush(stderr);
    analyzer::runAnalysis(request, stderr);
  }
#endif
  fflush(stderr);
  exitLikeChild(status);
}

}  // namespace hetopt::cli
