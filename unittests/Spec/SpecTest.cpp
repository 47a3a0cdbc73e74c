//===- SpecTest.cpp - Tests of the refit spec parser ----------------------===//

#include "m2n/Spec/DType.h"
#include "m2n/Spec/RefitSpec.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <utility>

using namespace m2n;
using namespace m2n::spec;
using llvm::StringRef;

namespace {

const char *const kExample = R"j({ "m2n_spec": 1,
  "meshes": [
    {"name": "train", "shape": [2, 4], "axes": ["dp", "tp"],
     "ranks": {"start": 0}},
    {"name": "gen", "shape": [4], "ranks": [8, 9, 10, 11]} ],
  "tensors": [
    {"name": "layers.0.mlp.up.weight", "dtype": "BF16", "shape": [14336, 4096],
     "src": {"mesh": "train", "placements": ["R", "S(0)"]},
     "dst": {"mesh": "gen", "placements": ["S(0)"]}} ] })j";

const char *const kMeshes =
    R"j([{"name": "train", "shape": [2, 4], "ranks": {"start": 0}},
        {"name": "gen", "shape": [4], "ranks": [8, 9, 10, 11]}])j";

using Fields = std::vector<std::pair<std::string, std::string>>;

/// `{"k": v, ...}` from `fields`, with `key` set to `value`: replaced, added
/// when new, or dropped when `value` is empty.
std::string objectWith(Fields fields, StringRef key, StringRef value) {
  auto it =
      llvm::find_if(fields, [&](const auto &f) { return f.first == key; });
  if (it == fields.end())
    fields.emplace_back(key.str(), value.str());
  else if (value.empty())
    fields.erase(it);
  else
    it->second = value.str();
  std::string out = "{";
  for (const auto &[k, v] : fields)
    out += (out.size() > 1 ? ", \"" : "\"") + k + "\": " + v;
  return out + "}";
}

std::string specWith(StringRef meshes, StringRef tensors) {
  return (R"j({"m2n_spec": 1, "meshes": )j" + meshes + R"j(, "tensors": )j" +
          tensors + "}")
      .str();
}

/// A spec with the one mesh "train" (shape [2, 4], ranks 0..7), with `key`
/// of it set to `value` as in objectWith.
std::string meshWith(StringRef key, StringRef value) {
  Fields train = {{"name", "\"train\""},
                  {"shape", "[2, 4]"},
                  {"ranks", R"j({"start": 0})j"}};
  return specWith("[" + objectWith(train, key, value) + "]", "[]");
}

/// A spec over kMeshes with one tensor "w" (BF16, [14336, 4096], ["R",
/// "S(0)"] on "train" to ["S(0)"] on "gen"), with `key` of it set to `value`
/// as in objectWith.
std::string tensorWith(StringRef key, StringRef value) {
  Fields w = {{"name", "\"w\""},
              {"dtype", "\"BF16\""},
              {"shape", "[14336, 4096]"},
              {"src", R"j({"mesh": "train", "placements": ["R", "S(0)"]})j"},
              {"dst", R"j({"mesh": "gen", "placements": ["S(0)"]})j"}};
  return specWith(kMeshes, "[" + objectWith(w, key, value) + "]");
}

/// The diagnostic for `text`, or "parsed" when it parses.
std::string errorOf(StringRef text) {
  llvm::Expected<RefitSpec> spec = parseRefitSpec(text, "spec.json");
  if (spec)
    return "parsed";
  return llvm::toString(spec.takeError());
}

RefitSpec parseOk(StringRef text) {
  llvm::Expected<RefitSpec> spec = parseRefitSpec(text, "spec.json");
  if (!spec) {
    ADD_FAILURE() << llvm::toString(spec.takeError());
    return {};
  }
  return std::move(*spec);
}

void expectEqual(const RefitSpec &a, const RefitSpec &b) {
  EXPECT_EQ(a.name, b.name);
  ASSERT_EQ(a.meshes.size(), b.meshes.size());
  for (size_t i = 0; i < a.meshes.size(); ++i) {
    EXPECT_EQ(a.meshes[i].name, b.meshes[i].name);
    EXPECT_EQ(a.meshes[i].shape, b.meshes[i].shape);
    EXPECT_EQ(a.meshes[i].axes, b.meshes[i].axes);
    EXPECT_EQ(a.meshes[i].ranks, b.meshes[i].ranks);
  }
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const TensorSpec &x = a.tensors[i], &y = b.tensors[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.dtype, y.dtype);
    EXPECT_EQ(x.shape, y.shape);
    EXPECT_EQ(x.src.mesh, y.src.mesh);
    EXPECT_EQ(x.src.placements, y.src.placements);
    EXPECT_EQ(x.dst.mesh, y.dst.mesh);
    EXPECT_EQ(x.dst.placements, y.dst.placements);
  }
}

