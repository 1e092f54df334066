// The study directory: study.json, trials.jsonl (one finished trial per line, appended and
// fsynced per trial) and best.json (rewritten whole, tuner/atomic_file.hpp).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tuner/atomic_file.hpp"
#include "tuner/store.hpp"

namespace acceltune {
namespace {

namespace fs = std::filesystem;

Status write_all(int fd, const std::string& data, const std::string& path) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return runtime_error("{}: write failed: {}", path, std::strerror(errno));
    }
    off += static_cast<size_t>(n);
  }
  return {};
}

std::string utc_now() {
  char buf[40];
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  std::tm tm{};
  gmtime_r(&ts.tv_sec, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, ts.tv_nsec / 1000000);
}

Expected<std::string> read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return input_error("{}: cannot read: {}", path.string(), std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Expected<Json> read_json(const fs::path& path) {
  ACCELTUNE_TRY_ASSIGN(std::string text, read_text(path));
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    return input_error("{}: malformed JSON: {}", path.string(), e.what());
  }
}

class DirStore final : public ResultStore {
 public:
  explicit DirStore(fs::path dir) : dir_(std::move(dir)) {}
  ~DirStore() override {
    if (fd_ >= 0) ::close(fd_);
    if (log_fd_ >= 0) ::close(log_fd_);
    if (lock_fd_ >= 0) ::close(lock_fd_);
  }

  std::string location() const override { return dir_.string(); }

  Status lock() override {
    if (lock_fd_ >= 0) return {};
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec || !fs::is_directory(dir_)) {
      return input_error("{}: cannot create the output directory: {}; choose another --out", dir_.string(),
                         ec ? ec.message() : "not a directory");
    }
    const fs::path path = dir_ / "lock";
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      return input_error("{}: the output directory is not writable: {}; choose another --out", dir_.string(),
                         std::strerror(errno));
    }
    // flock is released by the kernel when the holder dies, so a killed search never leaves a
    // stale lock behind.
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      char buf[32] = {};
      ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
      ::close(fd);
      std::string pid = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "?";
      while (!pid.empty() && pid.back() == '\n') pid.pop_back();
      return input_error("{}: another acceltune process (pid {}) is writing this study; wait for it to finish or "
                         "choose another --out",
                         dir_.string(), pid);
    }
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd, 0) == 0) (void)::pwrite(fd, pid.data(), pid.size(), 0);
    lock_fd_ = fd;
    return {};
  }

  void log(const Json& event) override {
    if (log_fd_ < 0) {
      log_fd_ = ::open((dir_ / "events.jsonl").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (log_fd_ < 0) return;  // the log is a diagnostic aid; the trials file is the record
    }
    Json e = Json::object();
    e["time"] = utc_now();
    for (const auto& [k, v] : event.items()) e[k] = v;
    (void)write_all(log_fd_, e.dump() + "\n", "events.jsonl");
  }
  bool has_study() const override { return fs::exists(dir_ / "study.json"); }

  Status create(const Json& study) override {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec || !fs::is_directory(dir_)) {
      return input_error("{}: cannot create the output directory: {}; choose another --out",
                         dir_.string(), ec ? ec.message() : "not a directory");
    }
    const fs::path probe = dir_ / ".write-test";
    int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      return input_error("{}: the output directory is not writable: {}; choose another --out",
                         dir_.string(), std::strerror(errno));
    }
    ::close(fd);
    ::unlink(probe.c_str());
    const fs::path trials = dir_ / "trials.jsonl";
    int tfd = ::open(trials.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (tfd < 0) return runtime_error("{}: cannot create: {}", trials.string(), std::strerror(errno));
    ::close(tfd);
    return write_file_atomically(dir_ / "study.json", study.dump(2) + "\n");
  }

  Expected<Json> read_study() const override { return read_json(dir_ / "study.json"); }

  Expected<std::vector<Json>> read_trials(int* torn) const override {
    if (torn) *torn = 0;
    const fs::path path = dir_ / "trials.jsonl";
    std::vector<Json> out;
    if (!fs::exists(path)) return out;
    ACCELTUNE_TRY_ASSIGN(std::string text, read_text(path));
    size_t start = 0, line_no = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      const bool last = end == std::string::npos;
      std::string line = text.substr(start, last ? std::string::npos : end - start);
      ++line_no;
      start = last ? text.size() : end + 1;
      if (line.empty()) continue;
      try {
        out.push_back(Json::parse(line));
      } catch (const Json::parse_error&) {
        // Only the final record can be torn by a crash; anything else is damage.
        if (last || start >= text.size()) {
          if (torn) ++*torn;
          break;
        }
        return input_error("{}: line {} is not valid JSON; the file was changed by hand or damaged",
                           path.string(), line_no);
      }
    }
    return out;
  }

  Status append(const Json& trial) override {
    const fs::path path = dir_ / "trials.jsonl";
    if (fd_ < 0) {
      fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (fd_ < 0) return runtime_error("{}: cannot open for appending: {}", path.string(), std::strerror(errno));
      // Drop a torn tail so the next record starts on a line of its own.
      off_t size = ::lseek(fd_, 0, SEEK_END);
      if (size > 0) {
        ACCELTUNE_TRY_ASSIGN(std::string text, read_text(path));
        const size_t newline = text.rfind('\n');
        const size_t keep = newline == std::string::npos ? 0 : newline + 1;
        if (keep != text.size() && ::ftruncate(fd_, static_cast<off_t>(keep)) != 0) {
          return runtime_error("{}: cannot drop the torn last line: {}", path.string(), std::strerror(errno));
        }
      }
      ::lseek(fd_, 0, SEEK_END);
    }
    ACCELTUNE_TRY(write_all(fd_, trial.dump() + "\n", path.string()));
    if (::fsync(fd_) != 0) return runtime_error("{}: fsync failed: {}", path.string(), std::strerror(errno));
    return {};
  }

  Status write_best(const Json& best) override { return write_file_atomically(dir_ / "best.json", best.dump(2) + "\n"); }

  Expected<Json> read_best() const override {
    if (!fs::exists(dir_ / "best.json")) {
      return input_error("{}: no best.json here; is this a study directory?", dir_.string());
    }
    return read_json(dir_ / "best.json");
  }

 private:
  fs::path dir_;
  int fd_ = -1;
  int log_fd_ = -1;
  int lock_fd_ = -1;
};

}  // namespace

ACCELTUNE_REGISTER(StoreInfo, "dir",
                   (StoreInfo{"study directory: study.json, trials.jsonl, best.json",
                              [](const std::string& location) -> Expected<std::unique_ptr<ResultStore>> {
                                return std::unique_ptr<ResultStore>(new DirStore(location));
                              }}))

}  // namespace acceltune
