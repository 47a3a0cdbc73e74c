//===- plan_file_test.cpp - Plans on disk; the C API's argument errors ----===//

#include "plan_test_util.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

extern "C" int m2n_plan_c_world_size(const void *data, size_t size);

namespace m2n::test {
namespace {

std::string writeFile(const std::string &name,
                      const std::vector<uint8_t> &bytes) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  return path;
}

LoadResult loadFile(const std::string &path) {
  m2n_plan_t plan = nullptr;
  m2n_status_t status = m2n_plan_load_file(path.c_str(), &plan);
  LoadResult result = {m2n_status_code(status), m2n_status_message(status)};
  if (!status) {
    EXPECT_NE(plan, nullptr);
  } else {
    EXPECT_EQ(plan, nullptr);
  }
  m2n_status_free(status);
  m2n_plan_destroy(plan);
  return result;
}

TEST(PlanFile, LoadsAMappedFile) {
  std::vector<uint8_t> bytes = samplePlan();
  std::string path = writeFile("m2n_sample.m2n", bytes);
  m2n_plan_t plan = nullptr;
  m2n_status_t status = m2n_plan_load_file(path.c_str(), &plan);
  ASSERT_EQ(status, nullptr) << m2n_status_message(status);
  m2n_plan_info_t info;
  ASSERT_EQ(m2n_plan_get_info(plan, &info), nullptr);
  EXPECT_EQ(info.file_size, bytes.size());
  EXPECT_EQ(info.world_size, 5u);
  m2n_plan_tensor_info_t tensor;
  ASSERT_EQ(m2n_plan_get_tensor(plan, 0, &tensor), nullptr);
  EXPECT_EQ(std::string(tensor.name, tensor.name_size), "w");
  m2n_plan_destroy(plan);
  std::remove(path.c_str());
}

TEST(PlanFile, NamesTheFileInErrors) {
  PlanBytes file{samplePlan()};
  file.bytes[file.bindingAt(2, 0)] ^= 1;
  std::string path = writeFile("m2n_corrupt.m2n", file.bytes);
  LoadResult result = loadFile(path);
  EXPECT_EQ(result.code, M2N_STATUS_DATA_LOSS);
  EXPECT_EQ(result.message.find(path + ": content hash mismatch (file "
                                       "corrupted)"),
            0u)
      << result.message;
  std::remove(path.c_str());
}

TEST(PlanFile, EmptyFileIsTruncated) {
  std::string path = writeFile("m2n_empty.m2n", {});
  LoadResult result = loadFile(path);
  EXPECT_EQ(result.code, M2N_STATUS_DATA_LOSS);
  EXPECT_EQ(result.message,
            path + ": truncated: file has 0 bytes, a plan header has 160");
  std::remove(path.c_str());
}

TEST(PlanFile, MissingFileIsNotFound) {
  std::string path = ::testing::TempDir() + "m2n_no_such_plan.m2n";
  LoadResult result = loadFile(path);
  EXPECT_EQ(result.code, M2N_STATUS_NOT_FOUND);
  EXPECT_EQ(result.message,
            path + ": cannot open: No such file or directory");
}

TEST(PlanFile, DirectoryIsNotAPlanFile) {
  std::string path = ::testing::TempDir() + "m2n_plan_dir";
  mkdir(path.c_str(), 0700);
  LoadResult result = loadFile(path);
  EXPECT_EQ(result.code, M2N_STATUS_IO_ERROR);
  EXPECT_EQ(result.message, path + ": not a regular file");
  rmdir(path.c_str());
}

TEST(PlanFile, UnreadableFileIsAnIoError) {
  std::string path = writeFile("m2n_unreadable.m2n", samplePlan());
  chmod(path.c_str(), 0);
  // Root reads files regardless of their mode.
  if (access(path.c_str(), R_OK) == 0) {
    std::remove(path.c_str());
    GTEST_SKIP() << "running with permission to read anything";
  }
  LoadResult result = loadFile(path);
  EXPECT_EQ(result.code, M2N_STATUS_IO_ERROR);
  EXPECT_EQ(result.message, path + ": cannot open: Permission denied");
  std::remove(path.c_str());
}

TEST(PlanApi, RejectsNullArguments) {
  m2n_plan_t plan = nullptr;
  m2n_status_t status = m2n_plan_load_file(nullptr, &plan);
  EXPECT_EQ(m2n_status_code(status), M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(m2n_status_message(status), "m2n_plan_load_file: path is null");
  m2n_status_free(status);
  status = m2n_plan_load_memory(nullptr, 4, &plan);
  EXPECT_EQ(m2n_status_code(status), M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(m2n_status_message(status),
               "m2n_plan_load_memory: data is null");
  m2n_status_free(status);
  status = m2n_plan_load_memory("", 0, nullptr);
  EXPECT_EQ(m2n_status_code(status), M2N_STATUS_INVALID_ARGUMENT);
  m2n_status_free(status);
  m2n_plan_info_t info;
  status = m2n_plan_get_info(nullptr, &info);
  EXPECT_EQ(m2n_status_code(status), M2N_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(m2n_status_message(status), "m2n_plan_get_info: null argument");
  m2n_status_free(status);
  m2n_plan_destroy(nullptr);
  m2n_free(nullptr);
}

class PlanApiOnSample : public ::testing::Test {
protected:
  void SetUp() override {
    std::vector<uint8_t> bytes = samplePlan();
    ASSERT_EQ(m2n_plan_load_memory(bytes.data(), bytes.size(), &plan),
              nullptr);
  }
  void TearDown() override { m2n_plan_destroy(plan); }

  static void expectStatus(m2n_status_t status, m2n_status_code_t code,
                           const std::string &message) {
    EXPECT_STREQ(m2n_status_code_name(m2n_status_code(status)),
                 m2n_status_code_name(code));
    EXPECT_EQ(m2n_status_message(status), message);
    m2n_status_free(status);
  }

  m2n_plan_t plan = nullptr;
};

TEST_F(PlanApiOnSample, OutOfRangeIsNotFound) {
  m2n_plan_tensor_info_t tensor;
  expectStatus(m2n_plan_get_tensor(plan, 2, &tensor), M2N_STATUS_NOT_FOUND,
               "<memory>: no tensor 2 (the plan has 2)");
  m2n_plan_rank_info_t rank;
  expectStatus(m2n_plan_get_rank(plan, 5, &rank), M2N_STATUS_NOT_FOUND,
               "<memory>: no rank 5 (world size 5)");
  m2n_plan_binding_info_t binding;
  expectStatus(m2n_plan_get_binding(plan, 5, 0, &binding),
               M2N_STATUS_NOT_FOUND, "<memory>: no rank 5 (world size 5)");
  expectStatus(m2n_plan_get_binding(plan, 4, 0, &binding),
               M2N_STATUS_NOT_FOUND,
               "<memory>: rank 4 has no binding 0 (it has 0)");
  expectStatus(m2n_plan_get_binding(plan, 2, 2, &binding),
               M2N_STATUS_NOT_FOUND,
               "<memory>: rank 2 has no binding 2 (it has 2)");
  uint32_t index = 0;
  expectStatus(m2n_plan_find_tensor(plan, "w2", &index), M2N_STATUS_NOT_FOUND,
               "<memory>: no tensor named \"w2\"");
  char *text = nullptr;
  expectStatus(m2n_plan_disassemble(plan, 5, &text), M2N_STATUS_NOT_FOUND,
               "<memory>: no rank 5 (world size 5)");
  expectStatus(m2n_plan_disassemble(plan, -2, &text),
               M2N_STATUS_INVALID_ARGUMENT,
               "m2n_plan_disassemble: rank -2 is neither a rank nor -1 (all "
               "ranks)");
  EXPECT_EQ(text, nullptr);
}

TEST(PlanApi, UsableFromC) {
  std::vector<uint8_t> bytes = samplePlan();
  EXPECT_EQ(m2n_plan_c_world_size(bytes.data(), bytes.size()), 5);
  EXPECT_EQ(m2n_plan_c_world_size("M2NPLAN", 8), -1);
}

} // namespace
} // namespace m2n::test
