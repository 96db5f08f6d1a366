// SPDX-License-Identifier: MIT
/** @file Facts about the host that key a characterization (implemented per OS:
 * host_info_linux.cpp). */
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

}  // namespace hetopt::characterize
