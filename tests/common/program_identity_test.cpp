// SPDX-License-Identifier: MIT
/** @file Program identity: build ids as the shim sees them, content hashes, bad files. */
#include "common/program_identity.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
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
  std::string bad = tempFile(std::string("\x7f"
                                         "ELF\x02\x01\x01",
                                         7) +
                             std::string(20, '\xff'));
  std::string buildId, error;
  EXPECT_FALSE(hetopt::readElfBuildId(bad, &buildId, &error));
  EXPECT_NE(error.find(bad), std::string::npos) << error;
  hetopt::ProgramIdentity id;
  ASSERT_TRUE(hetopt::programIdentity(bad, &id, &error)) << error;
  EXPECT_FALSE(id.contentHash.empty());
  // Program headers pointing past the end of the file.
  std::string hdr(64, '\0');
  memcpy(hdr.data(),
         "\x7f"
         "ELF\x02\x01\x01",
         7);
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

namespace {

std::string readText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

}  // namespace

TEST(ProgramIdentity, BuildIdOfAHugeFileReadsOnlyItsHeaders) {
  // This test binary made 16 GiB long (sparse): reading it whole would not fit in memory.
  char dir[] = "/tmp/hetopt-id-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string copy = std::string(dir) + "/huge";
  std::filesystem::copy_file("/proc/self/exe", copy);
  ASSERT_EQ(truncate(copy.c_str(), off_t{16} << 30), 0);
  hetopt::ProgramIdentity self, huge;
  std::string error;
  ASSERT_TRUE(hetopt::programIdentity("/proc/self/exe", &self, &error)) << error;
  ASSERT_TRUE(hetopt::programIdentity(copy, &huge, &error)) << error;
  EXPECT_FALSE(huge.buildId.empty());
  EXPECT_EQ(huge.key(), self.key());
  EXPECT_EQ(huge.stamp.size, uint64_t{16} << 30);
  std::filesystem::remove_all(dir);
}

