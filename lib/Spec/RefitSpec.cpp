//===- RefitSpec.cpp - Reading and writing refit specs --------------------===//
//
// The parser reports the first problem it finds and stops. Each message says
// where the problem is: the mesh or tensor (by index and, once known, by
// name) and the path of keys and indices inside it.
//
//===----------------------------------------------------------------------===//

#include "m2n/Spec/RefitSpec.h"

#include "m2n/Spec/JsonFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace m2n;
using namespace m2n::spec;
using llvm::Error;
using llvm::StringRef;
namespace json = llvm::json;

/// The format version this parser reads.
static constexpr int64_t kSpecVersion = 1;

const MeshSpec *RefitSpec::findMesh(StringRef name) const {
  for (const MeshSpec &mesh : meshes)
    if (mesh.name == name)
      return &mesh;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Placements
//===----------------------------------------------------------------------===//

/// Consumes `token` and the blanks after it from the front of `s`.
static bool consume(StringRef &s, StringRef token) {
  if (!s.consume_front(token))
    return false;
  s = s.ltrim();
  return true;
}

std::optional<Placement> spec::parsePlacement(StringRef text) {
  StringRef s = text.trim();
  if (s == "R")
    return Placement::replicate();
  if (consume(s, "Replicate")) {
    if (consume(s, "(") && consume(s, ")") && s.empty())
      return Placement::replicate();
    return std::nullopt;
  }
  // Only torch's spelling has the "dim=" keyword.
  bool isTorch = consume(s, "Shard");
  if (!isTorch && !consume(s, "S"))
    return std::nullopt;
  if (!consume(s, "("))
    return std::nullopt;
  if (isTorch && consume(s, "dim") && !consume(s, "="))
    return std::nullopt;
  uint64_t dim;
  if (s.consumeInteger(10, dim) ||
      dim > uint64_t(std::numeric_limits<int64_t>::max()))
    return std::nullopt;
  s = s.ltrim();
  if (!consume(s, ")") || !s.empty())
    return std::nullopt;
  return Placement::shard(static_cast<int64_t>(dim));
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

namespace {
/// Where a value sits in the spec: the mesh or tensor it belongs to (empty
/// at the top level) and the path to it from there (empty for the entity
/// itself).
struct Where {
  std::string entity;
  std::string path;

  Where key(StringRef name) const {
    return {entity, path.empty() ? name.str() : path + "." + name.str()};
  }
  Where index(size_t i) const {
    return {entity, path + "[" + std::to_string(i) + "]"};
  }
};
} // namespace

/// `s` as a JSON string literal, so that names with quotes or control
/// characters read unambiguously.
static std::string quote(StringRef s) {
  std::string out;
  llvm::raw_string_ostream(out) << json::Value(s);
  return out;
}

static std::string kindName(const json::Value &value) {
  switch (value.kind()) {
  case json::Value::Null:
    return "null";
  case json::Value::Boolean:
    return "a boolean";
  case json::Value::Number:
    return "a number";
  case json::Value::String:
    return "a string";
  case json::Value::Array:
    return "an array";
  case json::Value::Object:
    return "an object";
  }
  llvm_unreachable("unknown JSON kind");
}

/// An error "<where>: <what>"; parseRefitSpec adds the file name.
static Error fail(const Where &where, const llvm::Twine &what) {
  std::string prefix = where.entity;
  if (!where.path.empty())
    prefix += (prefix.empty() ? "" : ": ") + where.path;
  if (prefix.empty())
    return llvm::createStringError(what);
  return llvm::createStringError(prefix + ": " + what);
}

/// `"a", "b" or "c"`.
static std::string alternatives(llvm::ArrayRef<StringRef> names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0)
      out += i + 1 == names.size() ? " or " : ", ";
    out += quote(names[i]);
  }
  return out;
}

