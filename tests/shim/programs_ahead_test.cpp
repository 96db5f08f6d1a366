// SPDX-License-Identifier: MIT
/**
 * @file The program's kernels built ahead (shim/core/programs_ahead.h), against a fake OpenCL
 * (fake_opencl.h): a program of the same bytes (source or binary) in the same context is handed
 * over and its build answered with the build ahead; other bytes, another context or device, other
 * options and a program not reached yet go to the driver; a failed build fails the same way; the
 * unused are released.
 */
#include "shim/core/programs_ahead.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "common/paths.h"
#include "tests/shim/fake_opencl.h"

namespace hetopt::shim {
namespace {

using testing::FakeOpenCL;

const auto kContext = reinterpret_cast<cl_context>(0x5000);
const auto kOtherContext = reinterpret_cast<cl_context>(0x5001);
const std::string kSourceA = "__kernel void a(__global int* x) { x[0] = 1; }\n";
const std::string kSourceB = "__kernel void b(__global int* x) { x[0] = 2; }\n";

template <typename T>
uint64_t arg(T v) {
  if constexpr (std::is_pointer_v<T>)
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(v));
  else
    return static_cast<uint64_t>(v);
}

/// clCreateProgramWithSource(context, count, strings, lengths, &err), the source in `parts`.
struct CreateCall {
  std::vector<std::string> parts;
  std::vector<const char*> strings;
  uint64_t args[5];
  CallRecord call{};
  cl_int err = -1;
  CreateCall(cl_context context, std::vector<std::string> p) : parts(std::move(p)) {
    for (const std::string& s : parts) strings.push_back(s.c_str());
    args[0] = arg(context);
    args[1] = parts.size();
    args[2] = arg(strings.data());
    args[3] = 0;  // NUL-terminated strings
    args[4] = arg(&err);
    call.id = api::ApiId::clCreateProgramWithSource;
    call.numArgs = 5;
    call.args = args;
  }
  cl_program program() const { return reinterpret_cast<cl_program>(call.result); }
};

/// clCreateProgramWithBinary(context, 1, &device, lengths, binaries, status, &err).
struct CreateFromBinaryCall {
  std::string binary;
  const unsigned char* binaries[1];
  size_t lengths[1];
  cl_device_id device;
  uint64_t args[7];
  CallRecord call{};
  cl_int status = -1, err = -1;
  CreateFromBinaryCall(cl_context context, cl_device_id d, std::string b)
      : binary(std::move(b)), device(d) {
    binaries[0] = reinterpret_cast<const unsigned char*>(binary.data());
    lengths[0] = binary.size();
    const uint64_t values[7] = {arg(context), 1,        arg(&device), arg(lengths), arg(binaries),
                                arg(&status), arg(&err)};
    std::copy(values, values + 7, args);
    call.id = api::ApiId::clCreateProgramWithBinary;
    call.numArgs = 7;
    call.args = args;
  }
  cl_program program() const { return reinterpret_cast<cl_program>(call.result); }
};

int notified = 0;
void CL_CALLBACK onBuilt(cl_program, void* data) { notified += *static_cast<int*>(data); }

/// clBuildProgram(program, n, devices, options, notify, data).
struct BuildCall {
  uint64_t args[6];
  CallRecord call{};
  BuildCall(cl_program program, const char* options, cl_uint n = 0,
            const cl_device_id* devices = nullptr,
            void(CL_CALLBACK* notify)(cl_program, void*) = nullptr, void* data = nullptr) {
    args[0] = arg(program);
    args[1] = n;
    args[2] = arg(devices);
    args[3] = arg(options);
    args[4] = arg(notify);
    args[5] = arg(data);
    call.id = api::ApiId::clBuildProgram;
    call.numArgs = 6;
    call.args = args;
  }
  cl_int status() const { return static_cast<cl_int>(static_cast<int64_t>(call.result)); }
};

class ProgramsAheadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/hetopt-ahead-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    m_dir = dir;
    m_recipe = m_dir + "/app.programs";
  }
  void TearDown() override {
    unlink(m_recipe.c_str());
    rmdir(m_dir.c_str());
  }
  void writeRecipe(std::vector<std::pair<std::string, std::string>> programs,
                   ProgramForm form = ProgramForm::Source) {
    ProgramRecipe r;
    for (auto& [code, options] : programs) {
      RecipeProgram p;
      p.form = form;
      p.code = code;
      p.hash = sourceHash(code.data(), code.size());
      p.options = options;
      r.programs.push_back(p);
    }
    std::string error;
    ASSERT_TRUE(writeProgramRecipeFile(m_recipe, r, &error)) << error;
  }
  void start(ProgramsAhead& ahead) {
    ahead.configure(m_recipe);
    ahead.start(kContext, FakeOpenCL::kDevice);
  }

  FakeOpenCL m_fake;
  std::string m_dir, m_recipe;
};

