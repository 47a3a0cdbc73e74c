//===- safetensors_test.cpp - Reading, rejecting and writing files --------===//

#include "m2n/safetensors.h"

#include "m2n/plan.h"
#include "sim_test_util.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace m2n::test {
namespace {

// A fresh directory per test, removed with what is in it.
class SafetensorsFile : public ::testing::Test {
protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "m2n_safetensors_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    for (const std::string &name : entries())
      removeTree(dir_ + "/" + name);
    rmdir(dir_.c_str());
  }

  std::string path(const std::string &name) const { return dir_ + "/" + name; }

  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    if (DIR *dir = opendir(dir_.c_str())) {
      while (dirent *entry = readdir(dir))
        if (std::strcmp(entry->d_name, ".") && std::strcmp(entry->d_name, ".."))
          names.push_back(entry->d_name);
      closedir(dir);
    }
    return names;
  }

  static void removeTree(const std::string &path) {
    if (rmdir(path.c_str()) != 0)
      unlink(path.c_str());
  }

  static void writeBytes(const std::string &path, const std::string &bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
  }

  static std::string readBytes(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    return bytes.str();
  }

  /// A file: the 8-byte length of `header`, `header`, then `data`.
  static std::string file(const std::string &header,
                          const std::string &data = "") {
    uint64_t size = header.size();
    std::string bytes(reinterpret_cast<const char *>(&size), 8);
    return bytes + header + data;
  }

  Outcome load(const std::string &bytes) {
    writeBytes(path("in.safetensors"), bytes);
    m2n_safetensors_t loaded = nullptr;
    Outcome result = outcome(
        m2n_safetensors_load_file(path("in.safetensors").c_str(), &loaded));
    EXPECT_EQ(result.ok(), loaded != nullptr);
    m2n_safetensors_destroy(loaded);
    return result;
  }

  std::string dir_;
};

std::vector<int64_t> shapeOf(const m2n_safetensors_tensor_t &tensor) {
  return std::vector<int64_t>(tensor.shape, tensor.shape + tensor.ndim);
}

std::string bytesOf(const m2n_safetensors_tensor_t &tensor) {
  return std::string(static_cast<const char *>(tensor.data),
                     static_cast<size_t>(tensor.byte_size));
}

m2n_safetensors_tensor_t tensor(const char *name, m2n_dtype_t dtype,
                                std::vector<int64_t> shape, const void *data) {
  m2n_safetensors_tensor_t result = {};
  result.name = name;
  result.dtype = dtype;
  result.ndim = static_cast<uint32_t>(shape.size());
  result.byte_size = static_cast<uint64_t>(m2n_dtype_size(dtype));
  for (size_t i = 0; i < shape.size(); ++i) {
    result.shape[i] = shape[i];
    result.byte_size *= static_cast<uint64_t>(shape[i]);
  }
  result.data = data;
  return result;
}

