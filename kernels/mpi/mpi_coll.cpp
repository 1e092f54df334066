// mpi-coll's kernel and its per-trial launcher: the kernel class, and in launcher mode the job
// a trial starts (mpirun) and reads its results back from. What runs inside each rank (the
// Engine) is in mpi_coll_rank.cpp.
//
// mpi-coll: MPI collectives (allreduce, allgather, reduce_scatter, bcast, alltoall) timed across
// ranks. Each repetition starts from a barrier and is timed on every rank; a sample is the
// slowest rank's time, and rank 0 drives the repetition count so every rank runs the same number.
// The objective is busbw as nccl-tests defines it (algbw and the factor are in the details).
//
// Two ways to run, sharing the measurement code (Engine):
// - launcher mode (a plain `acceltune search`): the trial's params are environment variables
//   (OMPI_MCA_*), set in the worker process of the trial; the kernel starts
//   `mpirun -np RANKS acceltune __mpi-rank DIR` with that environment and sends rank 0 one
//   request per message size through two FIFOs in DIR;
// - inside a launcher (`mpirun -np N acceltune search ...`): rank 0 runs the study and leads,
//   the other ranks follow from attach() until rank 0's kernel sends "stop". Params that the
//   library reads once per job cannot change here; coll/tuned's algorithm choices (Open MPI) and
//   MPIR_CVAR_*_ALGORITHM (MPICH) are written through MPI_T before each trial.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "kernels/mpi/mpi_coll_rank.hpp"
#include "kernels/shared/child_process.hpp"
#include "tuner/binary.hpp"
#include "tuner/kernel.hpp"

extern char** environ;

namespace acceltune::mpi_coll {
namespace {

namespace fs = std::filesystem;

#if defined(OPEN_MPI) && OPEN_MPI
constexpr bool kOpenMpi = true;
constexpr const char* kLauncher = "mpirun";
#else
constexpr bool kOpenMpi = false;
constexpr const char* kLauncher = "mpiexec";
#endif

bool under_launcher() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_RANK");
}

// Env-bound params the library reads at each communicator creation or call, so a running job can
// change them between trials through MPI_T; everything else is read once per job.
bool per_trial_variable(const std::string& env) {
  if (env.rfind("OMPI_MCA_coll_tuned_", 0) == 0) {
    return env != "OMPI_MCA_coll_tuned_use_dynamic_rules" && env != "OMPI_MCA_coll_tuned_dynamic_rules_filename";
  }
  return env.rfind("MPIR_CVAR_", 0) == 0 && env.find("_ALGORITHM") != std::string::npos;
}

// The MPI_T name of an env-bound variable: Open MPI's MCA names drop the OMPI_MCA_ prefix,
// MPICH's control variables keep their full names.
std::string cvar_name(const std::string& env) {
  if (env.rfind("OMPI_MCA_", 0) == 0) return env.substr(9);
  return env;
}

// The per-size watchdog limit of a trial: generous next to the measurement cap.
double trial_deadline_seconds(const MeasureSettings& ms, uint64_t bytes) {
  const double effort = std::clamp(ms.effort, 1e-3, 1.0);
  return 10.0 + 3.0 * (ms.warmup_seconds + ms.max_seconds * effort) + 2.0 * static_cast<double>(bytes) / 4096 * 15e-6;
}

// ---------------------------------------------------------------------------------------------
// Launcher mode: the job that runs one trial's measurements.

// The line of a failed job's output that says why: our own message, else mpirun's last words.
std::string why_job_failed(const std::string& output) {
  std::vector<std::string> lines;
  std::stringstream ss(output);
  for (std::string l; std::getline(ss, l);) {
    while (!l.empty() && (l.back() == '\r' || l.back() == ' ')) l.pop_back();
    if (l.empty() || l.find_first_not_of('-') == std::string::npos) continue;
    lines.push_back(l);
  }
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (it->find("acceltune:") != std::string::npos) return *it;
  }
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (it->find("exited on signal") != std::string::npos || it->find("non-zero") != std::string::npos ||
        it->find("rank") != std::string::npos) {
      return *it;
    }
  }
  return lines.empty() ? "no output" : lines.back();
}

