// SPDX-License-Identifier: MIT
/** @file The libraries an ICD loader loads; see icd_files.h.
 * The vendor files ocl-icd reads (OCL_ICD_VENDORS, else /etc/OpenCL/vendors), or the names given.
 */
#include "common/icd_files.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cctype>
#include <cstdlib>
#include <fstream>

namespace hetopt {

std::vector<std::string> icdLibraries(std::string* vendorsDir, const char* filenames) {
  std::vector<std::string> libs;
  const char* env = getenv("OCL_ICD_VENDORS");
  *vendorsDir = env && *env ? env : "/etc/OpenCL/vendors";
  auto readIcd = [&](const std::string& path) {
    std::ifstream in(path);
    std::string line;
    if (std::getline(in, line)) {
      while (!line.empty() && isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
      if (!line.empty()) libs.push_back(line);
    }
  };
  struct stat st;
  if (stat(vendorsDir->c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    readIcd(*vendorsDir);
  } else if (DIR* dir = opendir(vendorsDir->c_str())) {
    while (dirent* e = readdir(dir)) {
      std::string name = e->d_name;
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".icd") == 0)
        readIcd(*vendorsDir + "/" + name);
    }
    closedir(dir);
  }
  if (filenames) {
    std::string s = filenames;
    size_t start = 0;
    while (start < s.size()) {
      size_t colon = s.find(':', start);
      libs.push_back(
          s.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  return libs;
}

}  // namespace hetopt
