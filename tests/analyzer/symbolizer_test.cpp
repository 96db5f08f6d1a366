// SPDX-License-Identifier: MIT
/**
 * @file Symbolization of return addresses captured in this very binary, converted to
 * (module, offset) by the shim's own module map so the test covers the same path a trace takes.
 */
#include "analyzer/symbolizer.h"

#include <execinfo.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "shim/core/callsite.h"

namespace {

using hetopt::analyzer::ModulePc;
using hetopt::analyzer::SiteLocation;
using hetopt::analyzer::SourceFrame;
using hetopt::analyzer::Symbolizer;

ModulePc toModulePc(void* pc) {
  const hetopt::shim::Module* m =
      hetopt::shim::ModuleMap::instance().find(reinterpret_cast<uintptr_t>(pc));
  EXPECT_NE(m, nullptr);
  if (!m) return {};
  return ModulePc{m->path, m->buildId, reinterpret_cast<uintptr_t>(pc) - m->bias, true};
}

// This source file as the debug info names it: __FILE__ is relative where ccache's base_dir
// rewrote the compile command, the symbolizer's path absolute, so the files are compared.
bool isThisSourceFile(const std::string& path) {
  struct stat a, b;
  return stat(path.c_str(), &a) == 0 && stat(HETOPT_SYMBOLIZER_TEST_SOURCE, &b) == 0 &&
         a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

__attribute__((noinline)) void* returnAddressOfCaller() {
  void* ra = __builtin_return_address(0);
  asm volatile("" ::: "memory");  // keep a real call (no tail call) so `ra` is the caller's
  return ra;
}

// Records the stack of one operator new call while armed: the return addresses start inside
// std::vector's allocator, which is library code inlined into (or instantiated beside) the caller.
thread_local bool t_armed = false;
thread_local void* t_stack[16];
thread_local int t_depth = 0;

}  // namespace

// GCC pairs a replaced operator new with free() as a mismatch; here both sides are malloc/free.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t size) {
  if (t_armed) {
    t_armed = false;
    t_depth = backtrace(t_stack, 16);
  }
  if (void* p = malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
// The nothrow forms too: the standard library's call the ones above, but a sanitizer runtime brings
// its own, and its nothrow new (std::stable_sort's buffer) then met our delete (ASan: mismatch).
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return malloc(size ? size : 1);
}
void operator delete(void* p) noexcept { free(p); }
void operator delete(void* p, std::size_t) noexcept { free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { free(p); }

namespace {

__attribute__((noinline)) size_t allocateVector(size_t n, int* line) {
  t_armed = true;
  std::vector<float> v(n);
  *line = __LINE__ - 1;  // the line above
  return v.size();
}

TEST(Symbolizer, NamesTheCallersSourceLine) {
  if (!Symbolizer::available()) GTEST_SKIP() << "built without LLVM";
  void* ra = returnAddressOfCaller();
  const int expectLine = __LINE__ - 1;  // the line above
  Symbolizer sym;
  SiteLocation loc = sym.locate({toModulePc(ra)});
  ASSERT_TRUE(loc.hasSource) << loc.note;
  EXPECT_EQ(loc.source.line, static_cast<uint32_t>(expectLine));
  EXPECT_TRUE(isThisSourceFile(loc.source.file)) << loc.source.file;
  EXPECT_NE(loc.source.function.find("NamesTheCallersSourceLine"), std::string::npos)
      << loc.source.function;
  EXPECT_NE(loc.describe().find("symbolizer_test.cpp:" + std::to_string(expectLine)),
            std::string::npos)
      << loc.describe();
}

TEST(Symbolizer, SkipsLibraryFramesToTheUsersLine) {
  if (!Symbolizer::available()) GTEST_SKIP() << "built without LLVM";
  backtrace(t_stack, 1);  // loads libgcc's unwinder before the armed call
  int expectLine = 0;
  const int callLine = __LINE__ + 1;
  ASSERT_EQ(allocateVector(1000, &expectLine), 1000u);
  ASSERT_GE(t_depth, 3);
  // The frames up to operator new's own are dropped, as the shim drops libstdc++'s operator new
  // (how many there are depends on the build: sanitizers add one).
  Symbolizer sym;
  int first = 0;
  for (int i = 0; i < t_depth && i < 4; ++i) {
    std::vector<SourceFrame> chain;
    std::string ignored;
    if (sym.frames(toModulePc(t_stack[i]), &chain, &ignored) &&
        chain.back().function.find("operator new") != std::string::npos)
      first = i + 1;
  }
  ASSERT_GT(first, 0) << "operator new's frame not found";
  std::vector<ModulePc> site;
  for (int i = first; i < t_depth && i < first + 8; ++i) site.push_back(toModulePc(t_stack[i]));
  ASSERT_FALSE(site.empty());
  // The innermost address is in std::vector's allocator code: the case this rule exists for.
  std::vector<SourceFrame> inner;
  std::string note;
  ASSERT_TRUE(sym.frames(site[0], &inner, &note)) << note;
  EXPECT_TRUE(sym.isSystemFile(inner.front().file)) << inner.front().file;

  SiteLocation loc = sym.locate(site);
  ASSERT_TRUE(loc.hasSource) << loc.note;
  EXPECT_TRUE(isThisSourceFile(loc.source.file)) << loc.source.file;
  EXPECT_EQ(loc.source.line, static_cast<uint32_t>(expectLine));
  EXPECT_NE(loc.source.function.find("allocateVector"), std::string::npos);
  // An allocating helper is named with its caller.
  ASSERT_FALSE(loc.callers.empty());
  EXPECT_EQ(loc.callers[0].line, static_cast<uint32_t>(callLine));
  EXPECT_NE(loc.describeCallers().find("symbolizer_test.cpp:" + std::to_string(callLine)),
            std::string::npos)
      << loc.describeCallers();
}

}  // namespace

// Static data as the trace sees it: an address inside the module's .bss, no allocation site.
float g_staticWeights[8192];  // the definition line the test expects
const int kStaticWeightsLine = __LINE__ - 1;

namespace {

// Internal linkage: GCC describes it as a declaration plus a definition that points back to it
// (DW_AT_specification). The form of its file attribute varies with the unit (static_mmap's
// ground-truth test covers DW_FORM_implicit_const).
float g_anonWeights[4096];
const int kAnonWeightsLine = __LINE__ - 1;

TEST(Symbolizer, StaticDataOfAnAnonymousNamespace) {
  if (!Symbolizer::available()) GTEST_SKIP() << "built without LLVM";
  g_anonWeights[7] = 2.0f;
  ModulePc pc = toModulePc(&g_anonWeights[7]);
  Symbolizer sym;
  hetopt::analyzer::DataLocation d = sym.locateData(pc);
  ASSERT_TRUE(d.found) << d.note;
  EXPECT_EQ(d.name, "(anonymous namespace)::g_anonWeights");
  EXPECT_EQ(d.decl.line, static_cast<uint32_t>(kAnonWeightsLine));
  EXPECT_TRUE(isThisSourceFile(d.decl.file)) << d.decl.file;
}

TEST(Symbolizer, StaticDataNamesTheVariableAndItsDefinitionLine) {
  if (!Symbolizer::available()) GTEST_SKIP() << "built without LLVM";
  g_staticWeights[100] = 1.0f;
  ModulePc pc = toModulePc(&g_staticWeights[100]);
  pc.returnAddress = false;
  Symbolizer sym;
  hetopt::analyzer::DataLocation d = sym.locateData(pc);
  ASSERT_TRUE(d.found) << d.note;
  EXPECT_EQ(d.name, "g_staticWeights");
  EXPECT_EQ(d.size, sizeof g_staticWeights);
  EXPECT_EQ(d.decl.line, static_cast<uint32_t>(kStaticWeightsLine));
  EXPECT_TRUE(isThisSourceFile(d.decl.file)) << d.decl.file;
  EXPECT_EQ(d.describe(),
            "g_staticWeights (symbolizer_test.cpp:" + std::to_string(kStaticWeightsLine) + ")");
}

TEST(Symbolizer, RefusesAModuleWhoseBuildIdChanged) {
  void* ra = returnAddressOfCaller();
  ModulePc pc = toModulePc(ra);
  ASSERT_FALSE(pc.buildId.empty()) << "test binary built without a build id";
  pc.buildId = "00112233445566778899aabbccddeeff00112233";
  Symbolizer sym;
  SiteLocation loc = sym.locate({pc});
  EXPECT_FALSE(loc.hasSource);
  if (Symbolizer::available()) {
    EXPECT_NE(loc.note.find("changed"), std::string::npos) << loc.note;
  }
  // Still identifies the site as module+offset.
  char off[32];
  snprintf(off, sizeof off, "+0x%llx", static_cast<unsigned long long>(pc.offset));
  EXPECT_NE(loc.describe().find(off), std::string::npos) << loc.describe();
}

TEST(Symbolizer, MissingModuleIsANoteNotAnError) {
  Symbolizer sym;
  SiteLocation loc = sym.locate({ModulePc{"/nonexistent/libgone.so", "abcd", 0x1234, true}});
  EXPECT_FALSE(loc.hasSource);
  EXPECT_NE(loc.note.find("libgone.so"), std::string::npos) << loc.note;
  EXPECT_EQ(loc.describe(), "libgone.so+0x1234");
}

TEST(Symbolizer, GarbageFileIsRefused) {
  char path[] = "/tmp/hetopt-sym-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd,
                  "\x7f"
                  "ELF\x02\x01 garbage",
                  15),
            15);
  close(fd);
  Symbolizer sym;
  SiteLocation loc = sym.locate({ModulePc{path, "", 0x40, true}});
  EXPECT_FALSE(loc.hasSource);
  EXPECT_FALSE(loc.note.empty());
  unlink(path);
}

#ifdef HETOPT_EXPECT_SYMBOLIZER
// A build with LLVM must find its backend library (lib/libhetopt_symbolize.so beside bin/): the
// tests above skip without it, and that would hide a broken build.
TEST(Symbolizer, BackendLibraryLoadsInABuildWithLlvm) { EXPECT_TRUE(Symbolizer::available()); }

TEST(Symbolizer, MissingBackendLibraryGivesOneWarningAndModuleOffset) {
  Symbolizer::Options options;
  options.backendPath = "/nonexistent/libhetopt_symbolize.so";
  ModulePc pc = toModulePc(returnAddressOfCaller());
  testing::internal::CaptureStderr();
  std::vector<SiteLocation> locs;
  for (int i = 0; i < 2; ++i) {
    Symbolizer sym(options);
    locs.push_back(sym.locate({pc}));
    EXPECT_FALSE(sym.locateData(pc).found);
  }
  std::string err = testing::internal::GetCapturedStderr();
  for (const SiteLocation& loc : locs) {
    EXPECT_FALSE(loc.hasSource);
    EXPECT_NE(loc.note.find("symbolizer not loaded"), std::string::npos) << loc.note;
    char off[32];
    snprintf(off, sizeof off, "+0x%llx", static_cast<unsigned long long>(pc.offset));
    EXPECT_NE(loc.describe().find(off), std::string::npos) << loc.describe();
  }
  // One warning for the process, naming the library, however many symbolizers try it.
  size_t first = err.find("cannot load the symbolizer");
  ASSERT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find("cannot load the symbolizer", first + 1), std::string::npos) << err;
  EXPECT_NE(err.find("/nonexistent/libhetopt_symbolize.so"), std::string::npos) << err;
  // The default library still works beside it.
  Symbolizer sym;
  EXPECT_TRUE(sym.locate({pc}).hasSource);
}
#endif

TEST(Symbolizer, EmptySite) {
  Symbolizer sym;
  SiteLocation loc = sym.locate({});
  EXPECT_FALSE(loc.hasSource);
  EXPECT_FALSE(loc.note.empty());
}

}  // namespace
