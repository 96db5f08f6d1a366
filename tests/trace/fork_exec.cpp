// SPDX-License-Identifier: MIT
/**
 * @file A traced program with children: the parent keeps a 64 KiB block, a forked child allocates
 * 128 KiB and exits, a second child execs this program again, which allocates 256 KiB. Each process
 * must leave its own trace holding its own allocation only. Prints "children <forked> <exec'd>".
 */
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

void* touch(size_t bytes) {
  void* p = malloc(bytes);
  if (p) memset(p, 1, bytes);
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && !strcmp(argv[1], "--exec-child")) {
    void* p = touch(256 << 10);
    free(p);
    return p ? 0 : 1;
  }
  void* keep = touch(64 << 10);
  fflush(stdout);
  pid_t forked = fork();
  if (forked == 0) {
    void* p = touch(128 << 10);
    free(p);
    exit(p ? 0 : 1);
  }
  pid_t execd = fork();
  if (execd == 0) {
    execl("/proc/self/exe", argv[0], "--exec-child", static_cast<char*>(nullptr));
    _exit(127);
  }
  int a = 0, b = 0;
  if (forked < 0 || execd < 0 || waitpid(forked, &a, 0) < 0 || waitpid(execd, &b, 0) < 0) return 2;
  if (!WIFEXITED(a) || WEXITSTATUS(a) != 0 || !WIFEXITED(b) || WEXITSTATUS(b) != 0) return 1;
  printf("children %d %d\n", static_cast<int>(forked), static_cast<int>(execd));
  free(keep);
  return 0;
}
