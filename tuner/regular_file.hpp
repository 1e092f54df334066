// Reads a whole regular file, and never blocks on a path that is not one: a FIFO, a directory or
// a device is refused after stat() and before open(), and the open itself does not block. For the
// code that runs inside other people's jobs (the runtime loader, the NCCL tuner plugin), where a
// config path that names a FIFO would otherwise hang the job. Header-only, so the plugin, which
// links nothing of acceltune, uses it too.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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

// Everything `fd` gives until EOF, at most `max_bytes` (more: false, "is larger than N bytes");
// closes nothing.
inline bool read_all(int fd, std::string& text, std::string& why, size_t max_bytes = SIZE_MAX) {
  text.clear();
  char buf[65536];
  for (;;) {
    // Never ask for more than the cap (plus one byte to notice a longer file): /proc files are
    // generated per read, so asking is the cost.
    const size_t room = max_bytes - std::min(max_bytes, text.size());
    const size_t want = room >= sizeof buf ? sizeof buf : room + 1;
    const ssize_t n = ::read(fd, buf, want);
    if (n > 0) {
      text.append(buf, static_cast<size_t>(n));
      if (text.size() > max_bytes) {
        why = "is larger than " + std::to_string(max_bytes) + " bytes";
        return false;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      why = std::strerror(errno);
      return false;
    }
    return true;
  }
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
  const bool ok = read_all(fd, text, why, max_bytes);
  ::close(fd);
  return ok;
}

}  // namespace acceltune
