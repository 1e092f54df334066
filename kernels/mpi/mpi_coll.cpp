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
// The C API only: the deprecated C++ bindings need a library this binary does not link.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "tuner/binary.hpp"
#include "kernels/shared/child_process.hpp"
#include "tuner/kernel.hpp"
#include "tuner/service.hpp"

extern char** environ;

namespace acceltune {
namespace {

namespace fs = std::filesystem;

#if defined(OPEN_MPI) && OPEN_MPI
constexpr bool kOpenMpi = true;
constexpr const char* kLauncher = "mpirun";
#else
constexpr bool kOpenMpi = false;
constexpr const char* kLauncher = "mpiexec";
#endif

// ---------------------------------------------------------------------------------------------
// Collectives: one descriptor each, busbw factors in one table (nccl-tests' definitions).

enum class Op { allreduce, allgather, reduce_scatter, bcast, alltoall };

struct Collective {
  Op op;
  const char* name;
  double (*busbw_factor)(int ranks);
};

const Collective kCollectives[] = {
    {Op::allreduce, "allreduce", [](int n) { return 2.0 * (n - 1) / n; }},
    {Op::allgather, "allgather", [](int n) { return static_cast<double>(n - 1) / n; }},
    {Op::reduce_scatter, "reduce_scatter", [](int n) { return static_cast<double>(n - 1) / n; }},
    {Op::bcast, "bcast", [](int) { return 1.0; }},
    {Op::alltoall, "alltoall", [](int n) { return static_cast<double>(n - 1) / n; }},
};

const Collective* find_collective(const std::string& name) {
  for (const auto& c : kCollectives) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

std::string collective_names() {
  std::string s;
  for (const auto& c : kCollectives) s += (s.empty() ? "" : ", ") + std::string(c.name);
  return s;
}

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

// The value rank r contributes at index i: never zero, small integers so float sums are exact.
inline float input_value(int r, size_t i) { return static_cast<float>(1 + r + static_cast<int>(i % 13)); }

// ---------------------------------------------------------------------------------------------
// The watchdog of a rank: a hung collective or a vanished launcher ends the process, so no rank
// outlives its job and a study in progress can be resumed. It calls no MPI function (the library
// is initialised for one calling thread); mpirun ends the other ranks when one exits.

class Watchdog {
 public:
  explicit Watchdog(int rank, bool watch_parent) : rank_(rank), parent_(watch_parent ? ::getppid() : 0) {
    thread_ = std::thread([this] { loop(); });
  }
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> g(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void arm(double seconds) {
    std::lock_guard<std::mutex> g(mu_);
    limit_seconds_ = seconds;
    deadline_ = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                       std::chrono::duration<double>(seconds));
    armed_ = true;
  }
  void disarm() {
    std::lock_guard<std::mutex> g(mu_);
    armed_ = false;
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lk(mu_);
    while (!quit_) {
      cv_.wait_for(lk, std::chrono::milliseconds(100));
      if (quit_) break;
      if (parent_ != 0 && ::getppid() != parent_) {
        std::fprintf(stderr, "acceltune: rank %d: the launcher is gone; exiting\n", rank_);
        std::fflush(stderr);
        ::_exit(4);
      }
      if (armed_ && std::chrono::steady_clock::now() > deadline_) {
        std::fprintf(stderr, "acceltune: rank %d: no result within the %.1f s trial timeout; ending the MPI job\n",
                     rank_, limit_seconds_);
        std::fflush(stderr);
        ::_exit(3);
      }
    }
  }

  int rank_;
  pid_t parent_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool quit_ = false, armed_ = false;
  double limit_seconds_ = 0;
  std::chrono::steady_clock::time_point deadline_;
  std::thread thread_;
};

// ---------------------------------------------------------------------------------------------
// MPI_T control variables: find, check and write one by name, with enum names mapped to values.

struct CvarInfo {
  int index = -1;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_T_enum enumtype = MPI_T_ENUM_NULL;
  int scope = 0, bind = 0;
};

Expected<CvarInfo> find_cvar(const std::string& name) {
  CvarInfo info;
  if (MPI_T_cvar_get_index(name.c_str(), &info.index) != MPI_SUCCESS) {
    return input_error("the MPI library has no control variable '{}'", name);
  }
  char got_name[256], desc[16];
  int name_len = sizeof got_name, desc_len = sizeof desc, verbosity = 0;
  if (MPI_T_cvar_get_info(info.index, got_name, &name_len, &verbosity, &info.type, &info.enumtype, desc, &desc_len,
                          &info.bind, &info.scope) != MPI_SUCCESS) {
    return input_error("cannot read the description of MPI control variable '{}'", name);
  }
  if (info.scope == MPI_T_SCOPE_CONSTANT || info.scope == MPI_T_SCOPE_READONLY) {
    return input_error("MPI control variable '{}' is read-only in a running job", name);
  }
  if (info.bind != MPI_T_BIND_NO_OBJECT) {
    return input_error("MPI control variable '{}' is bound to an MPI object; acceltune sets only global ones", name);
  }
  return info;
}

Expected<long long> enum_or_integer(const CvarInfo& info, const std::string& name, const std::string& text) {
  char* end = nullptr;
  const long long n = std::strtoll(text.c_str(), &end, 10);
  if (!text.empty() && end && *end == '\0') return n;
  if (info.enumtype != MPI_T_ENUM_NULL) {
    int count = 0, len = 0;
    char ename[256];
    len = sizeof ename;
    if (MPI_T_enum_get_info(info.enumtype, &count, ename, &len) == MPI_SUCCESS) {
      for (int i = 0; i < count; ++i) {
        int value = 0;
        char item[256];
        int item_len = sizeof item;
        if (MPI_T_enum_get_item(info.enumtype, i, &value, item, &item_len) == MPI_SUCCESS && text == item) return value;
      }
    }
  }
  return input_error("value '{}' of MPI control variable '{}' is neither a number nor one of its names", text, name);
}

Status write_cvar(const std::string& name, const std::string& text) {
  ACCELTUNE_TRY_ASSIGN(CvarInfo info, find_cvar(name));
  MPI_T_cvar_handle handle;
  int count = 0;
  if (MPI_T_cvar_handle_alloc(info.index, nullptr, &handle, &count) != MPI_SUCCESS) {
    return runtime_error("cannot get a handle on MPI control variable '{}'", name);
  }
  int rc = MPI_SUCCESS;
  if (info.type == MPI_CHAR) {
    rc = MPI_T_cvar_write(handle, text.c_str());
  } else {
    auto n = enum_or_integer(info, name, text);
    if (!n) {
      MPI_T_cvar_handle_free(&handle);
      return n.error();
    }
    if (info.type == MPI_INT) {
      const int v = static_cast<int>(*n);
      rc = MPI_T_cvar_write(handle, &v);
    } else if (info.type == MPI_UNSIGNED) {
      const unsigned v = static_cast<unsigned>(*n);
      rc = MPI_T_cvar_write(handle, &v);
    } else if (info.type == MPI_UNSIGNED_LONG) {
      const unsigned long v = static_cast<unsigned long>(*n);
      rc = MPI_T_cvar_write(handle, &v);
    } else if (info.type == MPI_UNSIGNED_LONG_LONG) {
      const unsigned long long v = static_cast<unsigned long long>(*n);
      rc = MPI_T_cvar_write(handle, &v);
    } else if (info.type == MPI_LONG_LONG) {
      const long long v = *n;
      rc = MPI_T_cvar_write(handle, &v);
    } else {
      MPI_T_cvar_handle_free(&handle);
      return input_error("MPI control variable '{}' has a type acceltune does not write", name);
    }
  }
  MPI_T_cvar_handle_free(&handle);
  if (rc != MPI_SUCCESS) return runtime_error("MPI_T_cvar_write of '{}' = '{}' failed (MPI_T code {})", name, text, rc);
  return {};
}

// Whether a numeric or boolean control variable is non-zero; read-only ones included.
std::optional<bool> cvar_is_set(const std::string& name) {
  int index = -1;
  if (MPI_T_cvar_get_index(name.c_str(), &index) != MPI_SUCCESS) return std::nullopt;
  MPI_T_cvar_handle handle;
  int count = 0;
  if (MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) != MPI_SUCCESS) return std::nullopt;
  unsigned char v[64] = {};  // wide enough for any scalar type
  const int rc = MPI_T_cvar_read(handle, v);
  MPI_T_cvar_handle_free(&handle);
  if (rc != MPI_SUCCESS) return std::nullopt;
  return std::any_of(std::begin(v), std::end(v), [](unsigned char b) { return b != 0; });
}

// ---------------------------------------------------------------------------------------------
// The engine: every rank executes the same requests; rank 0 receives them (from the study or
// from the FIFO of a launched job) and broadcasts them.

class Engine {
 public:
  explicit Engine(bool watch_parent) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    watchdog_ = std::make_unique<Watchdog>(rank_, watch_parent);
    if (const char* t = std::getenv("ACCELTUNE_MPI_TRACE")) trace_prefix_ = t;
  }
  int rank() const { return rank_; }
  int size() const { return size_; }

