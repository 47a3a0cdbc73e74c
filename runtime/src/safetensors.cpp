//===- safetensors.cpp - Reading and writing safetensors files ------------===//
//
// Follows the format as huggingface/safetensors defines and checks it: the
// header starts with '{' and is at most 100 MB, the data_offsets of every
// tensor match its shape and dtype, and the tensors, in order of their
// offsets, cover the data from its first byte to its last with no gap or
// overlap. Writing lays files out as the reference writer does (header
// padded with spaces to 8 bytes, data ordered by alignment), so that every
// tensor of a mapped file is aligned to its element size.
//
//===----------------------------------------------------------------------===//

#include "m2n/safetensors.h"

#include "json.h"
#include "m2n/plan.h"
#include "mapped_file.h"
#include "plan_internal.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <numeric>
#include <set>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using m2n::concat;
using m2n::fileError;
using m2n::mapFile;
using m2n::quoteName;

// The reference implementation refuses larger headers.
constexpr uint64_t kMaxHeaderBytes = 100000000;
constexpr const char *kMetadataKey = "__metadata__";

struct Tensor {
  std::string name;
  m2n_dtype_t dtype = M2N_DTYPE_U8;
  uint32_t ndim = 0;
  int64_t shape[M2N_PLAN_MAX_RANK] = {};
  uint64_t begin = 0; // data_offsets, within the data
  uint64_t end = 0;
};

std::string shapeText(uint32_t ndim, const int64_t *shape) {
  std::string text = "[";
  for (uint32_t i = 0; i < ndim; ++i)
    text += concat(i ? ", " : "", shape[i]);
  return text + "]";
}

// Elements times the dtype's size, or false when that overflows 64 bits.
bool tensorBytes(m2n_dtype_t dtype, uint32_t ndim, const int64_t *shape,
                 uint64_t *bytes) {
  uint64_t total = static_cast<uint64_t>(m2n_dtype_size(dtype));
  for (uint32_t i = 0; i < ndim; ++i) {
    auto extent = static_cast<uint64_t>(shape[i]);
    if (extent != 0 && total > UINT64_MAX / extent)
      return false;
    total *= extent;
  }
  *bytes = total;
  return true;
}

} // namespace

struct m2n_safetensors_s {
  std::string path;
  const uint8_t *mapping = nullptr;
  uint64_t size = 0;
  const uint8_t *data = nullptr;                             // the data area
  std::vector<Tensor> tensors;                               // by name
  std::vector<std::pair<std::string, std::string>> metadata; // by key

  ~m2n_safetensors_s() {
    if (size != 0)
      munmap(const_cast<uint8_t *>(mapping), size);
  }

  m2n_status_t parse();

private:
  m2n_status_t error(m2n_status_code_t code, const std::string &what) const {
    return m2n_status_create(code, concat(path, ": ", what).c_str());
  }
  m2n_status_t parseMetadata(const m2n::json::Value &value);
  m2n_status_t parseTensor(const std::string &name,
                           const m2n::json::Value &value, uint64_t dataSize);
  m2n_status_t parseDtype(const std::string &where,
                          const m2n::json::Value &value, Tensor &tensor);
  m2n_status_t parseShape(const std::string &where,
                          const m2n::json::Value &value, Tensor &tensor);
  m2n_status_t parseOffsets(const std::string &where,
                            const m2n::json::Value &value, Tensor &tensor);
  m2n_status_t checkCoverage(uint64_t dataSize) const;
};