class Job {
 public:
  Job(std::vector<std::string> argv_prefix, std::map<std::string, std::string> extra_env)
      : argv_prefix_(std::move(argv_prefix)), extra_env_(std::move(extra_env)) {}
  ~Job() { end(); }
  bool running() const { return pid_ > 0; }

  Status start() {
    // Under TMPDIR, which a guarded command points at its own scratch folder (process_guard.hpp),
    // so a killed search leaves no FIFO behind.
    std::string tmpl = (fs::temp_directory_path() / "acceltune-mpi-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) return runtime_error("cannot create a folder for the MPI job: {}", std::strerror(errno));
    dir_ = tmpl;
    for (const char* f : {"request", "reply"}) {
      if (::mkfifo((dir_ / f).c_str(), 0600) != 0) return runtime_error("cannot create a FIFO: {}", std::strerror(errno));
    }
    std::map<std::string, std::string> env;
    for (char** e = environ; *e; ++e) {
      std::string kv = *e;
      auto eq = kv.find('=');
      if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const auto& [k, v] : extra_env_) env.emplace(k, v);  // what the environment sets wins
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = argv_prefix_;
    args.push_back(dir_.string());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, (dir_ / "output.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    const int rc = posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
      pid_ = -1;
      return runtime_error("cannot start '{}': {}", args[0], std::strerror(rc));
    }
    // Rank 0 opens the request FIFO for reading once MPI is up; until then opening it for
    // writing without blocking fails with ENXIO.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((request_fd_ = ::open((dir_ / "request").c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
      if (errno != ENXIO) return runtime_error("cannot open the request FIFO: {}", std::strerror(errno));
      if (exited()) return runtime_error("{}", failure_text());
      if (std::chrono::steady_clock::now() > deadline) {
        end();
        return runtime_error("the MPI job did not start within 60 s; it was ended");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ::fcntl(request_fd_, F_SETFL, 0);
    reply_fd_ = ::open((dir_ / "reply").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (reply_fd_ < 0) return runtime_error("cannot open the reply FIFO: {}", std::strerror(errno));
    return {};
  }

  // Sends one request line and waits for the reply line; a job that exits or overruns fails.
  Expected<Json> call(const Json& request, double timeout_seconds, State* fail_state) {
    *fail_state = State::failed;
    const std::string line = request.dump() + "\n";
    struct sigaction ignore {}, old {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore, &old);
    size_t off = 0;
    while (off < line.size()) {
      const ssize_t w = ::write(request_fd_, line.data() + off, line.size() - off);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) break;
      off += static_cast<size_t>(w);
    }
    sigaction(SIGPIPE, &old, nullptr);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                                  std::chrono::duration<double>(timeout_seconds));
    for (;;) {
      auto nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        const std::string text = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        Json j = Json::parse(text, nullptr, false);
        if (j.is_discarded()) return runtime_error("rank 0 sent a malformed reply");
        return j;
      }
      pollfd p{reply_fd_, POLLIN, 0};
      ::poll(&p, 1, 20);
      char buf[65536];
      const ssize_t got = ::read(reply_fd_, buf, sizeof buf);
      if (got > 0) {
        buffer_.append(buf, static_cast<size_t>(got));
        continue;
      }
      // No writer yet or no more: a FIFO reads as empty either way, so ask the process.
      if (got == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      if (exited()) return runtime_error("{}", failure_text());
      if (std::chrono::steady_clock::now() > deadline) {
        end();
        *fail_state = State::timeout;
        return runtime_error("no result from the MPI job within the {:.1f} s trial timeout; it was ended",
                             timeout_seconds);
      }
    }
  }

  void end() {
    if (request_fd_ >= 0) {
      if (pid_ > 0 && !exited()) {
        const std::string stop = Json{{"op", "stop"}}.dump() + "\n";
        struct sigaction ignore {}, old {};
        ignore.sa_handler = SIG_IGN;
        sigaction(SIGPIPE, &ignore, &old);
        (void)!::write(request_fd_, stop.data(), stop.size());
        sigaction(SIGPIPE, &old, nullptr);
      }
      ::close(request_fd_);
      request_fd_ = -1;
    }
    if (pid_ > 0) {
      // A clean stop first; mpirun ends its ranks on SIGTERM; SIGKILL as the last resort.
      if (!wait_exit(10.0)) {
        ::kill(pid_, SIGTERM);
        if (!wait_exit(3.0)) {
          ::kill(pid_, SIGKILL);
          wait_exit(5.0);
        }
      }
      pid_ = -1;
    }
    if (reply_fd_ >= 0) ::close(reply_fd_);
    reply_fd_ = -1;
    if (!dir_.empty()) {
      std::error_code ec;
      fs::remove_all(dir_, ec);
      dir_.clear();
    }
  }

 private:
  bool exited() {
    if (exited_) return true;
    if (pid_ <= 0) return true;
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exited_ = true;
      status_ = status;
    }
    return exited_;
  }
  bool wait_exit(double seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                              std::chrono::duration<double>(seconds));
    while (!exited()) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }
  std::string failure_text() {
    std::ifstream f(dir_ / "output.log");
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string how = WIFSIGNALED(status_) ? fmt::format("was killed by signal {}", WTERMSIG(status_))
                                                 : fmt::format("exited with status {}", WEXITSTATUS(status_));
    return fmt::format("{} {}: {}", argv_prefix_.front(), how, why_job_failed(ss.str()));
  }

  std::vector<std::string> argv_prefix_;
  std::map<std::string, std::string> extra_env_;
  fs::path dir_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int status_ = 0;
  int request_fd_ = -1, reply_fd_ = -1;
  std::string buffer_;
};

