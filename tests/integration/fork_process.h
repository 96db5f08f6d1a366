// SPDX-License-Identifier: MIT
/**
 * @file fork() for the fork test apps (fork_app.cpp, fork_workers_app.cpp), each built twice. The
 * plain build calls fork() and so imports it: `hetopt run` and the shim see that
 * (common/elf_imports.h) and leave the driver to the program. The `_dlsym` build (FORK_VIA_DLSYM)
 * finds fork by dlsym() at run time and imports none, as a program whose fork comes from a library
 * it loads later: hetopt starts its driver early, and only a trace or a fork mark can tell.
 */
#pragma once
#include <dlfcn.h>
#include <unistd.h>

namespace hetopt::apps {

inline pid_t forkProcess() {
#ifdef FORK_VIA_DLSYM
  static const auto fn = reinterpret_cast<pid_t (*)()>(dlsym(RTLD_DEFAULT, "fork"));
  return fn ? fn() : -1;
#else
  return fork();
#endif
}

}  // namespace hetopt::apps