TEST_F(SafetensorsFile, RoundTrips) {
  float b[6] = {0, 1, 2, 3, 4, 5};
  int64_t scalar = -7;
  uint8_t u8[5] = {1, 2, 3, 4, 5};
  uint8_t flags[3] = {1, 0, 1};
  uint8_t f8[2] = {0x38, 0xc0};
  uint16_t half[2] = {0x3c00, 0xc000};
  std::vector<m2n_safetensors_tensor_t> tensors = {
      tensor("b", M2N_DTYPE_F32, {2, 3}, b),
      tensor("a.scalar", M2N_DTYPE_I64, {}, &scalar),
      tensor("empty", M2N_DTYPE_BF16, {0, 4}, nullptr),
      tensor("u8", M2N_DTYPE_U8, {5}, u8),
      tensor("flags", M2N_DTYPE_BOOL, {3}, flags),
      tensor("f8", M2N_DTYPE_F8_E4M3, {2}, f8),
      tensor("na\xc3\xafve \"half\"", M2N_DTYPE_F16, {1, 2}, half),
  };
  std::vector<m2n_safetensors_metadata_t> metadata = {
      {"format", "pt"}, {"note", "line\nbreak \"quoted\" \\ \x01"}};
  ASSERT_EQ(m2n_safetensors_write_file(path("out.safetensors").c_str(),
                                       tensors.data(), tensors.size(),
                                       metadata.data(), metadata.size()),
            nullptr);
  EXPECT_EQ(entries(), std::vector<std::string>{"out.safetensors"});

  m2n_safetensors_t loaded = nullptr;
  ASSERT_EQ(m2n_safetensors_load_file(path("out.safetensors").c_str(), &loaded),
            nullptr);
  ASSERT_EQ(m2n_safetensors_tensor_count(loaded), tensors.size());
  std::string previous;
  for (size_t i = 0; i < tensors.size(); ++i) {
    m2n_safetensors_tensor_t got;
    ASSERT_EQ(m2n_safetensors_get_tensor(loaded, i, &got), nullptr);
    EXPECT_LT(previous, got.name); // in order of name
    previous = got.name;
    m2n_safetensors_tensor_t want;
    for (const auto &candidate : tensors)
      if (std::strcmp(candidate.name, got.name) == 0)
        want = candidate;
    SCOPED_TRACE(got.name);
    EXPECT_EQ(got.dtype, want.dtype);
    EXPECT_EQ(shapeOf(got), shapeOf(want));
    ASSERT_EQ(got.byte_size, want.byte_size);
    if (want.byte_size)
      EXPECT_EQ(bytesOf(got), bytesOf(want));
    // The writer's layout keeps every tensor aligned to its elements.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(got.data) % m2n_dtype_size(got.dtype),
              0u);
  }
  ASSERT_EQ(m2n_safetensors_metadata_count(loaded), 2u);
  m2n_safetensors_metadata_t entry;
  ASSERT_EQ(m2n_safetensors_get_metadata(loaded, 1, &entry), nullptr);
  EXPECT_STREQ(entry.key, "note");
  EXPECT_STREQ(entry.value, metadata[1].value);
  m2n_safetensors_tensor_t found;
  ASSERT_EQ(m2n_safetensors_find_tensor(loaded, "u8", &found), nullptr);
  EXPECT_EQ(bytesOf(found), std::string("\1\2\3\4\5"));
  Outcome missing = outcome(m2n_safetensors_find_tensor(loaded, "v", &found));
  EXPECT_EQ(missing.code, M2N_STATUS_NOT_FOUND);
  EXPECT_EQ(missing.message,
            path("out.safetensors") + ": no tensor named \"v\"");
  EXPECT_EQ(outcome(m2n_safetensors_get_tensor(loaded, 7, &found)).code,
            M2N_STATUS_NOT_FOUND);
  EXPECT_EQ(outcome(m2n_safetensors_get_metadata(loaded, 2, &entry)).code,
            M2N_STATUS_NOT_FOUND);
  m2n_safetensors_destroy(loaded);
}

TEST_F(SafetensorsFile, WritesTheHeaderSortedAndPadded) {
  float values[6] = {0, 1, 2, 3, 4, 5};
  int8_t small = 3;
  m2n_safetensors_tensor_t tensors[2] = {
      tensor("z", M2N_DTYPE_I8, {}, &small),
      tensor("attn.0", M2N_DTYPE_F32, {1, 2, 3}, values)};
  m2n_safetensors_metadata_t metadata = {"format", "pt"};
  ASSERT_EQ(m2n_safetensors_write_file(path("t.safetensors").c_str(), tensors,
                                       2, &metadata, 1),
            nullptr);
  std::string json = "{\"__metadata__\":{\"format\":\"pt\"},"
                     "\"attn.0\":{\"data_offsets\":[0,24],\"dtype\":\"F32\","
                     "\"shape\":[1,2,3]},"
                     "\"z\":{\"data_offsets\":[24,25],\"dtype\":\"I8\","
                     "\"shape\":[]}}";
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string data(reinterpret_cast<const char *>(values), 24);
  EXPECT_EQ(readBytes(path("t.safetensors")), file(json, data + "\3"));
}

