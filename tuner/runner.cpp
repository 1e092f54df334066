// The definitions behind tuner/runner.hpp: the trial runner.
#include "tuner/runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <optional>

#include "tuner/cancel.hpp"
#include "tuner/scoped_env.hpp"
#include "tuner/study.hpp"
#include "tuner/trace.hpp"

extern char** environ;

namespace acceltune {

std::string_view to_string(Isolation i) {
  switch (i) {
    case Isolation::automatic: return "auto";
    case Isolation::in_process: return "in-process";
    case Isolation::worker: return "worker";
  }
  return "?";
}

Expected<Isolation> isolation_from_string(std::string_view s) {
  for (Isolation i : {Isolation::automatic, Isolation::in_process, Isolation::worker}) {
    if (to_string(i) == s) return i;
  }
  return input_error("unknown isolation '{}' (use auto, in-process or worker)", s);
}

Expected<Isolation> resolve_isolation(const Space& space, const Kernel& kernel, Isolation asked) {
  Isolation want = asked;
  if (want == Isolation::automatic && space.extra().contains("isolation")) {
    const Json& j = space.extra()["isolation"];
    if (!j.is_string()) return input_error("{}: field 'isolation' must be \"worker\" or \"in-process\"", space.source());
    auto from_space = isolation_from_string(j.get<std::string>());
    if (!from_space) return input_error("{}: field 'isolation': {}", space.source(), from_space.error().message);
    want = *from_space;
  }
  const KernelIsolation needs = kernel.isolation();
  if (want == Isolation::in_process && needs == KernelIsolation::worker_only) {
    return input_error("{}: kernel '{}' can only run in a worker process; drop the in-process isolation",
                       space.source(), space.kernel());
  }
  if (want == Isolation::worker && needs == KernelIsolation::in_process_only) {
    return input_error("{}: kernel '{}' cannot run in a worker process", space.source(), space.kernel());
  }
  if (want != Isolation::automatic) return want;
  if (needs == KernelIsolation::worker_only) return Isolation::worker;
  if (needs == KernelIsolation::in_process_only) return Isolation::in_process;
  for (const auto& p : space.params()) {
    if (!p.env.empty()) return Isolation::worker;
  }
  return Isolation::in_process;
}

double default_trial_timeout(const MeasureSettings& m, const std::vector<uint64_t>& sizes) {
  // Process start and kernel set-up, each size's warm-up and cap three times over, and first
  // touch of the buffers (about 15 us per 4 KiB page on slow virtual machines, two buffers).
  double t = 10.0;
  for (uint64_t b : sizes) t += 3.0 * (m.warmup_seconds + m.max_seconds) + 2.0 * static_cast<double>(b) / 4096 * 15e-6;
  return t;
}

TrialRunner::TrialRunner(const Space& space, Kernel& kernel, RunnerOptions options)
    : space_(space), kernel_(kernel), options_(std::move(options)) {
  auto iso = resolve_isolation(space, kernel, options_.isolation);
  isolation_ = iso ? *iso : Isolation::in_process;
  if (options_.telemetry.enabled) telemetry_ = std::make_shared<Telemetry>(options_.telemetry);
}

double TrialRunner::timeout_seconds(const std::vector<uint64_t>& sizes) const {
  return options_.timeout_seconds > 0 ? options_.timeout_seconds : default_trial_timeout(options_.measure, sizes);
}

Trial TrialRunner::run(const Config& config, int64_t number, const std::vector<uint64_t>& sizes, double effort) {
  // Telemetry and the thermal guard sample before the trial's clock starts; a profiler sees the
  // trial as one named range.
  if (telemetry_) telemetry_->begin(number);
  std::optional<TraceRange> range;
  if (tracing()) range.emplace(fmt::format("acceltune trial {} {}", number, space_.key(config)));
  const auto start = std::chrono::steady_clock::now();
  MeasureSettings ms = options_.measure;
  ms.effort = effort;
  Trial t = isolation_ == Isolation::worker ? run_worker(config, number, sizes, ms) : run_here(config, number, sizes, ms);
  t.effort = effort;
  t.number = number;
  t.config = config;
  t.key = space_.key(config);
  summarise(t);
  t.cost_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  range.reset();
  if (telemetry_) t.telemetry = telemetry_->end(t);
  return t;
}

namespace {

std::vector<Measurement> measure_sizes(const Space& space, Kernel& kernel, const Config& config,
                                       const std::vector<uint64_t>& sizes, const MeasureSettings& ms,
                                       const MeasureContext& ctx) {
  std::vector<Measurement> out;
  for (uint64_t bytes : sizes) {
    if (cancel_requested()) break;  // the command is stopping; the study drops this trial
    Measurement m;
    try {
      m = kernel.measure(space, config, bytes, ms, ctx);
    } catch (const std::exception& e) {
      m.state = State::failed;
      m.error = fmt::format("kernel threw: {}", e.what());
    }
    m.bytes = bytes;
    const bool stop = m.state != State::ok;
    out.push_back(std::move(m));
    if (stop) break;  // a config that fails at one size is not worth the others
  }
  return out;
}

}  // namespace

Trial TrialRunner::run_here(const Config& config, int64_t number, const std::vector<uint64_t>& sizes,
                            const MeasureSettings& ms) {
  Trial t;
  ScopedEnv env;
  for (size_t k = 0; k < space_.params().size(); ++k) {
    const Param& p = space_.params()[k];
    if (p.env.empty()) continue;
    const Value& v = space_.value(config, k);
    if (unsets_env(v)) env.unset(p.env);
    else env.set(p.env, to_string(v));
  }
  t.measurements = measure_sizes(space_, kernel_, config, sizes, ms, {options_.seed, number});
  return t;
}

namespace {

Status write_all_fd(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return runtime_error("write to worker failed: {}", std::strerror(errno));
    }
    off += static_cast<size_t>(n);
  }
  return {};
}