m2n_status_t m2n_safetensors_s::parse() {
  if (size < 8)
    return error(M2N_STATUS_DATA_LOSS,
                 concat("truncated: ", size,
                        " bytes, fewer than the 8-byte header length"));
  uint64_t headerSize = m2n::readAt<uint64_t>(mapping, 0);
  if (headerSize > kMaxHeaderBytes)
    return error(M2N_STATUS_DATA_LOSS,
                 concat("header of ", headerSize, " bytes is larger than the ",
                        kMaxHeaderBytes, " bytes safetensors allows"));
  if (headerSize > size - 8)
    return error(M2N_STATUS_DATA_LOSS,
                 concat("truncated: header says ", headerSize,
                        " bytes, the file has ", size - 8,
                        " after the 8-byte length"));
  std::string_view header(reinterpret_cast<const char *>(mapping) + 8,
                          headerSize);
  if (header.empty() || header[0] != '{')
    return error(M2N_STATUS_DATA_LOSS,
                 "the header does not start with '{' at byte 8");
  m2n::json::Value root;
  std::string problem = m2n::json::parse(header, 8, &root);
  if (!problem.empty())
    return error(M2N_STATUS_DATA_LOSS, concat("malformed header ", problem));

  data = mapping + 8 + headerSize;
  uint64_t dataSize = size - 8 - headerSize;
  for (const m2n::json::Member &member : root.members) {
    if (member.key == kMetadataKey)
      M2N_RETURN_IF_ERROR(parseMetadata(member.value));
    else
      M2N_RETURN_IF_ERROR(parseTensor(member.key, member.value, dataSize));
  }
  M2N_RETURN_IF_ERROR(checkCoverage(dataSize));
  std::sort(tensors.begin(), tensors.end(),
            [](const Tensor &a, const Tensor &b) { return a.name < b.name; });
  std::sort(metadata.begin(), metadata.end());
  return nullptr;
}

m2n_status_t m2n_safetensors_s::parseMetadata(const m2n::json::Value &value) {
  using m2n::json::Value;
  if (value.kind != Value::Object)
    return error(M2N_STATUS_DATA_LOSS,
                 concat("\"__metadata__\" at byte ", value.offset, " is ",
                        m2n::json::kindName(value.kind),
                        ", expected an object of strings"));
  for (const m2n::json::Member &member : value.members) {
    const std::string &key = member.key;
    const m2n::json::Value &entry = member.value;
    if (entry.kind != Value::String)
      return error(M2N_STATUS_DATA_LOSS,
                   concat("\"__metadata__\" entry ", quoteName(key),
                          " at byte ", entry.offset, " is ",
                          m2n::json::kindName(entry.kind),
                          ", expected a string"));
    if (key.find('\0') != std::string::npos ||
        entry.string.find('\0') != std::string::npos)
      return error(M2N_STATUS_UNIMPLEMENTED,
                   concat("\"__metadata__\" entry ", quoteName(key),
                          " holds a NUL character, which m2n does not "
                          "support"));
    metadata.emplace_back(key, entry.string);
  }
  return nullptr;
}

m2n_status_t m2n_safetensors_s::parseTensor(const std::string &name,
                                            const m2n::json::Value &value,
                                            uint64_t dataSize) {
  using m2n::json::Value;
  std::string where = concat("tensor ", quoteName(name), ": ");
  if (name.find('\0') != std::string::npos)
    return error(M2N_STATUS_UNIMPLEMENTED,
                 where + "names with a NUL character are not supported");
  if (value.kind != Value::Object)
    return error(M2N_STATUS_DATA_LOSS,
                 concat(where, "the entry at byte ", value.offset, " is ",
                        m2n::json::kindName(value.kind),
                        ", expected an object"));
  for (const m2n::json::Member &member : value.members)
    if (member.key != "dtype" && member.key != "shape" &&
        member.key != "data_offsets")
      return error(M2N_STATUS_DATA_LOSS,
                   concat(where, "unknown key ", quoteName(member.key),
                          " at byte ", member.keyOffset));
  for (const char *key : {"dtype", "shape", "data_offsets"})
    if (!value.find(key))
      return error(M2N_STATUS_DATA_LOSS, concat(where, "no \"", key, "\""));

  Tensor tensor;
  tensor.name = name;
  M2N_RETURN_IF_ERROR(parseDtype(where, *value.find("dtype"), tensor));
  M2N_RETURN_IF_ERROR(parseShape(where, *value.find("shape"), tensor));
  M2N_RETURN_IF_ERROR(parseOffsets(where, *value.find("data_offsets"), tensor));

  std::string offsets =
      concat("data_offsets [", tensor.begin, ", ", tensor.end, ")");
  std::string shape = concat("shape ", shapeText(tensor.ndim, tensor.shape),
                             " of ", m2n_dtype_name(tensor.dtype));
  uint64_t expected = 0;
  if (!tensorBytes(tensor.dtype, tensor.ndim, tensor.shape, &expected))
    return error(M2N_STATUS_DATA_LOSS,
                 concat(where, shape, " has more than 2^64 bytes"));
  if (tensor.end < tensor.begin)
    return error(M2N_STATUS_DATA_LOSS,
                 concat(where, offsets, " end before they begin"));
  if (tensor.end > dataSize)
    return error(M2N_STATUS_DATA_LOSS,
                 concat(where, offsets, " run past the end of the data (",
                        dataSize, " bytes)"));
  if (tensor.end - tensor.begin != expected)
    return error(M2N_STATUS_DATA_LOSS,
                 concat(where, offsets, " do not match ", shape, " (", expected,
                        " bytes expected, ", tensor.end - tensor.begin,
                        " given)"));
  tensors.push_back(std::move(tensor));
  return nullptr;
}