  // Rank 0: hands a request to every rank and executes it; returns the measurements.
  Json lead(const Json& request) {
    broadcast(request.dump());
    return execute(request);
  }
  void stop() {
    if (rank_ == 0 && !stopped_) broadcast(Json{{"op", "stop"}}.dump());
    stopped_ = true;
  }
  // Ranks != 0: executes rank 0's requests until "stop".
  void follow() {
    for (;;) {
      Json req = Json::parse(broadcast(""), nullptr, false);
      if (req.is_discarded() || req.value("op", "") != "measure") return;
      execute(req);
    }
  }

 private:
  std::string broadcast(const std::string& text) {
    unsigned long long n = text.size();
    MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    std::string out = rank_ == 0 ? text : std::string(n, '\0');
    if (n > 0) MPI_Bcast(out.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD);
    return out;
  }

  // Every rank reports a state code (0 ok, 1 invalid, 2 failed) and an error text; all ranks
  // adopt the worst, and rank 0 gets every failing rank's text.
  std::pair<State, std::string> agree(State local, const std::string& error, MPI_Comm comm) {
    int code = local == State::ok ? 0 : local == State::invalid ? 1 : 2;
    MPI_Allreduce(MPI_IN_PLACE, &code, 1, MPI_INT, MPI_MAX, comm);
    constexpr int kLen = 240;
    std::vector<char> mine(kLen, '\0');
    std::snprintf(mine.data(), kLen, "%s", error.c_str());
    std::vector<char> all(rank_ == 0 ? static_cast<size_t>(kLen) * static_cast<size_t>(size_) : 0);
    MPI_Gather(mine.data(), kLen, MPI_CHAR, all.data(), kLen, MPI_CHAR, 0, comm);
    std::string text;
    if (rank_ == 0) {
      for (int r = 0; r < size_; ++r) {
        const std::string e(all.data() + static_cast<size_t>(r) * kLen);
        if (!e.empty()) text += fmt::format("{}rank {}: {}", text.empty() ? "" : "; ", r, e);
      }
    }
    const State st = code == 0 ? State::ok : code == 1 ? State::invalid : State::failed;
    return {st, text};
  }

