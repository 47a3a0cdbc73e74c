//===- refit_test.cpp - Whole refits: on the host, then on the GPU --------===//
//
// Each case runs three ways: on the host with plain walks (checks the
// tests' planning and expectations), on the host through the kernel's code
// (checks the kernel's tiling without a GPU), and on the GPU in a sim
// world, every rank a CUDA executor on a thread of its own (skipped
// without one). Plan files from `m2n compile` run the same
// way when M2N_TEST_PLAN_DIR names a directory of them.
//
//===----------------------------------------------------------------------===//

#include "device_world.h"
#include "refit_cases.h"
#include "refit_check.h"

#include "../plan_test_util.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace m2n::test {
namespace {

// Host-side checking costs about a second per 256 MiB of shards.
constexpr uint64_t kMaxPlanFileBytes = uint64_t(512) << 20;

/// A loaded plan, destroyed with the test.
struct Plan {
  m2n_plan_t plan = nullptr;
  ~Plan() { m2n_plan_destroy(plan); }
  const LoadedPlan &loaded() const { return plan->plan; }
};

::testing::AssertionResult runOnHost(const LoadedPlan &plan, Walker walker) {
  std::vector<HostRank> ranks = initialBuffers(plan);
  runHostWorld(plan, ranks, walker);
  return checkBuffers(plan, ranks);
}

// Runs twice, so that reusing staging and tables across runs is checked.
::testing::AssertionResult runOnDevice(m2n_plan_t plan) {
  DeviceWorld world(plan);
  if (auto ok = world.setUp(); !ok)
    return ok;
  for (auto step : {&DeviceWorld::run, &DeviceWorld::check,
                    &DeviceWorld::resetDestinations, &DeviceWorld::run,
                    &DeviceWorld::check})
    if (auto ok = (world.*step)(); !ok)
      return ok;
  return ::testing::AssertionSuccess();
}

class Refit : public ::testing::TestWithParam<RefitSpec> {
protected:
  void SetUp() override {
    ASSERT_TRUE(loadPlan(planRefit(GetParam()), &plan_.plan));
  }
  Plan plan_;
};

TEST_P(Refit, OnHost) {
  EXPECT_TRUE(runOnHost(plan_.loaded(), Walker::kReference));
}

TEST_P(Refit, KernelCodeOnHost) {
  EXPECT_TRUE(runOnHost(plan_.loaded(), Walker::kKernelOnHost));
}

TEST_P(Refit, SimWorldOnGpu) {
  M2N_REQUIRE_GPU();
  EXPECT_TRUE(runOnDevice(plan_.plan));
}

// Step by step over external transports, twice: the agreement's records
// and every message in device memory, moved by the test.
TEST_P(Refit, StepWiseOnGpu) {
  M2N_REQUIRE_GPU();
  uint32_t world = plan_.loaded().worldSize();
  std::vector<m2n_transport_t> transports(world, nullptr);
  for (uint32_t r = 0; r < world; ++r)
    ASSERT_TRUE(isOk(m2n_transport_create_external(
        static_cast<int>(r), static_cast<int>(world), &transports[r])));
  DeviceWorld devices(plan_.plan, transports);
  ASSERT_TRUE(devices.setUp());
  ASSERT_TRUE(devices.runStepWise());
  ASSERT_TRUE(devices.check());
  ASSERT_TRUE(devices.resetDestinations());
  ASSERT_TRUE(devices.runStepWise());
  EXPECT_TRUE(devices.check());
}

INSTANTIATE_TEST_SUITE_P(Cases, Refit, ::testing::ValuesIn(refitCases()),
                         [](const ::testing::TestParamInfo<RefitSpec> &info) {
                           return info.param.name;
                         });

// The runtime's sample plan uses every opcode.
TEST(RefitSample, EveryOpcode) {
  Plan plan;
  ASSERT_TRUE(loadPlan(samplePlan(), &plan.plan));
  EXPECT_TRUE(runOnHost(plan.loaded(), Walker::kReference));
  EXPECT_TRUE(runOnHost(plan.loaded(), Walker::kKernelOnHost));
  M2N_REQUIRE_GPU();
  EXPECT_TRUE(runOnDevice(plan.plan));
}

RefitSpec caseNamed(const std::string &name) {
  for (const RefitSpec &spec : refitCases())
    if (spec.name == name)
      return spec;
  return {};
}

TEST(SimWorld, SynchronizingDevices) {
  M2N_REQUIRE_GPU();
  Plan plan;
  ASSERT_TRUE(loadPlan(planRefit(caseNamed("Relay")), &plan.plan));
  DeviceWorld world(plan.plan);
  ASSERT_TRUE(world.setUp(M2N_CUDA_DEVICE_SYNCHRONIZE));
  ASSERT_TRUE(world.run());
  // Every stream is idle once a synchronizing run returns.
  for (uint32_t r = 0; r < world.executors().size(); ++r)
    EXPECT_EQ(cudaStreamQuery(world.stream(r)), cudaSuccess) << "rank " << r;
  EXPECT_TRUE(world.check());
}

std::vector<std::filesystem::path> planFiles(const char *dir) {
  std::vector<std::filesystem::path> files;
  for (const auto &entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".m2n")
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

// Every plan file of $M2N_TEST_PLAN_DIR, on the host and (with a GPU) on
// the device. One line per file, "M2N_PLAN <file> PASS|FAIL|SKIP ...", for
// scripts/gpu-check.sh to count.
TEST(PlanFiles, RunAll) {
  const char *dir = std::getenv("M2N_TEST_PLAN_DIR");
  if (!dir || !*dir)
    GTEST_SKIP() << "M2N_TEST_PLAN_DIR is not set";
  std::string why;
  bool gpu = cudaDeviceAvailable(&why);
  std::vector<std::filesystem::path> files = planFiles(dir);
  ASSERT_FALSE(files.empty()) << "no .m2n files in " << dir;
  for (const std::filesystem::path &file : files) {
    SCOPED_TRACE(file.string());
    Plan plan;
    ::testing::AssertionResult ok =
        isOk(m2n_plan_load_file(file.c_str(), &plan.plan));
    uint64_t bytes = ok ? totalBindingBytes(plan.loaded()) : 0;
    if (ok && bytes > kMaxPlanFileBytes) {
      std::cout << "M2N_PLAN " << file.filename().string() << " SKIP " << bytes
                << " bytes of shards, over the tests' limit\n";
      continue;
    }
    if (ok)
      ok = runOnHost(plan.loaded(), Walker::kReference);
    if (ok && gpu)
      ok = runOnDevice(plan.plan);
    EXPECT_TRUE(ok);
    std::cout << "M2N_PLAN " << file.filename().string() << " "
              << (ok ? "PASS" : "FAIL") << " world "
              << (plan.plan ? plan.loaded().worldSize() : 0) << ", " << bytes
              << " bytes of shards" << (gpu ? "" : ", host only") << "\n";
  }
}

} // namespace
} // namespace m2n::test