m2n_status_t m2n_safetensors_s::parseDtype(const std::string &where,
                                           const m2n::json::Value &value,
                                           Tensor &tensor) {
  if (value.kind != m2n::json::Value::String)
    return error(M2N_STATUS_DATA_LOSS,
                 concat(where, "\"dtype\" at byte ", value.offset, " is ",
                        m2n::json::kindName(value.kind),
                        ", expected a string"));
  m2n_status_t status =
      m2n_dtype_from_name(value.string.c_str(), &tensor.dtype);
  if (!status && value.string.size() == std::strlen(value.string.c_str()))
    return nullptr;
  m2n_status_free(status);
  return error(M2N_STATUS_UNIMPLEMENTED,
               concat(where, "dtype ", quoteName(value.string),
                      " is not one m2n supports (BF16, F16, F32, F64, "
                      "F8_E4M3, F8_E5M2, I8, U8, I16, U16, I32, U32, I64, "
                      "U64, BOOL)"));
}

m2n_status_t m2n_safetensors_s::parseShape(const std::string &where,
                                           const m2n::json::Value &value,
                                           Tensor &tensor) {
  using m2n::json::Value;
  auto notIntegers = [&](const Value &at) {
    return error(M2N_STATUS_DATA_LOSS,
                 concat(where, "\"shape\" at byte ", at.offset,
                        " is not an array of integers"));
  };
  if (value.kind != Value::Array)
    return notIntegers(value);
  if (value.elements.size() > M2N_PLAN_MAX_RANK)
    return error(M2N_STATUS_UNIMPLEMENTED,
                 concat(where, "shape has ", value.elements.size(),
                        " dimensions; m2n supports at most ",
                        M2N_PLAN_MAX_RANK));
  tensor.ndim = static_cast<uint32_t>(value.elements.size());
  for (uint32_t i = 0; i < tensor.ndim; ++i) {
    const Value &extent = value.elements[i];
    if (extent.kind != Value::Integer || extent.integer > uint64_t(INT64_MAX))
      return notIntegers(extent);
    tensor.shape[i] = static_cast<int64_t>(extent.integer);
  }
  return nullptr;
}

m2n_status_t m2n_safetensors_s::parseOffsets(const std::string &where,
                                             const m2n::json::Value &value,
                                             Tensor &tensor) {
  using m2n::json::Value;
  if (value.kind != Value::Array || value.elements.size() != 2 ||
      value.elements[0].kind != Value::Integer ||
      value.elements[1].kind != Value::Integer)
    return error(M2N_STATUS_DATA_LOSS,
                 concat(where, "\"data_offsets\" at byte ", value.offset,
                        " is not an array of two integers"));
  tensor.begin = value.elements[0].integer;
  tensor.end = value.elements[1].integer;
  return nullptr;
}

m2n_status_t m2n_safetensors_s::checkCoverage(uint64_t dataSize) const {
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::make_pair(tensors[a].begin, tensors[a].end) <
           std::make_pair(tensors[b].begin, tensors[b].end);
  });
  uint64_t covered = 0;
  const Tensor *previous = nullptr;
  for (size_t index : order) {
    const Tensor &tensor = tensors[index];
    std::string where =
        concat("tensor ", quoteName(tensor.name), ": data_offsets [",
               tensor.begin, ", ", tensor.end, ")");
    if (tensor.begin > covered)
      return error(M2N_STATUS_DATA_LOSS,
                   concat(where, " leave bytes [", covered, ", ", tensor.begin,
                          ") of the data unused"));
    if (tensor.begin < covered)
      return error(M2N_STATUS_DATA_LOSS,
                   concat(where, " overlap tensor ", quoteName(previous->name),
                          " [", previous->begin, ", ", previous->end, ")"));
    covered = tensor.end;
    previous = &tensor;
  }
  if (covered != dataSize)
    return error(M2N_STATUS_DATA_LOSS,
                 concat("the tensors end at byte ", covered,
                        " of the data, which has ", dataSize,
                        " bytes (the data must be covered exactly)"));
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