TEST_F(ProgramsAheadTest, HandsOverTheSameSourceAndAnswersItsBuild) {
  writeRecipe({{kSourceA, "-DN=4"}});
  ProgramsAhead ahead;
  start(ahead);
  ahead.awaitBuilder();
  EXPECT_EQ(FakeOpenCL::programsMade, 1);
  EXPECT_EQ(FakeOpenCL::programBuilds, 1);
  // The same bytes in two strings are the same source.
  CreateCall create(kContext, {kSourceA.substr(0, 10), kSourceA.substr(10)});
  ahead.callBegin(create.call);
  ASSERT_TRUE(create.call.skip);
  EXPECT_EQ(create.err, CL_SUCCESS);
  EXPECT_NE(create.program(), nullptr);
  int weight = 1;
  notified = 0;
  BuildCall build(create.program(), "-DN=4", 0, nullptr, &onBuilt, &weight);
  ahead.callBegin(build.call);
  EXPECT_TRUE(build.call.skip);
  EXPECT_EQ(build.status(), CL_SUCCESS);
  EXPECT_EQ(notified, 1) << "the program's callback is called once";
  EXPECT_EQ(FakeOpenCL::programBuilds, 1) << "not built a second time";
  // A second build of it is the driver's.
  BuildCall again(create.program(), "-DN=4");
  ahead.callBegin(again.call);
  EXPECT_FALSE(again.call.skip);
  const ProgramsAhead::Counts c = ahead.counts();
  EXPECT_EQ(c.recipe, 1u);
  EXPECT_EQ(c.builtAhead, 1u);
  EXPECT_EQ(c.handedOver, 1u);
  EXPECT_EQ(c.buildsAnswered, 1u);
  ahead.beforeExit();
  EXPECT_EQ(FakeOpenCL::programReleases, 1) << "only the builder's own reference";
}

// A program built from a binary (PyOpenCL's cache, programs that ship binaries): the same bytes
// for the same device are handed over, with its binary status; another device's, or the same
// bytes given as source, go to the driver.
TEST_F(ProgramsAheadTest, HandsOverTheSameBinaryForTheSameDevice) {
  const std::string binary(
      "\x7f"
      "ELF\0\x01 kernel a",
      16);
  writeRecipe({{binary, "-DN=4"}}, ProgramForm::Binary);
  ProgramsAhead ahead;
  start(ahead);
  ahead.awaitBuilder();
  EXPECT_EQ(FakeOpenCL::programsMade, 1);
  CreateFromBinaryCall otherDevice(kContext, FakeOpenCL::kOtherDevice, binary);
  ahead.callBegin(otherDevice.call);
  EXPECT_FALSE(otherDevice.call.skip);
  CreateCall asSource(kContext, {binary});
  ahead.callBegin(asSource.call);
  EXPECT_FALSE(asSource.call.skip);
  CreateFromBinaryCall create(kContext, FakeOpenCL::kDevice, binary);
  ahead.callBegin(create.call);
  ASSERT_TRUE(create.call.skip);
  EXPECT_EQ(create.err, CL_SUCCESS);
  EXPECT_EQ(create.status, CL_SUCCESS);
  BuildCall build(create.program(), "-DN=4");
  ahead.callBegin(build.call);
  EXPECT_TRUE(build.call.skip);
  EXPECT_EQ(build.status(), CL_SUCCESS);
  EXPECT_EQ(FakeOpenCL::programBuilds, 1);
  EXPECT_EQ(ahead.counts().handedOver, 1u);
  EXPECT_EQ(ahead.counts().buildsAnswered, 1u);
}

