// SPDX-License-Identifier: MIT
/**
 * @file Which script an interpreter process runs, and the identity of a command line (a `#!`
 * script run through its interpreter); see program_identity.h. The CLI (from the command it is
 * given), the shim (from its own /proc/self/cmdline) and the analyzer (from the trace header) must
 * all reach the same key for the same process, so the rule lives here once.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string_view>

#include "common/paths.h"
#include "common/program_identity.h"

namespace hetopt {
namespace {

/// A known interpreter: how its options are read up to the program it runs. Options not listed
/// take no value; long options (`--x`, `--x=y`) take none unless listed.
struct Interpreter {
  const char* name;         ///< executable name without version ("python3.11" -> "python")
  const char* valueFlags;   ///< short options whose value follows (attached or next argument)
  const char* codeFlags;    ///< short options naming the code to run
  const char* moduleFlags;  ///< short options naming a module to run
  bool codeIsOperand;       ///< shells: `-c` makes the first operand the code
  const char* valueLongs;   ///< long options taking the next argument, ' '-separated
  const char* codeLongs;    ///< long options whose value is the code
};

constexpr Interpreter kInterpreters[] = {
    {"python", "WXQ", "c", "m", false, "", ""},
    {"pypy", "WXQ", "c", "m", false, "", ""},
    {"perl", "", "eE", "", false, "", ""},
    {"ruby", "CEIr", "e", "", false, "", ""},
    {"node", "r", "ep", "", false, "--require --import --loader", "--eval --print"},
    {"nodejs", "r", "ep", "", false, "--require --import --loader", "--eval --print"},
    {"sh", "oO", "c", "", true, "", ""},
    {"bash", "oO", "c", "", true, "--rcfile --init-file", ""},
    {"dash", "oO", "c", "", true, "", ""},
    {"zsh", "oO", "c", "", true, "", ""},
    {"ksh", "oO", "c", "", true, "", ""},
    {"mksh", "oO", "c", "", true, "", ""},
    {"ash", "oO", "c", "", true, "", ""},
    {"lua", "l", "e", "", false, "", ""},
    {"luajit", "lj", "e", "", false, "", ""},
    {"Rscript", "", "e", "", false, "", ""},
    {"julia", "JLtp", "e", "", false, "--project --threads", "--eval"},
    {"php", "cdz", "r", "", false, "", ""},
    {"tclsh", "", "", "", false, "", ""},
};

/// "python3.11" -> "python", "pypy3" -> "pypy", "perl5.36.0" -> "perl".
std::string_view withoutVersion(std::string_view name) {
  while (!name.empty() && (isdigit(static_cast<unsigned char>(name.back())) || name.back() == '.' ||
                           name.back() == '-'))
    name.remove_suffix(1);
  return name;
}

const Interpreter* knownInterpreter(const std::string& exePath) {
  std::string_view base = exePath;
  if (size_t slash = base.rfind('/'); slash != std::string_view::npos)
    base.remove_prefix(slash + 1);
  base = withoutVersion(base);
  for (const Interpreter& i : kInterpreters)
    if (base == i.name) return &i;
  return nullptr;
}

bool inWordList(const char* list, std::string_view word) {
  std::string_view l = list;
  while (!l.empty()) {
    size_t end = l.find(' ');
    if (l.substr(0, end) == word) return true;
    if (end == std::string_view::npos) break;
    l.remove_prefix(end + 1);
  }
  return false;
}

std::string sha256Of(std::string_view s) {
  Sha256 sha;
  sha.update(s.data(), s.size());
  return sha.hexDigest();
}

/// The first bytes of a regular file (empty when it is none or cannot be read).
std::string fileStart(const std::string& path, size_t n) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return {};
  struct stat st;
  std::string out;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    out.resize(n);
    ssize_t got = ::pread(fd, out.data(), n, 0);
    out.resize(got > 0 ? static_cast<size_t>(got) : 0);
  }
  ::close(fd);
  return out;
}

/// A module name as a key word: module names are dotted identifiers; anything else is replaced.
std::string moduleWord(std::string_view name) {
  std::string out(name);
  for (char& c : out)
    if (!isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') c = '_';
  return out;
}

enum class Found { Nothing, Operand, Code, Module };

/// Reads `argv` (from argv[1]) up to what the process runs: the first operand (its index in
/// *operand), or the value of a code or module option (*value).
Found readOptions(const Interpreter* interp, const std::vector<std::string>& argv, size_t* operand,
                  std::string* value) {
  bool codeMode = false;
  size_t i = 1;
  for (; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    const bool shellPlus = interp && interp->codeIsOperand && a.size() > 1 && a[0] == '+';
    if (a.size() < 2 || (a[0] != '-' && !shellPlus)) break;  // an operand ("-" alone: stdin)
    if (a[1] == '-') {
      if (!interp) continue;
      const size_t eq = a.find('=');
      std::string_view name = std::string_view(a).substr(0, eq);
      if (inWordList(interp->codeLongs, name)) {
        if (eq != std::string::npos) return *value = a.substr(eq + 1), Found::Code;
        if (i + 1 >= argv.size()) return Found::Nothing;
        return *value = argv[i + 1], Found::Code;
      }
      if (eq == std::string::npos && inWordList(interp->valueLongs, name)) ++i;
      continue;
    }
    for (size_t j = 1; j < a.size(); ++j) {
      const char c = a[j];
      if (!interp) break;
      const std::string rest = a.substr(j + 1);
      if (strchr(interp->codeFlags, c) && interp->codeIsOperand) {
        codeMode = true;
        continue;
      }
      const bool code = strchr(interp->codeFlags, c) != nullptr;
      if (code || strchr(interp->moduleFlags, c)) {
        if (rest.empty() && i + 1 >= argv.size()) return Found::Nothing;
        *value = rest.empty() ? argv[i + 1] : rest;
        return code ? Found::Code : Found::Module;
      }
      if (strchr(interp->valueFlags, c)) {
        if (rest.empty()) ++i;  // the value is the next argument
        break;                  // else the rest of this one
      }
    }
  }
  if (i >= argv.size() || argv[i] == "-") return Found::Nothing;
  if (codeMode) return *value = argv[i], Found::Code;
  *operand = i;
  return Found::Operand;
}

}  // namespace

std::vector<std::string> splitCommandLine(const std::string& nulSeparated) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < nulSeparated.size()) {
    size_t end = nulSeparated.find('\0', start);
    if (end == std::string::npos) end = nulSeparated.size();
    out.push_back(nulSeparated.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool scriptOfProcess(const std::string& exePath, const std::vector<std::string>& argv,
                     ScriptRef* out, std::string* error, const std::string& hashCacheDir) {
  *out = ScriptRef{};
  const Interpreter* interp = knownInterpreter(exePath);
  size_t operand = 0;
  std::string value;
  switch (readOptions(interp, argv, &operand, &value)) {
    case Found::Nothing:
      return true;
    case Found::Code:
      if (!interp) return true;
      out->kind = ScriptRef::Kind::Code;
      out->hash = sha256Of(value);
      return true;
    case Found::Module:
      out->kind = ScriptRef::Kind::Module;
      out->name = moduleWord(value);
      return true;
    case Found::Operand:
      break;
  }
  // The exe is not the script: the operand names a file this executable interprets. A known
  // interpreter's operand is its program unless it is ELF (`sh ./a.out` is no script); any other
  // executable counts only for a file starting with "#!" (the kernel ran it through this one).
  const std::string head = fileStart(argv[operand], 4);
  const bool elf = head.size() == 4 && memcmp(head.data(), "\177ELF", 4) == 0;
  const bool shebang = head.size() >= 2 && head[0] == '#' && head[1] == '!';
  if (head.empty() || elf || (!interp && !shebang)) return true;
  if (!fileContentHash(argv[operand], &out->name, &out->hash, error, hashCacheDir)) {
    *out = ScriptRef{};
    return false;
  }
  out->kind = ScriptRef::Kind::File;
  return true;
}

bool commandIdentity(const std::vector<std::string>& argv, ProgramIdentity* out, std::string* error,
                     const std::string& hashCacheDir) {
  if (argv.empty()) {
    *error = "no program given";
    return false;
  }
  const std::string file = argv[0].find('/') != std::string::npos ? argv[0] : findOnPath(argv[0]);
  if (file.empty()) {
    *error = argv[0] + ": not found on PATH";
    return false;
  }
  std::string exe = file;
  std::vector<std::string> processArgv = argv;
  // What the kernel does with "#!interpreter [argument]": runs the interpreter with the argument
  // (one word, blanks and all) and the script's path before the script's own arguments.
  std::string head = fileStart(file, 256);
  if (head.size() > 2 && head[0] == '#' && head[1] == '!') {
    head = head.substr(
        2, head.find('\n') == std::string::npos ? std::string::npos : head.find('\n') - 2);
    const size_t b = head.find_first_not_of(" \t");
    const size_t e = b == std::string::npos ? b : head.find_first_of(" \t", b);
    exe = b == std::string::npos ? std::string() : head.substr(b, e - b);
    std::string arg = e == std::string::npos ? std::string() : head.substr(e);
    arg.erase(0, arg.find_first_not_of(" \t"));
    arg.erase(arg.find_last_not_of(" \t\r") + 1);
    processArgv = {exe};
    if (baseName(exe) == "env") {
      // `#!/usr/bin/env NAME`: env finds NAME on PATH and runs it with what follows.
      processArgv.clear();
      size_t p = 0;
      while (p < arg.size()) {
        size_t q = arg.find_first_of(" \t", p);
        std::string w = arg.substr(p, q == std::string::npos ? std::string::npos : q - p);
        if (!w.empty() &&
            (!processArgv.empty() || (w[0] != '-' && w.find('=') == std::string::npos)))
          processArgv.push_back(w);
        p = q == std::string::npos ? arg.size() : q + 1;
      }
      exe = processArgv.empty() ? std::string() : findOnPath(processArgv[0]);
    } else if (!arg.empty()) {
      processArgv.push_back(arg);
    }
    if (exe.empty()) {
      *error = file + ": cannot tell which interpreter its #! line names";
      return false;
    }
    processArgv.push_back(file);
    processArgv.insert(processArgv.end(), argv.begin() + 1, argv.end());
  }
  return programIdentity(exe, out, error, hashCacheDir) &&
         scriptOfProcess(out->path, processArgv, &out->script, error, hashCacheDir);
}

}  // namespace hetopt
