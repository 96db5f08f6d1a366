// SPDX-License-Identifier: MIT
/** @file The programs a traced run builds; see program_capture.h.
 * The code copied at creation, kept at the first build; written at the shim's exit. */
#include "shim/core/program_capture.h"

#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "shim/core/program_code.h"

namespace hetopt::shim {

void ProgramCapture::callEnd(const CallRecord& call) {
  switch (call.id) {
    case api::ApiId::clCreateProgramWithSource:
    case api::ApiId::clCreateProgramWithBinary:
    case api::ApiId::clCreateProgramWithIL:
      return created(call);
    case api::ApiId::clBuildProgram:
      return built(call, false);
    case api::ApiId::clCompileProgram:
      return built(call, true);
    default:
      return;
  }
}

// A creation from source, binary or IL returned a program.
void ProgramCapture::created(const CallRecord& call) {
  const auto program = reinterpret_cast<cl_program>(static_cast<uintptr_t>(call.result));
  ProgramCode code;
  if (!program || !ProgramCode::of(call, &code)) return;
  std::string bytes = code.joined();
  std::lock_guard<std::mutex> lock(m_mutex);
  if (m_bytes + bytes.size() > kProgramRecipeMaxBytes) return;
  m_bytes += bytes.size();
  // A handle the driver gives again belongs to a program released meanwhile.
  for (Created& c : m_created)
    if (c.program == program) {
      m_bytes -= c.code.size();
      c.form = code.form;
      c.code = std::move(bytes);
      return;
    }
  m_created.push_back({program, code.form, std::move(bytes)});
}

// clBuildProgram(program, num_devices, device_list, options, ...) and clCompileProgram, however
// they ended: a build that fails natively must fail the same way built ahead.
void ProgramCapture::built(const CallRecord& call, bool compile) {
  const auto program = call.arg<cl_program>(0);
  const auto devices = call.arg<cl_uint>(1);
  const char* options = call.arg<const char*>(3);
  std::lock_guard<std::mutex> lock(m_mutex);
  for (size_t i = 0; i < m_created.size(); ++i) {
    if (m_created[i].program != program) continue;
    if (!compile && devices <= 1) {
      RecipeProgram p;
      p.form = m_created[i].form;
      p.code = std::move(m_created[i].code);
      p.hash = sourceHash(p.code.data(), p.code.size());
      p.options = options ? options : "";
      p.namedDevices = devices;
      m_recipe.programs.push_back(std::move(p));
    } else {
      m_bytes -= m_created[i].code.size();
    }
    m_created.erase(m_created.begin() + static_cast<std::ptrdiff_t>(i));
    return;
  }
}

ProgramRecipe ProgramCapture::recipe() {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_recipe;
}

void ProgramCapture::write(const std::string& tracePath) {
  struct stat st {};
  if (stat(tracePath.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;  // beside /dev/null: no
  const std::string path = tracePath + ".programs";
  const ProgramRecipe r = recipe();
  std::string error;
  if (r.programs.empty()) {
    unlink(path.c_str());  // a recipe from an earlier trace to the same file is not this run's
    return;
  }
  if (!writeProgramRecipeFile(path, r, &error))
    warn("trace mode: the programs built were not kept: %s", error.c_str());
}

void ProgramCapture::forkChild() {
  m_created.clear();
  m_recipe.programs.clear();
  m_bytes = 0;
}

}  // namespace hetopt::shim
