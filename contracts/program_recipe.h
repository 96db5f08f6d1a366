// SPDX-License-Identifier: MIT
/**
 * @file The programs a traced run built, from source, a binary or IL, in the order it built them:
 * what `hetopt run` builds ahead on the early context (shim/core/programs_ahead.h). Written by the
 * trace mode beside its trace (`<trace>.programs`), kept by `hetopt trace` beside the program's
 * plans, read by the shim. The code is the program's own bytes, so the file is private (0600).
 */
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace hetopt {

/// Written; version 1 (sources only, no form word) is still read.
inline constexpr int kProgramRecipeVersion = 2;
/// A recipe file larger than this is refused (sources of real programs are a few MiB at most).
inline constexpr size_t kProgramRecipeMaxBytes = 64u << 20;

/// How the program was created: clCreateProgramWithSource, clCreateProgramWithBinary (for one
/// device) or clCreateProgramWithIL.
enum class ProgramForm : uint8_t { Source, Binary, IL };
const char* programFormName(ProgramForm form);

/// One program: the bytes it was created from, and its first build's options.
struct RecipeProgram {
  uint64_t hash = 0;  ///< sourceHash(code)
  ProgramForm form = ProgramForm::Source;
  /// The strings clCreateProgramWithSource was given, concatenated; the one device's binary; or
  /// the IL.
  std::string code;
  std::string options;  ///< clBuildProgram's options ("" for none)
  /// The build named its device (1) or none, all of the context's (0).
  uint32_t namedDevices = 0;
};

struct ProgramRecipe {
  std::vector<RecipeProgram> programs;

  /// "hetopt-programs 2\n", then per program "program <hash> <form> <code bytes> <option bytes>
  /// <named devices>\n" followed by the code, the options and a newline (lengths, not escapes:
  /// code holds any byte).
  std::string serialize() const;
};

/// FNV-1a of the bytes: the key a program's creation is matched by (then compared byte for byte).
uint64_t sourceHash(const char* data, size_t bytes, uint64_t h = 1469598103934665603ull);

/// Parses a recipe; false with a one-line *error on any malformed input (a hash that does not match
/// its source included).
bool parseProgramRecipe(const std::string& text, ProgramRecipe* out, std::string* error);
/// Reads one (refusing links, others' files, files others can write, and files over the limit).
bool readProgramRecipeFile(const std::string& path, ProgramRecipe* out, std::string* error);
/// Writes it 0600 through a temporary file renamed into place.
bool writeProgramRecipeFile(const std::string& path, const ProgramRecipe& recipe,
                            std::string* error);
/// Where `hetopt trace` keeps the recipe of the program whose plans are at `planPath`
/// ("<planPath minus .plan>.programs").
std::string programRecipePath(const std::string& planPath);

}  // namespace hetopt
