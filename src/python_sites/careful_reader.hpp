// Reads of this process's memory that cannot fault: the kernel copies the bytes through a pipe
// and says EFAULT where plain loads would crash. For what a layout not yet trusted points to,
// and for another thread's frames, which may go while they are read.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

namespace strata::python_sites {

class careful_reader {
public:
  careful_reader() {
    if (::pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0)
      fds_[0] = fds_[1] = -1;
  }
  ~careful_reader() {
    for (int fd : fds_)
      if (fd >= 0)
        ::close(fd);
  }
  careful_reader(const careful_reader&) = delete;
  careful_reader& operator=(const careful_reader&) = delete;

  bool pointer(const void* base, size_t offset, const void*& out) {
    return base != nullptr && bytes(static_cast<const char*>(base) + offset, &out, sizeof out);
  }
  bool byte(const void* base, size_t offset, uint8_t& out) {
    return base != nullptr && bytes(static_cast<const char*>(base) + offset, &out, 1);
  }
  bool int32(const void* base, size_t offset, int32_t& out) {
    return base != nullptr && bytes(static_cast<const char*>(base) + offset, &out, sizeof out);
  }
  bool uint64(const void* base, size_t offset, uint64_t& out) {
    return base != nullptr && bytes(static_cast<const char*>(base) + offset, &out, sizeof out);
  }

private:
  bool bytes(const void* from, void* to, size_t n) {
    if (fds_[0] < 0)
      return false;
    const ssize_t written = ::write(fds_[1], from, n);
    if (written != static_cast<ssize_t>(n)) {
      if (written > 0) {
        char drain[16];
        [[maybe_unused]] ssize_t r = ::read(fds_[0], drain, static_cast<size_t>(written));
      }
      return false;
    }
    return ::read(fds_[0], to, n) == static_cast<ssize_t>(n);
  }
  int fds_[2] = {-1, -1};
};

} // namespace strata::python_sites