namespace {

m2n_status_t writeError(const std::string &what) {
  return m2n_status_create(
      M2N_STATUS_INVALID_ARGUMENT,
      concat("m2n_safetensors_write_file: ", what).c_str());
}

m2n_status_t checkTensor(const m2n_safetensors_tensor_t &tensor) {
  if (!tensor.name || !*tensor.name)
    return writeError("a tensor has no name");
  std::string_view name = tensor.name;
  std::string where = concat("tensor ", quoteName(name), ": ");
  if (name == kMetadataKey)
    return writeError(where + "the name is reserved for metadata");
  if (m2n::json::invalidUtf8(name) != name.size())
    return writeError(where + "the name is not valid UTF-8");
  if (m2n_dtype_size(tensor.dtype) == 0)
    return writeError(concat(where, "unknown dtype ", int(tensor.dtype)));
  if (tensor.ndim > M2N_PLAN_MAX_RANK)
    return writeError(concat(where, tensor.ndim, " dimensions, more than ",
                             M2N_PLAN_MAX_RANK));
  for (uint32_t i = 0; i < tensor.ndim; ++i)
    if (tensor.shape[i] < 0)
      return writeError(concat(where, "shape ",
                               shapeText(tensor.ndim, tensor.shape),
                               " has a negative dimension"));
  uint64_t expected = 0;
  if (!tensorBytes(tensor.dtype, tensor.ndim, tensor.shape, &expected) ||
      expected != tensor.byte_size)
    return writeError(concat(where, "byte_size ", tensor.byte_size,
                             " does not match shape ",
                             shapeText(tensor.ndim, tensor.shape), " of ",
                             m2n_dtype_name(tensor.dtype)));
  if (!tensor.data && tensor.byte_size != 0)
    return writeError(where + "data is null");
  return nullptr;
}

m2n_status_t checkInputs(const m2n_safetensors_tensor_t *tensors,
                         size_t tensorCount,
                         const m2n_safetensors_metadata_t *metadata,
                         size_t metadataCount) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < tensorCount; ++i) {
    M2N_RETURN_IF_ERROR(checkTensor(tensors[i]));
    if (!names.insert(tensors[i].name).second)
      return writeError(
          concat("tensor ", quoteName(tensors[i].name), " appears twice"));
  }
  std::set<std::string_view> keys;
  for (size_t i = 0; i < metadataCount; ++i) {
    const m2n_safetensors_metadata_t &entry = metadata[i];
    if (!entry.key || !entry.value)
      return writeError("a metadata entry has a null key or value");
    if (m2n::json::invalidUtf8(entry.key) != std::strlen(entry.key) ||
        m2n::json::invalidUtf8(entry.value) != std::strlen(entry.value))
      return writeError(
          concat("metadata ", quoteName(entry.key), " is not valid UTF-8"));
    if (!keys.insert(entry.key).second)
      return writeError(
          concat("metadata ", quoteName(entry.key), " appears twice"));
  }
  return nullptr;
}

