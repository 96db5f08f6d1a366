// SPDX-License-Identifier: MIT
/**
 * @file Compiler and CPU spellings, each written once: branch hints, inlining, symbol export,
 * initial-exec thread-locals and the spin-wait pause. Header-only and lean (no include): every
 * part may use it, the shim's entry points included.
 */
#pragma once

/// Branch hints for the hot paths (the malloc family, per-call checks).
#define HETOPT_LIKELY(x) __builtin_expect(!!(x), 1)
#define HETOPT_UNLIKELY(x) __builtin_expect(!!(x), 0)
/// A slow path kept out of its caller's body: the caller stays a test and a jump.
#define HETOPT_NOINLINE __attribute__((noinline))
/// Rarely run (bootstrap, failures): placed apart from the hot code, optimized for size.
#define HETOPT_COLD __attribute__((cold))
/// A symbol the shim exports to the program (everything else is built with hidden visibility).
#define HETOPT_EXPORT __attribute__((visibility("default")))
/// A thread-local with the initial-exec model: a fixed offset from the thread pointer, so the first
/// access allocates nothing (a dynamic TLS block would call malloc from inside malloc).
#define HETOPT_TLS __attribute__((tls_model("initial-exec"))) thread_local

namespace hetopt {

/// One pause in a spin-wait loop: lets the sibling hyper-thread run and saves power.
inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace hetopt
