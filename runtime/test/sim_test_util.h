//===- sim_test_util.h - Every rank of a plan on a thread -------*- C++ -*-===//

#ifndef M2N_RUNTIME_TEST_SIM_TEST_UTIL_H
#define M2N_RUNTIME_TEST_SIM_TEST_UTIL_H

#include "executor_test_util.h"
#include "wrapped_transports.h"

#include "m2n/transport.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace m2n::test {

/// Runs `body(rank)` on one thread per rank and waits for all.
inline void onEveryRank(int worldSize, const std::function<void(int)> &body) {
  std::vector<std::thread> threads;
  for (int rank = 0; rank < worldSize; ++rank)
    threads.emplace_back(body, rank);
  for (std::thread &thread : threads)
    thread.join();
}

/// "" when every destination of every rank of `ranks` holds its box, else
/// the first rank's problem.
inline std::string
checkEveryDestination(const std::vector<std::unique_ptr<RankBuffers>> &ranks) {
  for (const auto &buffers : ranks) {
    std::string problem = buffers->checkDestinations();
    if (!problem.empty())
      return problem;
  }
  return "";
}

/// A status as a value: code and message.
struct Outcome {
  m2n_status_code_t code = M2N_STATUS_OK;
  std::string message;

  bool ok() const { return code == M2N_STATUS_OK; }
};

/// Takes and frees `status`.
inline Outcome outcome(m2n_status_t status) {
  Outcome result{m2n_status_code(status), m2n_status_message(status)};
  m2n_status_free(status);
  return result;
}

inline m2n_plan_t loadPlan(const std::vector<uint8_t> &bytes) {
  m2n_plan_t plan = nullptr;
  m2n_status_t status = m2n_plan_load_memory(bytes.data(), bytes.size(), &plan);
  EXPECT_EQ(status, nullptr) << m2n_status_message(status);
  m2n_status_free(status);
  return plan;
}

/// How a sim world carries messages: pulled where the executor can (the
/// sim transport as it is), or all through staging, as over MPI.
enum class Path { Pulled, Staged };

inline const char *pathName(Path path) {
  return path == Path::Pulled ? "Pulled" : "Staged";
}
/// Names the tests of either path after it.
inline std::string pathTestName(const ::testing::TestParamInfo<Path> &info) {
  return pathName(info.param);
}
inline void PrintTo(Path path, std::ostream *out) { *out << pathName(path); }

/// Every rank of a plan in one sim world, each with its buffers. A rank may
/// be given its own plan (to disagree), its own binding rule, or its own
/// body instead of bind-and-run.
class SimRefit {
public:
  explicit SimRefit(const std::vector<uint8_t> &plan, Path path = Path::Pulled)
      : path_(path) {
    plan_ = loadPlan(plan);
    m2n_plan_info_t info;
    m2n_status_free(m2n_plan_get_info(plan_, &info));
    worldSize_ = static_cast<int>(info.world_size);
    m2n_status_free(m2n_sim_world_create(worldSize_, &world_));
    plans_.assign(worldSize_, plan_);
    for (int rank = 0; rank < worldSize_; ++rank)
      buffers_.push_back(std::make_unique<RankBuffers>(plan_, rank));
  }
  ~SimRefit() {
    for (m2n_plan_t plan : own_)
      m2n_plan_destroy(plan);
    m2n_plan_destroy(plan_);
    m2n_sim_world_destroy(world_);
  }

  m2n_plan_t plan() const { return plan_; }

  /// Rank `rank` executes `plan` instead.
  void givePlan(int rank, const std::vector<uint8_t> &plan) {
    own_.push_back(loadPlan(plan));
    plans_[rank] = own_.back();
  }
  /// Rank `rank` binds only what `skip` rejects.
  void skipBindings(int rank,
                    std::function<bool(const std::string &, m2n_role_t)> skip) {
    skips_.resize(worldSize_);
    skips_[rank] = std::move(skip);
  }
  /// Rank `rank` runs `body` with its transport instead of executing.
  void replaceRank(int rank, std::function<void(m2n_transport_t)> body) {
    bodies_.resize(worldSize_);
    bodies_[rank] = std::move(body);
  }
  void setTimeout(double seconds) { timeout_ = seconds; }
  /// Called with each rank's transport before its executor is made, to
  /// wrap it.
  void onTransport(std::function<void(int, m2n_transport_t)> hook) {
    hook_ = std::move(hook);
  }

  /// Called with each rank's executor once it is made, before it binds.
  void onExecutor(std::function<void(int, m2n_executor_t)> hook) {
    executorHook_ = std::move(hook);
  }

  /// Runs every rank `runs` times (sources refilled with salt r before run
  /// r) and returns the outcome of each rank's last run.
  std::vector<Outcome> run(int runs = 1);

  /// "" when every destination of every rank holds its box.
  std::string checkDestinations() const {
    return checkEveryDestination(buffers_);
  }

  const std::vector<m2n_executor_stats_t> &stats() const { return stats_; }

private:
  Outcome runRank(int rank, int runs);

  Path path_;
  m2n_plan_t plan_ = nullptr;
  std::vector<m2n_plan_t> plans_;
  std::vector<m2n_plan_t> own_;
  m2n_sim_world_t world_ = nullptr;
  int worldSize_ = 0;
  double timeout_ = 10;
  std::vector<std::unique_ptr<RankBuffers>> buffers_;
  std::vector<std::function<bool(const std::string &, m2n_role_t)>> skips_;
  std::vector<std::function<void(m2n_transport_t)>> bodies_;
  std::function<void(int, m2n_transport_t)> hook_;
  std::function<void(int, m2n_executor_t)> executorHook_;
  std::vector<m2n_executor_stats_t> stats_;
};

inline std::vector<Outcome> SimRefit::run(int runs) {
  std::vector<Outcome> outcomes(worldSize_);
  stats_.assign(worldSize_, m2n_executor_stats_t{});
  onEveryRank(worldSize_,
              [&](int rank) { outcomes[rank] = runRank(rank, runs); });
  return outcomes;
}

inline Outcome SimRefit::runRank(int rank, int runs) {
  m2n_transport_t transport = nullptr;
  Outcome result = outcome(m2n_sim_world_transport(world_, rank, &transport));
  if (!result.ok())
    return result;
  m2n_status_free(m2n_transport_set_timeout(transport, timeout_));
  if (path_ == Path::Staged)
    stageOnly(transport);
  if (hook_)
    hook_(rank, transport);
  if (rank < static_cast<int>(bodies_.size()) && bodies_[rank]) {
    bodies_[rank](transport);
    m2n_transport_destroy(transport);
    return result;
  }
  m2n_executor_t executor = nullptr;
  result =
      outcome(m2n_executor_create(plans_[rank], transport, nullptr, &executor));
  if (result.ok()) {
    if (executorHook_)
      executorHook_(rank, executor);
    auto skip = rank < static_cast<int>(skips_.size()) ? skips_[rank] : nullptr;
    buffers_[rank]->bindAll(executor, skip);
    for (int r = 0; r < runs && result.ok(); ++r) {
      buffers_[rank]->refill(r);
      result = outcome(m2n_executor_run(executor));
    }
    m2n_status_free(m2n_executor_get_stats(executor, &stats_[rank]));
  }
  m2n_executor_destroy(executor);
  m2n_transport_destroy(transport);
  return result;
}

} // namespace m2n::test

#endif // M2N_RUNTIME_TEST_SIM_TEST_UTIL_H
