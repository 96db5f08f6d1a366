// SPDX-License-Identifier: MIT
/** @file Programs built ahead; see programs_ahead.h.
 * One mutex and condition variable; no OpenCL call is made while the mutex is held. */
#include "shim/core/programs_ahead.h"

#include <chrono>
#include <system_error>

#include "common/clock.h"
#include "common/log.h"
#include "shim/core/below.h"
#include "shim/core/program_code.h"
#include "shim/core/state.h"

namespace hetopt::shim {
namespace {

// exit() waits this long for a build in progress (a cold NVIDIA build takes up to ~3 s).
constexpr int kExitWaitMs = 5000;

}  // namespace

ProgramsAhead::~ProgramsAhead() {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_stop = true;
  }
  if (m_builder.joinable()) m_builder.join();
}

void ProgramsAhead::start(cl_context context, cl_device_id device) {
  // Called once, by the driver thread; the program's threads read the context and device only
  // after seeing m_started, which is published last.
  if (!wanted() || m_started.load(std::memory_order_relaxed)) return;
  m_context = context;
  m_device = device;
  try {
    m_builder = std::thread([this] { build(); });
  } catch (const std::system_error&) {  // no thread to be had: the driver builds, as natively
    std::lock_guard<std::mutex> lock(m_mutex);
    m_counts.failure = "no thread for the builder";
    m_loaded = m_done = true;
  }
  m_started.store(true, std::memory_order_release);
}

void ProgramsAhead::build() {
  ScopedInternal internal;  // the builder's calls and allocations are hetopt's own
  ProgramRecipe recipe;
  std::string error;
  const bool read = readProgramRecipeFile(m_recipePath, &recipe, &error);
  auto buildFn = realClFunction<decltype(&clBuildProgram)>(api::ApiId::clBuildProgram);
  auto retain = realClFunction<decltype(&clRetainProgram)>(api::ApiId::clRetainProgram);
  auto release = realClFunction<decltype(&clReleaseProgram)>(api::ApiId::clReleaseProgram);
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (!read) m_counts.failure = error;
    if (read && !(buildFn && retain && release))
      m_counts.failure = "the OpenCL loader lacks program functions";
    if (m_counts.failure.empty())
      for (RecipeProgram& p : recipe.programs) m_entries.push_back(Entry{std::move(p)});
    m_counts.recipe = static_cast<unsigned>(m_entries.size());
    m_loaded = true;
  }
  m_changed.notify_all();
  if (!m_counts.failure.empty()) warn("kernels not built ahead: %s", m_counts.failure.c_str());
  for (size_t i = 0;; ++i) {
    std::unique_lock<std::mutex> lock(m_mutex);
    if (m_stop || i >= m_entries.size()) break;
    if (m_entries[i].state != State::Waiting) continue;
    m_entries[i].state = State::Creating;
    m_inDriver = true;
    const RecipeProgram& r = m_entries[i].recipe;  // never changes once loaded
    lock.unlock();
    cl_int err = CL_SUCCESS;
    cl_program program = create(r, &err);
    // Held through the build: once handed over, the program may release its reference at once.
    if (program && err == CL_SUCCESS && retain(program) != CL_SUCCESS) err = CL_INVALID_PROGRAM;
    lock.lock();
    Entry& e = m_entries[i];
    if (!program || err != CL_SUCCESS) {
      e.state = State::Failed;
      m_inDriver = false;
      lock.unlock();
      m_changed.notify_all();
      debug("program %zu not created ahead (OpenCL status %d)", i, err);
      continue;
    }
    e.program = program;
    e.state = State::Building;
    lock.unlock();
    m_changed.notify_all();
    const cl_int status =
        buildFn(program, r.namedDevices ? 1 : 0, r.namedDevices ? &m_device : nullptr,
                r.options.c_str(), nullptr, nullptr);
    release(program);
    lock.lock();
    e.status = status;
    e.state = State::Built;
    ++m_counts.builtAhead;
    m_inDriver = false;
    lock.unlock();
    m_changed.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_done = true;
    m_inDriver = false;
  }
  m_changed.notify_all();
}

cl_program ProgramsAhead::create(const RecipeProgram& r, cl_int* err) {
  using api::ApiId;
  const size_t bytes = r.code.size();
  if (r.form == ProgramForm::Binary) {
    auto fn =
        realClFunction<decltype(&clCreateProgramWithBinary)>(ApiId::clCreateProgramWithBinary);
    const auto* binary = reinterpret_cast<const unsigned char*>(r.code.data());
    cl_int binaryStatus = CL_SUCCESS;
    return fn ? fn(m_context, 1, &m_device, &bytes, &binary, &binaryStatus, err) : nullptr;
  }
  if (r.form == ProgramForm::IL) {
    // OpenCL 2.1; a driver without it (NVIDIA's) refuses, and the program's own call gets the
    // same answer from it.
    auto fn = realClFunction<decltype(&clCreateProgramWithIL)>(ApiId::clCreateProgramWithIL);
    return fn ? fn(m_context, r.code.data(), bytes, err) : nullptr;
  }
  auto fn = realClFunction<decltype(&clCreateProgramWithSource)>(ApiId::clCreateProgramWithSource);
  const char* text = r.code.data();
  return fn ? fn(m_context, 1, &text, &bytes, err) : nullptr;
}