const Placement R = Placement::replicate();
Placement S(int64_t dim) { return Placement::shard(dim); }

//===----------------------------------------------------------------------===//
// DType
//===----------------------------------------------------------------------===//

TEST(DType, NamesRoundTrip) {
  EXPECT_EQ(allDTypes().size(), 15u);
  for (DType type : allDTypes())
    EXPECT_EQ(parseDType(dtypeName(type)), type) << dtypeName(type).str();
}

TEST(DType, ByteSizes) {
  EXPECT_EQ(dtypeByteSize(DType::BF16), 2);
  EXPECT_EQ(dtypeByteSize(DType::F32), 4);
  EXPECT_EQ(dtypeByteSize(DType::F64), 8);
  EXPECT_EQ(dtypeByteSize(DType::F8_E4M3), 1);
  EXPECT_EQ(dtypeByteSize(DType::BOOL), 1);
  EXPECT_EQ(dtypeByteSize(DType::U16), 2);
  EXPECT_EQ(dtypeByteSize(DType::I64), 8);
}

TEST(DType, TorchNames) {
  std::pair<const char *, DType> cases[] = {{"bfloat16", DType::BF16},
                                            {"float16", DType::F16},
                                            {"half", DType::F16},
                                            {"float32", DType::F32},
                                            {"float", DType::F32},
                                            {"float64", DType::F64},
                                            {"double", DType::F64},
                                            {"float8_e4m3fn", DType::F8_E4M3},
                                            {"float8_e5m2", DType::F8_E5M2},
                                            {"int8", DType::I8},
                                            {"uint8", DType::U8},
                                            {"int16", DType::I16},
                                            {"short", DType::I16},
                                            {"uint16", DType::U16},
                                            {"int32", DType::I32},
                                            {"int", DType::I32},
                                            {"uint32", DType::U32},
                                            {"int64", DType::I64},
                                            {"long", DType::I64},
                                            {"uint64", DType::U64},
                                            {"bool", DType::BOOL},
                                            {"torch.bfloat16", DType::BF16},
                                            {"torch.long", DType::I64}};
  for (auto [name, type] : cases)
    EXPECT_EQ(parseDType(name), type) << name;
}

TEST(DType, ShortNames) {
  std::pair<const char *, DType> cases[] = {
      {"bf16", DType::BF16},        {"fp16", DType::F16},
      {"fp32", DType::F32},         {"fp64", DType::F64},
      {"fp8_e4m3", DType::F8_E4M3}, {"fp8_e5m2", DType::F8_E5M2}};
  for (auto [name, type] : cases)
    EXPECT_EQ(parseDType(name), type) << name;
}

TEST(DType, IgnoresCase) {
  std::pair<const char *, DType> cases[] = {
      {"Bf16", DType::BF16},       {"FP32", DType::F32},
      {"BFloat16", DType::BF16},   {"Torch.Half", DType::F16},
      {"f8_e4m3", DType::F8_E4M3}, {"Bool", DType::BOOL}};
  for (auto [name, type] : cases)
    EXPECT_EQ(parseDType(name), type) << name;
}

TEST(DType, Rejects) {
  // "torch." comes before torch's names only.
  for (const char *name : {"", "torch.BF16", "torch.bf16", "torch.", "fp8",
                           "float8_e4m3fnuz", "complex64", " BF16"})
    EXPECT_EQ(parseDType(name), std::nullopt) << name;
}

//===----------------------------------------------------------------------===//
// Placements
//===----------------------------------------------------------------------===//

TEST(Placement, Spellings) {
  std::pair<const char *, Placement> cases[] = {
      {"R", R},           {"Replicate()", R},     {" Replicate ( ) ", R},
      {"S(0)", S(0)},     {"S(12)", S(12)},       {"S( 1 )", S(1)},
      {"Shard(2)", S(2)}, {"Shard(dim=3)", S(3)}, {"Shard( dim = 1 )", S(1)}};
  for (auto [text, placement] : cases)
    EXPECT_EQ(parsePlacement(text), placement) << text;
}

TEST(Placement, Rejects) {
  for (const char *text :
       {"", "r", "S", "S()", "S(-1)", "S(x)", "S(1", "S(1))", "S(0)x",
        "S(dim=0)", "Shard", "Shard(dim 0)", "Shard(dim=)", "Replicate",
        "Replicate(0)", "Partial()", "S(99999999999999999999)"})
    EXPECT_EQ(parsePlacement(text), std::nullopt) << text;
}