/// Rejects keys outside `known`, which are most likely typos that would
/// otherwise be ignored, and requires the keys in `required`.
static Error checkKeys(const json::Object &object, const Where &where,
                       llvm::ArrayRef<StringRef> known,
                       llvm::ArrayRef<StringRef> required) {
  std::vector<StringRef> unknown;
  for (const auto &entry : object) {
    StringRef key = entry.first;
    if (!llvm::is_contained(known, key))
      unknown.push_back(key);
  }
  // Objects iterate in hash order; report the same key on every run.
  if (!unknown.empty())
    return fail(where, "unknown key " + quote(*llvm::min_element(unknown)) +
                           " (expected " + alternatives(known) + ")");
  for (StringRef key : required)
    if (!object.get(key))
      return fail(where, "missing key " + quote(key));
  return Error::success();
}

static Error readObject(const json::Value &value, const Where &where,
                        const json::Object *&object) {
  object = value.getAsObject();
  if (!object)
    return fail(where, "expected an object, got " + kindName(value));
  return Error::success();
}

static Error readString(const json::Value &value, const Where &where,
                        std::string &out) {
  std::optional<StringRef> string = value.getAsString();
  if (!string)
    return fail(where, "expected a string, got " + kindName(value));
  out = string->str();
  return Error::success();
}

/// JSON has a single number type, so an integral value such as 2.0 counts as
/// an integer; 2.5 and values outside int64_t do not.
static Error readInt(const json::Value &value, const Where &where,
                     int64_t &out) {
  if (std::optional<int64_t> integer = value.getAsInteger()) {
    out = *integer;
    return Error::success();
  }
  std::optional<double> number = value.getAsNumber();
  if (!number)
    return fail(where, "expected an integer, got " + kindName(value));
  // llvm::json keeps integers beyond int64_t as uint64_t or as double.
  if (value.getAsUINT64() || std::trunc(*number) == *number)
    return fail(where, "integer out of the 64-bit range");
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%g", *number);
  return fail(where, "expected an integer, got " + text);
}

static Error readNonEmptyName(const json::Value &value, const Where &where,
                              std::string &out) {
  if (Error error = readString(value, where, out))
    return error;
  if (out.empty())
    return fail(where, "must not be empty");
  if (out.size() > kMaxNameBytes)
    return fail(where, llvm::formatv("is {0} bytes long, more than the {1} "
                                     "a name may have",
                                     out.size(), kMaxNameBytes));
  return Error::success();
}

std::string spec::checkTensorName(StringRef name) {
  if (name.empty())
    return "tensor name must not be empty";
  if (name.size() > kMaxNameBytes)
    return "tensor name is " + std::to_string(name.size()) +
           " bytes long, more than the " + std::to_string(kMaxNameBytes) +
           " a name may have";
  // Safetensors files, where the shards end up, cannot hold these.
  if (name.contains('\0'))
    return "tensor name contains a NUL byte, which safetensors files cannot "
           "hold";
  if (name == "__metadata__")
    return "tensor name \"__metadata__\" is the key safetensors files keep "
           "for metadata";
  return "";
}

std::string spec::checkTensorBytes(llvm::ArrayRef<int64_t> shape,
                                   DType dtype) {
  if (llvm::is_contained(shape, 0))
    return "";
  int64_t bytes = dtypeByteSize(dtype);
  for (int64_t dim : shape)
    if (llvm::MulOverflow(bytes, dim, bytes))
      return "the tensor's size in bytes overflows 64 bits";
  return "";
}

/// Reads an array with `read(element, where, out)` per element.
template <typename T, typename ReadFn>
static Error readList(const json::Value &value, const Where &where,
                      std::vector<T> &out, ReadFn read) {
  const json::Array *array = value.getAsArray();
  if (!array)
    return fail(where, "expected an array, got " + kindName(value));
  out.assign(array->size(), T());
  for (size_t i = 0; i < array->size(); ++i)
    if (Error error = read((*array)[i], where.index(i), out[i]))
      return error;
  return Error::success();
}

static Error readInts(const json::Value &value, const Where &where,
                      std::vector<int64_t> &out) {
  return readList(value, where, out, readInt);
}

