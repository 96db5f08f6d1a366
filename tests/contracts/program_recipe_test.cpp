// SPDX-License-Identifier: MIT
/** @file The program recipe format (contracts/program_recipe.h): what the shim builds ahead. */
#include "contracts/program_recipe.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace hetopt {
namespace {

RecipeProgram program(std::string code, std::string options, uint32_t named,
                      ProgramForm form = ProgramForm::Source) {
  RecipeProgram p;
  p.hash = sourceHash(code.data(), code.size());
  p.form = form;
  p.code = std::move(code);
  p.options = std::move(options);
  p.namedDevices = named;
  return p;
}

TEST(ProgramRecipe, RoundTripsCodeHoldingAnyByteInEveryForm) {
  ProgramRecipe in, out;
  in.programs.push_back(program("__kernel void k(__global int* a) { a[0] = 1; }\n", "-DN=4", 1));
  in.programs.push_back(program(std::string("a\0b\nprogram 0 0 0 0\n", 20), "", 0));
  in.programs.push_back(program("", "-cl-fast-relaxed-math", 0));
  in.programs.push_back(program(std::string("\x7f"
                                            "ELF\0\0\n",
                                            7),
                                "", 1, ProgramForm::Binary));
  in.programs.push_back(program(std::string("\x03\x02\x23\x07\0\n", 6), "-DX", 0, ProgramForm::IL));
  std::string error;
  const std::string text = in.serialize();
  EXPECT_EQ(text.compare(0, 18, "hetopt-programs 2\n"), 0);
  EXPECT_NE(text.find(" binary 7 0 1\n"), std::string::npos) << text;
  ASSERT_TRUE(parseProgramRecipe(text, &out, &error)) << error;
  ASSERT_EQ(out.programs.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(out.programs[i].form, in.programs[i].form);
    EXPECT_EQ(out.programs[i].code, in.programs[i].code);
    EXPECT_EQ(out.programs[i].options, in.programs[i].options);
    EXPECT_EQ(out.programs[i].namedDevices, in.programs[i].namedDevices);
    EXPECT_EQ(out.programs[i].hash, in.programs[i].hash);
  }
  EXPECT_EQ(out.serialize(), in.serialize());
}

TEST(ProgramRecipe, HashIsOfTheBytesAsOneString) {
  // Two strings are one source: the hash of a concatenation continues from the first part's.
  const std::string a = "__kernel void k() {", b = "}";
  EXPECT_EQ(sourceHash(b.data(), b.size(), sourceHash(a.data(), a.size())),
            sourceHash((a + b).data(), a.size() + b.size()));
  EXPECT_NE(sourceHash("ab", 2), sourceHash("ba", 2));
}

TEST(ProgramRecipe, RefusesWhatWasNotWrittenWhole) {
  ProgramRecipe in, out;
  in.programs.push_back(program("__kernel void k() {}", "-DX", 0));
  const std::string good = in.serialize();
  std::string error;
  EXPECT_FALSE(parseProgramRecipe(good.substr(0, good.size() - 2), &out, &error));
  EXPECT_NE(error.find("cut short"), std::string::npos) << error;
  std::string tampered = good;
  tampered[tampered.find("void")] = 'V';  // the source changed under its hash
  EXPECT_FALSE(parseProgramRecipe(tampered, &out, &error));
  EXPECT_NE(error.find("hash"), std::string::npos) << error;
  EXPECT_FALSE(parseProgramRecipe("hetopt-programs 3\n", &out, &error));
  EXPECT_FALSE(parseProgramRecipe("hetopt-programs 1\nprogram zz 1 0 0\nx\n", &out, &error));
  EXPECT_FALSE(parseProgramRecipe("hetopt-programs 1\nprogram 0 1 0 2\nx\n", &out, &error));
  const std::string x = "program " + std::string(15, '0') + "0";
  EXPECT_FALSE(parseProgramRecipe("hetopt-programs 2\n" + x + " elf 1 0 0\nx\n", &out, &error));
  EXPECT_FALSE(parseProgramRecipe("hetopt-programs 2\n" + x + " 1 0 0\nx\n", &out, &error));
  EXPECT_FALSE(parseProgramRecipe("hetopt-programs 1\n" + x + " source 1 0 0\nx\n", &out, &error));
  EXPECT_TRUE(parseProgramRecipe("hetopt-programs 1\n", &out, &error)) << error;
  EXPECT_TRUE(out.programs.empty());
}

// Recipes kept beside plans before binaries and IL were (version 1: sources, no form word).
TEST(ProgramRecipe, ReadsVersionOneAsSources) {
  ProgramRecipe out;
  std::string error;
  const std::string code = "__kernel void k() {}";
  char line[96];
  snprintf(line, sizeof line, "program %016llx %zu 3 1\n",
           static_cast<unsigned long long>(sourceHash(code.data(), code.size())), code.size());
  ASSERT_TRUE(
      parseProgramRecipe("hetopt-programs 1\n" + std::string(line) + code + "-DX\n", &out, &error))
      << error;
  ASSERT_EQ(out.programs.size(), 1u);
  EXPECT_EQ(out.programs[0].form, ProgramForm::Source);
  EXPECT_EQ(out.programs[0].code, code);
  EXPECT_EQ(out.programs[0].options, "-DX");
  EXPECT_EQ(out.programs[0].namedDevices, 1u);
}

TEST(ProgramRecipe, FileIsPrivateAndBesideThePlan) {
  char dir[] = "/tmp/hetopt-recipe-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string plan = std::string(dir) + "/build-id_ab.plan";
  const std::string path = programRecipePath(plan);
  EXPECT_EQ(path, std::string(dir) + "/build-id_ab.programs");
  ProgramRecipe in, out;
  in.programs.push_back(program("__kernel void k() {}", "", 1));
  std::string error;
  ASSERT_TRUE(writeProgramRecipeFile(path, in, &error)) << error;
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_TRUE(readProgramRecipeFile(path, &out, &error)) << error;
  EXPECT_EQ(out.programs.size(), 1u);
  chmod(path.c_str(), 0622);  // others may write it: not read
  EXPECT_FALSE(readProgramRecipeFile(path, &out, &error));
  unlink(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace hetopt
