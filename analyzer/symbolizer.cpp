// SPDX-License-Identifier: MIT
/** @file Site symbolization through LLVM's symbolizer; see symbolizer.h. */
#include "analyzer/symbolizer.h"

#include <cinttypes>
#include <cstdio>

#include "common/paths.h"
#include "common/program_identity.h"

#if HETOPT_HAVE_LLVM
#include <llvm/BinaryFormat/Dwarf.h>
#include <llvm/DebugInfo/DWARF/DWARFContext.h>
#include <llvm/DebugInfo/Symbolize/Symbolize.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Error.h>
#endif

namespace hetopt::analyzer {

#if HETOPT_HAVE_LLVM
struct Symbolizer::Impl {
  llvm::symbolize::LLVMSymbolizer llvm{makeOptions()};
  /// Debug info of modules asked about data, opened once (null context: none readable).
  struct Dwarf {
    llvm::object::OwningBinary<llvm::object::ObjectFile> binary;
    std::unique_ptr<llvm::DWARFContext> context;
  };
  std::map<std::string, Dwarf> dwarf;
  llvm::DWARFContext* dwarfFor(const std::string& path) {
    auto it = dwarf.find(path);
    if (it == dwarf.end()) {
      Dwarf d;
      auto obj = llvm::object::ObjectFile::createObjectFile(path);
      if (obj) {
        d.binary = std::move(*obj);
        // Damaged DWARF is skipped quietly: the site is still named by its symbol.
        d.context = llvm::DWARFContext::create(
            *d.binary.getBinary(), llvm::DWARFContext::ProcessDebugRelocations::Process, nullptr,
            "", [](llvm::Error e) { llvm::consumeError(std::move(e)); },
            [](llvm::Error e) { llvm::consumeError(std::move(e)); });
      } else {
        llvm::consumeError(obj.takeError());
      }
      it = dwarf.emplace(path, std::move(d)).first;
    }
    return it->second.context.get();
  }
  static llvm::symbolize::LLVMSymbolizer::Options makeOptions() {
    llvm::symbolize::LLVMSymbolizer::Options o;
    o.Demangle = true;
    o.UseSymbolTable = true;  // function names even for code without DWARF
    return o;
  }
};
bool Symbolizer::available() { return true; }
#else
struct Symbolizer::Impl {};
bool Symbolizer::available() { return false; }
#endif

namespace {
#if HETOPT_HAVE_LLVM
// LLVM's placeholder for unknown names and files.
std::string clean(const std::string& s) { return s == "<invalid>" ? std::string() : s; }

/// DW_AT_decl_file as a path. LLVM 14's DWARFDie::getDeclFile() reads the index as an unsigned
/// constant only, and GCC 12 emits it as DW_FORM_implicit_const (signed) for DWARF 5, so the
/// index is read here either way.
std::string declFile(llvm::DWARFContext& ctx, const llvm::DWARFDie& die) {
  auto value = die.find(llvm::dwarf::DW_AT_decl_file);
  if (!value) return {};
  uint64_t index = 0;
  if (auto u = value->getAsUnsignedConstant()) {
    index = *u;
  } else if (auto i = value->getAsSignedConstant(); i && *i >= 0) {
    index = static_cast<uint64_t>(*i);
  } else {
    return {};
  }
  llvm::DWARFUnit* unit = die.getDwarfUnit();
  const llvm::DWARFDebugLine::LineTable* table = ctx.getLineTableForUnit(unit);
  std::string name;
  if (!table || !table->getFileNameByIndex(
                    index, unit->getCompilationDir(),
                    llvm::DILineInfoSpecifier::FileLineInfoKind::AbsoluteFilePath, name))
    return {};
  return name;
}
#endif
}  // namespace

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
  if (!available()) {
    problem = "built without LLVM: no symbolization";
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
#if HETOPT_HAVE_LLVM
  uint64_t address = pc.returnAddress && pc.offset > 0 ? pc.offset - 1 : pc.offset;
  auto result = m_impl->llvm.symbolizeInlinedCode(
      pc.modulePath, {address, llvm::object::SectionedAddress::UndefSection});
  if (!result) {
    *note = llvm::toString(result.takeError());
    return false;
  }
  for (uint32_t i = 0; i < result->getNumberOfFrames(); ++i) {
    const llvm::DILineInfo& li = result->getFrame(i);
    SourceFrame f;
    f.function = clean(li.FunctionName);
    f.file = clean(li.FileName);
    f.line = li.Line;
    f.column = li.Column;
    if (f.function.empty() && f.file.empty()) continue;
    out->push_back(std::move(f));
  }
  if (out->empty()) {
    *note = "no symbols";
    return false;
  }
  return true;
#else
  *note = problem;
  return false;
#endif
}

std::string DataLocation::describe() const {
  std::string s = name.empty() ? std::string("?") : name;
  if (!decl.file.empty() && decl.line)
    s += " (" + baseName(decl.file) + ":" + std::to_string(decl.line) + ")";
  return s;
}

DataLocation Symbolizer::locateData(const ModulePc& at) {
  DataLocation d;
  const std::string& problem = moduleProblem(at);
  if (!problem.empty()) {
    d.note = problem;
    return d;
  }
#if HETOPT_HAVE_LLVM
  auto global = m_impl->llvm.symbolizeData(
      at.modulePath, {at.offset, llvm::object::SectionedAddress::UndefSection});
  if (!global) {
    d.note = llvm::toString(global.takeError());
    return d;
  }
  d.name = clean(global->Name);
  d.start = global->Start;
  d.size = global->Size;
  if (d.name.empty()) {
    d.note = "no symbol";
    return d;
  }
  d.found = true;
  // The symbol table has no lines: find the variable whose location is that address.
  llvm::DWARFContext* ctx = m_impl->dwarfFor(at.modulePath);
  if (!ctx) return d;
  for (const auto& unit : ctx->compile_units()) {
    for (unsigned i = 0, n = unit->getNumDIEs(); i < n; ++i) {
      llvm::DWARFDie die = unit->getDIEAtIndex(i);
      if (die.getTag() != llvm::dwarf::DW_TAG_variable) continue;
      auto loc = die.find(llvm::dwarf::DW_AT_location);
      if (!loc) continue;
      auto block = loc->getAsBlock();
      if (!block || block->size() != 9 || (*block)[0] != llvm::dwarf::DW_OP_addr) continue;
      uint64_t address = 0;
      for (int b = 0; b < 8; ++b) address |= uint64_t((*block)[1 + b]) << (8 * b);
      if (address != d.start) continue;
      d.decl.line = static_cast<uint32_t>(die.getDeclLine());
      // A definition outside its class or namespace block (static members, anonymous
      // namespaces) points at its declaration, which has the file; LLVM 14's getDeclFile() does
      // not follow that link itself.
      for (llvm::DWARFDie decl = die; decl && d.decl.file.empty();
           decl = decl.getAttributeValueAsReferencedDie(llvm::dwarf::DW_AT_specification))
        d.decl.file = declFile(*ctx, decl);
      if (const char* name = die.getName(llvm::DINameKind::ShortName)) d.decl.function = name;
      return d;
    }
  }
#endif
  return d;
}

SiteLocation Symbolizer::locate(const std::vector<ModulePc>& site) {
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