/// The location of the i-th mesh or tensor, labeled with its name when it has
/// one: an index alone is hard to find in a long spec.
static Where entityAt(StringRef kind, size_t i, const json::Object *object) {
  std::string entity = (kind + "[" + llvm::Twine(i) + "]").str();
  if (object)
    if (std::optional<StringRef> name = object->getString("name"))
      if (!name->empty())
        entity += " (" + quote(*name) + ")";
  return {entity, ""};
}

/// Registers the name of the i-th entity of `kind`, which must be unique.
static Error checkUnique(llvm::StringMap<size_t> &seen, StringRef name,
                         StringRef kind, size_t i, const Where &where) {
  auto [it, inserted] = seen.try_emplace(name, i);
  if (inserted)
    return Error::success();
  return fail(where.key("name"), llvm::formatv("duplicate name, also used by "
                                               "{0}[{1}]",
                                               kind, it->second));
}

//===--- Meshes -----------------------------------------------------------===//

/// Reads {"start": k}, the ranks k, k+1, ... in row-major order, or an
/// explicit list of ranks. Runs after checkMeshShape has accepted `shape`.
static Error readRanks(const json::Value &value, const Where &where,
                       llvm::ArrayRef<int64_t> shape,
                       std::vector<int64_t> &ranks) {
  const json::Object *object = value.getAsObject();
  if (!object)
    return readInts(value, where, ranks);
  if (Error error = checkKeys(*object, where, {"start"}, {"start"}))
    return error;
  int64_t start;
  if (Error error = readInt(*object->get("start"), where.key("start"), start))
    return error;
  if (start < 0)
    return fail(where.key("start"),
                llvm::formatv("must be non-negative, got {0}", start));
  int64_t size = Mesh{std::vector<int64_t>(shape.begin(), shape.end()), {}}
                     .size();
  // Ids beyond the limit would make the loop below, and every table by rank
  // id downstream, as large as the ids.
  if (start > kMaxWorldSize - size)
    return fail(where.key("start"),
                llvm::formatv("the mesh's ranks run from {0} beyond the largest "
                              "rank id, {1}",
                              start, kMaxWorldSize - 1));
  ranks.resize(size);
  for (int64_t i = 0; i < size; ++i)
    ranks[i] = start + i;
  return Error::success();
}

