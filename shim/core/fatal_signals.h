// SPDX-License-Identifier: MIT
/**
 * @file Trace mode's fatal signals: what was recorded is written out when the program dies by
 * SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM or SIGINT, and the program still behaves as
 * it would without the shim: after the snapshot its own action runs, and the exit status is the
 * signal's. SIGKILL cannot be caught: the tail snapshot on disk is what remains then.
 */
#pragma once
#include <signal.h>

namespace hetopt::shim {

/// Installs the handlers; `flush` runs in the handler (async-signal context) before chaining.
/// The shim's handler runs first: it writes the trace's snapshot (`flush`, see TraceInterceptor)
/// and then does what the program asked for that signal: calls its handler (with its mask,
/// SA_RESETHAND and SA_NODEFER honoured), or restores the default action and lets the signal end
/// the process (re-raised; a hardware fault simply recurs). Signals ignored when tracing starts
/// (inherited, e.g. SIGINT of a background job) are left alone.
void installFatalSignalHandlers(void (*flush)(int sig));

/// The preloaded sigaction() for `sig`: true (with *rc) when `sig` is one the shim watches, whose
/// action it keeps for the program; false: the caller makes the real call. The program's calls
/// (before or after tracing began) are answered as the kernel would have; SIG_IGN is installed
/// for real (an ignored signal interrupts nothing).
bool programSigaction(int sig, const struct sigaction* act, struct sigaction* old, int* rc);

}  // namespace hetopt::shim
