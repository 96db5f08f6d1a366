// SPDX-License-Identifier: MIT
/**
 * @file Writes the seed corpora of the plan, program recipe and DB fuzz targets with hetopt's own
 * writers: `plan DIR` (plans `hetopt run` makes, and field seeds), `recipe DIR` (program recipes
 * as the trace mode writes them), `db DIR` (DBs written by storeRun/storeProfile, row-edit seeds).
 */
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "analyzer/planner.h"
#include "common/paths.h"
#include "contracts/program_recipe.h"
#include "tests/fuzz/samples.h"

using namespace hetopt;

namespace {

bool writeRaw(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  return static_cast<bool>(out);
}

// A plan the planner makes when no site pays but the start-up does: `startup-only`, last.
bool startupOnlyPlan(analyzer::AppProfile profile, const std::string& dir, std::string* error) {
  profile.candidates.clear();
  profile.untracked.clear();
  profile.contextsCreated = profile.firstContextDevices = 1;
  profile.startup = {600'000'000, 970'000'000, 365'000'000, 276'000'000, 40'000'000, 990'000'000};
  analyzer::PlanOptions options;
  options.recipePath = "/home/user/.cache/hetopt/plans/solver.programs";
  options.recipePrograms = 2;
  Plan plan;
  return analyzer::buildPlan(profile, options, nullptr, &plan, error) &&
         writePlanFile(dir + "/startup-only.plan", plan, error);
}

bool planCorpus(const std::string& dir, std::string* error) {
  analyzer::AppProfile profile = fuzz::sampleProfile();
  Plan plan;
  analyzer::PlanOptions options;
  options.forcedPolicy = "hybrid";
  if (!analyzer::buildPlan(profile, options, nullptr, &plan, error)) return false;
  if (!writePlanFile(dir + "/forced.plan", plan, error)) return false;
  plan.programPath = "/home/user/My Programs/solver";  // a blank in the path
  PlanSite extra;
  extra.key = plan.sites.back().key, extra.minBytes = 4096, extra.maxBytes = 1 << 20;
  plan.sites.push_back(extra);
  if (!writePlanFile(dir + "/blank.plan", plan, error)) return false;
  plan.earlyContext = true;
  plan.buildAheadRecipe = "/home/user/.cache/hetopt/plans/my solver.programs";
  plan.buildAheadPrograms = 3;
  plan.buildAheadNs = 12000000;
  if (!writePlanFile(dir + "/build-ahead.plan", plan, error)) return false;
  if (!startupOnlyPlan(profile, dir, error)) return false;
  // Field seed: 'S' path 0x01 key 0x01 device 0x01 policy, pool bytes, (key, min, shift, max)...
  std::string fields = "S" + plan.programPath + '\x01' + plan.programKey + '\x01' + plan.device +
                       '\x01' + plan.poolPolicy + '\x01';
  fields.append(reinterpret_cast<const char*>(&plan.poolBytes), 8);
  for (const PlanSite& s : plan.sites) {
    fields.append(reinterpret_cast<const char*>(&s.key), 8);
    fields.append(reinterpret_cast<const char*>(&s.minBytes), 8);
    fields += '\0';
    fields.append(reinterpret_cast<const char*>(&s.maxBytes), 8);
  }
  return writeRaw(dir + "/fields.seed", fields) || (*error = "cannot write " + dir, false);
}

bool recipeCorpus(const std::string& dir, std::string* error) {
  ProgramRecipe recipe;
  for (const char* source : {"__kernel void k(__global int* x) { x[0] = 1; }\n", "", "a\nb"}) {
    RecipeProgram p;
    p.code = source;
    p.hash = sourceHash(p.code.data(), p.code.size());
    p.form = static_cast<ProgramForm>(recipe.programs.size());  // source, binary, IL
    p.options = recipe.programs.empty() ? "-DN=4 -cl-fast-relaxed-math" : "";
    p.namedDevices = recipe.programs.size() % 2;
    recipe.programs.push_back(p);
  }
  return writeProgramRecipeFile(dir + "/three.programs", recipe, error);
}

bool dbCorpus(const std::string& dir, std::string* error) {
  if (!fuzz::writeSampleDb(dir + "/sample.db", error)) return false;
  {
    // Only a characterization (what `hetopt characterize` leaves before any trace).
    unlink((dir + "/platform.db").c_str());
    std::unique_ptr<Db> db = Db::open(dir + "/platform.db", Db::Mode::ReadWriteCreate, error);
    characterize::CharacterizationRun run = fuzz::sampleRun();
    if (!db || !characterize::storeRun(*db, &run, error)) return false;
  }
  // Row edits of the sample DB: none, and one integer set in the first table's first row.
  std::string edit = std::string("U") + '\0' + '\0' + '\0' + '\0' + std::string(8, '\xff');
  if (!writeRaw(dir + "/unchanged.edits", "U") || !writeRaw(dir + "/one.edits", edit)) {
    *error = "cannot write " + dir;
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc == 3 ? argv[1] : "";
  if (what != "plan" && what != "recipe" && what != "db") {
    fprintf(stderr, "usage: fuzz_corpus plan|recipe|db DIR\n");
    return 2;
  }
  const std::string dir = argv[2];
  std::string error;
  bool ok = makePrivateDirs(dir, &error) && (what == "plan"     ? planCorpus(dir, &error)
                                             : what == "recipe" ? recipeCorpus(dir, &error)
                                                                : dbCorpus(dir, &error));
  if (!ok) {
    fprintf(stderr, "fuzz_corpus: %s\n", error.c_str());
    return 1;
  }
  return 0;
}
