// SPDX-License-Identifier: MIT
/**
 * @file Which module of a program imports a function: an undefined symbol among an ELF image's
 * dynamic symbols. The shim asks it once at start-up about the modules loaded in its process (in
 * memory, through dl_iterate_phdr); `hetopt run` about a program file and the libraries it needs
 * (on disk). Both are the dynamic loader's view; code that finds a function by dlsym(), or that a
 * library dlopen()ed later brings, is not seen. Reentrant; the in-memory walk allocates only the
 * name it returns. Implemented in elf_imports_linux.cpp.
 */
#pragma once
#include <span>
#include <string>

namespace hetopt {

/// The calls that make a copy of the process which goes on running the program's code (and may
/// call OpenCL there). vfork, posix_spawn, system and popen are not among them: their children
/// exec.
inline constexpr const char* kForkFunctions[] = {"fork", "_Fork", "__fork", "__libc_fork"};

/// The first module loaded in this process (the executable first, then the libraries in load
/// order) that imports one of `names`; empty when none does. Every read is checked against the
/// module's readable segments, so a malformed image is skipped, never followed outside its memory.
std::string loadedModuleImporting(std::span<const char* const> names);

/// The same for a program file: `path` and the libraries its DT_NEEDED entries name, breadth first,
/// found as the dynamic loader finds them (DT_RPATH or DT_RUNPATH with $ORIGIN, LD_LIBRARY_PATH,
/// /etc/ld.so.conf's directories, the default ones). A library that cannot be found or read is
/// skipped. Empty when none imports; also when `path` is no ELF file of this machine's kind, with
/// *error saying so.
std::string fileImporting(const std::string& path, std::span<const char* const> names,
                          std::string* error);

}  // namespace hetopt
