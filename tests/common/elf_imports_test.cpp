// SPDX-License-Identifier: MIT
/**
 * @file Which module imports fork (common/elf_imports.h): program files with their libraries, as
 * `hetopt run` reads them, and the modules loaded in this process, as the shim reads them at
 * start-up. The test app that forks, one that finds fork by dlsym() only, /bin/true, python3, and
 * a program whose fork comes from a library it needs.
 */
#include "common/elf_imports.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>

namespace hetopt {
namespace {

std::string realPath(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) ? buf : path;
}

std::string importer(const std::string& path) {
  std::string error;
  const std::string found = fileImporting(path, kForkFunctions, &error);
  EXPECT_EQ(error, "") << path;
  return found.empty() ? found : realPath(found);
}

TEST(ElfImports, AProgramThatCallsForkImportsIt) {
  EXPECT_EQ(importer(HETOPT_FORKING_APP), realPath(HETOPT_FORKING_APP));
}

TEST(ElfImports, AProgramThatFindsForkByDlsymImportsNoneNorDoItsLibraries) {
  EXPECT_EQ(importer(HETOPT_DLSYM_FORKING_APP), "");
  EXPECT_EQ(importer("/bin/true"), "");
}

TEST(ElfImports, PythonImportsFork) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  const std::string found = importer("/usr/bin/python3");
  EXPECT_NE(found.find("python3"), std::string::npos) << found;
}

TEST(ElfImports, ALibraryTheProgramNeedsIsSearchedToo) {
  EXPECT_EQ(importer(HETOPT_FORK_LIBRARY_USER), realPath(HETOPT_FORK_LIBRARY));
}

TEST(ElfImports, AFileThatIsNoProgramImportsNothingAndSaysWhy) {
  const std::string text = testing::TempDir() + "/elf_imports_text";
  std::ofstream(text) << "#!/bin/sh\nexit 0\n";
  std::string error;
  EXPECT_EQ(fileImporting(text, kForkFunctions, &error), "");
  EXPECT_NE(error.find("is not an ELF file"), std::string::npos) << error;
  error.clear();
  EXPECT_EQ(fileImporting(text + ".missing", kForkFunctions, &error), "");
  EXPECT_NE(error, "");
  unlink(text.c_str());
}

// In memory, as the shim asks at start-up: nothing imports posix_openpt until the library is
// loaded; gtest's death tests make this very test program import fork.
TEST(ElfImports, LoadedModulesAreReadInMemory) {
  const char* const rare[] = {"posix_openpt"};
  EXPECT_EQ(loadedModuleImporting(rare), "");
  EXPECT_EQ(realPath(loadedModuleImporting(kForkFunctions)), realPath("/proc/self/exe"));
  void* lib = dlopen(HETOPT_FORK_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  EXPECT_EQ(realPath(loadedModuleImporting(rare)), realPath(HETOPT_FORK_LIBRARY));
  dlclose(lib);
}

}  // namespace
}  // namespace hetopt
