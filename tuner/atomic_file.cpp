// The definitions behind tuner/atomic_file.hpp: write a temporary, fsync, rename, fsync the folder.
#include "tuner/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace acceltune {
namespace {

namespace fs = std::filesystem;

// Errors that another path or a permission fixes, as opposed to a failing disk.
bool user_can_fix(int err) {
  switch (err) {
    case EACCES:
    case EPERM:
    case ENOENT:
    case ENOTDIR:
    case EISDIR:
    case EROFS:
    case ENAMETOOLONG:
    case ELOOP:
      return true;
    default:
      return false;
  }
}

Error write_error(const fs::path& path, const AtomicWrite& how, int err) {
  return Error{user_can_fix(err) ? ErrorKind::input : ErrorKind::runtime,
               fmt::format("{}: cannot write{}{}: {}", path.string(), how.what.empty() ? "" : " ", how.what,
                           std::strerror(err))};
}

// A new file beside `path`, named for this process and a counter, so that two writers of one
// target (threads or processes) never share a temporary. -1 with errno on failure.
int open_temporary(const fs::path& path, mode_t mode, std::string& tmp) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    tmp = fmt::format("{}.tmp.{}.{}", path.string(), ::getpid(), counter++);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd >= 0 || errno != EEXIST) return fd;  // EEXIST: left by a dead process of the same id
  }
  return -1;
}

// 0, or the errno of the failed write.
int write_all(int fd, std::string_view data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    off += static_cast<size_t>(n);
  }
  return 0;
}

// The rename is an entry of the folder: flushing the folder makes it durable.
void fsync_dir(const fs::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

}  // namespace

Status write_file_atomically(const fs::path& path, std::string_view content, const AtomicWrite& how) {
  std::string tmp;
  const int fd = open_temporary(path, how.executable ? 0777 : 0666, tmp);
  if (fd < 0) return write_error(path, how, errno);
  int err = write_all(fd, content);
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    return write_error(path, how, err);
  }
  fsync_dir(path.parent_path());
  return {};
}

}  // namespace acceltune
