//===- mapped_file.h - Reading a file by mapping it ------------*- C++ -*-===//
//
// Plans and safetensors files are read in place: mapped read-only, so that a
// large file costs no copy and only the pages used are read.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_RUNTIME_MAPPED_FILE_H
#define M2N_RUNTIME_MAPPED_FILE_H

#include "m2n/status.h"

#include <cstdint>
#include <string_view>

namespace m2n {

/// A status for `error` (an errno) while doing `what` to `path`: NOT_FOUND
/// for a missing file or directory, IO_ERROR otherwise.
m2n_status_t fileError(std::string_view path, std::string_view what, int error);

/// Maps the regular file at `path` read-only. An empty file maps to null
/// data of size 0 (mmap rejects empty mappings); otherwise release the
/// mapping with munmap(data, size).
m2n_status_t mapFile(const char *path, const uint8_t **data, uint64_t *size);

} // namespace m2n

#endif // M2N_RUNTIME_MAPPED_FILE_H