//===----------------------------------------------------------------------===//
// Parsing valid specs
//===----------------------------------------------------------------------===//

TEST(Parse, Example) {
  RefitSpec spec = parseOk(kExample);
  EXPECT_EQ(spec.name, "refit");
  ASSERT_EQ(spec.meshes.size(), 2u);
  const MeshSpec &train = spec.meshes[0];
  EXPECT_EQ(train.name, "train");
  EXPECT_EQ(train.shape, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(train.axes, (std::vector<std::string>{"dp", "tp"}));
  EXPECT_EQ(train.ranks, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  const MeshSpec &gen = spec.meshes[1];
  EXPECT_EQ(gen.name, "gen");
  EXPECT_EQ(gen.shape, (std::vector<int64_t>{4}));
  EXPECT_TRUE(gen.axes.empty());
  EXPECT_EQ(gen.ranks, (std::vector<int64_t>{8, 9, 10, 11}));

  ASSERT_EQ(spec.tensors.size(), 1u);
  const TensorSpec &t = spec.tensors[0];
  EXPECT_EQ(t.name, "layers.0.mlp.up.weight");
  EXPECT_EQ(t.dtype, DType::BF16);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{14336, 4096}));
  EXPECT_EQ(t.src.mesh, "train");
  EXPECT_EQ(t.src.placements, (std::vector<Placement>{R, S(0)}));
  EXPECT_EQ(t.dst.mesh, "gen");
  EXPECT_EQ(t.dst.placements, (std::vector<Placement>{S(0)}));

  EXPECT_EQ(spec.findMesh("gen"), &spec.meshes[1]);
  EXPECT_EQ(spec.findMesh("nope"), nullptr);
}

TEST(Parse, TorchSpellings) {
  RefitSpec spec = parseOk(specWith(kMeshes, R"j([
    {"name": "a", "dtype": "torch.bfloat16", "shape": [8, 8],
     "src": {"mesh": "train", "placements": ["Replicate()", "Shard(dim=1)"]},
     "dst": {"mesh": "gen", "placements": ["Shard(0)"]}},
    {"name": "b", "dtype": "half", "shape": [8],
     "src": {"mesh": "train", "placements": [" S ( 0 ) ", "Replicate()"]},
     "dst": {"mesh": "gen", "placements": ["R"]}}])j"));
  ASSERT_EQ(spec.tensors.size(), 2u);
  EXPECT_EQ(spec.tensors[0].dtype, DType::BF16);
  EXPECT_EQ(spec.tensors[0].src.placements, (std::vector<Placement>{R, S(1)}));
  EXPECT_EQ(spec.tensors[0].dst.placements, (std::vector<Placement>{S(0)}));
  EXPECT_EQ(spec.tensors[1].dtype, DType::F16);
  EXPECT_EQ(spec.tensors[1].src.placements, (std::vector<Placement>{S(0), R}));
}

TEST(Parse, NameAndEmptyLists) {
  RefitSpec spec = parseOk(R"j({"m2n_spec": 1, "name": "step7",
                               "meshes": [], "tensors": []})j");
  EXPECT_EQ(spec.name, "step7");
  EXPECT_TRUE(spec.meshes.empty());
  EXPECT_TRUE(spec.tensors.empty());
}

TEST(Parse, ColocatedMeshesAndScalars) {
  // Both groups on ranks 0..3, and a rank-0 tensor replicated on both.
  RefitSpec spec = parseOk(specWith(
      R"j([{"name": "a", "shape": [4], "ranks": {"start": 0}},
          {"name": "b", "shape": [2, 2], "ranks": [3, 2, 1, 0]}])j",
      R"j([{"name": "step", "dtype": "I64", "shape": [],
           "src": {"mesh": "a", "placements": ["R"]},
           "dst": {"mesh": "b", "placements": ["R", "R"]}}])j"));
  EXPECT_EQ(spec.meshes[1].ranks, (std::vector<int64_t>{3, 2, 1, 0}));
  EXPECT_TRUE(spec.tensors[0].shape.empty());
}

TEST(Parse, IntegralNumbersAreIntegers) {
  // JSON has one number type; 4.0 and 4e0 are the integer 4.
  RefitSpec spec = parseOk(meshWith("shape", "[2.0, 4e0]"));
  EXPECT_EQ(spec.meshes[0].shape, (std::vector<int64_t>{2, 4}));
}

