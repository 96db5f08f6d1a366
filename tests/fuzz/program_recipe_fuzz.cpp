// SPDX-License-Identifier: MIT
/**
 * @file libFuzzer target for the program recipe (contracts/program_recipe.h), which the shim reads
 * inside other people's processes to build their kernels ahead. Any bytes must be accepted or
 * rejected with a message, never crash; an accepted recipe writes back as the same bytes (one of
 * version 1 as version 2, which reads back as the same recipe).
 */
#include <cstddef>
#include <cstdint>
#include <string>

#include "contracts/program_recipe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  hetopt::ProgramRecipe recipe;
  std::string error;
  if (!hetopt::parseProgramRecipe(text, &recipe, &error)) {
    if (error.empty()) __builtin_trap();  // a rejection must say why
    return 0;
  }
  const std::string written = recipe.serialize();
  if (text.compare(0, 18, "hetopt-programs 1\n") == 0) {
    hetopt::ProgramRecipe again;
    if (!hetopt::parseProgramRecipe(written, &again, &error) || again.serialize() != written)
      __builtin_trap();
    return 0;
  }
  if (written != text) __builtin_trap();
  return 0;
}