// ---------------------------------------------------------------------------------------------
// The kernel.

class MpiColl final : public Kernel {
 public:
  ~MpiColl() override {
    job_.reset();
    if (engine_) {
      engine_->stop();
      engine_.reset();
      finish_mpi();
    }
  }

  std::vector<std::string> placements() const override { return {"loopback"}; }
  KernelIsolation isolation() const override {
    // Inside a launcher rank 0 is the study's own process: a worker would be a new MPI process.
    return under_launcher() ? KernelIsolation::in_process_only : KernelIsolation::any;
  }

  // Ranks on this host reach each other through shared memory; under a launcher they may span
  // hosts over links this process does not see.
  Json link() const override { return under_launcher() ? Json(nullptr) : Json{{"kind", "host-memory"}}; }

  Status attach(Space& space) override {
    coll_ = find_mpi_collective(space.operation());
    if (!coll_) {
      return input_error("{}: operation '{}' is not a collective of mpi-coll ({})", space.source(), space.operation(),
                         collective_names());
    }
    for (const auto& p : space.params()) {
      const bool mpich_var = p.env.rfind("MPIR_CVAR_", 0) == 0;
      const bool ompi_var = p.env.rfind("OMPI_MCA_", 0) == 0;
      if ((mpich_var && kOpenMpi) || (ompi_var && !kOpenMpi)) {
        return input_error("{}: param '{}' sets {}, a variable of {}, but acceltune was built against {}; use a space "
                           "for this MPI library",
                           space.source(), p.name, p.env, mpich_var ? "MPICH" : "Open MPI",
                           kOpenMpi ? "Open MPI" : "another MPI");
      }
    }
    if (under_launcher()) return attach_in_job(space);
    ranks_ = 2;
    if (space.extra().contains("ranks")) {
      const Json& r = space.extra()["ranks"];
      if (!r.is_number_integer() || r.get<int64_t>() < 2 || r.get<int64_t>() > 4096) {
        return input_error("{}: field 'ranks' must be an integer from 2 to 4096", space.source());
      }
      ranks_ = static_cast<int>(r.get<int64_t>());
    }
    space.set_extra("ranks", ranks_);
    launcher_args_.clear();
    if (space.extra().contains("launcher_args")) {
      const Json& a = space.extra()["launcher_args"];
      if (!a.is_array()) return input_error("{}: field 'launcher_args' must be an array of strings", space.source());
      for (const auto& x : a) {
        if (!x.is_string()) return input_error("{}: field 'launcher_args' must be an array of strings", space.source());
        launcher_args_.push_back(x.get<std::string>());
      }
    }
    const char* asked = std::getenv("ACCELTUNE_MPIRUN");
    auto launcher = find_on_path(asked && *asked ? asked : kLauncher);
    if (!launcher) {
      return runtime_error("kernel 'mpi-coll' needs '{}' to start its {} ranks and found none on PATH; install "
                           "openmpi-bin, or start acceltune under a launcher (mpirun -np N acceltune search ...)",
                           asked && *asked ? asked : kLauncher, ranks_);
    }
    launcher_ = *launcher;
    return {};
  }