TEST_F(SafetensorsFile, ReadsAnotherWritersLayout) {
  // Keys in any order, whitespace, escapes, data in another order than the
  // names, a header not padded to 8 bytes.
  std::string header =
      "{ \"caf\\u00e9 \\ud83d\\ude00\" : {\"shape\": [2], \"dtype\": \"U8\","
      " \"data_offsets\": [4, 6]},\n"
      "  \"a\": {\"data_offsets\": [0, 4], \"shape\": [], \"dtype\": \"F32\"},"
      "  \"__metadata__\": {\"k\\/\": \"v\\t\"} }";
  writeBytes(path("in.safetensors"), file(header, "ABCDxy"));
  m2n_safetensors_t loaded = nullptr;
  ASSERT_EQ(m2n_safetensors_load_file(path("in.safetensors").c_str(), &loaded),
            nullptr);
  m2n_safetensors_tensor_t a, cafe;
  ASSERT_EQ(m2n_safetensors_get_tensor(loaded, 0, &a), nullptr);
  ASSERT_EQ(m2n_safetensors_get_tensor(loaded, 1, &cafe), nullptr);
  EXPECT_STREQ(a.name, "a");
  EXPECT_EQ(a.ndim, 0u);
  EXPECT_EQ(bytesOf(a), "ABCD");
  EXPECT_STREQ(cafe.name, "caf\xc3\xa9 \xf0\x9f\x98\x80");
  EXPECT_EQ(bytesOf(cafe), "xy");
  m2n_safetensors_metadata_t entry;
  ASSERT_EQ(m2n_safetensors_get_metadata(loaded, 0, &entry), nullptr);
  EXPECT_STREQ(entry.key, "k/");
  EXPECT_STREQ(entry.value, "v\t");
  m2n_safetensors_destroy(loaded);
}

TEST_F(SafetensorsFile, ReadsAnEmptyFile) {
  EXPECT_TRUE(load(file("{}      ")).ok());
}

struct Rejection {
  const char *what;
  std::string bytes;
  m2n_status_code_t code;
  std::string message; // after "PATH: "
};

