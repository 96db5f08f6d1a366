// SPDX-License-Identifier: MIT
/**
 * @file libFuzzer target for the ELF reader of `hetopt run` (common/elf_imports.h), which reads
 * whatever program file it is given and the libraries that file names. Any bytes must be read or
 * refused, never crash, and never be followed outside the file.
 */
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/elf_imports.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd_create("elf_imports_fuzz", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (write(fd, data, size) == static_cast<ssize_t>(size)) {
    std::string error;
    hetopt::fileImporting("/proc/self/fd/" + std::to_string(fd), hetopt::kForkFunctions, &error);
  }
  close(fd);
  return 0;
}