//===----------------------------------------------------------------------===//
// Rejections: the top level
//===----------------------------------------------------------------------===//

TEST(Reject, MalformedJSON) {
  EXPECT_EQ(errorOf("{\n  \"m2n_spec\": 1,\n  \"meshes\": [1,,2]\n}"),
            "spec.json:3:16: error: malformed JSON: Invalid JSON value");
  EXPECT_EQ(errorOf(""),
            "spec.json:1:1: error: malformed JSON: Unexpected EOF");
  // llvm::json's position, as it gives it: where its parser stopped, here
  // just before the offending character.
  EXPECT_EQ(
      errorOf("{\"m2n_spec\": 1} x"),
      "spec.json:1:16: error: malformed JSON: Text after end of document");
}

TEST(Reject, NotAnObject) {
  EXPECT_EQ(errorOf("[1]"), "spec.json: error: expected a JSON object at the "
                            "top level, got an array");
}

TEST(Reject, Version) {
  EXPECT_EQ(errorOf(R"j({"meshes": [], "tensors": []})j"),
            "spec.json: error: missing key \"m2n_spec\"; is this an m2n "
            "refit spec?");
  EXPECT_EQ(errorOf(R"j({"m2n_spec": 2, "meshes": [], "tensors": []})j"),
            "spec.json: error: m2n_spec: unsupported version 2; this m2n "
            "reads version 1");
  EXPECT_EQ(errorOf(R"j({"m2n_spec": "1", "meshes": [], "tensors": []})j"),
            "spec.json: error: m2n_spec: expected an integer, got a string");
  EXPECT_EQ(errorOf(R"j({"m2n_spec": 1.5, "meshes": [], "tensors": []})j"),
            "spec.json: error: m2n_spec: expected an integer, got 1.5");
}

TEST(Reject, TopLevelKeys) {
  EXPECT_EQ(errorOf(R"j({"m2n_spec": 1, "mesh": [], "tensors": []})j"),
            "spec.json: error: unknown key \"mesh\" (expected \"m2n_spec\", "
            "\"name\", \"meshes\" or \"tensors\")");
  EXPECT_EQ(errorOf(R"j({"m2n_spec": 1, "meshes": []})j"),
            "spec.json: error: missing key \"tensors\"");
  EXPECT_EQ(errorOf(R"j({"m2n_spec": 1, "meshes": {}, "tensors": []})j"),
            "spec.json: error: meshes: expected an array, got an object");
  EXPECT_EQ(errorOf(R"j({"m2n_spec": 1, "meshes": [], "tensors": null})j"),
            "spec.json: error: tensors: expected an array, got null");
  EXPECT_EQ(
      errorOf(R"j({"m2n_spec": 1, "name": 7, "meshes": [], "tensors": []})j"),
      "spec.json: error: name: expected a string, got a number");
  EXPECT_EQ(
      errorOf(R"j({"m2n_spec": 1, "name": "", "meshes": [], "tensors": []})j"),
      "spec.json: error: name: must not be empty");
}

TEST(Reject, FirstUnknownKeyAlphabetically) {
  // Of several unknown keys, the alphabetically first one.
  EXPECT_EQ(errorOf(specWith(R"j([{"name": "train", "zz": 1, "shape": [2, 4],
                                 "aa": 2, "ranks": {"start": 0}}])j",
                             "[]")),
            "spec.json: error: meshes[0] (\"train\"): unknown key \"aa\" "
            "(expected \"name\", \"shape\", \"axes\" or \"ranks\")");
}

//===----------------------------------------------------------------------===//
// Rejections: meshes
//===----------------------------------------------------------------------===//

TEST(Reject, MeshStructure) {
  EXPECT_EQ(errorOf(specWith("[3]", "[]")),
            "spec.json: error: meshes[0]: expected an object, got a number");
  EXPECT_EQ(errorOf(meshWith("name", "")),
            "spec.json: error: meshes[0]: missing key \"name\"");
  EXPECT_EQ(errorOf(meshWith("name", "[]")),
            "spec.json: error: meshes[0]: name: expected a string, got an "
            "array");
  EXPECT_EQ(errorOf(meshWith("name", "\"\"")),
            "spec.json: error: meshes[0]: name: must not be empty");
  EXPECT_EQ(errorOf(meshWith("rank", "[0]")),
            "spec.json: error: meshes[0] (\"train\"): unknown key \"rank\" "
            "(expected \"name\", \"shape\", \"axes\" or \"ranks\")");
  EXPECT_EQ(errorOf(meshWith("ranks", "")),
            "spec.json: error: meshes[0] (\"train\"): missing key \"ranks\"");
  EXPECT_EQ(errorOf(meshWith("shape", "\"2x4\"")),
            "spec.json: error: meshes[0] (\"train\"): shape: expected an "
            "array, got a string");
  EXPECT_EQ(errorOf(meshWith("ranks", "\"all\"")),
            "spec.json: error: meshes[0] (\"train\"): ranks: expected an "
            "array, got a string");
}

