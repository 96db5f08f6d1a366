// SPDX-License-Identifier: MIT
/** @file A temporary directory for tests, removed with its contents. */
#pragma once
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace hetopt::testing {

/// mkdtemp under $TMPDIR (or /tmp), removed with its contents at destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/hetopt-test-XXXXXX";
    char* made = mkdtemp(tmpl.data());
    m_path = made ? made : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!m_path.empty()) std::filesystem::remove_all(m_path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return m_path; }
  std::string file(const std::string& name) const { return m_path + "/" + name; }

 private:
  std::string m_path;
};

}  // namespace hetopt::testing
