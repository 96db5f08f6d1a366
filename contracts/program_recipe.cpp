// SPDX-License-Identifier: MIT
/** @file Program recipes; see program_recipe.h.
 * Strict line parsing: a recipe reads back as the very bytes it was (the fuzzer checks it). */
#include "contracts/program_recipe.h"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>

#include "common/paths.h"
#include "contracts/run_record.h"

namespace hetopt {

uint64_t sourceHash(const char* data, size_t bytes, uint64_t h) {
  for (size_t i = 0; i < bytes; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 1099511628211ull;
  }
  return h;
}

const char* programFormName(ProgramForm form) {
  switch (form) {
    case ProgramForm::Binary:
      return "binary";
    case ProgramForm::IL:
      return "il";
    default:
      return "source";
  }
}

std::string ProgramRecipe::serialize() const {
  std::string s = "hetopt-programs " + std::to_string(kProgramRecipeVersion) + "\n";
  char line[128];
  for (const RecipeProgram& p : programs) {
    snprintf(line, sizeof line, "program %016" PRIx64 " %s %zu %zu %" PRIu32 "\n", p.hash,
             programFormName(p.form), p.code.size(), p.options.size(), p.namedDevices);
    s += line;
    s += p.code;
    s += p.options;
    s += '\n';
  }
  return s;
}

namespace {

// "program <16 hex> <form> <n> <n> <n>" exactly as serialize() writes it (one blank apart,
// lower-case hex, decimal without sign or leading zeros; version 1 has no form): a recipe reads
// back as the bytes it was.
bool parseProgramLine(const std::string& line, int version, uint64_t* hash, ProgramForm* form,
                      uint64_t* a, uint64_t* b, uint64_t* c) {
  const std::string head = "program ";
  if (line.compare(0, head.size(), head) != 0) return false;
  std::vector<std::string> words;
  for (size_t at = head.size(); at <= line.size();) {
    size_t blank = line.find(' ', at);
    if (blank == std::string::npos) blank = line.size();
    words.push_back(line.substr(at, blank - at));
    at = blank + 1;
  }
  *form = ProgramForm::Source;
  if (version >= 2) {
    if (words.size() < 2) return false;
    const ProgramForm forms[] = {ProgramForm::Source, ProgramForm::Binary, ProgramForm::IL};
    bool known = false;
    for (ProgramForm f : forms)
      if (words[1] == programFormName(f)) *form = f, known = true;
    if (!known) return false;
    words.erase(words.begin() + 1);
  }
  if (words.size() != 4 || words[0].size() != 16) return false;
  *hash = 0;
  for (char ch : words[0]) {
    const int digit = ch >= '0' && ch <= '9'   ? ch - '0'
                      : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                                               : -1;
    if (digit < 0) return false;
    *hash = *hash << 4 | static_cast<uint64_t>(digit);
  }
  uint64_t* out[] = {a, b, c};
  for (int i = 0; i < 3; ++i) {
    const std::string& w = words[static_cast<size_t>(i) + 1];
    if (w.empty() || w.size() > 12 || (w.size() > 1 && w[0] == '0')) return false;
    *out[i] = 0;
    for (char ch : w) {
      if (ch < '0' || ch > '9') return false;
      *out[i] = *out[i] * 10 + static_cast<uint64_t>(ch - '0');
    }
  }
  return true;
}

}  // namespace

bool parseProgramRecipe(const std::string& text, ProgramRecipe* out, std::string* error) {
  *out = ProgramRecipe{};
  int version = 0;
  for (int v = 1; v <= kProgramRecipeVersion; ++v) {
    const std::string head = "hetopt-programs " + std::to_string(v) + "\n";
    if (text.compare(0, head.size(), head) == 0) version = v;
  }
  if (!version) {
    *error = "not a version 1-" + std::to_string(kProgramRecipeVersion) + " program recipe";
    return false;
  }
  size_t at = text.find('\n') + 1;
  while (at < text.size()) {
    const size_t eol = text.find('\n', at);
    if (eol == std::string::npos) return *error = "a program line without its end", false;
    RecipeProgram p;
    uint64_t codeBytes = 0, optionBytes = 0, named = 0;
    const std::string line = text.substr(at, eol - at);
    if (!parseProgramLine(line, version, &p.hash, &p.form, &codeBytes, &optionBytes, &named) ||
        named > 1)
      return *error = "a malformed program line: " + line.substr(0, 80), false;
    p.namedDevices = static_cast<uint32_t>(named);
    at = eol + 1;
    if (codeBytes > text.size() - at || optionBytes > text.size() - at - codeBytes ||
        text.size() - at - codeBytes - optionBytes < 1 ||
        text[at + codeBytes + optionBytes] != '\n')
      return *error = "a program's code or options cut short", false;
    p.code = text.substr(at, codeBytes);
    p.options = text.substr(at + codeBytes, optionBytes);
    if (sourceHash(p.code.data(), p.code.size()) != p.hash)
      return *error = "a program's code does not match its hash", false;
    at += codeBytes + optionBytes + 1;
    out->programs.push_back(std::move(p));
  }
  return true;
}

bool readProgramRecipeFile(const std::string& path, ProgramRecipe* out, std::string* error) {
  std::string text;
  if (!readOwnFile(path, kProgramRecipeMaxBytes, "a program recipe", &text, error)) return false;
  if (parseProgramRecipe(text, out, error)) return true;
  *error = path + ": " + *error;
  return false;
}

bool writeProgramRecipeFile(const std::string& path, const ProgramRecipe& recipe,
                            std::string* error) {
  const std::string tmp = path + ".tmp";
  if (!writePrivateFile(tmp, recipe.serialize(), error)) {
    unlink(tmp.c_str());
    return false;
  }
  if (rename(tmp.c_str(), path.c_str()) == 0) return true;
  *error = "cannot rename " + tmp + " to " + path;
  unlink(tmp.c_str());
  return false;
}

std::string programRecipePath(const std::string& planPath) {
  return runRecordPrefix(planPath) + "programs";
}

}  // namespace hetopt