TEST(Reject, NonIntegers) {
  EXPECT_EQ(errorOf(meshWith("shape", "[2, 2.5]")),
            "spec.json: error: meshes[0] (\"train\"): shape[1]: expected an "
            "integer, got 2.5");
  EXPECT_EQ(errorOf(meshWith("shape", "[2, \"4\"]")),
            "spec.json: error: meshes[0] (\"train\"): shape[1]: expected an "
            "integer, got a string");
  EXPECT_EQ(errorOf(meshWith("shape", "[true, 4]")),
            "spec.json: error: meshes[0] (\"train\"): shape[0]: expected an "
            "integer, got a boolean");
  for (const char *big : {"9223372036854775808", "18446744073709551615", "1e30",
                          "-1e30", "123456789012345678901234567890"})
    EXPECT_EQ(errorOf(meshWith("shape", std::string("[2, ") + big + "]")),
              "spec.json: error: meshes[0] (\"train\"): shape[1]: integer "
              "out of the 64-bit range")
        << big;
  EXPECT_EQ(errorOf(meshWith("ranks", "[0, 1, 2, 3.25, 4, 5, 6, 7]")),
            "spec.json: error: meshes[0] (\"train\"): ranks[3]: expected an "
            "integer, got 3.25");
}

TEST(Reject, RanksStart) {
  EXPECT_EQ(errorOf(meshWith("ranks", R"j({"start": -1})j")),
            "spec.json: error: meshes[0] (\"train\"): ranks.start: must be "
            "non-negative, got -1");
  EXPECT_EQ(errorOf(meshWith("ranks", R"j({"begin": 0})j")),
            "spec.json: error: meshes[0] (\"train\"): ranks: unknown key "
            "\"begin\" (expected \"start\")");
  EXPECT_EQ(errorOf(meshWith("ranks", "{}")),
            "spec.json: error: meshes[0] (\"train\"): ranks: missing key "
            "\"start\"");
  EXPECT_EQ(errorOf(meshWith("ranks", R"j({"start": "0"})j")),
            "spec.json: error: meshes[0] (\"train\"): ranks.start: expected "
            "an integer, got a string");
  // Eight ranks from 2^20 - 8 end at the largest rank id.
  EXPECT_EQ(errorOf(meshWith("ranks", R"j({"start": 1048568})j")), "parsed");
  EXPECT_EQ(errorOf(meshWith("ranks", R"j({"start": 1048569})j")),
            "spec.json: error: meshes[0] (\"train\"): ranks.start: the "
            "mesh's ranks run from 1048569 beyond the largest rank id, "
            "1048575");
  EXPECT_EQ(errorOf(meshWith("ranks", R"j({"start": 9223372036854775801})j")),
            "spec.json: error: meshes[0] (\"train\"): ranks.start: the "
            "mesh's ranks run from 9223372036854775801 beyond the largest "
            "rank id, 1048575");
}

/// The size is checked before {"start": k} expands into ranks.
TEST(Reject, MeshSize) {
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{4096, 4097},
        std::vector<int64_t>{4294967296, 4294967296}}) {
    std::string problem = checkMeshShape(shape);
    ASSERT_NE(problem, "");
    std::string text = "[" + std::to_string(shape[0]) + ", " +
                       std::to_string(shape[1]) + "]";
    EXPECT_EQ(errorOf(meshWith("shape", text)),
              "spec.json: error: meshes[0] (\"train\"): shape: " + problem);
  }
}