  Json execute(const Json& req) {
    watchdog_->arm(req.value("deadline_seconds", 60.0));
    std::string error;
    const Json cvars = req.value("cvars", Json::object());
    for (const auto& [name, value] : cvars.items()) {
      if (auto st = write_cvar(name, value.get<std::string>()); !st) {
        error = st.error().message;
        break;
      }
    }
    // A fresh communicator per trial: coll/tuned reads forced algorithms when one is created.
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    Json out = Json::array();
    const std::vector<uint64_t> sizes = req.value("sizes", std::vector<uint64_t>{});
    auto [st, text] = agree(error.empty() ? State::ok : State::failed, error, comm);
    if (st != State::ok) {
      Measurement m;
      m.bytes = sizes.empty() ? 0 : sizes.front();
      m.state = st;
      m.error = text;
      out.push_back(m.to_json());
    } else {
      const Collective* coll = find_collective(req.value("operation", ""));
      const MeasureSettings ms = MeasureSettings::from_json(req.value("measure", Json::object()));
      for (uint64_t bytes : sizes) {
        State local = State::ok;
        Measurement m = measure_size(*coll, bytes, ms, req.value("exit_rank", -1), comm, local);
        // What this rank will act on, written from what it returns, beside what it saw itself.
        trace(req.value("trial", int64_t{0}), bytes, local, m.state);
        const bool ok = m.state == State::ok;
        out.push_back(m.to_json());
        if (!ok) break;
      }
    }
    MPI_Comm_free(&comm);
    watchdog_->disarm();
    return Json{{"measurements", out}};
  }

