// Starting a program with an environment of its own and reading its two output streams apart,
// to a deadline: what the plain clients of delivered gains (mpirun, ucx_perftest) and the MPI
// launcher need. run_command (netns.hpp) merges the streams and keeps this process's environment;
// tuner/process_guard.hpp makes sure nothing started here outlives acceltune.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tuner/expected.hpp"

namespace acceltune {

// A program as a shell finds it: a name with a '/' as it is, else the first executable of that
// name on PATH; nullopt when there is none.
std::optional<std::string> find_on_path(const std::string& name);

// argv joined by spaces, for messages.
std::string argv_text(const std::vector<std::string>& argv);

struct ChildOptions {
  // A process group of its own, signalled as a whole: a launcher's ranks go with it.
  bool own_group = false;
  // At the deadline: SIGTERM first and this long to end (a launcher ends its ranks), then SIGKILL.
  double grace_seconds = 0;
  // After the program exits, stop reading this long later even if a pipe is still open (an
  // orphaned child holding it); negative: read to the end.
  double linger_after_exit_seconds = -1;
  // Descriptors the program gets besides its streams: {descriptor here, number there}, e.g. its
  // end of a socket pair. Only these cross: the rest are close-on-exec, so a program started
  // meanwhile from another thread does not hold them open.
  std::vector<std::pair<int, int>> pass_fds = {};
};

class Child {
 public:
  using Clock = std::chrono::steady_clock;
  struct Result {
    bool timed_out = false;
    int exit_code = -1;  // 128 + the signal when one ended it
    std::string out, err;
    bool ok() const { return !timed_out && exit_code == 0; }
  };

  // argv[0] is a path; `env` is the program's whole environment (NAME=VALUE); stdin is /dev/null.
  static Expected<std::unique_ptr<Child>> start(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                                                ChildOptions options = {});
  // Starts, collects and reaps: the one-shot form.
  static Expected<Result> run(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                              double timeout_seconds, ChildOptions options = {});
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // Collects the output until the program closes it or the deadline passes (then ends it), and
  // reaps it. Once only; kill() may be called from another thread meanwhile.
  Result finish(Clock::time_point deadline);
  // SIGKILL (its group with own_group), unless it has been reaped (its pid may be another's then).
  void kill();
  // Any signal, the same way: SIGINT asks a command to stop and keep what it finished.
  void signal(int sig);

 private:
  Child() = default;
  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  ChildOptions options_;
  bool finished_ = false;
  std::mutex mutex_;
  bool reaped_ = false;
};

}  // namespace acceltune
