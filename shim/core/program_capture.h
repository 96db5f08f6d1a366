// SPDX-License-Identifier: MIT
/**
 * @file Trace mode: the programs the traced run creates (from source, one device's binary or IL)
 * and builds, kept for `hetopt run` to build ahead (contracts/program_recipe.h) and written beside
 * the trace at exit. A program enters the recipe at its first build, in build order, with that
 * build's options; one first compiled (clCompileProgram), or built for several devices, does not.
 *
 * Thread safety: any member from any thread, under one mutex that is never held across a call
 * into OpenCL or the program; the fork protocol holds it across fork().
 */
#pragma once
#include <CL/cl.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "contracts/program_recipe.h"
#include "shim/core/interceptor.h"

namespace hetopt::shim {

class ProgramCapture {
 public:
  /// callEnd of any call: program creations, clBuildProgram and clCompileProgram are kept.
  void callEnd(const CallRecord& call);
  /// At exit: writes `<tracePath>.programs` beside a trace that is a regular file when a program
  /// was built (else removes a stale one).
  void write(const std::string& tracePath);
  ProgramRecipe recipe();

  void lockForFork() { m_mutex.lock(); }
  void unlockAfterFork() { m_mutex.unlock(); }
  /// A forked child (mutex held): its parent's programs are in its parent's recipe.
  void forkChild();

 private:
  struct Created {
    cl_program program;
    ProgramForm form;
    std::string code;
  };
  void created(const CallRecord& call);
  void built(const CallRecord& call, bool compile);

  std::mutex m_mutex;
  std::vector<Created> m_created;  ///< created, not built yet
  ProgramRecipe m_recipe;
  size_t m_bytes = 0;  ///< code kept: at most kProgramRecipeMaxBytes in all
};

}  // namespace hetopt::shim