  // Every rank returns the state the ranks agreed on; `local` is what this rank saw itself.
  Measurement measure_size(const Collective& coll, uint64_t bytes, const MeasureSettings& ms, int exit_rank,
                           MPI_Comm comm, State& local) {
    const int n = size_;
    const size_t elements = std::max<size_t>(1, bytes / sizeof(float));
    const bool split = coll.op == Op::allgather || coll.op == Op::reduce_scatter || coll.op == Op::alltoall;
    // Per-rank blocks of the split collectives; each call moves `moved` bytes (nccl-tests' size).
    const size_t block = split ? std::max<size_t>(1, elements / static_cast<size_t>(n)) : elements;
    const size_t total = split ? block * static_cast<size_t>(n) : elements;
    const uint64_t moved = total * sizeof(float);
    const size_t send_len = coll.op == Op::allgather ? block : total;
    const size_t recv_len = coll.op == Op::reduce_scatter ? block : total;
    // Allocated and first touched before any timing.
    std::vector<float> send(send_len), recv(recv_len, 0.0f);
    for (size_t i = 0; i < send_len; ++i) send[i] = input_value(rank_, i);
    if (coll.op == Op::bcast && rank_ == 0) recv = send;
    std::vector<int> counts(static_cast<size_t>(n), static_cast<int>(block));
    const int count = static_cast<int>(coll.op == Op::allreduce || coll.op == Op::bcast ? elements : block);

    if (exit_rank == rank_) {
      std::fprintf(stderr, "acceltune: rank %d exits on request (ACCELTUNE_MPI_EXIT_RANK)\n", rank_);
      std::fflush(stderr);
      ::_exit(7);
    }
    // Test hook: a rank that never returns, as a wedged library would (the others block in the
    // collective), for the tests that a stopped or killed search leaves no rank behind.
    if (const char* hang = std::getenv("ACCELTUNE_MPI_HANG_RANK"); hang && std::atoi(hang) == rank_) {
      for (;;) ::pause();
    }

    auto call = [&] {
      switch (coll.op) {
        case Op::allreduce: MPI_Allreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, comm); break;
        case Op::allgather: MPI_Allgather(send.data(), count, MPI_FLOAT, recv.data(), count, MPI_FLOAT, comm); break;
        case Op::reduce_scatter:
          MPI_Reduce_scatter(send.data(), recv.data(), counts.data(), MPI_FLOAT, MPI_SUM, comm);
          break;
        case Op::bcast: MPI_Bcast(recv.data(), count, MPI_FLOAT, 0, comm); break;
        case Op::alltoall: MPI_Alltoall(send.data(), count, MPI_FLOAT, recv.data(), count, MPI_FLOAT, comm); break;
      }
    };
    std::vector<double> times;
    times.reserve(4096);
    auto repetition = [&] {
      MPI_Barrier(comm);
      const double t0 = MPI_Wtime();
      call();
      times.push_back(MPI_Wtime() - t0);
    };
    Measurement m;
    if (rank_ == 0) {
      m = measure_timed(moved, [&] {
        int go = 1;
        MPI_Bcast(&go, 1, MPI_INT, 0, comm);
        repetition();
      }, ms);
      int go = 0;
      MPI_Bcast(&go, 1, MPI_INT, 0, comm);
    } else {
      for (;;) {
        int go = 0;
        MPI_Bcast(&go, 1, MPI_INT, 0, comm);
        if (!go) break;
        repetition();
      }
    }
    // The slowest rank's time of each repetition.
    MPI_Allreduce(MPI_IN_PLACE, times.data(), static_cast<int>(times.size()), MPI_DOUBLE, MPI_MAX, comm);