// The last non-empty lines of a worker's output, for the trial's message.
std::string tail_lines(const std::string& text, size_t max_chars = 400) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  if (t.size() > max_chars) t = "..." + t.substr(t.size() - max_chars);
  for (char& c : t) {
    if (c == '\n') c = '|';
  }
  return t;
}

struct Pipe {
  int fd[2] = {-1, -1};
  ~Pipe() {
    for (int f : fd) {
      if (f >= 0) ::close(f);
    }
  }
  void close_end(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
};

// A trial that measured nothing: one failed or timed-out measurement at the first size, saying why.
Trial failed_trial(const std::vector<uint64_t>& sizes, State st, std::string msg) {
  Trial t;
  Measurement m;
  m.bytes = sizes.empty() ? 0 : sizes.front();
  m.state = st;
  m.error = std::move(msg);
  t.measurements = {m};
  return t;
}

// The trial's environment: ours, with the env-bound params of the config set; NAME=VALUE each.
std::vector<std::string> worker_environment(const Space& space, const Config& config) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (size_t k = 0; k < space.params().size(); ++k) {
    const Param& p = space.params()[k];
    if (p.env.empty()) continue;
    const Value& v = space.value(config, k);
    if (unsets_env(v)) env.erase(p.env);
    else env[p.env] = to_string(v);
  }
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> null_terminated(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Starts the worker with the request on its stdin, its output on stdout and stderr and its
// result on fd 3, in its own process group, so the watchdog can kill everything the library
// started. 0, or posix_spawn's error.
int spawn_worker(std::vector<std::string>& args, std::vector<std::string>& env, const Pipe& in, const Pipe& result,
                 const Pipe& output, pid_t& pid) {
  std::vector<char*> argv = null_terminated(args);
  std::vector<char*> envp = null_terminated(env);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in.fd[0], 0);
  posix_spawn_file_actions_adddup2(&fa, output.fd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, output.fd[1], 2);
  posix_spawn_file_actions_adddup2(&fa, result.fd[1], 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  const int rc = posix_spawn(&pid, argv[0], &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  return rc;
}

// A worker that dies before reading its request must not kill us with SIGPIPE.
void send_request(Pipe& in, const std::string& text) {
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old);
  (void)write_all_fd(in.fd[1], text);
  sigaction(SIGPIPE, &old, nullptr);
  in.close_end(1);
}

// What a worker wrote on its result and output pipes until both closed, the deadline passed or
// the command was cancelled.
struct WorkerOutput {
  std::string result, output;
  bool timed_out = false;
  bool cancelled = false;
};

using Deadline = std::chrono::time_point<std::chrono::steady_clock, std::chrono::duration<double>>;

WorkerOutput read_worker(Pipe& result, Pipe& output, Deadline deadline) {
  WorkerOutput w;
  int open_fds = 2;
  while (open_fds > 0) {
    if (cancel_requested()) {
      w.cancelled = true;
      break;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      w.timed_out = true;
      break;
    }
    pollfd fds[2] = {{result.fd[0], POLLIN, 0}, {output.fd[0], POLLIN, 0}};
    const int n = ::poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      Pipe& p = i == 0 ? result : output;
      std::string& sink = i == 0 ? w.result : w.output;
      if (got > 0) {
        sink.append(buf, static_cast<size_t>(got));
        if (i == 1 && sink.size() > 65536) sink.erase(0, sink.size() - 32768);  // keep the tail
      } else if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
        p.close_end(0);
        --open_fds;
      }
    }
    // Closed ends are skipped by poll once negative.
    if (result.fd[0] < 0 && output.fd[0] < 0) break;
  }
  return w;
}

