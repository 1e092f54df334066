// The definitions behind kernels/shared/child_process.hpp: starting a program with an environment
// of its own and reading its two output streams apart, to a deadline.
#include "kernels/shared/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

namespace acceltune {

namespace {

Child::Clock::time_point after_seconds(Child::Clock::time_point t, double seconds) {
  return t + std::chrono::duration_cast<Child::Clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace

std::optional<std::string> find_on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    return ::access(name.c_str(), X_OK) == 0 ? std::optional<std::string>(name) : std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string d; std::getline(dirs, d, ':');) {
    const std::string full = (d.empty() ? "." : d) + "/" + name;
    if (::access(full.c_str(), X_OK) == 0) return full;
  }
  return std::nullopt;
}

std::string argv_text(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

Expected<std::unique_ptr<Child>> Child::start(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                                              ChildOptions options) {
  if (argv.empty()) return input_error("no program to start");
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return runtime_error("pipe: {}", std::strerror(errno));
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return runtime_error("pipe: {}", std::strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  // dup2 onto the same number would keep close-on-exec; a copy elsewhere crosses either way.
  std::vector<int> copies;
  for (const auto& [here, there] : options.pass_fds) {
    int from = here;
    if (here == there) {
      from = ::fcntl(here, F_DUPFD_CLOEXEC, 3);
      if (from < 0) from = here;
      else copies.push_back(from);
    }
    posix_spawn_file_actions_adddup2(&fa, from, there);
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (options.own_group) {
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
  }
  std::vector<std::string> args = argv, vars = env;
  std::vector<char*> cargv, cenv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (auto& v : vars) cenv.push_back(v.data());
  cenv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, args[0].c_str(), &fa, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  for (int fd : copies) ::close(fd);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(out[0]);
    ::close(err[0]);
    return runtime_error("cannot run '{}': {}", args[0], std::strerror(rc));
  }
  std::unique_ptr<Child> c(new Child());
  c->pid_ = pid;
  c->out_fd_ = out[0];
  c->err_fd_ = err[0];
  c->options_ = options;
  return c;
}

Expected<Child::Result> Child::run(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                                   double timeout_seconds, ChildOptions options) {
  ACCELTUNE_TRY_ASSIGN(std::unique_ptr<Child> c, start(argv, env, options));
  return c->finish(after_seconds(Clock::now(), timeout_seconds));
}

Child::~Child() {
  if (!finished_) {
    kill();
    (void)finish(Clock::now());
  }
}

void Child::signal(int sig) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!reaped_) ::kill(options_.own_group ? -pid_ : pid_, sig);
}

void Child::kill() { signal(SIGKILL); }

Child::Result Child::finish(Clock::time_point deadline) {
  Result r;
  finished_ = true;
  std::string* sinks[2] = {&r.out, &r.err};
  int fds[2] = {out_fd_, err_fd_};
  int status = 0;
  bool exited = false;
  Clock::time_point exited_at;
  while (fds[0] >= 0 || fds[1] >= 0) {
    if (options_.linger_after_exit_seconds >= 0) {
      if (!exited && ::waitpid(pid_, &status, WNOHANG) == pid_) {
        exited = true;
        exited_at = Clock::now();
        std::lock_guard<std::mutex> lock(mutex_);
        reaped_ = true;
      }
      if (exited && Clock::now() > after_seconds(exited_at, options_.linger_after_exit_seconds)) break;
    }
    const double left_seconds = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (left_seconds <= 0 && !exited) {
      r.timed_out = true;
      break;
    }
    pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    // With a linger, wake up to look for the exit; else sleep until output or the deadline.
    const int wait_ms = options_.linger_after_exit_seconds >= 0 ? 100 : static_cast<int>(left_seconds * 1000) + 1;
    const int n = ::poll(p, 2, wait_ms);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; n > 0 && i < 2; ++i) {
      if (fds[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[8192];
      const ssize_t got = ::read(fds[i], buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        ::close(fds[i]);
        fds[i] = -1;
      } else {
        sinks[i]->append(buf, static_cast<size_t>(got));
      }
    }
  }
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
  if (r.timed_out) {
    if (options_.grace_seconds > 0) {
      signal(SIGTERM);
      const auto until = after_seconds(Clock::now(), options_.grace_seconds);
      while (Clock::now() < until) {
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
          exited = true;
          std::lock_guard<std::mutex> lock(mutex_);
          reaped_ = true;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    if (options_.own_group) {
      ::kill(-pid_, SIGKILL);  // what remains of the group, even once its leader is reaped
    } else {
      kill();
    }
  }
  if (!exited) {
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    std::lock_guard<std::mutex> lock(mutex_);
    reaped_ = true;
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace acceltune
