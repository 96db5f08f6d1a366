// SPDX-License-Identifier: MIT
/**
 * @file The boundary between the analyzer and its LLVM part. Only lib/libhetopt_symbolize.so
 * (symbolize_llvm.cpp) links libLLVM; the analyzer dlopen()s it the first time it symbolizes, so
 * `hetopt run`, which links the analyzer for profiles and never symbolizes, does not load LLVM
 * (about 20 ms of every run). Both sides are built from the same tree with the same compiler, so
 * the interface is plain C++; kSymbolizerBackendAbi guards against a stale library.
 */
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/symbolizer.h"

namespace hetopt::analyzer {

/// Bump when SymbolizerBackend, SourceFrame or DataLocation change.
inline constexpr uint32_t kSymbolizerBackendAbi = 1;

class SymbolizerBackend {
 public:
  virtual ~SymbolizerBackend() = default;
  /// The inlining chain at `address` (a file offset-space address of the module at `path`),
  /// innermost first; frames with neither function nor file are left out. False with *note.
  virtual bool frames(const std::string& path, uint64_t address, std::vector<SourceFrame>* out,
                      std::string* note) = 0;
  /// The global variable at `address`: name, start, size and, where DWARF has it, its definition
  /// (decl.file, decl.line, decl.function = short name). Sets found; *out.note says why not.
  virtual void data(const std::string& path, uint64_t address, DataLocation* out) = 0;
};

}  // namespace hetopt::analyzer

/// The plugin's one export: a new backend, or null when `abi` is not the plugin's.
extern "C" hetopt::analyzer::SymbolizerBackend* hetopt_symbolizer_backend_create(uint32_t abi);