TEST_F(ProgramsAheadTest, OtherBytesOrAnotherContextGoToTheDriver) {
  writeRecipe({{kSourceA, ""}});
  ProgramsAhead ahead;
  start(ahead);
  ahead.awaitBuilder();
  CreateCall other(kContext, {kSourceB});
  ahead.callBegin(other.call);
  EXPECT_FALSE(other.call.skip);
  CreateCall elsewhere(kOtherContext, {kSourceA});
  ahead.callBegin(elsewhere.call);
  EXPECT_FALSE(elsewhere.call.skip);
  std::string longer = kSourceA + " ";
  CreateCall extra(kContext, {longer});
  ahead.callBegin(extra.call);
  EXPECT_FALSE(extra.call.skip);
  EXPECT_EQ(ahead.counts().handedOver, 0u);
  // Never asked for: released at exit.
  ahead.beforeExit();
  EXPECT_EQ(FakeOpenCL::programReleases, 2);
}

TEST_F(ProgramsAheadTest, OtherOptionsOrDevicesAreBuiltAgainByTheDriver) {
  writeRecipe({{kSourceA, "-DN=4"}, {kSourceB, ""}});
  ProgramsAhead ahead;
  start(ahead);
  ahead.awaitBuilder();
  CreateCall a(kContext, {kSourceA});
  ahead.callBegin(a.call);
  ASSERT_TRUE(a.call.skip);
  BuildCall otherOptions(a.program(), "-DN=8");
  ahead.callBegin(otherOptions.call);
  EXPECT_FALSE(otherOptions.call.skip) << "the driver builds it again with -DN=8";
  CreateCall b(kContext, {kSourceB});
  ahead.callBegin(b.call);
  ASSERT_TRUE(b.call.skip);
  const cl_device_id other = FakeOpenCL::kOtherDevice;
  BuildCall otherDevice(b.program(), nullptr, 1, &other);
  ahead.callBegin(otherDevice.call);
  EXPECT_FALSE(otherDevice.call.skip);
  EXPECT_EQ(ahead.counts().rebuilt, 2u);
  EXPECT_EQ(ahead.counts().buildsAnswered, 0u);
}

TEST_F(ProgramsAheadTest, AFailedBuildFailsTheSameWay) {
  FakeOpenCL::failBuilds = true;
  writeRecipe({{kSourceA, ""}});
  ProgramsAhead ahead;
  start(ahead);
  ahead.awaitBuilder();
  CreateCall a(kContext, {kSourceA});
  ahead.callBegin(a.call);
  ASSERT_TRUE(a.call.skip);
  BuildCall build(a.program(), nullptr);
  ahead.callBegin(build.call);
  EXPECT_TRUE(build.call.skip);
  EXPECT_EQ(build.status(), CL_BUILD_PROGRAM_FAILURE);
}

TEST_F(ProgramsAheadTest, TheProgramsBuildWaitsForTheOneInProgress) {
  FakeOpenCL::buildMs = 150;
  writeRecipe({{kSourceA, ""}});
  ProgramsAhead ahead;
  start(ahead);
  CreateCall a(kContext, {kSourceA});
  // Creation waits only for the recipe and the creation; the build is waited for at its call.
  while (FakeOpenCL::programsMade == 0) std::this_thread::yield();
  ahead.callBegin(a.call);
  ASSERT_TRUE(a.call.skip);
  BuildCall build(a.program(), "");
  ahead.callBegin(build.call);
  EXPECT_TRUE(build.call.skip);
  EXPECT_EQ(FakeOpenCL::programBuilds, 1);
  EXPECT_GT(ahead.counts().waitMs, 0.0);
}

TEST_F(ProgramsAheadTest, AProgramNotReachedYetIsTheDriversAndAnUnreadableRecipeBuildsNothing) {
  FakeOpenCL::buildMs = 200;
  writeRecipe({{kSourceA, ""}, {kSourceB, ""}});
  ProgramsAhead ahead;
  start(ahead);
  while (FakeOpenCL::programsMade == 0) std::this_thread::yield();
  CreateCall b(kContext, {kSourceB});  // the builder is still on A
  ahead.callBegin(b.call);
  EXPECT_FALSE(b.call.skip);
  ahead.awaitBuilder();
  EXPECT_EQ(FakeOpenCL::programsMade, 1) << "B is not built a second time behind the program";
  EXPECT_EQ(ahead.counts().notReached, 1u);

  ProgramsAhead broken;
  std::string error;
  ASSERT_TRUE(writePrivateFile(m_recipe, "hetopt-programs 1\nprogram 12 3 0 0\nab", &error));
  start(broken);
  broken.awaitBuilder();
  EXPECT_FALSE(broken.counts().failure.empty());
  CreateCall a(kContext, {kSourceA});
  broken.callBegin(a.call);
  EXPECT_FALSE(a.call.skip);
}

}  // namespace
}  // namespace hetopt::shim
