// SPDX-License-Identifier: MIT
/** @file Site symbolization (the LLVM part is loaded on first use); see symbolizer.h.
 * Loading the LLVM backend, checking modules against the trace's build ids, locate(). */
#include "analyzer/symbolizer.h"

#include <dlfcn.h>

#include <cinttypes>
#include <cstdio>
#include <mutex>

#include "analyzer/symbolizer_backend.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/phase_times.h"
#include "common/program_identity.h"

namespace hetopt::analyzer {
namespace {

using CreateBackend = SymbolizerBackend* (*)(uint32_t);

#if HETOPT_HAVE_LLVM
constexpr const char* kBackendLibrary = "libhetopt_symbolize.so";

/// The backend library at `path` (empty: beside the executable), loaded once per process and never
/// unloaded; null with *why when it cannot be, after one warning per path (`quiet`: not yet, the
/// first caller that is not quiet says it).
CreateBackend loadBackend(const std::string& path, std::string* why, bool quiet = false) {
  struct Loaded {
    CreateBackend create = nullptr;
    std::string error;
    bool said = false;
  };
  static std::mutex mutex;
  static std::map<std::string, Loaded> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = loaded.find(path);
  if (it == loaded.end()) {
    Loaded l;
    std::string file = path.empty() ? installedLibrary(kBackendLibrary, &l.error) : path;
    if (!file.empty()) {
      if (void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        l.create =
            reinterpret_cast<CreateBackend>(dlsym(handle, "hetopt_symbolizer_backend_create"));
        if (!l.create) l.error = file + " has no hetopt_symbolizer_backend_create";
      } else {
        const char* e = dlerror();
        l.error = e ? e : file + ": cannot be loaded";
      }
    }
    it = loaded.emplace(path, std::move(l)).first;
  }
  if (!it->second.create && !quiet && !it->second.said) {
    it->second.said = true;
    warn("cannot load the symbolizer (%s): allocation sites are named by module+offset",
         it->second.error.c_str());
  }
  *why = it->second.error;
  return it->second.create;
}
#endif

}  // namespace

struct Symbolizer::Impl {
  bool tried = false;
  std::unique_ptr<SymbolizerBackend> backend;
  std::string problem;  ///< why there is no backend
};

bool Symbolizer::available() {
#if HETOPT_HAVE_LLVM
  std::string why;
  return loadBackend({}, &why) != nullptr;
#else
  return false;
#endif
}

void Symbolizer::preload() {
#if HETOPT_HAVE_LLVM
  std::string why;
  loadBackend({}, &why, true);
#endif
}

SymbolizerBackend* Symbolizer::backend() {
  Impl& impl = *m_impl;
  if (!impl.tried) {
    impl.tried = true;
#if HETOPT_HAVE_LLVM
    phases::Scope timed("symbolizer load (part of symbolize)");
    std::string why;
    if (CreateBackend create = loadBackend(m_options.backendPath, &why)) {
      impl.backend.reset(create(kSymbolizerBackendAbi));
      if (!impl.backend) impl.problem = "the symbolizer library is from another hetopt build";
    } else {
      impl.problem = "symbolizer not loaded: " + why;
    }
#else
    impl.problem = "built without LLVM: no symbolization";
#endif
  }
  return impl.backend.get();
}

std::string SiteLocation::describe(bool shortFile) const {
  char off[32];
  snprintf(off, sizeof off, "+0x%" PRIx64, offset);
  if (hasSource) {
    std::string s = source.function.empty() ? std::string("?") : source.function;
    s += " at " + (shortFile ? baseName(source.file) : source.file);
    if (source.line) s += ":" + std::to_string(source.line);
    return s;
  }
  std::string s = baseName(modulePath) + off;
  if (!source.function.empty()) s += " [" + source.function + "]";
  return s;
}

std::string SiteLocation::describeCallers() const {
  std::string s;
  for (const SourceFrame& f : callers) {
    s += s.empty() ? "called from " : ", from ";
    s += (f.function.empty() ? std::string("?") : f.function) + " at " + baseName(f.file) + ":" +
         std::to_string(f.line);
  }
  return s;
}

Symbolizer::Symbolizer() : Symbolizer(Options{}) {}
Symbolizer::Symbolizer(Options options)
    : m_options(std::move(options)), m_impl(std::make_unique<Impl>()) {}
Symbolizer::~Symbolizer() = default;

bool Symbolizer::isSystemFile(const std::string& file) const {
  for (const std::string& p : m_options.systemPrefixes)
    if (file.compare(0, p.size(), p) == 0) return true;
  return false;
}

const std::string& Symbolizer::moduleProblem(const ModulePc& pc) {
  std::string key = pc.modulePath + '\n' + pc.buildId;
  auto it = m_moduleProblems.find(key);
  if (it != m_moduleProblems.end()) return it->second;
  std::string problem;
  if (!backend()) {
    problem = m_impl->problem;
  } else {
    std::string onDisk, error;
    if (!readElfBuildId(pc.modulePath, &onDisk, &error)) {
      problem = error;
    } else if (!pc.buildId.empty() && onDisk != pc.buildId) {
      // Symbols of another build would name wrong lines with full confidence: refuse them.
      problem = "binary changed since the trace (build id " + (onDisk.empty() ? "none" : onDisk) +
                ", traced " + pc.buildId + ")";
    }
  }
  return m_moduleProblems.emplace(key, problem).first->second;
}

bool Symbolizer::frames(const ModulePc& pc, std::vector<SourceFrame>* out, std::string* note) {
  out->clear();
  const std::string& problem = moduleProblem(pc);
  if (!problem.empty()) {
    *note = problem;
    return false;
  }
  uint64_t address = pc.returnAddress && pc.offset > 0 ? pc.offset - 1 : pc.offset;
  return backend()->frames(pc.modulePath, address, out, note);
}

std::string DataLocation::describe() const {
  std::string s = name.empty() ? std::string("?") : name;
  if (!decl.file.empty() && decl.line)
    s += " (" + baseName(decl.file) + ":" + std::to_string(decl.line) + ")";
  return s;
}

DataLocation Symbolizer::locateData(const ModulePc& at) {
  phases::Scope timed("symbolize");
  DataLocation d;
  const std::string& problem = moduleProblem(at);
  if (!problem.empty()) {
    d.note = problem;
    return d;
  }
  backend()->data(at.modulePath, at.offset, &d);
  return d;
}

SiteLocation Symbolizer::locate(const std::vector<ModulePc>& site) {
  phases::Scope timed("symbolize");
  SiteLocation loc;
  if (site.empty()) {
    loc.note = "no call stack recorded";
    return loc;
  }
  loc.modulePath = site[0].modulePath;
  loc.offset = site[0].offset;
  bool haveFallbackName = false;
  for (const ModulePc& pc : site) {
    std::vector<SourceFrame> chain;
    std::string note;
    if (!frames(pc, &chain, &note)) {
      if (!loc.hasSource && loc.note.empty()) loc.note = baseName(pc.modulePath) + ": " + note;
      continue;
    }
    for (const SourceFrame& f : chain) {
      if (f.file.empty() || f.line == 0 || isSystemFile(f.file)) continue;
      if (!loc.hasSource) {
        loc.hasSource = true;
        loc.source = f;
        loc.modulePath = pc.modulePath;
        loc.offset = pc.offset;
        loc.note.clear();
      } else if (loc.callers.size() < SiteLocation::kMaxCallers) {
        loc.callers.push_back(f);
      }
    }
    // Only library code (or no line info) at this address: remember the innermost function name
    // for the module+offset form, and keep walking outwards.
    if (!loc.hasSource && !haveFallbackName) {
      loc.source.function = chain.back().function;
      haveFallbackName = true;
    }
  }
  if (!loc.hasSource && loc.note.empty())
    loc.note = "no frame in the program's own source (no debug info?)";
  return loc;
}

}  // namespace hetopt::analyzer
