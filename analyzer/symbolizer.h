// SPDX-License-Identifier: MIT
/**
 * @file Allocation sites from raw return addresses to source lines (the shim records raw PCs and a
 * module map, so that it never links a symbolizer; only the analyzer symbolizes). The reading of
 * debug info is LLVM's, in a library of its own (symbolizer_backend.h) that is loaded on first
 * use: programs that link the analyzer but never symbolize (`hetopt run`) never load libLLVM.
 * When it cannot be loaded there is one warning and sites are module+offset.
 */
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hetopt::analyzer {

struct SourceFrame {
  std::string function;  ///< demangled; empty when unknown
  std::string file;      ///< absolute when the debug info says so; empty when unknown
  uint32_t line = 0;
  uint32_t column = 0;
};

/// One return address: the module it lies in (as the trace's module map recorded it) and its
/// offset in that file's address space (pc - load bias).
struct ModulePc {
  std::string modulePath;
  std::string buildId;  ///< hex; empty when the trace recorded none (nothing to verify)
  uint64_t offset = 0;
  bool returnAddress = true;  ///< look up offset-1, inside the call instruction
};

struct SiteLocation {
  bool hasSource = false;  ///< `source` is a frame in the program's own source
  SourceFrame source;
  std::string modulePath;  ///< module of the return address that gave the location
  uint64_t offset = 0;
  std::string note;  ///< why there is no source line ("no debug info", "binary changed", ...)
  /// The next frames out that are in the program's own source (a helper that allocates is named
  /// with who called it). Not stored in the DB.
  static constexpr size_t kMaxCallers = 3;
  std::vector<SourceFrame> callers;
  /// "called from f at a.cpp:12, from main at b.cpp:40"; empty without callers.
  std::string describeCallers() const;
  /// "function at file:line" (file shortened to its base name when `shortFile`), else
  /// "module+0xoffset [function]".
  std::string describe(bool shortFile = true) const;
};

/// A global variable: its name and where it is defined.
struct DataLocation {
  bool found = false;
  std::string name;
  SourceFrame decl;              ///< file/line of the definition when the debug info has it
  uint64_t start = 0, size = 0;  ///< the variable's range (module offsets)
  std::string note;
  /// "g_weights (static_mmap.cpp:32)" or "g_weights".
  std::string describe() const;
};

class SymbolizerBackend;

class Symbolizer {
 public:
  struct Options {
    /// Files under these prefixes are library code, never "the program's own source".
    std::vector<std::string> systemPrefixes = {"/usr/include/", "/usr/lib/gcc/", "/usr/lib/llvm",
                                               "/usr/local/include/", "/usr/src/"};
    /// The LLVM backend library; empty: lib/libhetopt_symbolize.so beside the executable.
    std::string backendPath;
  };
  Symbolizer();
  explicit Symbolizer(Options options);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  /// True when this build can read debug info: built with LLVM and its backend library loads.
  static bool available();
  /// Loads the backend library (libLLVM with it) now, quietly: a failure is said at first use.
  /// Thread-safe; for a thread that would otherwise wait, such as `hetopt trace` while the
  /// program runs, so that the analysis afterwards does not pay the load.
  static void preload();

  /// The inlining chain at one address, innermost first. False with *note when the module is
  /// missing, changed since the trace, or has no symbols for that address.
  bool frames(const ModulePc& pc, std::vector<SourceFrame>* out, std::string* note);

  /// The location of a site (return addresses innermost first). A site is a few return
  /// addresses, already past libc/libstdc++/the shim. Its innermost addresses often still point
  /// into library templates inlined into the caller (std::vector's allocator, in /usr/include/c++):
  /// the location reported is the first frame, walking inlined frames inner to outer and then the
  /// outer return addresses, whose file is in the program's own source, so a `std::vector<float>
  /// v(n)` names the user's line. A module is only trusted when the file on disk has the build id
  /// the trace recorded; otherwise (or without debug info, or without LLVM in this build) a site
  /// is reported as module+offset.
  SiteLocation locate(const std::vector<ModulePc>& site);

  /// The global variable holding a static-data address (`at.returnAddress` is ignored).
  DataLocation locateData(const ModulePc& at);

  bool isSystemFile(const std::string& file) const;

 private:
  /// Empty when the module may be used, else why not (cached per path + build id).
  const std::string& moduleProblem(const ModulePc& pc);
  /// The LLVM backend, loaded on first use; null (and m_impl->problem says why) without one.
  SymbolizerBackend* backend();
  struct Impl;
  Options m_options;
  std::unique_ptr<Impl> m_impl;
  std::map<std::string, std::string> m_moduleProblems;
};

}  // namespace hetopt::analyzer