    // Test hook: a rank whose result is wrong, as a broken transport's would be, for the tests
    // that one rank's failure fails the measurement on every rank.
    if (const char* wrong = std::getenv("ACCELTUNE_MPI_WRONG_RANK"); wrong && std::atoi(wrong) == rank_ && !recv.empty()) {
      recv[0] = -1.0f;
    }
    const std::string error = validate(coll, recv, block);
    local = error.empty() ? State::ok : State::invalid;
    auto [st, text] = agree(local, error, comm);
    if (rank_ != 0) {
      // Only rank 0's measurement is stored, but every rank acts on the agreed state.
      Measurement agreed;
      agreed.bytes = bytes;
      agreed.state = st;
      if (st != State::ok) agreed.error = error.empty() ? "another rank's result was wrong" : error;
      return agreed;
    }

    // measure_timed decided when to stop from rank 0's clock; the samples it reports are rebuilt
    // from the slowest rank's times of the same repetitions (the warm-up runs come first).
    const size_t rps = static_cast<size_t>(std::max<int64_t>(1, m.runs_per_sample));
    const size_t samples = m.samples_seconds.size();
    if (times.size() >= samples * rps) {
      const size_t warm = times.size() - samples * rps;
      for (size_t s = 0; s < samples; ++s) {
        double sum = 0;
        for (size_t r = 0; r < rps; ++r) sum += times[warm + s * rps + r];
        m.samples_seconds[s] = sum / static_cast<double>(rps);
      }
    }
    m.bytes = moved;
    finish_bandwidth(m);
    const double factor = coll.busbw_factor(n);
    const double algbw = m.value;
    m.value *= factor;
    m.value_p10 *= factor;
    m.value_p90 *= factor;
    m.bytes = bytes;
    m.details = Json{{"objective", "busbw"},   {"algbw_gbps", algbw}, {"busbw_gbps", m.value},
                     {"busbw_factor", factor}, {"ranks", n},          {"bytes_moved", moved},
                     {"timing", "slowest rank per repetition"}};
    if (st != State::ok) {
      m.state = st;
      m.error = text;
    }
    return m;
  }

  std::string validate(const Collective& coll, const std::vector<float>& recv, size_t block) const {
    const int n = size_;
    const float base = static_cast<float>(n + n * (n - 1) / 2);
    for (size_t i = 0; i < recv.size(); ++i) {
      float want = 0;
      switch (coll.op) {
        case Op::allreduce: want = base + static_cast<float>(n * static_cast<int>(i % 13)); break;
        case Op::allgather: want = input_value(static_cast<int>(i / block), i % block); break;
        case Op::reduce_scatter:
          want = base + static_cast<float>(n * static_cast<int>((static_cast<size_t>(rank_) * block + i) % 13));
          break;
        case Op::bcast: want = input_value(0, i); break;
        case Op::alltoall:
          want = input_value(static_cast<int>(i / block), static_cast<size_t>(rank_) * block + i % block);
          break;
      }
      if (recv[i] != want) {
        return fmt::format("{} result differs from the expected one at element {}: {} instead of {}", coll.name, i,
                           recv[i], want);
      }
    }
    return "";
  }

