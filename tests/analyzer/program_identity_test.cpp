// SPDX-License-Identifier: MIT
/** @file Program identity: build ids as the shim sees them, content hashes, bad files. */
#include "common/program_identity.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "shim/core/callsite.h"

namespace {

std::string tempFile(const std::string& content) {
  char path[] = "/tmp/hetopt-id-XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  close(fd);
  return path;
}

TEST(Sha256, KnownVectors) {
  hetopt::Sha256 empty;
  EXPECT_EQ(empty.hexDigest(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  hetopt::Sha256 abc;
  abc.update("abc", 3);
  EXPECT_EQ(abc.hexDigest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // Two blocks, fed in uneven pieces.
  std::string s = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  hetopt::Sha256 pieces;
  pieces.update(s.data(), 5);
  pieces.update(s.data() + 5, s.size() - 5);
  EXPECT_EQ(pieces.hexDigest(), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(ProgramIdentity, BuildIdMatchesWhatTheShimReadsAtRunTime) {
  std::string exe = "/proc/self/exe";
  hetopt::ProgramIdentity id;
  std::string error;
  ASSERT_TRUE(hetopt::programIdentity(exe, &id, &error)) << error;
  EXPECT_EQ(id.path[0], '/');
  EXPECT_EQ(id.path.find("/proc/"), std::string::npos) << "symlink not resolved: " << id.path;
  const hetopt::shim::Module* m = hetopt::shim::ModuleMap::instance().find(
      reinterpret_cast<uintptr_t>(&hetopt::programIdentity));
  ASSERT_NE(m, nullptr);
  ASSERT_FALSE(m->buildId.empty());
  EXPECT_EQ(id.buildId, m->buildId);
  EXPECT_EQ(id.key(), "build-id:" + m->buildId);
  EXPECT_TRUE(id.contentHash.empty());
}

TEST(ProgramIdentity, ScriptsAreIdentifiedByContent) {
  std::string a = tempFile("#!/bin/sh\necho one\n");
  std::string b = tempFile("#!/bin/sh\necho two\n");
  hetopt::ProgramIdentity ia, ib, ia2;
  std::string error;
  ASSERT_TRUE(hetopt::programIdentity(a, &ia, &error)) << error;
  ASSERT_TRUE(hetopt::programIdentity(b, &ib, &error)) << error;
  ASSERT_TRUE(hetopt::programIdentity(a, &ia2, &error)) << error;
  EXPECT_TRUE(ia.buildId.empty());
  EXPECT_EQ(ia.key().rfind("sha256:", 0), 0u);
  EXPECT_NE(ia.key(), ib.key());
  EXPECT_EQ(ia.key(), ia2.key());
  unlink(a.c_str());
  unlink(b.c_str());
}

TEST(ProgramIdentity, CorruptElfGetsAnErrorOrAHashNeverACrash) {
  // An ELF magic followed by junk: readElfBuildId says why; the identity falls back to the hash.
  std::string bad = tempFile(std::string("\x7f" "ELF\x02\x01\x01", 7) + std::string(20, '\xff'));
  std::string buildId, error;
  EXPECT_FALSE(hetopt::readElfBuildId(bad, &buildId, &error));
  EXPECT_NE(error.find(bad), std::string::npos) << error;
  hetopt::ProgramIdentity id;
  ASSERT_TRUE(hetopt::programIdentity(bad, &id, &error)) << error;
  EXPECT_FALSE(id.contentHash.empty());
  // Program headers pointing past the end of the file.
  std::string hdr(64, '\0');
  memcpy(hdr.data(), "\x7f" "ELF\x02\x01\x01", 7);
  uint64_t phoff = 1 << 20;
  memcpy(&hdr[32], &phoff, 8);
  uint16_t phentsize = 56, phnum = 3;
  memcpy(&hdr[54], &phentsize, 2);
  memcpy(&hdr[56], &phnum, 2);
  std::string trunc = tempFile(hdr);
  EXPECT_FALSE(hetopt::readElfBuildId(trunc, &buildId, &error));
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;
  unlink(bad.c_str());
  unlink(trunc.c_str());
}

TEST(ProgramIdentity, MissingFile) {
  hetopt::ProgramIdentity id;
  std::string error;
  EXPECT_FALSE(hetopt::programIdentity("/nonexistent/prog", &id, &error));
  EXPECT_NE(error.find("/nonexistent/prog"), std::string::npos);
}

}  // namespace