// The header: "__metadata__" first, then the tensors by name, each entry's
// keys sorted; padded with spaces to a multiple of 8 bytes. `offsets` holds
// each tensor's start within the data.
std::string buildHeader(const m2n_safetensors_tensor_t *tensors,
                        size_t tensorCount,
                        const std::vector<uint64_t> &offsets,
                        const m2n_safetensors_metadata_t *metadata,
                        size_t metadataCount) {
  std::string json = "{";
  if (metadataCount != 0) {
    std::vector<const m2n_safetensors_metadata_t *> byKey;
    for (size_t i = 0; i < metadataCount; ++i)
      byKey.push_back(&metadata[i]);
    std::sort(byKey.begin(), byKey.end(),
              [](auto *a, auto *b) { return std::strcmp(a->key, b->key) < 0; });
    json += "\"__metadata__\":{";
    for (size_t i = 0; i < byKey.size(); ++i) {
      json += i ? "," : "";
      m2n::json::appendString(json, byKey[i]->key);
      json += ':';
      m2n::json::appendString(json, byKey[i]->value);
    }
    json += '}';
  }
  std::vector<size_t> byName(tensorCount);
  std::iota(byName.begin(), byName.end(), 0);
  std::sort(byName.begin(), byName.end(), [&](size_t a, size_t b) {
    return std::strcmp(tensors[a].name, tensors[b].name) < 0;
  });
  for (size_t index : byName) {
    const m2n_safetensors_tensor_t &tensor = tensors[index];
    json += json.size() > 1 ? "," : "";
    m2n::json::appendString(json, tensor.name);
    json += concat(":{\"data_offsets\":[", offsets[index], ",",
                   offsets[index] + tensor.byte_size, "],\"dtype\":\"",
                   m2n_dtype_name(tensor.dtype), "\",\"shape\":[");
    for (uint32_t i = 0; i < tensor.ndim; ++i)
      json += concat(i ? "," : "", tensor.shape[i]);
    json += "]}";
  }
  json += '}';
  json.append((8 - json.size() % 8) % 8, ' ');
  return json;
}

// Writes all `size` bytes, in pieces that any write(2) accepts.
int writeAll(int fd, const void *data, uint64_t size) {
  const auto *bytes = static_cast<const uint8_t *>(data);
  while (size != 0) {
    size_t piece = static_cast<size_t>(std::min<uint64_t>(size, 1u << 30));
    ssize_t written = write(fd, bytes, piece);
    if (written < 0) {
      if (errno == EINTR)
        continue;
      return errno;
    }
    bytes += written;
    size -= static_cast<uint64_t>(written);
  }
  return 0;
}

// Makes the rename durable. Best effort: the file is complete either way,
// and some file systems cannot sync a directory.
void syncDirectoryOf(const std::string &path) {
  size_t slash = path.rfind('/');
  std::string directory = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  int fd = open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return;
  fsync(fd);
  close(fd);
}

// Writes the pieces to a temporary file beside `path` and renames it over
// `path`, which a failure leaves untouched.
m2n_status_t writeAtomically(
    const std::string &path, const std::string &header,
    const std::vector<const m2n_safetensors_tensor_t *> &dataOrder) {
  std::string temp = concat(path, ".tmp.", getpid());
  // A writer killed before it could rename leaves its file behind, and in a
  // container the next writer may well get the same pid.
  unlink(temp.c_str());
  int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0)
    return fileError(path, concat("cannot create ", temp), errno);
  auto fail = [&](const char *what, int error) {
    if (fd >= 0)
      close(fd);
    unlink(temp.c_str());
    return fileError(path, what, error);
  };
  uint64_t headerSize = header.size();
  int error = writeAll(fd, &headerSize, sizeof(headerSize));
  if (!error)
    error = writeAll(fd, header.data(), header.size());
  for (size_t i = 0; !error && i < dataOrder.size(); ++i)
    error = writeAll(fd, dataOrder[i]->data, dataOrder[i]->byte_size);
  if (error)
    return fail("cannot write", error);
  if (fsync(fd) != 0)
    return fail("cannot sync", errno);
  int closed = close(fd);
  fd = -1;
  if (closed != 0)
    return fail("cannot close", errno);
  if (rename(temp.c_str(), path.c_str()) != 0)
    return fail(concat("cannot rename ", temp, " over it").c_str(), errno);
  syncDirectoryOf(path);
  return nullptr;
}

} // namespace

//===----------------------------------------------------------------------===//
// The C API
//===----------------------------------------------------------------------===//

namespace {

void describe(const m2n_safetensors_s &file, const Tensor &tensor,
              m2n_safetensors_tensor_t *out) {
  *out = {};
  out->name = tensor.name.c_str();
  out->dtype = tensor.dtype;
  out->ndim = tensor.ndim;
  std::memcpy(out->shape, tensor.shape, sizeof(out->shape));
  out->data = file.data + tensor.begin;
  out->byte_size = tensor.end - tensor.begin;
}

m2n_status_t nullArgument(const char *function) {
  return m2n_status_create(M2N_STATUS_INVALID_ARGUMENT,
                           concat(function, ": null argument").c_str());
}

} // namespace