/// Axis names are optional, but if given there is one distinct, non-empty
/// name per mesh dimension.
static Error checkAxes(const MeshSpec &mesh, const Where &where) {
  if (mesh.axes.size() != mesh.shape.size())
    return fail(where, llvm::formatv("expected {0} names, one per mesh "
                                     "dimension, got {1}",
                                     mesh.shape.size(), mesh.axes.size()));
  for (size_t i = 0; i < mesh.axes.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (mesh.axes[j] == mesh.axes[i])
        return fail(where.index(i),
                    llvm::formatv("duplicate axis name, also axes[{0}]", j));
  return Error::success();
}

static Error readMesh(const json::Value &value, size_t i,
                      llvm::StringMap<size_t> &seen, MeshSpec &mesh) {
  const json::Object *object = value.getAsObject();
  Where where = entityAt("meshes", i, object);
  if (!object)
    return fail(where, "expected an object, got " + kindName(value));
  if (Error error =
          checkKeys(*object, where, {"name", "shape", "axes", "ranks"},
                    {"name", "shape", "ranks"}))
    return error;
  if (Error error =
          readNonEmptyName(*object->get("name"), where.key("name"), mesh.name))
    return error;
  if (Error error = checkUnique(seen, mesh.name, "meshes", i, where))
    return error;
  if (Error error =
          readInts(*object->get("shape"), where.key("shape"), mesh.shape))
    return error;
  std::string shapeProblem = checkMeshShape(mesh.shape);
  if (!shapeProblem.empty())
    return fail(where.key("shape"), shapeProblem);
  if (Error error = readRanks(*object->get("ranks"), where.key("ranks"),
                              mesh.shape, mesh.ranks))
    return error;
  // The shape passed checkMeshShape, so what is left is about the ranks.
  std::string problem = checkMesh(mesh.shape, mesh.ranks);
  if (!problem.empty())
    return fail(where.key("ranks"), problem);
  const json::Value *axes = object->get("axes");
  if (!axes)
    return Error::success();
  if (Error error =
          readList(*axes, where.key("axes"), mesh.axes, readNonEmptyName))
    return error;
  return checkAxes(mesh, where.key("axes"));
}

//===--- Tensors ----------------------------------------------------------===//

static Error readDType(const json::Value &value, const Where &where,
                       DType &dtype) {
  std::string name;
  if (Error error = readString(value, where, name))
    return error;
  if (std::optional<DType> parsed = parseDType(name)) {
    dtype = *parsed;
    return Error::success();
  }
  std::vector<StringRef> names;
  for (DType known : allDTypes())
    names.push_back(dtypeName(known));
  return fail(where, "unknown dtype " + quote(name) +
                         "; expected a safetensors name (" +
                         alternatives(names) +
                         "), a torch name such as \"bfloat16\" or a short "
                         "name such as \"bf16\"");
}


static Error readPlacement(const json::Value &value, const Where &where,
                           Placement &placement) {
  std::string text;
  if (Error error = readString(value, where, text))
    return error;
  std::optional<Placement> parsed = parsePlacement(text);
  if (!parsed)
    return fail(where, "invalid placement " + quote(text) +
                           " (expected \"R\", \"S(d)\", \"Replicate()\" or "
                           "\"Shard(dim=d)\")");
  placement = *parsed;
  return Error::success();
}

/// checkPlacements judges the list as a whole. When the count is right, the
/// message is about a placement; point at the first that fails on its own.
static Error checkLayout(const LayoutSpec &layout, int64_t meshRank,
                         int64_t tensorRank, const Where &where) {
  std::string problem =
      checkPlacements(layout.placements, meshRank, tensorRank);
  if (problem.empty())
    return Error::success();
  if (static_cast<int64_t>(layout.placements.size()) == meshRank)
    for (size_t i = 0; i < layout.placements.size(); ++i)
      if (!checkPlacements({layout.placements[i]}, 1, tensorRank).empty())
        return fail(where.index(i), problem);
  return fail(where, problem);
}

static Error readLayout(const json::Value &value, const Where &where,
                        const RefitSpec &spec, int64_t tensorRank,
                        LayoutSpec &layout) {
  const json::Object *object;
  if (Error error = readObject(value, where, object))
    return error;
  if (Error error = checkKeys(*object, where, {"mesh", "placements"},
                              {"mesh", "placements"}))
    return error;
  if (Error error =
          readString(*object->get("mesh"), where.key("mesh"), layout.mesh))
    return error;
  const MeshSpec *mesh = spec.findMesh(layout.mesh);
  if (!mesh)
    return fail(where.key("mesh"), "unknown mesh " + quote(layout.mesh));
  Where placements = where.key("placements");
  if (Error error = readList(*object->get("placements"), placements,
                             layout.placements, readPlacement))
    return error;
  return checkLayout(layout, static_cast<int64_t>(mesh->shape.size()),
                     tensorRank, placements);
}

static Error readTensor(const json::Value &value, size_t i,
                        llvm::StringMap<size_t> &seen, const RefitSpec &spec,
                        TensorSpec &tensor) {
  const json::Object *object = value.getAsObject();
  Where where = entityAt("tensors", i, object);
  if (!object)
    return fail(where, "expected an object, got " + kindName(value));
  if (Error error =
          checkKeys(*object, where, {"name", "dtype", "shape", "src", "dst"},
                    {"name", "dtype", "shape", "src", "dst"}))
    return error;
  if (Error error = readNonEmptyName(*object->get("name"), where.key("name"),
                                     tensor.name))
    return error;
  std::string nameProblem = checkTensorName(tensor.name);
  if (!nameProblem.empty())
    return fail(where.key("name"), nameProblem);
  if (Error error = checkUnique(seen, tensor.name, "tensors", i, where))
    return error;
  if (Error error =
          readDType(*object->get("dtype"), where.key("dtype"), tensor.dtype))
    return error;
  if (Error error =
          readInts(*object->get("shape"), where.key("shape"), tensor.shape))
    return error;
  std::string problem = checkTensorShape(tensor.shape);
  if (!problem.empty())
    return fail(where.key("shape"), problem);
  // Offsets and sizes downstream are in bytes and must not overflow.
  std::string bytesProblem = checkTensorBytes(tensor.shape, tensor.dtype);
  if (!bytesProblem.empty())
    return fail(where.key("shape"), bytesProblem);
  int64_t rank = static_cast<int64_t>(tensor.shape.size());
  if (Error error = readLayout(*object->get("src"), where.key("src"), spec,
                               rank, tensor.src))
    return error;
  return readLayout(*object->get("dst"), where.key("dst"), spec, rank,
                    tensor.dst);
}

//===--- The whole spec ---------------------------------------------------===//

/// The version comes first: a spec of another version may have other keys.
static Error checkVersion(const json::Object &root) {
  const json::Value *value = root.get("m2n_spec");
  if (!value)
    return fail({}, "missing key \"m2n_spec\"; is this an m2n refit spec?");
  Where where{"", "m2n_spec"};
  int64_t version;
  if (Error error = readInt(*value, where, version))
    return error;
  if (version != kSpecVersion)
    return fail(where, llvm::formatv("unsupported version {0}; this m2n reads "
                                     "version {1}",
                                     version, kSpecVersion));
  return Error::success();
}

static Error readSpec(const json::Value &value, RefitSpec &spec) {
  const json::Object *root = value.getAsObject();
  if (!root)
    return fail({}, "expected a JSON object at the top level, got " +
                        kindName(value));
  if (Error error = checkVersion(*root))
    return error;
  if (Error error =
          checkKeys(*root, {}, {"m2n_spec", "name", "meshes", "tensors"},
                    {"meshes", "tensors"}))
    return error;
  if (const json::Value *name = root->get("name"))
    if (Error error = readNonEmptyName(*name, {"", "name"}, spec.name))
      return error;

  const json::Array *meshes = root->getArray("meshes");
  if (!meshes)
    return fail({"", "meshes"},
                "expected an array, got " + kindName(*root->get("meshes")));
  if (meshes->size() > kMaxMeshes)
    return fail({"", "meshes"}, llvm::formatv("{0} meshes, more than the {1} "
                                              "a spec may have",
                                              meshes->size(), kMaxMeshes));
  llvm::StringMap<size_t> meshNames;
  spec.meshes.resize(meshes->size());
  for (size_t i = 0; i < meshes->size(); ++i)
    if (Error error = readMesh((*meshes)[i], i, meshNames, spec.meshes[i]))
      return error;

  const json::Array *tensors = root->getArray("tensors");
  if (!tensors)
    return fail({"", "tensors"},
                "expected an array, got " + kindName(*root->get("tensors")));
  if (tensors->size() > kMaxTensors)
    return fail({"", "tensors"}, llvm::formatv("{0} tensors, more than the "
                                               "{1} a spec may have",
                                               tensors->size(), kMaxTensors));
  llvm::StringMap<size_t> tensorNames;
  spec.tensors.resize(tensors->size());
  // The sum of all tensors' bytes, which plan totals add up to.
  int64_t totalBytes = 0;
  for (size_t i = 0; i < tensors->size(); ++i) {
    TensorSpec &tensor = spec.tensors[i];
    if (Error error = readTensor((*tensors)[i], i, tensorNames, spec, tensor))
      return error;
    // checkTensorBytes has ruled out overflow for a tensor without 0 dims.
    int64_t bytes = 0;
    if (!llvm::is_contained(tensor.shape, 0)) {
      bytes = dtypeByteSize(tensor.dtype);
      for (int64_t dim : tensor.shape)
        bytes *= dim;
    }
    if (llvm::AddOverflow(totalBytes, bytes, totalBytes))
      return fail(entityAt("tensors", i, (*tensors)[i].getAsObject()),
                  "the tensors up to this one hold more than 2^63 - 1 bytes");
  }
  return Error::success();
}

llvm::Expected<RefitSpec> spec::parseRefitSpec(StringRef text,
                                               StringRef fileName) {
  llvm::Expected<json::Value> value = parseJsonFile(text, fileName);
  if (!value)
    return value.takeError();
  RefitSpec spec;
  if (Error error = readSpec(*value, spec))
    return llvm::createStringError(
        fileName + ": error: " + llvm::toString(std::move(error)));
  return spec;
}

llvm::Expected<RefitSpec> spec::readRefitSpec(StringRef path) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      readTextFile(path);
  if (!buffer)
    return buffer.takeError();
  return parseRefitSpec((*buffer)->getBuffer(),
                        (*buffer)->getBufferIdentifier());
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

static bool isContiguous(llvm::ArrayRef<int64_t> ranks) {
  if (ranks.empty())
    return false;
  for (size_t i = 1; i < ranks.size(); ++i)
    if (ranks[i] != ranks[0] + static_cast<int64_t>(i))
      return false;
  return true;
}

/// `[a, b, c]` on one line.
template <typename Range, typename WriteFn>
static void writeInline(llvm::raw_ostream &os, const Range &range,
                        WriteFn write) {
  os << "[";
  llvm::interleave(range, os, write, ", ");
  os << "]";
}

static void writeInts(llvm::raw_ostream &os, llvm::ArrayRef<int64_t> ints) {
  writeInline(os, ints, [&](int64_t i) { os << i; });
}

static void writeMesh(llvm::raw_ostream &os, const MeshSpec &mesh) {
  os << "    {\n      \"name\": " << quote(mesh.name) << ",\n";
  os << "      \"shape\": ";
  writeInts(os, mesh.shape);
  os << ",\n";
  if (!mesh.axes.empty()) {
    os << "      \"axes\": ";
    writeInline(os, mesh.axes, [&](const std::string &a) { os << quote(a); });
    os << ",\n";
  }
  os << "      \"ranks\": ";
  if (isContiguous(mesh.ranks))
    os << "{\"start\": " << mesh.ranks.front() << "}";
  else
    writeInts(os, mesh.ranks);
  os << "\n    }";
}

static void writeLayout(llvm::raw_ostream &os, const LayoutSpec &layout) {
  os << "{\"mesh\": " << quote(layout.mesh) << ", \"placements\": ";
  writeInline(os, layout.placements,
              [&](const Placement &p) { os << quote(p.str()); });
  os << "}";
}

static void writeTensor(llvm::raw_ostream &os, const TensorSpec &tensor) {
  os << "    {\n      \"name\": " << quote(tensor.name) << ",\n";
  os << "      \"dtype\": " << quote(dtypeName(tensor.dtype)) << ",\n";
  os << "      \"shape\": ";
  writeInts(os, tensor.shape);
  os << ",\n      \"src\": ";
  writeLayout(os, tensor.src);
  os << ",\n      \"dst\": ";
  writeLayout(os, tensor.dst);
  os << "\n    }";
}

/// `[]`, or one element per line.
template <typename T, typename WriteFn>
static void writeBlock(llvm::raw_ostream &os, const std::vector<T> &items,
                       WriteFn write) {
  if (items.empty()) {
    os << "[]";
    return;
  }
  os << "[\n";
  llvm::interleave(
      items, os, [&](const T &item) { write(os, item); }, ",\n");
  os << "\n  ]";
}

std::string spec::writeRefitSpec(const RefitSpec &spec) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "{\n  \"m2n_spec\": " << kSpecVersion << ",\n";
  os << "  \"name\": " << quote(spec.name) << ",\n";
  os << "  \"meshes\": ";
  writeBlock(os, spec.meshes, writeMesh);
  os << ",\n  \"tensors\": ";
  writeBlock(os, spec.tensors, writeTensor);
  os << "\n}\n";
  return text;
}