TEST(ProgramIdentity, HashCacheServesUnchangedFilesOnly) {
  char dirTemplate[] = "/tmp/hetopt-idcache-XXXXXX";
  ASSERT_NE(mkdtemp(dirTemplate), nullptr);
  const std::string dir = dirTemplate, cache = dir + "/cache", prog = dir + "/prog.sh";
  writeText(prog, "#!/bin/sh\necho one\n");
  hetopt::ProgramIdentity id;
  std::string error;
  // Just written: not remembered yet (a rewrite within the timestamp tick would not show).
  ASSERT_TRUE(hetopt::programIdentity(prog, &id, &error, cache)) << error;
  const std::string realHash = id.contentHash;
  const std::string entry =
      cache + "/" + std::to_string(id.stamp.dev) + "-" + std::to_string(id.stamp.inode);
  EXPECT_FALSE(std::filesystem::exists(entry));
  usleep(static_cast<useconds_t>(hetopt::kHashCacheSettleNs / 1000 + 100000));
  ASSERT_TRUE(hetopt::programIdentity(prog, &id, &error, cache)) << error;
  EXPECT_EQ(id.contentHash, realHash);
  ASSERT_TRUE(std::filesystem::exists(entry));
  struct stat st;
  ASSERT_EQ(stat(entry.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // The entry is what answers now: a planted hash for the same stamp comes back unhashed.
  std::string text = readText(entry);
  const std::string planted(64, 'a');
  ASSERT_NE(text.find(realHash), std::string::npos) << text;
  writeText(entry, text.replace(text.find(realHash), 64, planted));
  ASSERT_TRUE(hetopt::programIdentity(prog, &id, &error, cache)) << error;
  EXPECT_EQ(id.contentHash, planted);
  // An entry others could have written is not believed.
  chmod(entry.c_str(), 0666);
  ASSERT_TRUE(hetopt::programIdentity(prog, &id, &error, cache)) << error;
  EXPECT_EQ(id.contentHash, realHash);
  chmod(entry.c_str(), 0600);
  // Rewritten in place with the same size (same inode, and mtime set back): the ctime differs.
  struct stat before;
  ASSERT_EQ(stat(prog.c_str(), &before), 0);
  writeText(prog, "#!/bin/sh\necho two\n");
  struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(utimensat(AT_FDCWD, prog.c_str(), times, 0), 0);
  ASSERT_TRUE(hetopt::programIdentity(prog, &id, &error, cache)) << error;
  EXPECT_NE(id.contentHash, planted);
  EXPECT_NE(id.contentHash, realHash);
  hetopt::ProgramIdentity uncached;
  ASSERT_TRUE(hetopt::programIdentity(prog, &uncached, &error)) << error;
  EXPECT_EQ(id.contentHash, uncached.contentHash);
  // A damaged entry is a miss, never an error.
  writeText(entry, "hetopt-identity 1\n12 garbage\n");
  ASSERT_TRUE(hetopt::programIdentity(prog, &id, &error, cache)) << error;
  EXPECT_EQ(id.contentHash, uncached.contentHash);
  std::filesystem::remove_all(dir);
}

namespace {

using hetopt::ScriptRef;

ScriptRef scriptOf(const std::string& exe, const std::vector<std::string>& argv) {
  ScriptRef s;
  std::string error;
  EXPECT_TRUE(hetopt::scriptOfProcess(exe, argv, &s, &error)) << error;
  return s;
}

TEST(CommandIdentity, InterpretersRunScriptsModulesAndCode) {
  const std::string script = tempFile("print('hello')\n");
  const std::string data = tempFile("1 2 3\n");
  const std::string py = "/usr/bin/python3.11";
  ScriptRef s = scriptOf(py, {"python3", "-u", "-W", "ignore", script, "arg"});
  EXPECT_EQ(s.kind, ScriptRef::Kind::File);
  EXPECT_EQ(s.name, script);
  EXPECT_EQ(s.hash.size(), 64u);
  // Options that take a value are skipped with it (-W's value is not the script).
  EXPECT_EQ(scriptOf(py, {"python3", "-W", script}).kind, ScriptRef::Kind::None);
  ScriptRef m = scriptOf(py, {"python3", "-B", "-m", "pkg.tool", "x"});
  EXPECT_EQ(m.kind, ScriptRef::Kind::Module);
  EXPECT_EQ(m.name, "pkg.tool");
  ScriptRef c1 = scriptOf(py, {"python3", "-c", "print(1)"}),
            c2 = scriptOf(py, {"python3", "-cprint(1)"});
  EXPECT_EQ(c1.kind, ScriptRef::Kind::Code);
  EXPECT_EQ(c1, c2);
  EXPECT_NE(c1, scriptOf(py, {"python3", "-c", "print(2)"}));
  // Shells: -c makes the first operand the code; a script after options.
  EXPECT_EQ(scriptOf("/usr/bin/dash", {"sh", "-e", "-c", "echo hi", "name"}).kind,
            ScriptRef::Kind::Code);
  EXPECT_EQ(scriptOf("/usr/bin/bash", {"bash", "-o", "errexit", script}).name, script);
  // No script: the REPL, stdin, a missing file, an ELF file given to a shell.
  EXPECT_EQ(scriptOf(py, {"python3"}).kind, ScriptRef::Kind::None);
  EXPECT_EQ(scriptOf(py, {"python3", "-"}).kind, ScriptRef::Kind::None);
  EXPECT_EQ(scriptOf(py, {"python3", "/nonexistent/x.py"}).kind, ScriptRef::Kind::None);
  EXPECT_EQ(scriptOf("/usr/bin/dash", {"sh", "/proc/self/exe"}).kind, ScriptRef::Kind::None);
  // Any other program: a data file is no script; a "#!" file it was given is (the kernel's way).
  EXPECT_EQ(scriptOf("/opt/app", {"app", "--size", "1M", data}).kind, ScriptRef::Kind::None);
  const std::string awk = tempFile("#!/usr/bin/awk -f\n{ print }\n");
  EXPECT_EQ(scriptOf("/usr/bin/mawk", {"/usr/bin/awk", "-f", awk}).name, awk);
  unlink(script.c_str());
  unlink(data.c_str());
  unlink(awk.c_str());
}

TEST(CommandIdentity, KeysAndProfilePathsTellScriptsApart) {
  hetopt::ProgramIdentity id;
  id.path = "/usr/bin/python3.11";
  id.buildId = "ab12";
  EXPECT_EQ(id.key(), "build-id:ab12");
  EXPECT_EQ(id.profilePath(), id.path);
  id.script = {ScriptRef::Kind::File, "/home/u/a.py", std::string(64, 'f')};
  EXPECT_EQ(id.key(), "build-id:ab12+script-sha256:" + std::string(64, 'f'));
  EXPECT_EQ(id.executableKey(), "build-id:ab12");
  EXPECT_EQ(id.profilePath(), "/home/u/a.py");
  EXPECT_EQ(id.describe(), "/usr/bin/python3.11 running /home/u/a.py");
  id.script = {ScriptRef::Kind::Module, "pkg.tool", ""};
  EXPECT_EQ(id.key(), "build-id:ab12+module:pkg.tool");
  EXPECT_EQ(id.profilePath(), "/usr/bin/python3.11 -m pkg.tool");
  id.profileName = "big";
  EXPECT_EQ(id.profilePath(), "@big");
  EXPECT_EQ(id.key().find(' '), std::string::npos);
}

TEST(CommandIdentity, ShebangScriptsAreTheirInterpreterRunningThem) {
  const std::string sh = tempFile("#!/bin/sh\nexec true\n");
  const std::string env = tempFile("#!/usr/bin/env sh\nexec true\n");
  chmod(sh.c_str(), 0700);
  chmod(env.c_str(), 0700);
  hetopt::ProgramIdentity direct, viaEnv, shell;
  std::string error;
  ASSERT_TRUE(hetopt::commandIdentity({sh, "x"}, &direct, &error)) << error;
  ASSERT_TRUE(hetopt::commandIdentity({env}, &viaEnv, &error)) << error;
  ASSERT_TRUE(hetopt::commandIdentity({"/bin/sh", sh}, &shell, &error)) << error;
  char real[4096];
  ASSERT_NE(realpath("/bin/sh", real), nullptr);
  EXPECT_EQ(direct.path, real);  // the interpreter, not the script
  EXPECT_EQ(direct.script.kind, ScriptRef::Kind::File);
  EXPECT_EQ(direct.script.name, sh);
  EXPECT_EQ(direct.key(), shell.key()) << "./s.sh and sh ./s.sh are one program";
  EXPECT_EQ(viaEnv.path, real) << "env finds sh on PATH";
  EXPECT_EQ(viaEnv.script.name, env);
  EXPECT_NE(viaEnv.key(), direct.key());
  // A plain ELF program: itself, no script.
  hetopt::ProgramIdentity self;
  ASSERT_TRUE(hetopt::commandIdentity({"/proc/self/exe", "--gtest_filter=x"}, &self, &error))
      << error;
  EXPECT_EQ(self.script.kind, ScriptRef::Kind::None);
  unlink(sh.c_str());
  unlink(env.c_str());
}

}  // namespace
