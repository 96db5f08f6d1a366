// SPDX-License-Identifier: MIT
/** @file Call-site capture and the module map, linked directly against the shim's core. */
#include "shim/core/callsite.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>

#include "shim/core/state.h"

using namespace hetopt::shim;

namespace {

std::string selfExe() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, n) : std::string();
}

__attribute__((noinline)) CallSite captureHere() {
  ScopedInternal internal;
  CallSite s;
  captureCallSite(&s, 4);
  asm volatile("" ::: "memory");  // keep this frame (no tail call)
  return s;
}

__attribute__((noinline)) CallSite captureFromA() {
  CallSite s = captureHere();
  asm volatile("");
  return s;
}
__attribute__((noinline)) CallSite captureFromB() {
  CallSite s = captureHere();
  asm volatile("");
  return s;
}

}  // namespace

TEST(ModuleMap, FindsTheTestExecutableAndSkipsLibc) {
  ModuleMap& map = ModuleMap::instance();
  const Module* self = map.find(reinterpret_cast<uintptr_t>(&captureHere));
  ASSERT_NE(self, nullptr);
  EXPECT_EQ(self->path, selfExe());
  EXPECT_FALSE(self->skipped);
  EXPECT_FALSE(self->buildId.empty()) << "Debian's toolchain links with --build-id";
  const Module* libc = map.find(reinterpret_cast<uintptr_t>(&::abort));
  ASSERT_NE(libc, nullptr);
  EXPECT_TRUE(libc->skipped) << libc->path;
  EXPECT_NE(self->identity, libc->identity);
}

TEST(ModuleMap, UnknownAddressIsNull) { EXPECT_EQ(ModuleMap::instance().find(16), nullptr); }

TEST(CallSite, FramesAreTheCallersInsideThisExecutable) {
  CallSite a = captureFromA();
  ASSERT_GE(a.depth, 2u);
  const Module* m = ModuleMap::instance().find(a.pcs[0]);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->path, selfExe());
  // The innermost frame is the caller of captureCallSite (captureHere), the next its caller.
  auto inFunction = [](uintptr_t pc, void* fn) {
    uintptr_t start = reinterpret_cast<uintptr_t>(fn);
    return pc > start && pc < start + 256;
  };
  EXPECT_TRUE(inFunction(a.pcs[0], reinterpret_cast<void*>(&captureHere)));
  EXPECT_TRUE(inFunction(a.pcs[1], reinterpret_cast<void*>(&captureFromA)));
}

TEST(CallSite, KeyIsStableForOneSiteAndDiffersBetweenSites) {
  // Two frames (captureHere, captureFromA/B): the test body's own call lines must not matter.
  CallSite a[2] = {captureFromA(), captureFromA()};
  for (CallSite& s : a) s.depth = std::min(s.depth, 2u);
  CallSite b = captureFromB();
  b.depth = std::min(b.depth, 2u);
  EXPECT_EQ(siteKey(a[0]), siteKey(a[1]));
  EXPECT_NE(siteKey(a[0]), siteKey(b));
}

TEST(CallSite, DepthIsBounded) {
  ScopedInternal internal;
  CallSite s;
  captureCallSite(&s, 1000);
  EXPECT_LE(s.depth, kMaxSiteDepth);
  captureCallSite(&s, 1);
  EXPECT_EQ(s.depth, 1u);
}
