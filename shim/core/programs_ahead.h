// SPDX-License-Identifier: MIT
/**
 * @file Optimize mode: the program's kernels built ahead. With an early context, a thread of
 * hetopt's creates and builds each program of the recipe (contracts/program_recipe.h) in it, in
 * the traced order, while the program still reads and computes its input. The program's creation
 * of the same bytes (source, binary or IL) in that context gets the program built ahead; its
 * clBuildProgram waits only for the build that is running and returns that build's status
 * (calling its callback), or with other options or devices goes to the driver, which builds again.
 * Anything else, and every program the builder has not reached yet, is the driver's as usual.
 */
#pragma once
#include <CL/cl.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "contracts/program_recipe.h"
#include "shim/core/interceptor.h"

namespace hetopt::shim {

class ProgramsAhead {
 public:
  /// What the run did, for the stats.
  struct Counts {
    unsigned recipe = 0;          ///< programs in the recipe (once read)
    unsigned builtAhead = 0;      ///< builds the builder finished
    unsigned handedOver = 0;      ///< programs the program got from its creation call
    unsigned buildsAnswered = 0;  ///< of those, clBuildProgram answered with the build ahead
    unsigned rebuilt = 0;         ///< handed over, then built by the driver with other options
    unsigned notReached = 0;      ///< asked for before the builder reached them: the driver's
    double waitMs = 0;            ///< the program's threads waited for builds in progress
    std::string failure;          ///< why nothing was built (an unreadable recipe), else empty
  };

  ProgramsAhead() = default;
  /// Stops and joins the builder (tests; the shim keeps its part for the process's life).
  ~ProgramsAhead();
  ProgramsAhead(const ProgramsAhead&) = delete;
  ProgramsAhead& operator=(const ProgramsAhead&) = delete;

  /// Before any thread: the recipe file (empty: nothing is built ahead).
  void configure(std::string recipePath) { m_recipePath = std::move(recipePath); }
  bool wanted() const { return !m_recipePath.empty(); }
  /// The early context exists: the builder starts, in `context` for `device`. Once.
  void start(cl_context context, cl_device_id device);

  /// callBegin of the program creations, clBuildProgram and clCompileProgram (others are
  /// ignored). May answer the call (CallRecord::skip).
  void callBegin(CallRecord& call);

  /// exit(): no new build starts; waits (bounded) for the one in progress, as the driver's exit
  /// handlers must not run under it, and releases the programs never handed over.
  void beforeExit();
  /// The fork protocol (lifecycle.cpp): the mutex is held across fork(); never across an OpenCL
  /// call.
  void lockForFork() { m_mutex.lock(); }
  void unlockAfterFork() { m_mutex.unlock(); }
  /// In a forked child (mutex held): the parent's programs are none of its own; nothing is handed
  /// over.
  void forkChild();

  Counts counts();
  /// Tests: waits until the builder has gone through the recipe.
  void awaitBuilder();

 private:
  enum class State : uint8_t { Waiting, Creating, Building, Built, NotReached, Failed };
  struct Entry {
    RecipeProgram recipe;
    State state = State::Waiting;
    cl_program program = nullptr;
    cl_int status = CL_SUCCESS;
    bool handed = false;    ///< the program holds it (and our reference)
    bool answered = false;  ///< the program's first build call came
  };

  void build();
  /// Builder: creates the recipe's program in the early context (null when the driver refuses).
  cl_program create(const RecipeProgram& r, cl_int* err);
  void handOver(CallRecord& call);
  void answerBuild(CallRecord& call, bool compile);
  /// The entry handed over as `program` whose build the program has not asked for yet, or null.
  Entry* handedUnbuilt(cl_program program);
  /// Waits (lock held) while `e` is being created, or with `built` also built; the program's wait
  /// is counted.
  void awaitState(std::unique_lock<std::mutex>& lock, Entry& e, bool built);

  std::string m_recipePath;
  cl_context m_context = nullptr;  ///< set once by start(), before the builder runs
  cl_device_id m_device = nullptr;
  std::atomic<bool> m_started{false};
  std::mutex m_mutex;
  std::condition_variable m_changed;
  bool m_loaded = false;  ///< the recipe was read (or could not be)
  bool m_stop = false;    ///< exit or fork: no new build starts
  bool m_done = false;    ///< the builder went through the recipe
  bool m_inDriver = false;
  std::vector<Entry> m_entries;
  Counts m_counts;
  std::thread m_builder;
};

}  // namespace hetopt::shim