/// The layout model words the mesh checks; the parser prefixes the mesh and
/// the key that is wrong.
TEST(Reject, MeshChecks) {
  struct Case {
    const char *shape, *ranks, *key;
    std::vector<int64_t> shapeValue, ranksValue;
  } cases[] = {
      {"[]", R"j({"start": 0})j", "shape", {}, {0}},
      {"[1, 1, 1, 1, 1, 1, 1, 1, 1]",
       R"j({"start": 0})j",
       "shape",
       {1, 1, 1, 1, 1, 1, 1, 1, 1},
       {0}},
      {"[2, 0]", R"j({"start": 0})j", "shape", {2, 0}, {}},
      {"[-2, -4]", R"j({"start": 0})j", "shape", {-2, -4}, {}},
      {"[2, 4]", "[0, 1, 2]", "ranks", {2, 4}, {0, 1, 2}},
      {"[2]", "[0, -1]", "ranks", {2}, {0, -1}},
      {"[2, 2]", "[0, 1, 2, 1]", "ranks", {2, 2}, {0, 1, 2, 1}},
  };
  for (const Case &c : cases) {
    std::string problem = checkMesh(c.shapeValue, c.ranksValue);
    ASSERT_NE(problem, "") << c.shape << " " << c.ranks;
    std::string spec =
        specWith(std::string(R"j([{"name": "train", "shape": )j") + c.shape +
                     R"j(, "ranks": )j" + c.ranks + "}]",
                 "[]");
    EXPECT_EQ(errorOf(spec), std::string("spec.json: error: meshes[0] "
                                         "(\"train\"): ") +
                                 c.key + ": " + problem);
  }
}

TEST(Reject, Axes) {
  EXPECT_EQ(errorOf(meshWith("axes", R"j(["dp"])j")),
            "spec.json: error: meshes[0] (\"train\"): axes: expected 2 names, "
            "one per mesh dimension, got 1");
  EXPECT_EQ(errorOf(meshWith("axes", R"j(["dp", ""])j")),
            "spec.json: error: meshes[0] (\"train\"): axes[1]: must not be "
            "empty");
  EXPECT_EQ(errorOf(meshWith("axes", R"j(["dp", "dp"])j")),
            "spec.json: error: meshes[0] (\"train\"): axes[1]: duplicate axis "
            "name, also axes[0]");
  EXPECT_EQ(errorOf(meshWith("axes", R"j(["dp", 1])j")),
            "spec.json: error: meshes[0] (\"train\"): axes[1]: expected a "
            "string, got a number");
  EXPECT_EQ(errorOf(meshWith("axes", "[]")),
            "spec.json: error: meshes[0] (\"train\"): axes: expected 2 names, "
            "one per mesh dimension, got 0");
}

TEST(Reject, DuplicateMeshName) {
  EXPECT_EQ(errorOf(specWith(R"j([{"name": "a", "shape": [1], "ranks": [0]},
                                 {"name": "b", "shape": [1], "ranks": [1]},
                                 {"name": "a", "shape": [1], "ranks": [2]}])j",
                             "[]")),
            "spec.json: error: meshes[2] (\"a\"): name: duplicate name, also "
            "used by meshes[0]");
}

//===----------------------------------------------------------------------===//
// Rejections: tensors
//===----------------------------------------------------------------------===//

TEST(Reject, TensorStructure) {
  EXPECT_EQ(errorOf(specWith(kMeshes, "[\"w\"]")),
            "spec.json: error: tensors[0]: expected an object, got a string");
  EXPECT_EQ(errorOf(tensorWith("dtype", "")),
            "spec.json: error: tensors[0] (\"w\"): missing key \"dtype\"");
  EXPECT_EQ(errorOf(tensorWith("name", "")),
            "spec.json: error: tensors[0]: missing key \"name\"");
  EXPECT_EQ(errorOf(tensorWith("name", "\"\"")),
            "spec.json: error: tensors[0]: name: must not be empty");
  EXPECT_EQ(errorOf(tensorWith("Shape", "[1]")),
            "spec.json: error: tensors[0] (\"w\"): unknown key \"Shape\" "
            "(expected \"name\", \"dtype\", \"shape\", \"src\" or \"dst\")");
  EXPECT_EQ(errorOf(tensorWith("shape", "{}")),
            "spec.json: error: tensors[0] (\"w\"): shape: expected an array, "
            "got an object");
  EXPECT_EQ(errorOf(tensorWith("src", "\"train\"")),
            "spec.json: error: tensors[0] (\"w\"): src: expected an object, "
            "got a string");
  EXPECT_EQ(errorOf(tensorWith("dst", R"j({"mesh": "gen"})j")),
            "spec.json: error: tensors[0] (\"w\"): dst: missing key "
            "\"placements\"");
  EXPECT_EQ(
      errorOf(tensorWith("dst", R"j({"mesh": "gen", "placement": ["R"]})j")),
      "spec.json: error: tensors[0] (\"w\"): dst: unknown key \"placement\" "
      "(expected \"mesh\" or \"placements\")");
  EXPECT_EQ(errorOf(tensorWith("dst", R"j({"mesh": 1, "placements": ["R"]})j")),
            "spec.json: error: tensors[0] (\"w\"): dst.mesh: expected a "
            "string, got a number");
  EXPECT_EQ(
      errorOf(tensorWith("dst", R"j({"mesh": "gen", "placements": "R"})j")),
      "spec.json: error: tensors[0] (\"w\"): dst.placements: expected an "
      "array, got a string");
}