TEST_F(SafetensorsFile, RejectsMalformedFiles) {
  const std::string w = "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],"
                        "\"data_offsets\":[0,4]";
  auto big = [](uint64_t size) {
    return std::string(reinterpret_cast<const char *>(&size), 8);
  };
  const m2n_status_code_t loss = M2N_STATUS_DATA_LOSS;
  const Rejection rejections[] = {
      {"short", "abcde", loss,
       "truncated: 5 bytes, fewer than the 8-byte header length"},
      {"truncated", big(1234) + "{}        ", loss,
       "truncated: header says 1234 bytes, the file has 10 after the 8-byte "
       "length"},
      {"huge", big(200000000) + "{}", loss,
       "header of 200000000 bytes is larger than the 100000000 bytes "
       "safetensors allows"},
      {"not an object", file(" {}"), loss,
       "the header does not start with '{' at byte 8"},
      {"colon", file("{\"w\" {}}"), loss,
       "malformed header at byte 13: expected ':' after the key, found '{'"},
      {"trailing comma", file("{\"__metadata__\":{\"a\":\"b\",}}"), loss,
       "malformed header at byte 33: expected a string key, found '}'"},
      {"unterminated", file("{\"abc"), loss,
       "malformed header at byte 9: unterminated string"},
      {"escape", file("{\"a\\q\":{}}"), loss,
       "malformed header at byte 11: invalid escape: 'q' after a backslash"},
      {"control", file("{\"a\tb\":{}}"), loss,
       "malformed header at byte 11: unescaped control character byte 0x09 "
       "in a string"},
      {"utf-8", file("{\"\xff\":{}}"), loss,
       "malformed header at byte 10: invalid UTF-8"},
      {"surrogate", file("{\"\\ud800x\":{}}"), loss,
       "malformed header at byte 10: unpaired high surrogate in a \\u "
       "escape"},
      {"leading zero", file("{\"w\":{\"shape\":[01]}}"), loss,
       "malformed header at byte 23: leading zeros are not allowed in a "
       "number"},
      {"fraction", file("{\"w\":{\"shape\":[1.5]}}"), loss,
       "malformed header at byte 23: only integers are allowed here"},
      {"negative", file("{\"w\":{\"shape\":[-1]}}"), loss,
       "malformed header at byte 23: negative numbers are not allowed here"},
      {"huge number", file("{\"w\":{\"shape\":[18446744073709551616]}}"), loss,
       "malformed header at byte 23: integer does not fit 64 bits"},
      {"literal", file("{\"a\":true}"), loss,
       "malformed header at byte 13: true, false and null are not supported "
       "here"},
      {"deep",
       file("{\"a\":" + std::string(40, '[') + std::string(40, ']') + "}"),
       loss, "malformed header at byte 44: nested deeper than 32 levels"},
      {"duplicate", file(w + "},\"w\":{}}", "abcd"), loss,
       "malformed header at byte 62: duplicate key \"w\""},
      {"garbage", file("{} x"), loss,
       "malformed header at byte 11: expected the end of the text, found "
       "'x'"},
      {"entry", file("{\"w\":[1]}"), loss,
       "tensor \"w\": the entry at byte 13 is an array, expected an object"},
      {"unknown key", file(w + ",\"extra\":1}}", "abcd"), loss,
       "tensor \"w\": unknown key \"extra\" at byte 61"},
      {"missing key", file("{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}"), loss,
       "tensor \"w\": no \"data_offsets\""},
      {"dtype kind",
       file("{\"w\":{\"dtype\":4,\"shape\":[],"
            "\"data_offsets\":[0,0]}}"),
       loss,
       "tensor \"w\": \"dtype\" at byte 22 is an integer, expected a "
       "string"},
      {"dtype",
       file("{\"w\":{\"dtype\":\"F4\",\"shape\":[],"
            "\"data_offsets\":[0,0]}}"),
       M2N_STATUS_UNIMPLEMENTED,
       "tensor \"w\": dtype \"F4\" is not one m2n supports (BF16, F16, F32, "
       "F64, F8_E4M3, F8_E5M2, I8, U8, I16, U16, I32, U32, I64, U64, BOOL)"},
      {"shape kind",
       file("{\"w\":{\"dtype\":\"F32\",\"shape\":[\"1\"],"
            "\"data_offsets\":[0,4]}}",
            "abcd"),
       loss, "tensor \"w\": \"shape\" at byte 37 is not an array of integers"},
      {"rank",
       file("{\"w\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],"
            "\"data_offsets\":[0,1]}}",
            "a"),
       M2N_STATUS_UNIMPLEMENTED,
       "tensor \"w\": shape has 9 dimensions; m2n supports at most 8"},
      {"offsets kind",
       file("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],"
            "\"data_offsets\":[4]}}"),
       loss,
       "tensor \"w\": \"data_offsets\" at byte 55 is not an array of two "
       "integers"},
      {"backwards",
       file("{\"w\":{\"dtype\":\"U8\",\"shape\":[0],"
            "\"data_offsets\":[4,0]}}",
            "abcd"),
       loss, "tensor \"w\": data_offsets [4, 0) end before they begin"},
      {"past the end", file(w + "}}", "ab"), loss,
       "tensor \"w\": data_offsets [0, 4) run past the end of the data (2 "
       "bytes)"},
      {"size",
       file("{\"w\":{\"dtype\":\"F32\",\"shape\":[4,6],"
            "\"data_offsets\":[0,80]}}",
            std::string(80, 'x')),
       loss,
       "tensor \"w\": data_offsets [0, 80) do not match shape [4, 6] of F32 "
       "(96 bytes expected, 80 given)"},
      {"overflow",
       file("{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,"
            "4294967296],\"data_offsets\":[0,0]}}"),
       loss,
       "tensor \"w\": shape [4294967296, 4294967296] of F32 has more than "
       "2^64 bytes"},
      {"gap",
       file("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":"
            "[0,4]},\"b\":{\"dtype\":\"U8\",\"shape\":[4],"
            "\"data_offsets\":[8,12]}}",
            std::string(12, 'x')),
       loss,
       "tensor \"b\": data_offsets [8, 12) leave bytes [4, 8) of the data "
       "unused"},
      {"overlap",
       file("{\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":"
            "[0,8]},\"b\":{\"dtype\":\"U8\",\"shape\":[4],"
            "\"data_offsets\":[4,8]}}",
            std::string(8, 'x')),
       loss, "tensor \"b\": data_offsets [4, 8) overlap tensor \"a\" [0, 8)"},
      {"trailing", file(w + "}}", "abcdef"), loss,
       "the tensors end at byte 4 of the data, which has 6 bytes (the data "
       "must be covered exactly)"},
      {"metadata kind", file("{\"__metadata__\":\"x\"}"), loss,
       "\"__metadata__\" at byte 24 is a string, expected an object of "
       "strings"},
      {"metadata value", file("{\"__metadata__\":{\"k\":1}}"), loss,
       "\"__metadata__\" entry \"k\" at byte 29 is an integer, expected a "
       "string"},
      {"nul",
       file("{\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[0],"
            "\"data_offsets\":[0,0]}}"),
       M2N_STATUS_UNIMPLEMENTED,
       "tensor \"a\\x00b\": names with a NUL character are not supported"},
  };
  for (const Rejection &rejection : rejections) {
    SCOPED_TRACE(rejection.what);
    Outcome result = load(rejection.bytes);
    EXPECT_EQ(result.code, rejection.code);
    EXPECT_EQ(result.message,
              path("in.safetensors") + ": " + rejection.message);
  }
}

