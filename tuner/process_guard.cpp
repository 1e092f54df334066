// The definitions behind tuner/process_guard.hpp: everything a command starts dies with it, however
// the command ends (exit, crash, SIGKILL).
#include "tuner/process_guard.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>
#include <vector>

#include "tuner/binary.hpp"
#include "tuner/service.hpp"

extern char** environ;

namespace acceltune {
namespace {

// Whether /proc/PID/environ (the environment the process was started with) holds NAME=.
bool environ_has(pid_t pid, const std::string& name_eq) {
  const std::string path = "/proc/" + std::to_string(pid) + "/environ";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // gone, or another user's
  std::string text;
  char buf[16384];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  ::close(fd);
  // Entries are NUL-separated; match a whole entry's start.
  for (size_t at = 0; at < text.size();) {
    if (text.compare(at, name_eq.size(), name_eq) == 0) return true;
    const size_t nul = text.find('\0', at);
    if (nul == std::string::npos) break;
    at = nul + 1;
  }
  return false;
}

std::string random_hex(size_t digits) {
  std::random_device rd;
  std::string s;
  const char* hex = "0123456789abcdef";
  while (s.size() < digits) {
    uint32_t v = rd();
    for (int i = 0; i < 8 && s.size() < digits; ++i, v >>= 4) s += hex[v & 15u];
  }
  return s;
}

int guardian_main(int argc, char** argv) {
  if (argc < 4) return 2;
  const std::string variable = argv[2];
  const std::string scratch = argv[3];
  // Only the pipe's end decides: not the terminal's Ctrl-C or hang-up, not a stray SIGTERM.
  for (int sig : {SIGINT, SIGHUP, SIGTERM, SIGPIPE}) ::signal(sig, SIG_IGN);
  char buf[256];
  for (;;) {
    const ssize_t n = ::read(0, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0 && errno != EINTR) break;
  }
  kill_marked_processes(variable, 10.0);
  // Only a folder this guard made: acceltune-XXXXXX, as ProcessGuard::start names it.
  if (std::filesystem::path(scratch).filename().string().rfind("acceltune-", 0) == 0) {
    std::error_code ec;
    std::filesystem::remove_all(scratch, ec);
  }
  return 0;
}

}  // namespace

std::vector<pid_t> marked_processes(const std::string& variable) {
  std::vector<pid_t> out;
  const std::string name_eq = variable + "=";
  const pid_t self = ::getpid();
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (!end || *end != '\0' || pid <= 0 || pid == self) continue;
    if (environ_has(static_cast<pid_t>(pid), name_eq)) out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(d);
  return out;
}

int kill_marked_processes(const std::string& variable, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int killed = 0;
  for (;;) {
    const std::vector<pid_t> found = marked_processes(variable);
    for (pid_t p : found) {
      if (::kill(p, SIGKILL) == 0) ++killed;
    }
    if (found.empty() || std::chrono::steady_clock::now() >= until) break;
    // A killed process that is not reaped yet still shows its environment for a moment.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return killed;
}

Expected<std::unique_ptr<ProcessGuard>> ProcessGuard::start() {
  ACCELTUNE_TRY_ASSIGN(std::string exe, acceltune_binary());
  std::unique_ptr<ProcessGuard> g(new ProcessGuard());
  g->variable_ = "ACCELTUNE_GUARD_" + random_hex(16);
  std::error_code tmp_ec;
  const std::filesystem::path tmp = std::filesystem::temp_directory_path(tmp_ec);
  std::string scratch = ((tmp_ec ? std::filesystem::path("/tmp") : tmp) / "acceltune-XXXXXX").string();
  if (!::mkdtemp(scratch.data())) {
    return runtime_error("cannot create a scratch folder {}: {}", scratch, std::strerror(errno));
  }
  g->scratch_ = scratch;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    std::error_code ec;
    std::filesystem::remove_all(scratch, ec);
    return runtime_error("cannot create the guardian's pipe: {}", std::strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<std::string> args = {exe, "__guardian", g->variable_, scratch};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int rc = ::posix_spawn(&g->guardian_, exe.c_str(), &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(fds[0]);
  if (rc != 0) {
    ::close(fds[1]);
    std::error_code ec;
    std::filesystem::remove_all(scratch, ec);
    return runtime_error("cannot start the process guardian '{}': {}", exe, std::strerror(rc));
  }
  g->pipe_write_ = fds[1];
  // From here on, every process this one starts carries the mark, and temporary files go to the
  // scratch folder.
  ::setenv(g->variable_.c_str(), "1", 1);
  if (const char* t = std::getenv("TMPDIR")) g->old_tmpdir_ = t;
  ::setenv("TMPDIR", scratch.c_str(), 1);
  return g;
}

ProcessGuard::~ProcessGuard() {
  if (pipe_write_ >= 0) ::close(pipe_write_);
  if (guardian_ > 0) {
    // Its sweep takes milliseconds; wait for it, so the next command finds nothing left over.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(12);
    int status = 0;
    while (::waitpid(guardian_, &status, WNOHANG) == 0 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  if (!variable_.empty()) ::unsetenv(variable_.c_str());
  if (old_tmpdir_) ::setenv("TMPDIR", old_tmpdir_->c_str(), 1);
  else ::unsetenv("TMPDIR");
}

}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::HiddenMode, "__guardian",
                   (::acceltune::HiddenMode{"kills what a command started once the command ends (process_guard.hpp)",
                                            ::acceltune::guardian_main}));