TEST(Reject, DType) {
  EXPECT_EQ(
      errorOf(tensorWith("dtype", "\"fp8\"")),
      "spec.json: error: tensors[0] (\"w\"): dtype: unknown dtype "
      "\"fp8\"; expected a safetensors name (\"BF16\", \"F16\", "
      "\"F32\", \"F64\", \"F8_E4M3\", \"F8_E5M2\", \"I8\", \"U8\", "
      "\"I16\", \"U16\", \"I32\", \"U32\", \"I64\", \"U64\" or \"BOOL\"), "
      "a torch name such as \"bfloat16\" or a short name such as "
      "\"bf16\"");
  EXPECT_EQ(errorOf(tensorWith("dtype", "2")),
            "spec.json: error: tensors[0] (\"w\"): dtype: expected a string, "
            "got a number");
}

TEST(Reject, PlacementStrings) {
  EXPECT_EQ(errorOf(tensorWith(
                "src", R"j({"mesh": "train", "placements": ["R", "S[0]"]})j")),
            "spec.json: error: tensors[0] (\"w\"): src.placements[1]: invalid "
            "placement \"S[0]\" (expected \"R\", \"S(d)\", \"Replicate()\" or "
            "\"Shard(dim=d)\")");
  EXPECT_EQ(
      errorOf(
          tensorWith("src", R"j({"mesh": "train", "placements": [0, "R"]})j")),
      "spec.json: error: tensors[0] (\"w\"): src.placements[0]: expected a "
      "string, got a number");
}

TEST(Reject, DuplicateTensorName) {
  const char *w = R"j({"name": "w", "dtype": "F32", "shape": [4],
                      "src": {"mesh": "gen", "placements": ["R"]},
                      "dst": {"mesh": "gen", "placements": ["S(0)"]}})j";
  EXPECT_EQ(errorOf(specWith(kMeshes, std::string("[") + w + ", " + w + "]")),
            "spec.json: error: tensors[1] (\"w\"): name: duplicate name, also "
            "used by tensors[0]");
}

TEST(Reject, UnknownMesh) {
  EXPECT_EQ(
      errorOf(
          tensorWith("dst", R"j({"mesh": "gne", "placements": ["S(0)"]})j")),
      "spec.json: error: tensors[0] (\"w\"): dst.mesh: unknown mesh \"gne\"");
}

/// The layout model words the shape and placement checks; the parser prefixes
/// the tensor and the path.
TEST(Reject, TensorShape) {
  std::string negative = checkTensorShape({4, -1});
  ASSERT_NE(negative, "");
  EXPECT_EQ(errorOf(tensorWith("shape", "[4, -1]")),
            "spec.json: error: tensors[0] (\"w\"): shape: " + negative);
  std::string tooLong = checkTensorShape({1, 1, 1, 1, 1, 1, 1, 1, 1});
  ASSERT_NE(tooLong, "");
  EXPECT_EQ(errorOf(tensorWith("shape", "[1, 1, 1, 1, 1, 1, 1, 1, 1]")),
            "spec.json: error: tensors[0] (\"w\"): shape: " + tooLong);
  std::string tooMany = checkTensorShape({4294967296, 4294967296});
  ASSERT_NE(tooMany, "");
  EXPECT_EQ(errorOf(tensorWith("shape", "[4294967296, 4294967296]")),
            "spec.json: error: tensors[0] (\"w\"): shape: " + tooMany);
  // 2^62 elements pass the layout model, but not at two bytes each.
  ASSERT_EQ(checkTensorShape({1073741824, 1073741824, 4}), "");
  EXPECT_EQ(errorOf(tensorWith("shape", "[1073741824, 1073741824, 4]")),
            "spec.json: error: tensors[0] (\"w\"): shape: the tensor's size in "
            "bytes overflows 64 bits");
}

TEST(Reject, PlacementCount) {
  std::string problem = checkPlacements({R}, 2, 2);
  ASSERT_NE(problem, "");
  EXPECT_EQ(errorOf(tensorWith("src", R"j({"mesh": "train",
                                          "placements": ["R"]})j")),
            "spec.json: error: tensors[0] (\"w\"): src.placements: " + problem);
}

