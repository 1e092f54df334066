// Reads a whole regular file, and never blocks on a path that is not one: a FIFO, a directory or
// a device is refused after stat() and before open(), and the open itself does not block. For the
// code that runs inside other people's jobs (the runtime loader, the NCCL tuner plugin), where a
// config path that names a FIFO would otherwise hang the job. Header-only, so the plugin, which
// links nothing of acceltune, uses it too.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

namespace acceltune {

// What a path is when it is not a regular file ("a FIFO", "a directory", ...).
inline const char* file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
  return "not a regular file";
}

// The whole file in `text`; false with `why` ("is a FIFO", "No such file or directory", "is
// larger than N bytes") otherwise.
inline bool read_regular_file(const char* path, std::string& text, std::string& why,
                              size_t max_bytes = SIZE_MAX) {
  struct stat st {};
  if (::stat(path, &st) != 0) {
    why = std::strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    why = std::string("is ") + file_kind(st.st_mode);
    return false;
  }
  const int fd = ::open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    why = std::strerror(errno);
    return false;
  }
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {  // replaced between the two looks
    ::close(fd);
    why = std::string("is ") + file_kind(st.st_mode);
    return false;
  }
  text.clear();
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      text.append(buf, static_cast<size_t>(n));
      if (text.size() > max_bytes) {
        ::close(fd);
        why = "is larger than " + std::to_string(max_bytes) + " bytes";
        return false;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    const int err = errno;
    ::close(fd);
    if (n < 0) {
      why = std::strerror(err);
      return false;
    }
    return true;
  }
}

}  // namespace acceltune