  // Each rank's view of every outcome, for checking that the ranks agree: the state it returns
  // (the agreed one) and the one it saw itself.
  void trace(int64_t trial, uint64_t bytes, State local, State returned) const {
    if (trace_prefix_.empty()) return;
    std::ofstream f(fmt::format("{}.rank{}.jsonl", trace_prefix_, rank_), std::ios::app);
    f << Json{{"trial", trial},
              {"bytes", bytes},
              {"state", std::string(to_string(returned))},
              {"local", std::string(to_string(local))}}
             .dump()
      << "\n";
  }

  int rank_ = 0, size_ = 1;
  bool stopped_ = false;
  std::string trace_prefix_;
  std::unique_ptr<Watchdog> watchdog_;
};

// The per-size watchdog limit of a trial: generous next to the measurement cap.
double trial_deadline_seconds(const MeasureSettings& ms, uint64_t bytes) {
  const double effort = std::clamp(ms.effort, 1e-3, 1.0);
  return 10.0 + 3.0 * (ms.warmup_seconds + ms.max_seconds * effort) + 2.0 * static_cast<double>(bytes) / 4096 * 15e-6;
}

void init_mpi() {
  int done = 0;
  MPI_Initialized(&done);
  if (done) return;
  int provided = 0;
  MPI_T_init_thread(MPI_THREAD_FUNNELED, &provided);
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
}

void finish_mpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  // Open MPI crashes when MPI_T is finalised after MPI.
  MPI_T_finalize();
  MPI_Finalize();
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

// `acceltune __mpi-rank DIR`: one rank of a launched job. Rank 0 reads requests from DIR/request
// and writes replies to DIR/reply; the others follow it.
int mpi_rank_main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "acceltune: __mpi-rank takes the job's folder\n");
    return 2;
  }
  init_mpi();
  int rc = 0;
  {
    Engine engine(true);
    if (engine.rank() != 0) {
      engine.follow();
    } else {
      const fs::path dir = argv[2];
      std::ifstream in(dir / "request");
      std::ofstream out(dir / "reply");
      if (!in || !out) {
        std::fprintf(stderr, "acceltune: rank 0 cannot open the FIFOs in %s\n", argv[2]);
        rc = 1;
      }
      const char* exit_rank = std::getenv("ACCELTUNE_MPI_EXIT_RANK");
      for (std::string line; rc == 0 && std::getline(in, line);) {
        Json req = Json::parse(line, nullptr, false);
        if (req.is_discarded() || req.value("op", "") != "measure") break;
        if (exit_rank) req["exit_rank"] = std::atoi(exit_rank);
        out << engine.lead(req).dump() << "\n" << std::flush;
      }
      engine.stop();
    }
  }
  finish_mpi();
  return rc;
}

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

  std::vector<std::string> native_params() const override { return {}; }
  std::vector<std::string> placements() const override { return {"loopback"}; }
  KernelIsolation isolation() const override {
    // Inside a launcher rank 0 is the study's own process: a worker would be a new MPI process.
    return under_launcher() ? KernelIsolation::in_process_only : KernelIsolation::any;
  }

  Status attach(Space& space) override {
    coll_ = find_collective(space.operation());
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
    Json request{{"op", "measure"},          {"operation", coll_->name},
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

  const Collective* coll_ = nullptr;
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
ACCELTUNE_REGISTER(HiddenMode, "__mpi-rank",
                   (HiddenMode{"one rank of a launched mpi-coll job", mpi_rank_main}))

}  // namespace acceltune
