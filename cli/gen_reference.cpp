// SPDX-License-Identifier: MIT
/**
 * @file hetopt_gen_reference MAN_PAGE COMPLETION: writes the man page and the bash completion from
 * the option tables (cli/command_specs.cpp) at build time; both are installed beside the driver.
 */
#include <cstdio>
#include <string>

#include "cli/command_line.h"

namespace {

bool writeFile(const char* path, const std::string& text) {
  FILE* f = fopen(path, "w");
  if (!f) {
    perror(path);
    return false;
  }
  const bool ok = fwrite(text.data(), 1, text.size(), f) == text.size();
  return (fclose(f) == 0) && ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: hetopt_gen_reference MAN_PAGE BASH_COMPLETION\n");
    return 2;
  }
  return writeFile(argv[1], hetopt::cli::manPage()) &&
                 writeFile(argv[2], hetopt::cli::bashCompletion())
             ? 0
             : 1;
}
