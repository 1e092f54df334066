// mpi-coll's rank engine: what runs inside each MPI rank. The collectives' calls, the MPI_T
// control variables a trial writes, the watchdog that ends a hung rank, the Engine (rank 0 leads,
// the others follow; each request is timed and checked on every rank) and `acceltune __mpi-rank
// DIR`, one rank of a job the kernel (mpi_coll.cpp) launches per trial.
#include "kernels/mpi/mpi_coll_rank.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "tuner/service.hpp"

namespace acceltune::mpi_coll {

std::string collective_names() {
  std::string s;
  for (const auto& c : collective_rows()) {
    if (!c.mpi_name.empty()) s += (s.empty() ? "" : ", ") + std::string(c.mpi_name);
  }
  return s;
}

namespace {

namespace fs = std::filesystem;

// The value rank r contributes at index i: never zero, small integers so float sums are exact.
inline float input_value(int r, size_t i) { return static_cast<float>(1 + r + static_cast<int>(i % 13)); }

}  // namespace

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

namespace {

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

// One call of the collective: the whole message, or one rank's block per call of the split ones.
void call_collective(const CollectiveRow& coll, std::vector<float>& send, std::vector<float>& recv,
                     std::vector<int>& counts, int count, MPI_Comm comm) {
  switch (coll.op) {
    case CollectiveOp::allreduce: MPI_Allreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, comm); break;
    case CollectiveOp::allgather:
      MPI_Allgather(send.data(), count, MPI_FLOAT, recv.data(), count, MPI_FLOAT, comm);
      break;
    case CollectiveOp::reduce_scatter:
      MPI_Reduce_scatter(send.data(), recv.data(), counts.data(), MPI_FLOAT, MPI_SUM, comm);
      break;
    case CollectiveOp::broadcast: MPI_Bcast(recv.data(), count, MPI_FLOAT, 0, comm); break;
    case CollectiveOp::alltoall:
      MPI_Alltoall(send.data(), count, MPI_FLOAT, recv.data(), count, MPI_FLOAT, comm);
      break;
    default: break;  // a row without an MPI name never reaches here
  }
}

// Rank 0's measurement in bus bandwidth. measure_timed decided when to stop from rank 0's clock;
// the samples it reports are rebuilt from the slowest rank's times of the same repetitions (the
// warm-up runs come first).
void finish_busbw(Measurement& m, const std::vector<double>& times, const CollectiveRow& coll, int n, uint64_t bytes,
                  uint64_t moved) {
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
  const double factor = busbw_factor(coll, n);
  const double algbw = m.value;
  m.value *= factor;
  m.value_p10 *= factor;
  m.value_p90 *= factor;
  m.bytes = bytes;
  m.details = Json{{"objective", "busbw"},   {"algbw_gbps", algbw}, {"busbw_gbps", m.value},
                   {"busbw_factor", factor}, {"ranks", n},          {"bytes_moved", moved},
                   {"timing", "slowest rank per repetition"}};
}

}  // namespace

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

Engine::Engine(bool watch_parent) {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  watchdog_ = std::make_unique<Watchdog>(rank_, watch_parent);
  if (const char* t = std::getenv("ACCELTUNE_MPI_TRACE")) trace_prefix_ = t;
}

Engine::~Engine() = default;

Json Engine::lead(const Json& request) {
  broadcast(request.dump());
  return execute(request);
}

void Engine::stop() {
  if (rank_ == 0 && !stopped_) broadcast(Json{{"op", "stop"}}.dump());
  stopped_ = true;
}

void Engine::follow() {
  for (;;) {
    Json req = Json::parse(broadcast(""), nullptr, false);
    if (req.is_discarded() || req.value("op", "") != "measure") return;
    execute(req);
  }
}

std::string Engine::broadcast(const std::string& text) {
  unsigned long long n = text.size();
  MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  std::string out = rank_ == 0 ? text : std::string(n, '\0');
  if (n > 0) MPI_Bcast(out.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD);
  return out;
}

std::pair<State, std::string> Engine::agree(State local, const std::string& error, MPI_Comm comm) {
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

Json Engine::execute(const Json& req) {
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
    const CollectiveRow* coll = find_mpi_collective(req.value("operation", ""));
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

Measurement Engine::measure_size(const CollectiveRow& coll, uint64_t bytes, const MeasureSettings& ms, int exit_rank,
                                 MPI_Comm comm, State& local) {
  const int n = size_;
  const size_t elements = std::max<size_t>(1, bytes / sizeof(float));
  // Per-rank blocks of the split collectives; each call moves `moved` bytes (nccl-tests' size).
  const size_t total = coll.split ? std::max<size_t>(1, elements / static_cast<size_t>(n)) * static_cast<size_t>(n)
                                  : elements;
  const Shares shares = collective_shares(coll, total, n);
  const size_t block = shares.block;
  const uint64_t moved = total * sizeof(float);
  // Allocated and first touched before any timing.
  std::vector<float> send(shares.send), recv(shares.recv, 0.0f);
  for (size_t i = 0; i < send.size(); ++i) send[i] = input_value(rank_, i);
  // MPI_Bcast sends the root's receive buffer.
  if (coll.op == CollectiveOp::broadcast && rank_ == 0) recv = send;
  std::vector<int> counts(static_cast<size_t>(n), static_cast<int>(block));
  const int count = static_cast<int>(block);  // per call: the whole message, or one rank's block

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

  std::vector<double> times;
  times.reserve(4096);
  auto repetition = [&] {
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    call_collective(coll, send, recv, counts, count, comm);
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

  finish_busbw(m, times, coll, n, bytes, moved);
  if (st != State::ok) {
    m.state = st;
    m.error = text;
  }
  return m;
}

std::string Engine::validate(const CollectiveRow& coll, const std::vector<float>& recv, size_t block) const {
  for (size_t i = 0; i < recv.size(); ++i) {
    const float want = expected_element(coll, input_value, rank_, size_, i, block);
    if (recv[i] != want) {
      return fmt::format("{} result differs from the expected one at element {}: {} instead of {}", coll.mpi_name, i,
                         recv[i], want);
    }
  }
  return "";
}

void Engine::trace(int64_t trial, uint64_t bytes, State local, State returned) const {
  if (trace_prefix_.empty()) return;
  std::ofstream f(fmt::format("{}.rank{}.jsonl", trace_prefix_, rank_), std::ios::app);
  f << Json{{"trial", trial},
            {"bytes", bytes},
            {"state", std::string(to_string(returned))},
            {"local", std::string(to_string(local))}}
           .dump()
    << "\n";
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

namespace {

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

}  // namespace

ACCELTUNE_REGISTER(HiddenMode, "__mpi-rank",
                   (HiddenMode{"one rank of a launched mpi-coll job", mpi_rank_main}))

}  // namespace acceltune::mpi_coll