  Measurement measure(const Space& space, const Config& config, uint64_t bytes, const MeasureSettings& settings,
                      const MeasureContext& ctx) override {
    Json request{{"op", "measure"},          {"operation", std::string(coll_->mpi_name)},
                 {"sizes", Json::array({bytes})},         {"measure", settings.to_json()},
                 {"trial", ctx.trial_number}, {"deadline_seconds", trial_deadline_seconds(settings, bytes)}};
    Measurement failed;
    failed.bytes = bytes;
    failed.state = State::failed;
    Json reply;
    if (engine_) {
      Json cvars = Json::object();
      for (size_t k = 0; k < space.params().size(); ++k) {
        const Param& p = space.params()[k];
        if (per_trial_variable(p.env)) cvars[cvar_name(p.env)] = to_string(space.value(config, k));
      }
      request["cvars"] = cvars;
      reply = engine_->lead(request);
    } else {
      // The job inherits this process's environment, where the trial's env-bound params are set;
      // a job started under other settings is replaced.
      std::string env_key;
      for (const auto& p : space.params()) {
        if (p.env.empty()) continue;
        const char* v = std::getenv(p.env.c_str());
        env_key += p.env + "=" + (v ? v : "") + "\n";
      }
      if (job_ && (!job_->running() || env_key != job_env_key_)) job_.reset();
      if (!job_) {
        auto argv = job_argv();
        if (!argv) {
          failed.error = argv.error().message;
          return failed;
        }
        job_ = std::make_unique<Job>(std::move(*argv), job_env(space));
        job_env_key_ = env_key;
        if (auto st = job_->start(); !st) {
          job_.reset();
          failed.error = st.error().message;
          return failed;
        }
      }
      State why = State::failed;
      auto r = job_->call(request, trial_deadline_seconds(settings, bytes) + 5.0, &why);
      if (!r) {
        job_.reset();
        failed.state = why;
        failed.error = r.error().message;
        return failed;
      }
      reply = *r;
    }
    const Json ms = reply.value("measurements", Json::array());
    if (ms.empty()) {
      failed.error = "rank 0 sent no measurement";
      return failed;
    }
    auto m = Measurement::from_json(ms.front());
    if (!m) {
      failed.error = m.error().message;
      return failed;
    }
    return *m;
  }