extern "C" {

m2n_status_t m2n_safetensors_load_file(const char *path,
                                       m2n_safetensors_t *out) {
  if (!out || !path)
    return nullArgument("m2n_safetensors_load_file");
  *out = nullptr;
  auto file = std::make_unique<m2n_safetensors_s>();
  file->path = path;
  // An empty file maps to nothing; parsing rejects it.
  M2N_RETURN_IF_ERROR(mapFile(path, &file->mapping, &file->size));
  M2N_RETURN_IF_ERROR(file->parse());
  *out = file.release();
  return nullptr;
}

void m2n_safetensors_destroy(m2n_safetensors_t file) { delete file; }

size_t m2n_safetensors_tensor_count(m2n_safetensors_t file) {
  return file ? file->tensors.size() : 0;
}

size_t m2n_safetensors_metadata_count(m2n_safetensors_t file) {
  return file ? file->metadata.size() : 0;
}

m2n_status_t m2n_safetensors_get_tensor(m2n_safetensors_t file, size_t index,
                                        m2n_safetensors_tensor_t *out) {
  if (!file || !out)
    return nullArgument("m2n_safetensors_get_tensor");
  if (index >= file->tensors.size())
    return m2n_status_create(M2N_STATUS_NOT_FOUND,
                             concat(file->path, ": no tensor ", index,
                                    " (the file has ", file->tensors.size(),
                                    ")")
                                 .c_str());
  describe(*file, file->tensors[index], out);
  return nullptr;
}

m2n_status_t m2n_safetensors_find_tensor(m2n_safetensors_t file,
                                         const char *name,
                                         m2n_safetensors_tensor_t *out) {
  if (!file || !name || !out)
    return nullArgument("m2n_safetensors_find_tensor");
  auto found = std::lower_bound(file->tensors.begin(), file->tensors.end(),
                                std::string_view(name),
                                [](const Tensor &tensor, std::string_view key) {
                                  return tensor.name < key;
                                });
  if (found == file->tensors.end() || found->name != name)
    return m2n_status_create(
        M2N_STATUS_NOT_FOUND,
        concat(file->path, ": no tensor named ", quoteName(name)).c_str());
  describe(*file, *found, out);
  return nullptr;
}

m2n_status_t m2n_safetensors_get_metadata(m2n_safetensors_t file, size_t index,
                                          m2n_safetensors_metadata_t *out) {
  if (!file || !out)
    return nullArgument("m2n_safetensors_get_metadata");
  if (index >= file->metadata.size())
    return m2n_status_create(M2N_STATUS_NOT_FOUND,
                             concat(file->path, ": no metadata entry ", index,
                                    " (the file has ", file->metadata.size(),
                                    ")")
                                 .c_str());
  out->key = file->metadata[index].first.c_str();
  out->value = file->metadata[index].second.c_str();
  return nullptr;
}

m2n_status_t m2n_safetensors_write_file(
    const char *path, const m2n_safetensors_tensor_t *tensors,
    size_t tensor_count, const m2n_safetensors_metadata_t *metadata,
    size_t metadata_count) {
  if (!path || (!tensors && tensor_count) || (!metadata && metadata_count))
    return nullArgument("m2n_safetensors_write_file");
  M2N_RETURN_IF_ERROR(
      checkInputs(tensors, tensor_count, metadata, metadata_count));
  // The reference writer's order: larger elements first, then by name.
  std::vector<const m2n_safetensors_tensor_t *> dataOrder;
  for (size_t i = 0; i < tensor_count; ++i)
    dataOrder.push_back(&tensors[i]);
  std::sort(dataOrder.begin(), dataOrder.end(), [](auto *a, auto *b) {
    int64_t sizeA = m2n_dtype_size(a->dtype), sizeB = m2n_dtype_size(b->dtype);
    if (sizeA != sizeB)
      return sizeA > sizeB;
    return std::strcmp(a->name, b->name) < 0;
  });
  std::vector<uint64_t> offsets(tensor_count);
  uint64_t offset = 0;
  for (const m2n_safetensors_tensor_t *tensor : dataOrder) {
    offsets[static_cast<size_t>(tensor - tensors)] = offset;
    offset += tensor->byte_size;
  }
  std::string header =
      buildHeader(tensors, tensor_count, offsets, metadata, metadata_count);
  return writeAtomically(path, header, dataOrder);
}

} // extern "C"
