#include "common/atomic_file.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace strata::common {

std::string write_atomically(const std::string& path, const std::string& text, mode_t mode) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0)
    return tmp + ": " + std::strerror(errno);
  std::string error;
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) {
      error = tmp + ": " + std::strerror(n < 0 ? errno : ENOSPC);
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 && error.empty())
    error = tmp + ": " + std::strerror(errno);
  if (error.empty() && ::rename(tmp.c_str(), path.c_str()) != 0)
    error = path + ": " + std::strerror(errno);
  if (!error.empty())
    ::unlink(tmp.c_str());
  return error;
}

bool make_writable_dir(const std::string& dir) {
  if (dir.empty())
    return false;
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      const std::string partial = dir.substr(0, i);
      if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
        return false;
    }
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    return false;
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return false;
  }
  return ::access(dir.c_str(), W_OK | X_OK) == 0;
}

} // namespace strata::common
