// SPDX-License-Identifier: MIT
/**
 * @file fork() for the fork test apps (fork_app.cpp, fork_workers_app.cpp), each built twice. The
 * plain build calls fork() and so imports it; the `_dlsym` build (FORK_VIA_DLSYM) finds fork by
 * dlsym() at run time and imports none, as a program whose fork comes from a library it loads
 * later.
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
