// SPDX-License-Identifier: MIT
/**
 * @file A library that forks, for elf_imports_test: elf_imports_exe links it (and imports no fork
 * itself); the test also dlopen()s it. It imports posix_openpt too, which nothing else in the test
 * process imports, so the test can tell when it is loaded.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

extern "C" __attribute__((visibility("default"))) int hetopt_test_fork_and_wait() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  return pid > 0 ? 0 : 1;
}

extern "C" __attribute__((visibility("default"))) int hetopt_test_open_pty() {
  return posix_openpt(O_RDWR);
}
