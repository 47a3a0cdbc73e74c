//===- mapped_file.cpp - Reading a file by mapping it ---------------------===//

#include "mapped_file.h"

#include "plan_internal.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace m2n {

m2n_status_t fileError(std::string_view path, std::string_view what,
                       int error) {
  m2n_status_code_t code = error == ENOENT || error == ENOTDIR
                               ? M2N_STATUS_NOT_FOUND
                               : M2N_STATUS_IO_ERROR;
  return m2n_status_create(
      code, concat(path, ": ", what, ": ", std::strerror(error)).c_str());
}

m2n_status_t mapFile(const char *path, const uint8_t **data, uint64_t *size) {
  *data = nullptr;
  *size = 0;
  // O_NONBLOCK: a FIFO without a writer would block open() forever; it
  // is then refused as not a regular file.
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return fileError(path, "cannot open", errno);
  struct stat info;
  if (fstat(fd, &info) != 0) {
    int error = errno;
    close(fd);
    return fileError(path, "cannot stat", error);
  }
  if (!S_ISREG(info.st_mode)) {
    close(fd);
    return m2n_status_create(M2N_STATUS_IO_ERROR,
                             concat(path, ": not a regular file").c_str());
  }
  uint64_t bytes = static_cast<uint64_t>(info.st_size);
  if (bytes != 0) {
    void *mapping = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping == MAP_FAILED) {
      int error = errno;
      close(fd);
      return fileError(path, "cannot map", error);
    }
    *data = static_cast<const uint8_t *>(mapping);
    *size = bytes;
  }
  close(fd);
  return nullptr;
}

} // namespace m2n
