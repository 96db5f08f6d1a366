// SPDX-License-Identifier: MIT
/**
 * @file lib/libhetopt_symbolize.so: the analyzer's symbolizer backend on LLVM's DebugInfo, the only
 * code of hetopt that links libLLVM (see symbolizer_backend.h for why it is a separate library).
 */
#include <llvm/BinaryFormat/Dwarf.h>
#include <llvm/DebugInfo/DWARF/DWARFContext.h>
#include <llvm/DebugInfo/Symbolize/Symbolize.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Error.h>

#include <map>
#include <memory>

#include "analyzer/symbolizer_backend.h"
#include "common/compiler.h"

namespace hetopt::analyzer {
namespace {

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

class LlvmBackend final : public SymbolizerBackend {
 public:
  bool frames(const std::string& path, uint64_t address, std::vector<SourceFrame>* out,
              std::string* note) override {
    auto result =
        m_llvm.symbolizeInlinedCode(path, {address, llvm::object::SectionedAddress::UndefSection});
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
  }

  void data(const std::string& path, uint64_t address, DataLocation* d) override {
    auto global =
        m_llvm.symbolizeData(path, {address, llvm::object::SectionedAddress::UndefSection});
    if (!global) {
      d->note = llvm::toString(global.takeError());
      return;
    }
    d->name = clean(global->Name);
    d->start = global->Start;
    d->size = global->Size;
    if (d->name.empty()) {
      d->note = "no symbol";
      return;
    }
    d->found = true;
    // The symbol table has no lines: find the variable whose location is that address.
    llvm::DWARFContext* ctx = dwarfFor(path);
    if (!ctx) return;
    for (const auto& unit : ctx->compile_units()) {
      for (unsigned i = 0, n = unit->getNumDIEs(); i < n; ++i) {
        llvm::DWARFDie die = unit->getDIEAtIndex(i);
        if (die.getTag() != llvm::dwarf::DW_TAG_variable) continue;
        auto loc = die.find(llvm::dwarf::DW_AT_location);
        if (!loc) continue;
        auto block = loc->getAsBlock();
        if (!block || block->size() != 9 || (*block)[0] != llvm::dwarf::DW_OP_addr) continue;
        uint64_t at = 0;
        for (int b = 0; b < 8; ++b) at |= uint64_t((*block)[1 + b]) << (8 * b);
        if (at != d->start) continue;
        d->decl.line = static_cast<uint32_t>(die.getDeclLine());
        // A definition outside its class or namespace block (static members, anonymous
        // namespaces) points at its declaration, which has the file; LLVM 14's getDeclFile()
        // does not follow that link itself.
        for (llvm::DWARFDie decl = die; decl && d->decl.file.empty();
             decl = decl.getAttributeValueAsReferencedDie(llvm::dwarf::DW_AT_specification))
          d->decl.file = declFile(*ctx, decl);
        if (const char* name = die.getName(llvm::DINameKind::ShortName)) d->decl.function = name;
        return;
      }
    }
  }

 private:
  static llvm::symbolize::LLVMSymbolizer::Options makeOptions() {
    llvm::symbolize::LLVMSymbolizer::Options o;
    o.Demangle = true;
    o.UseSymbolTable = true;  // function names even for code without DWARF
    return o;
  }

  /// Debug info of modules asked about data, opened once (null context: none readable).
  llvm::DWARFContext* dwarfFor(const std::string& path) {
    auto it = m_dwarf.find(path);
    if (it == m_dwarf.end()) {
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
      it = m_dwarf.emplace(path, std::move(d)).first;
    }
    return it->second.context.get();
  }

  struct Dwarf {
    llvm::object::OwningBinary<llvm::object::ObjectFile> binary;
    std::unique_ptr<llvm::DWARFContext> context;
  };
  llvm::symbolize::LLVMSymbolizer m_llvm{makeOptions()};
  std::map<std::string, Dwarf> m_dwarf;
};

}  // namespace
}  // namespace hetopt::analyzer

extern "C" HETOPT_EXPORT hetopt::analyzer::SymbolizerBackend* hetopt_symbolizer_backend_create(
    uint32_t abi) {
  if (abi != hetopt::analyzer::kSymbolizerBackendAbi) return nullptr;
  return new hetopt::analyzer::LlvmBackend();
}