void ProgramsAhead::callBegin(CallRecord& call) {
  if (!m_started.load(std::memory_order_acquire)) return;
  switch (call.id) {
    case api::ApiId::clCreateProgramWithSource:
    case api::ApiId::clCreateProgramWithBinary:
    case api::ApiId::clCreateProgramWithIL:
      return handOver(call);
    case api::ApiId::clBuildProgram:
      return answerBuild(call, false);
    case api::ApiId::clCompileProgram:
      return answerBuild(call, true);
    default:
      return;
  }
}

void ProgramsAhead::awaitState(std::unique_lock<std::mutex>& lock, Entry& e, bool built) {
  auto settled = [&] {
    return e.state != State::Creating && (!built || e.state != State::Building);
  };
  if (settled()) return;
  const double start = monotonicMs();
  m_changed.wait(lock, settled);
  m_counts.waitMs += monotonicMs() - start;
}

// A creation from source, one device's binary or IL, in the early context.
void ProgramsAhead::handOver(CallRecord& call) {
  ProgramCode code;
  // Invalid arguments get the driver's error, as natively.
  if (!ProgramCode::of(call, &code) || code.context != m_context) return;
  if (code.form == ProgramForm::Binary && code.device != m_device) return;
  size_t bytes = 0;
  const uint64_t hash = code.hash(&bytes);
  std::unique_lock<std::mutex> lock(m_mutex);
  m_changed.wait(lock, [this] { return m_loaded || m_stop; });
  for (Entry& e : m_entries) {
    if (e.handed || e.recipe.form != code.form || e.recipe.hash != hash ||
        e.recipe.code.size() != bytes || !code.equals(e.recipe.code))
      continue;
    awaitState(lock, e, false);  // creation takes microseconds; the build is waited for later
    if (e.state == State::Waiting) {
      e.state = State::NotReached;  // the builder has not come to it: the driver makes it now
      ++m_counts.notReached;
      return;
    }
    if (e.state != State::Building && e.state != State::Built) continue;
    e.handed = true;
    ++m_counts.handedOver;
    call.result = reinterpret_cast<uintptr_t>(e.program);
    call.skip = true;
    if (auto* err = call.arg<cl_int*>(ProgramCode::errorArg(code.form))) *err = CL_SUCCESS;
    if (code.form == ProgramForm::Binary)
      if (auto* binaryStatus = call.arg<cl_int*>(5)) *binaryStatus = CL_SUCCESS;
    return;
  }
}

ProgramsAhead::Entry* ProgramsAhead::handedUnbuilt(cl_program program) {
  for (Entry& e : m_entries)
    if (e.handed && !e.answered && e.program == program) return &e;
  return nullptr;
}

// clBuildProgram(program, num_devices, device_list, options, pfn_notify, user_data), and
// clCompileProgram(program, num_devices, device_list, options, ...): a build already running
// makes the driver refuse another, so both wait for it.
void ProgramsAhead::answerBuild(CallRecord& call, bool compile) {
  const auto program = call.arg<cl_program>(0);
  std::unique_lock<std::mutex> lock(m_mutex);
  Entry* e = handedUnbuilt(program);
  if (!e) return;
  awaitState(lock, *e, true);
  e->answered = true;
  const auto devices = call.arg<cl_uint>(1);
  const auto* list = call.arg<const cl_device_id*>(2);
  const char* options = call.arg<const char*>(3);
  const bool sameDevices = (devices == 0 && !list) || (devices == 1 && list && *list == m_device);
  if (compile || !sameDevices || e->recipe.options != (options ? options : "")) {
    ++m_counts.rebuilt;  // the driver builds it again, the program's way
    return;
  }
  ++m_counts.buildsAnswered;
  const cl_int status = e->status;
  lock.unlock();
  using Notify = void(CL_CALLBACK*)(cl_program, void*);
  if (auto notify = call.arg<Notify>(4)) notify(program, call.arg<void*>(5));
  call.result = static_cast<uint64_t>(static_cast<int64_t>(status));
  call.skip = true;
}

void ProgramsAhead::beforeExit() {
  if (!m_started.load(std::memory_order_acquire)) return;
  std::vector<cl_program> unused;
  {
    std::unique_lock<std::mutex> lock(m_mutex);
    m_stop = true;
    if (!m_changed.wait_for(lock, std::chrono::milliseconds(kExitWaitMs),
                            [this] { return !m_inDriver; }))
      debug("exit() went ahead with a kernel build ahead still in progress");
    for (Entry& e : m_entries)
      if (!e.handed && e.state == State::Built) {
        unused.push_back(e.program);
        e.handed = true;  // released below: never handed over, never released twice
      }
  }
  auto release = realClFunction<decltype(&clReleaseProgram)>(api::ApiId::clReleaseProgram);
  ScopedInternal internal;
  for (cl_program p : unused)
    if (release) release(p);
}

void ProgramsAhead::forkChild() {
  // The child has none of the parent's threads (the mutex is held: lockForFork): the builder, if
  // any, is gone, and the parent's programs are not the child's.
  m_stop = true;
  m_loaded = true;
  m_inDriver = false;
  m_entries.clear();
}

ProgramsAhead::Counts ProgramsAhead::counts() {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_counts;
}

void ProgramsAhead::awaitBuilder() {
  std::unique_lock<std::mutex> lock(m_mutex);
  m_changed.wait(lock, [this] { return m_done || !m_started; });
}

}  // namespace hetopt::shim
