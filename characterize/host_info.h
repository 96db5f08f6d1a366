// SPDX-License-Identifier: MIT
/** @file Facts about the host that key a characterization, and the benchmarks' one OS call beyond
 * policies/os_memory.h (implemented per OS: host_info_linux.cpp; tools only, not the shim). */
#pragma once
#include <string>

namespace hetopt::characterize {

/// "AMD EPYC 9654 96-Core Processor"; falls back to the architecture when the OS does not say.
std::string hostCpuModel();
/// Kernel release ("6.8.0-49-generic").
std::string hostKernelRelease();
std::string hostName();
/// Current UTC time, ISO 8601 ("2026-11-03T14:05:09Z").
std::string utcNowIso();

/// Gives the C library's free heap memory back to the OS (glibc: malloc_trim). glibc keeps freed
/// blocks of up to 32 MiB in its heaps once it has seen blocks that large freed; benchmarks that
/// free one size's blocks and allocate the next would otherwise hold both (a quick PoCL
/// characterization with a 64 MiB budget peaked at 277 MiB instead of 142 MiB).
void returnFreeMemory();

}  // namespace hetopt::characterize