TEST_F(SafetensorsFile, NamesFilesItCannotRead) {
  m2n_safetensors_t loaded = nullptr;
  Outcome result =
      outcome(m2n_safetensors_load_file(path("missing").c_str(), &loaded));
  EXPECT_EQ(result.code, M2N_STATUS_NOT_FOUND);
  EXPECT_EQ(result.message,
            path("missing") + ": cannot open: No such file or directory");
  result = outcome(m2n_safetensors_load_file(dir_.c_str(), &loaded));
  EXPECT_EQ(result.code, M2N_STATUS_IO_ERROR);
  EXPECT_EQ(result.message, dir_ + ": not a regular file");
  EXPECT_EQ(outcome(m2n_safetensors_load_file(nullptr, &loaded)).code,
            M2N_STATUS_INVALID_ARGUMENT);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

TEST_F(SafetensorsFile, RejectsBadTensorsAndKeepsTheOldFile) {
  std::string target = path("keep.safetensors");
  writeBytes(target, "old contents");
  float data[4] = {};
  m2n_safetensors_tensor_t good = tensor("w", M2N_DTYPE_F32, {4}, data);
  m2n_safetensors_tensor_t wrongSize = good;
  wrongSize.byte_size = 12;
  m2n_safetensors_tensor_t nullData = good;
  nullData.data = nullptr;
  m2n_safetensors_tensor_t reserved = good;
  reserved.name = "__metadata__";
  m2n_safetensors_tensor_t badName = good;
  badName.name = "\xc3";
  m2n_safetensors_tensor_t negative = tensor("n", M2N_DTYPE_F32, {-1}, data);
  negative.byte_size = 0;
  m2n_safetensors_tensor_t badDtype = good;
  badDtype.dtype = M2N_DTYPE_COUNT; // not a dtype, yet a value of the enum
  struct Case {
    std::vector<m2n_safetensors_tensor_t> tensors;
    std::vector<m2n_safetensors_metadata_t> metadata;
    std::string message;
  };
  const std::string prefix = "m2n_safetensors_write_file: ";
  const Case cases[] = {
      {{wrongSize},
       {},
       "tensor \"w\": byte_size 12 does not match shape [4] of F32"},
      {{nullData}, {}, "tensor \"w\": data is null"},
      {{reserved},
       {},
       "tensor \"__metadata__\": the name is reserved for metadata"},
      {{badName}, {}, "tensor \"\\xc3\": the name is not valid UTF-8"},
      {{negative}, {}, "tensor \"n\": shape [-1] has a negative dimension"},
      {{badDtype}, {}, "tensor \"w\": unknown dtype 15"},
      {{good, good}, {}, "tensor \"w\" appears twice"},
      {{good}, {{"k", "a"}, {"k", "b"}}, "metadata \"k\" appears twice"},
      {{good}, {{"k", nullptr}}, "a metadata entry has a null key or value"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.message);
    Outcome result = outcome(m2n_safetensors_write_file(
        target.c_str(), c.tensors.data(), c.tensors.size(), c.metadata.data(),
        c.metadata.size()));
    EXPECT_EQ(result.code, M2N_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(result.message, prefix + c.message);
  }
  EXPECT_EQ(readBytes(target), "old contents");
  EXPECT_EQ(entries(), std::vector<std::string>{"keep.safetensors"});
}

TEST_F(SafetensorsFile, FailsIntoAMissingDirectoryLeavingNothing) {
  float data[1] = {};
  m2n_safetensors_tensor_t t = tensor("w", M2N_DTYPE_F32, {1}, data);
  std::string target = path("no/such/dir.safetensors");
  Outcome result =
      outcome(m2n_safetensors_write_file(target.c_str(), &t, 1, nullptr, 0));
  EXPECT_EQ(result.code, M2N_STATUS_NOT_FOUND);
  EXPECT_EQ(result.message, target + ": cannot create " + target + ".tmp." +
                                std::to_string(getpid()) +
                                ": No such file or directory");
  EXPECT_TRUE(entries().empty());
}

TEST_F(SafetensorsFile, FailsOverADirectoryLeavingItAsItWas) {
  std::string target = path("a_directory");
  ASSERT_EQ(mkdir(target.c_str(), 0755), 0);
  float data[1] = {};
  m2n_safetensors_tensor_t t = tensor("w", M2N_DTYPE_F32, {1}, data);
  Outcome result =
      outcome(m2n_safetensors_write_file(target.c_str(), &t, 1, nullptr, 0));
  EXPECT_EQ(result.code, M2N_STATUS_IO_ERROR);
  EXPECT_EQ(result.message, target + ": cannot rename " + target + ".tmp." +
                                std::to_string(getpid()) +
                                " over it: Is a directory");
  struct stat info;
  ASSERT_EQ(stat(target.c_str(), &info), 0);
  EXPECT_TRUE(S_ISDIR(info.st_mode));
  EXPECT_EQ(entries(), std::vector<std::string>{"a_directory"});
}

TEST_F(SafetensorsFile, FailsMidwayLeavingTheOldFile) {
  // A child process whose files may not grow past 100 bytes fails to write
  // 4 KiB (EFBIG): the old file must survive, and the temporary must go.
  std::string target = path("old.safetensors");
  writeBytes(target, "old contents");
  std::vector<uint8_t> data(4096, 7);
  m2n_safetensors_tensor_t t = tensor("w", M2N_DTYPE_U8, {4096}, data.data());
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    signal(SIGXFSZ, SIG_IGN);
    rlimit limit = {100, 100};
    setrlimit(RLIMIT_FSIZE, &limit);
    m2n_status_t status =
        m2n_safetensors_write_file(target.c_str(), &t, 1, nullptr, 0);
    bool expected = m2n_status_code(status) == M2N_STATUS_IO_ERROR &&
                    std::string(m2n_status_message(status)) ==
                        target + ": cannot write: File too large";
    _exit(expected ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(readBytes(target), "old contents");
  EXPECT_EQ(entries(), std::vector<std::string>{"old.safetensors"});
}

TEST_F(SafetensorsFile, ReplacesAnOldFile) {
  std::string target = path("w.safetensors");
  writeBytes(target, "old contents");
  uint8_t data[3] = {1, 2, 3};
  m2n_safetensors_tensor_t t = tensor("w", M2N_DTYPE_U8, {3}, data);
  ASSERT_EQ(m2n_safetensors_write_file(target.c_str(), &t, 1, nullptr, 0),
            nullptr);
  m2n_safetensors_t loaded = nullptr;
  ASSERT_EQ(m2n_safetensors_load_file(target.c_str(), &loaded), nullptr);
  m2n_safetensors_tensor_t got;
  ASSERT_EQ(m2n_safetensors_find_tensor(loaded, "w", &got), nullptr);
  EXPECT_EQ(bytesOf(got), "\1\2\3");
  m2n_safetensors_destroy(loaded);
  EXPECT_EQ(entries(), std::vector<std::string>{"w.safetensors"});
}

} // namespace
} // namespace m2n::test