 private:
  Status attach_in_job(Space& space) {
    init_mpi();
    engine_ = std::make_unique<Engine>(true);
    if (engine_->rank() != 0) {
      // The other ranks never run the study: they measure what rank 0 asks until it stops.
      engine_->follow();
      engine_.reset();
      finish_mpi();
      std::exit(0);
    }
    ranks_ = engine_->size();
    if (ranks_ < 2) {
      return input_error("{}: kernel 'mpi-coll' needs at least 2 ranks; this job has {}", space.source(), ranks_);
    }
    space.set_extra("ranks", ranks_);
    std::vector<size_t> fixed;
    bool coll_tuned = false;
    for (size_t k = 0; k < space.params().size(); ++k) {
      const Param& p = space.params()[k];
      if (p.env.empty()) continue;
      if (per_trial_variable(p.env)) {
        if (auto info = find_cvar(cvar_name(p.env)); !info) {
          return input_error("{}: param '{}': {}", space.source(), p.name, info.error().message);
        }
        coll_tuned = coll_tuned || p.env.rfind("OMPI_MCA_coll_tuned_", 0) == 0;
      } else if (p.values.size() > 1) {
        fixed.push_back(k);
      }
    }
    if (coll_tuned && !cvar_is_set("coll_tuned_use_dynamic_rules").value_or(false)) {
      return input_error("{}: forced coll/tuned algorithms need the job started with --mca "
                         "coll_tuned_use_dynamic_rules 1 (Open MPI reads it once per job)",
                         space.source());
    }
    if (!fixed.empty()) {
      // A library reads these once per job, so a running job cannot try their values: they keep
      // their defaults here and the job's own setting applies.
      std::string names;
      for (size_t k : fixed) names += (names.empty() ? "" : ", ") + space.params()[k].name + " (" + space.params()[k].env + ")";
      std::vector<std::pair<size_t, uint32_t>> keep;
      for (size_t k : fixed) keep.emplace_back(k, static_cast<uint32_t>(space.params()[k].default_index));
      space.set_membership(
          [keep](const Config& c) {
            for (const auto& [k, d] : keep) {
              if (c.index[k] != d) return false;
            }
            return true;
          },
          "params read once per MPI job keep their defaults under a launcher");
      std::fprintf(stderr,
                   "acceltune: under %s these params are read once per job and keep the job's setting: %s; set them "
                   "with --mca or -x, or search them without a launcher\n",
                   kLauncher, names.c_str());
    }
    return {};
  }

  // The launcher's command line: it starts the acceltune binary (the one setting, tuner/binary.hpp)
  // in its rank mode.
  Expected<std::vector<std::string>> job_argv() const {
    ACCELTUNE_TRY_ASSIGN(std::string exe, acceltune_binary());
    std::vector<std::string> a = {launcher_};
    if (kOpenMpi) {
      a.insert(a.end(), {"-np", std::to_string(ranks_), "--bind-to", "none"});
      const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
      if (cpus > 0 && ranks_ > cpus) a.push_back("--oversubscribe");
      // Remote daemons do not inherit the environment: forward the test hook explicitly.
      for (const char* hook : {"ACCELTUNE_MPI_EXIT_RANK", "ACCELTUNE_MPI_HANG_RANK"}) {
        if (std::getenv(hook)) a.insert(a.end(), {"-x", hook});
      }
    } else {
      a.insert(a.end(), {"-n", std::to_string(ranks_)});
    }
    a.insert(a.end(), launcher_args_.begin(), launcher_args_.end());
    a.push_back(exe);
    a.push_back("__mpi-rank");
    return a;
  }

  std::map<std::string, std::string> job_env(const Space& space) const {
    std::map<std::string, std::string> env;
    if (!kOpenMpi) return env;
    if (::geteuid() == 0) {
      env["OMPI_ALLOW_RUN_AS_ROOT"] = "1";
      env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1";
    }
    for (const auto& p : space.params()) {
      // Forced algorithms apply only with dynamic rules on.
      if (p.env.rfind("OMPI_MCA_coll_tuned_", 0) == 0) env["OMPI_MCA_coll_tuned_use_dynamic_rules"] = "1";
    }
    // What a value needs to run (the space's "needs": pml=ucx on Debian's Open MPI 4.1 accepts
    // only Mellanox devices unless told otherwise), set for every value: the exports carry the same.
    for (const auto& p : space.params()) {
      for (const auto& [value, vars] : p.needs) {
        for (const auto& [var, v] : vars) env[var] = v;
      }
    }
    return env;
  }

  const CollectiveRow* coll_ = nullptr;
  int ranks_ = 2;
  std::string launcher_;
  std::vector<std::string> launcher_args_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Job> job_;
  std::string job_env_key_;
};

}  // namespace

ACCELTUNE_REGISTER_KERNEL("mpi-coll",
                          "MPI collectives across ranks (allreduce, allgather, reduce_scatter, bcast, alltoall): "
                          "algorithm, segment size, messaging layer",
                          MpiColl)

}  // namespace acceltune::mpi_coll