TEST(Reject, ShardDimOutOfRange) {
  std::string problem = checkPlacements({R, S(2)}, 2, 2);
  ASSERT_NE(problem, "");
  EXPECT_EQ(errorOf(specWith(kMeshes, R"j([{"name": "layers.0.mlp.up.weight",
      "dtype": "BF16", "shape": [14336, 4096],
      "src": {"mesh": "train", "placements": ["R", "Shard(dim=2)"]},
      "dst": {"mesh": "gen", "placements": ["S(0)"]}}])j")),
            "spec.json: error: tensors[0] (\"layers.0.mlp.up.weight\"): "
            "src.placements[1]: " +
                problem);
  EXPECT_EQ(errorOf(tensorWith("shape", "[]")),
            "spec.json: error: tensors[0] (\"w\"): src.placements[1]: " +
                checkPlacements({R, S(0)}, 2, 0));
}

TEST(Reject, NamesAreQuotedAsJSON) {
  EXPECT_EQ(errorOf(specWith(kMeshes, R"j([{"name": "a\"b", "dtype": "X"}])j")),
            "spec.json: error: tensors[0] (\"a\\\"b\"): missing key \"shape\"");
}

//===----------------------------------------------------------------------===//
// Files and writing
//===----------------------------------------------------------------------===//

TEST(File, Unreadable) {
  llvm::Expected<RefitSpec> spec = readRefitSpec("does/not/exist.json");
  ASSERT_FALSE(static_cast<bool>(spec));
  EXPECT_EQ(llvm::toString(spec.takeError()),
            "does/not/exist.json: error: cannot read the file: No such file "
            "or directory");
}

TEST(File, ReadsAndNamesTheFile) {
  llvm::SmallString<128> path;
  int fd;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("spec", "json", fd, path));
  llvm::FileRemover remover(path);
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << kExample;
  }
  llvm::Expected<RefitSpec> spec = readRefitSpec(path);
  ASSERT_TRUE(static_cast<bool>(spec)) << llvm::toString(spec.takeError());
  expectEqual(*spec, parseOk(kExample));

  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    os << "{\"m2n_spec\": 3}";
  }
  spec = readRefitSpec(path);
  ASSERT_FALSE(static_cast<bool>(spec));
  EXPECT_EQ(llvm::toString(spec.takeError()),
            path.str().str() + ": error: m2n_spec: unsupported version 3; "
                               "this m2n reads version 1");
}

TEST(Write, Canonical) {
  EXPECT_EQ(writeRefitSpec(parseOk(kExample)), R"j({
  "m2n_spec": 1,
  "name": "refit",
  "meshes": [
    {
      "name": "train",
      "shape": [2, 4],
      "axes": ["dp", "tp"],
      "ranks": {"start": 0}
    },
    {
      "name": "gen",
      "shape": [4],
      "ranks": {"start": 8}
    }
  ],
  "tensors": [
    {
      "name": "layers.0.mlp.up.weight",
      "dtype": "BF16",
      "shape": [14336, 4096],
      "src": {"mesh": "train", "placements": ["R", "S(0)"]},
      "dst": {"mesh": "gen", "placements": ["S(0)"]}
    }
  ]
}
)j");
  EXPECT_EQ(writeRefitSpec(RefitSpec()), R"j({
  "m2n_spec": 1,
  "name": "refit",
  "meshes": [],
  "tensors": []
}
)j");
}

TEST(Write, RoundTrips) {
  RefitSpec spec = parseOk(specWith(
      R"j([{"name": "a", "shape": [2, 2], "axes": ["x", "y"],
           "ranks": [0, 2, 1, 3]},
          {"name": "b \"quoted\"", "shape": [1], "ranks": [5]},
          {"name": "c", "shape": [3], "ranks": {"start": 4}}])j",
      R"j([{"name": "t", "dtype": "torch.float8_e4m3fn", "shape": [6, 0, 2],
           "src": {"mesh": "a", "placements": ["Shard(dim=2)", "S(0)"]},
           "dst": {"mesh": "c", "placements": ["R"]}},
          {"name": "s", "dtype": "bool", "shape": [],
           "src": {"mesh": "b \"quoted\"", "placements": ["R"]},
           "dst": {"mesh": "b \"quoted\"", "placements": ["R"]}}])j"));
  spec.name = "round\ttrip";
  std::string text = writeRefitSpec(spec);
  EXPECT_NE(text.find(R"j("ranks": [0, 2, 1, 3])j"), std::string::npos) << text;
  EXPECT_NE(text.find(R"j("dtype": "F8_E4M3")j"), std::string::npos) << text;
  RefitSpec again = parseOk(text);
  expectEqual(again, spec);
  EXPECT_EQ(writeRefitSpec(again), text);
}

} // namespace
