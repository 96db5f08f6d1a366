// SPDX-License-Identifier: MIT
/** @file The marks `hetopt trace` leaves beside the plans; see trace_marks.h.
 * Small line files ("hetopt-forwards 1", "hetopt-no-opencl 1"), read with the plan's rules. */
#include "contracts/trace_marks.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "common/paths.h"
#include "contracts/run_record.h"

namespace hetopt {
namespace {

constexpr const char* kForwardsMagic = "hetopt-forwards 1";
constexpr const char* kNoOpenClMagic = "hetopt-no-opencl 1";

/// What the plans of `key` are named by, without ".plan": marks share the runs' prefix.
std::string markPrefix(const std::string& key) {
  return runRecordPrefix(cacheDirectory() + "/plans/" + planFileName(key));
}

bool writeMark(const std::string& path, const std::string& text, std::string* error) {
  return makePrivateDirs(dirName(path), error) && writePrivateFile(path, text, error);
}

/// The wrapper's mark, when it has a whole one.
bool readForwarding(const ProgramIdentity& wrapper, Forwarding* out) {
  const std::string path = forwardingMarkPath(wrapper);
  std::string text, error;
  if (access(path.c_str(), F_OK) != 0 || !readOwnFile(path, 1 << 16, "a mark", &text, &error))
    return false;
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kForwardsMagic) return false;
  while (std::getline(in, line)) {
    if (line == "end") return !out->interpreter.empty();
    if (line.rfind("interpreter ", 0) == 0)
      out->interpreter = line.substr(12);
    else if (line.rfind("consumed ", 0) == 0)
      out->consumed.push_back(line.substr(9));
    else
      return false;
  }
  return false;
}

}  // namespace

bool forwardsArguments(const std::vector<std::string>& command, const std::string& exe,
                       const std::vector<std::string>& processArgv, Forwarding* out) {
  if (command.empty() || processArgv.empty()) return false;
  const size_t passed = processArgv.size() - 1;
  if (passed >= command.size()) return false;  // argv[0] is never passed on as an argument
  const size_t firstPassed = command.size() - passed;
  if (!std::equal(processArgv.begin() + 1, processArgv.end(), command.begin() + firstPassed))
    return false;
  out->interpreter = exe;
  out->consumed.assign(command.begin() + 1, command.begin() + firstPassed);
  return true;
}

std::string forwardingMarkPath(const ProgramIdentity& wrapper) {
  // Wrappers of one content at several paths (pyenv's shims: python3, pip, ...) are told apart.
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : wrapper.profilePath()) h = (h ^ c) * 16777619u;
  char tag[16];
  snprintf(tag, sizeof tag, "%08x", h);
  return markPrefix(wrapper.key()) + tag + ".forwards";
}

bool writeForwarding(const ProgramIdentity& wrapper, const Forwarding& f, std::string* error) {
  std::string text = std::string(kForwardsMagic) + "\ninterpreter " + f.interpreter + "\n";
  bool oneLineEach = f.interpreter.find('\n') == std::string::npos;
  for (const std::string& word : f.consumed) {
    text += "consumed " + word + "\n";
    oneLineEach &= word.find('\n') == std::string::npos;
  }
  if (!oneLineEach) return *error = "an argument holds a line break", false;
  return writeMark(forwardingMarkPath(wrapper), text + "end\n", error);
}

void removeForwarding(const ProgramIdentity& wrapper) {
  unlink(forwardingMarkPath(wrapper).c_str());
}

bool identifyCommand(const std::vector<std::string>& argv, ProgramIdentity* out,
                     ProgramIdentity* wrapper, std::string* error) {
  *wrapper = ProgramIdentity{};
  if (!commandIdentity(argv, out, error, identityCacheDir())) return false;
  Forwarding f;
  if (!readForwarding(*out, &f) || f.consumed.size() >= argv.size() ||
      !std::equal(f.consumed.begin(), f.consumed.end(), argv.begin() + 1))
    return true;
  // The interpreter's own command line, as its shim reads it from /proc/self/cmdline.
  std::vector<std::string> processArgv{f.interpreter};
  processArgv.insert(processArgv.end(), argv.begin() + 1 + f.consumed.size(), argv.end());
  ProgramIdentity resolved;
  std::string unusable;  // an interpreter gone since: the command is taken as it is
  if (!programIdentity(f.interpreter, &resolved, &unusable, identityCacheDir()) ||
      !scriptOfProcess(resolved.path, processArgv, &resolved.script, &unusable, identityCacheDir()))
    return true;
  *wrapper = std::move(*out);
  *out = std::move(resolved);
  return true;
}

std::string noOpenClMarkPath(const ProgramIdentity& identity) {
  return markPrefix(identity.key()) + "no-opencl";
}

bool writeNoOpenClMark(const ProgramIdentity& identity, std::string* error) {
  const time_t now = time(nullptr);
  struct tm tm {};
  gmtime_r(&now, &tm);
  char utc[32];
  strftime(utc, sizeof utc, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return writeMark(noOpenClMarkPath(identity),
                   std::string(kNoOpenClMagic) + "\ntraced " + utc + "\nend\n", error);
}

std::string readNoOpenClMark(const ProgramIdentity& identity) {
  const std::string path = noOpenClMarkPath(identity);
  std::string text, error;
  if (access(path.c_str(), F_OK) != 0 || !readOwnFile(path, 4096, "a mark", &text, &error))
    return {};
  const std::string head = std::string(kNoOpenClMagic) + "\ntraced ";
  const size_t end = text.find('\n', head.size());
  if (text.rfind(head, 0) != 0 || end == std::string::npos) return {};
  return text.substr(head.size(), end - head.size());
}

}  // namespace hetopt