// The trial of a worker that exited with `status`: its measurements, or why there are none.
Trial worker_trial(int status, const WorkerOutput& w, const std::vector<uint64_t>& sizes) {
  if (WIFSIGNALED(status)) {
    return failed_trial(sizes, State::failed,
                        fmt::format("worker killed by {}{}", signal_name(WTERMSIG(status)),
                                    w.output.empty() ? "" : "; output: " + tail_lines(w.output)));
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  Json res = Json::parse(w.result, nullptr, false);
  if (code != 0 || res.is_discarded() || !res.is_object()) {
    std::string why = res.is_object() && res.contains("error") ? res["error"].get<std::string>() : tail_lines(w.output);
    return failed_trial(sizes, State::failed,
                        fmt::format("worker exited with status {}{}{}", code, why.empty() ? "" : ": ", why));
  }
  if (res.contains("error")) return failed_trial(sizes, State::failed, res["error"].get<std::string>());
  Trial t;
  for (const auto& jm : res.value("measurements", Json::array())) {
    auto m = Measurement::from_json(jm);
    if (!m) return failed_trial(sizes, State::failed, fmt::format("worker sent a bad measurement: {}", m.error().message));
    t.measurements.push_back(std::move(m).value());
  }
  return t;
}

}  // namespace

Trial TrialRunner::run_worker(const Config& config, int64_t number, const std::vector<uint64_t>& sizes,
                              const MeasureSettings& ms) {
  if (options_.worker_command.empty()) return failed_trial(sizes, State::failed, "no worker command configured");
  Json request = Json::object();
  request["space"] = space_.definition();
  request["source"] = space_.source();
  request["base_dir"] = space_.base_dir().string();
  request["config"] = space_.config_to_json(config);
  request["sizes"] = sizes;
  request["measure"] = ms.to_json();
  request["seed"] = options_.seed;
  request["trial"] = number;
  std::vector<std::string> env = worker_environment(space_, config);
  std::vector<std::string> args = options_.worker_command;

  Pipe in, result, output;
  if (::pipe2(in.fd, O_CLOEXEC) != 0 || ::pipe2(result.fd, O_CLOEXEC) != 0 || ::pipe2(output.fd, O_CLOEXEC) != 0) {
    return failed_trial(sizes, State::failed, fmt::format("cannot create pipes: {}", std::strerror(errno)));
  }
  pid_t pid = -1;
  if (const int rc = spawn_worker(args, env, in, result, output, pid); rc != 0) {
    return failed_trial(sizes, State::failed, fmt::format("cannot start worker '{}': {}", args[0], std::strerror(rc)));
  }
  in.close_end(0);
  result.close_end(1);
  output.close_end(1);
  send_request(in, request.dump());

  const double timeout = timeout_seconds(sizes);
  const WorkerOutput w =
      read_worker(result, output, std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout));
  int status = 0;
  if (w.cancelled) {
    // The command is stopping: the trial in flight is not a result.
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return failed_trial(sizes, State::failed, fmt::format("cancelled by {}", signal_name(cancel_signal())));
  }
  if (w.timed_out) {
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return failed_trial(sizes, State::timeout,
                        fmt::format("no result within the {:.1f} s trial timeout; the worker's process group was "
                                    "killed{}",
                                    timeout, w.output.empty() ? "" : "; output: " + tail_lines(w.output)));
  }
  // The pipes are closed: the worker is exiting. Wait for it, and clear its group.
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ::kill(-pid, SIGKILL);
  return worker_trial(status, w, sizes);
}

int worker_main(int in_fd, int out_fd) {
  std::string text;
  char buf[65536];
  for (ssize_t n; (n = ::read(in_fd, buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      return 1;
    }
    text.append(buf, static_cast<size_t>(n));
  }
  auto reply = [&](const Json& j) {
    (void)write_all_fd(out_fd, j.dump());
    ::close(out_fd);
  };
  Json req = Json::parse(text, nullptr, false);
  if (req.is_discarded() || !req.contains("space")) {
    reply(Json{{"error", "the worker got a malformed request"}});
    return 2;
  }
  auto space = Space::from_definition(req["space"], req.value("source", "worker"), req.value("base_dir", "."));
  if (!space) {
    reply(Json{{"error", space.error().message}});
    return 2;
  }
  auto kernel = make_kernel(*space);
  if (!kernel) {
    reply(Json{{"error", kernel.error().message}});
    return 2;
  }
  auto config = space->config_from_json(req["config"]);
  if (!config) {
    reply(Json{{"error", config.error().message}});
    return 2;
  }
  std::vector<uint64_t> sizes = req["sizes"].get<std::vector<uint64_t>>();
  const MeasureSettings ms = MeasureSettings::from_json(req.value("measure", Json::object()));
  const MeasureContext ctx{req.value("seed", uint64_t{1}), req.value("trial", int64_t{0})};
  Json ms_json = Json::array();
  for (const auto& m : measure_sizes(*space, **kernel, *config, sizes, ms, ctx)) ms_json.push_back(m.to_json());
  reply(Json{{"measurements", ms_json}});
  return 0;
}

}  // namespace acceltune
