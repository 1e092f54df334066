// nccl: collectives (allreduce, allgather, reduce_scatter, broadcast, reduce, alltoall as
// grouped send/recv, sendrecv), one rank process per GPU (`acceltune __nccl-rank`), algbw and
// busbw as nccl-tests defines them, results checked outside the timing.
//
// How parameters reach NCCL: NCCL_* variables are env-bound params, which the trial runner sets
// in a fresh worker process per trial; the ranks inherit them, and NCCL reads most of them once
// per process. The ncclConfig_t fields (channels = minCTAs = maxCTAs, cga_cluster_size, ...)
// are native params, read per communicator; the ranks get them in their request.
//
// Across nodes the ranks are started by a launcher instead: the space field "launcher" is its
// argv ("{ranks}", "{nodes}" and "{ranks_per_node}" are replaced), for example
//   "launcher": ["mpirun", "-np", "{ranks}", "--map-by", "ppr:{ranks_per_node}:node", "--hostfile", "hosts"],
// and "control_host" an address of this node the ranks can reach (its host name when absent). Each rank takes its rank and
// GPU from the launcher's variables (OMPI_COMM_WORLD_RANK/LOCAL_RANK, PMI_RANK, SLURM_PROCID): the GPU is its local
// rank modulo the devices it sees. Every NCCL_* variable of the space's params is forwarded to the ranks (Open MPI's
// -x, Hydra's -genvlist; srun exports the environment), since NCCL requires every rank to run with the same.
//
// The value: busbw from the mean of the ranks' times, as nccl-tests reports by default; the space field
// "rank_time": "slowest" takes the slowest rank instead. Both are in the details.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "kernels/nccl/nccl_common.hpp"
#include "kernels/nccl/nccl_control.hpp"
#include "kernels/shared/child_process.hpp"
#include "kernels/shared/timed_external.hpp"
#include "tuner/binary.hpp"
#include "tuner/kernel.hpp"

extern char** environ;

namespace acceltune {
namespace {

// The ncclConfig_t fields the kernel sets per communicator; -1 leaves a field to NCCL.
const NativeTable& nccl_native_table() {
  static const NativeTable table = {
      integer_param("channels", -1, 64, -1, "CTAs", "pins minCTAs and maxCTAs to this count"),
      integer_param("min_ctas", -1, 64, -1, "CTAs", "ncclConfig_t minCTAs"),
      integer_param("max_ctas", -1, 64, -1, "CTAs", "ncclConfig_t maxCTAs"),
      integer_param("cga_cluster_size", -1, 8, -1, "CTAs", "ncclConfig_t cgaClusterSize (Hopper and newer)"),
      integer_param("nvls_ctas", -1, 64, -1, "CTAs", "ncclConfig_t nvlsCTAs (NCCL 2.27)"),
      integer_param("cta_policy", -1, 3, -1, "", "ncclConfig_t CTAPolicy bits: 1 efficiency, 2 zero (NCCL 2.27)"),
      integer_param("channels_per_net_peer", -1, 64, -1, "channels", "ncclConfig_t nChannelsPerNetPeer (NCCL 2.28)"),
  };
  return table;
}

// The launcher's family, from what it prints for --version (cached: one launcher per space).
LauncherKind launcher_kind(const std::string& launcher) {
  static std::string asked;
  static LauncherKind kind = LauncherKind::other;
  if (asked == launcher) return kind;
  asked = launcher;
  kind = LauncherKind::other;
  const auto path = find_on_path(launcher);
  if (!path) return kind;
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  auto r = Child::run({*path, "--version"}, env, 10.0);
  if (r) kind = nccl_launcher_kind(r->out + r->err);
  return kind;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

// The running rank processes of one communicator, kept across measurements of one config.
struct Session {
  std::string key;
  std::vector<pid_t> pids;
  std::vector<LineChannel> ranks;
  int listen_fd = -1;
  int nccl_version = 0;
  Json nccl_config = Json::object();  // the ncclConfig_t fields rank 0 passed to NCCL

  ~Session() { stop(); }

  void stop() {
    for (auto& r : ranks) {
      if (r.open()) (void)r.send(Json{{"cmd", "quit"}});
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    for (pid_t p : pids) {
      int status = 0;
      while (::waitpid(p, &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > until) {
          ::kill(p, SIGKILL);
          ::waitpid(p, &status, 0);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    pids.clear();
    ranks.clear();
    if (listen_fd >= 0) ::close(listen_fd);
    listen_fd = -1;
  }

  // Sends one command to every rank and collects every answer.
  Expected<std::vector<Json>> all(const Json& cmd, double timeout_seconds) {
    for (auto& r : ranks) ACCELTUNE_TRY(r.send(cmd));
    std::vector<Json> out;
    for (size_t i = 0; i < ranks.size(); ++i) {
      auto j = ranks[i].receive(timeout_seconds);
      if (!j) return runtime_error("rank {}: {}", i, j.error().message);
      if (!j->value("ok", false)) return runtime_error("{}", j->value("error", fmt::format("rank {} failed", i)));
      out.push_back(std::move(*j));
    }
    return out;
  }
};

// cuDeviceGetAttribute through the runtime's driver entry point: the driver library is not
// linked, so the binary still starts on machines without one.
using DeviceAttribute = CUresult (*)(int*, CUdevice_attribute, CUdevice);

DeviceAttribute device_attribute() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion("cuDeviceGetAttribute", &fn, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<DeviceAttribute>(fn);
}

// What the GPUs the ranks of this node use can run: multicast only where every one has it,
// the oldest one's compute capability.
NcclHardware hardware(int devices) {
  NcclHardware hw;
  hw.multicast = devices > 0;
  hw.compute_major = 1 << 20;
  const DeviceAttribute attr = device_attribute();
  for (int d = 0; d < devices; ++d) {
    int major = 0, multicast = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d);
    hw.compute_major = std::min(hw.compute_major, major);
    if (!attr || attr(&multicast, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, d) != CUDA_SUCCESS) multicast = 0;
    hw.multicast = hw.multicast && multicast != 0;
  }
  if (devices <= 0) hw.compute_major = 0;
  cudaGetLastError();
  return hw;
}

class Nccl final : public Kernel {
 public:
  const NativeTable& native_table() const override { return nccl_native_table(); }

  // One rank: from the space's "ranks" before attach, from the GPUs counted after it.
  std::string nothing_to_tune(const Space& space) const override {
    const Json& x = space.extra();
    if (attached_) return nccl_nothing_to_tune(ranks_);
    if (x.contains("ranks") && x["ranks"].is_number_integer()) {
      return nccl_nothing_to_tune(static_cast<int>(x["ranks"].get<int64_t>()));
    }
    return "";
  }

  // On one node the ranks' GPUs talk over NVLink, else PCIe (tuner/links.cpp picks by the probe);
  // across nodes the NIC NCCL chose is not known here, and one rank crosses no link.
  Json link() const override {
    if (nodes_ == 1 && ranks_ > 1) return Json{{"kind", "gpu-peer"}, {"gpu", 0}};
    return nullptr;
  }

  Status attach(Space& space) override {
    auto op = nccl_op_from_string(space.operation());
    if (!op) {
      std::string names;
      for (const auto& n : nccl_op_names()) names += (names.empty() ? "" : ", ") + n;
      return input_error("{}: operation '{}' is not a collective of kernel 'nccl' ({})", space.source(),
                         space.operation(), names);
    }
    op_ = *op;
    ACCELTUNE_TRY(read_layout(space));
    ACCELTUNE_TRY(read_params(space));
    ACCELTUNE_TRY(read_rank_fields(space));
    // The GPU is asked last: input errors come first, and this is the one cheap CUDA query.
    int gpus = 0;
    if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
      cudaGetLastError();
      return runtime_error("kernel 'nccl' needs a CUDA GPU; none found");
    }
    std::string why;
    ranks_ = nccl_rank_count(space.extra(), gpus, &why);
    if (ranks_ <= 0) return input_error("{}: {}", space.source(), why);
    if (nodes_ == 1 && ranks_ > gpus) {
      return runtime_error("{}: {} ranks on one node need {} GPUs (NCCL runs one rank per GPU); this node has {}",
                           space.source(), ranks_, ranks_, gpus);
    }
    restrict_to_hardware(space, gpus);
    attached_ = true;
    return {};
  }

  Measurement measure(const Space& space, const Config& config, uint64_t bytes, const MeasureSettings& settings,
                      const MeasureContext&) override {
    Measurement m;
    m.bytes = bytes;
    auto r = run(space, config, bytes, settings, m);
    if (!r) {
      m = Measurement{};
      m.bytes = bytes;
      const bool late = r.error().message.find("within") != std::string::npos;
      m.state = late ? State::timeout : State::failed;
      m.error = r.error().message;
      session_.reset();  // a failed communicator is not reused
    }
    return m;
  }

 private:
  // The space's ranks, nodes, launcher and timeouts.
  Status read_layout(const Space& space) {
    const Json& x = space.extra();
    if (x.contains("ranks") && !(x["ranks"].is_number_integer() && x["ranks"].get<int64_t>() >= 1) &&
        !(x["ranks"].is_string() && x["ranks"].get<std::string>() == "gpus")) {
      return input_error("{}: field 'ranks' must be a positive integer or \"gpus\" (one rank per GPU)", space.source());
    }
    if (x.contains("nodes") && !(x["nodes"].is_number_integer() && x["nodes"].get<int64_t>() >= 1)) {
      return input_error("{}: field 'nodes' must be a positive integer", space.source());
    }
    nodes_ = x.value("nodes", 1);
    if (nodes_ > 1) {
      if (!x.contains("launcher") || !x["launcher"].is_array() || x["launcher"].empty() ||
          !std::all_of(x["launcher"].begin(), x["launcher"].end(), [](const Json& a) { return a.is_string(); })) {
        return input_error("{}: 'nodes' > 1 needs a 'launcher' field, the argv that starts the ranks, e.g. "
                           "[\"mpirun\", \"-np\", \"{{ranks}}\", \"--hostfile\", \"hosts\"]", space.source());
      }
      if (x.contains("control_host") && !x["control_host"].is_string()) {
        return input_error("{}: field 'control_host' must be an address of this node the ranks can reach", space.source());
      }
    }
    for (const char* f : {"init_timeout_seconds", "rank_timeout_seconds"}) {
      if (x.contains(f) && !(x[f].is_number() && x[f].get<double>() > 0)) {
        return input_error("{}: field '{}' must be a positive number of seconds", space.source(), f);
      }
    }
    init_timeout_seconds_ = x.value("init_timeout_seconds", 8.0);
    rank_timeout_seconds_ = x.value("rank_timeout_seconds", 5.0);
    return {};
  }

  // Every value NCCL_ALGO and NCCL_PROTO take is one NCCL knows; every ncclConfig_t value is in
  // range. Notes which params are the algorithm and the protocol.
  Status read_params(const Space& space) {
    for (size_t k = 0; k < space.params().size(); ++k) {
      const Param& p = space.params()[k];
      for (const auto& v : p.values) {
        const std::string t = to_string(v);
        if (p.env == "NCCL_ALGO" || p.env == "NCCL_PROTO") {
          const auto& known = p.env == "NCCL_ALGO" ? nccl_algorithms() : nccl_protocols();
          if (std::find(known.begin(), known.end(), t) == known.end()) {
            std::string names;
            for (const auto& n : known) names += (names.empty() ? "" : ", ") + n;
            return input_error("{}: param '{}' value '{}' is not one {} knows ({})", space.source(), p.name, t, p.env,
                               names);
          }
          (p.env == "NCCL_ALGO" ? algo_param_ : proto_param_) = k;
        } else if (p.env.empty()) {
          if (!is_numeric(v) || std::holds_alternative<bool>(v) || to_double(v) < -1 || to_double(v) > 1024) {
            return input_error("{}: param '{}' value '{}' is out of range (-1 leaves it to NCCL, else 0..1024)",
                               space.source(), p.name, t);
          }
        }
      }
    }
    return {};
  }

  // gpus_per_node and rank_time (which rank's time is the figure).
  Status read_rank_fields(const Space& space) {
    const Json& x = space.extra();
    if (x.contains("gpus_per_node") && !(x["gpus_per_node"].is_number_integer() && x["gpus_per_node"].get<int64_t>() >= 1)) {
      return input_error("{}: field 'gpus_per_node' must be a positive integer", space.source());
    }
    if (x.contains("rank_time")) {
      const auto rt = x["rank_time"].is_string() ? nccl_rank_time_from_string(x["rank_time"].get<std::string>())
                                                 : std::nullopt;
      if (!rt) {
        return input_error("{}: field 'rank_time' must be \"mean\" (the mean of the ranks' times, nccl-tests' "
                           "default) or \"slowest\"", space.source());
      }
      rank_time_ = *rt;
    }
    return {};
  }

  // Leaves out of the space the algorithm and protocol pairs these GPUs cannot run.
  void restrict_to_hardware(Space& space, int gpus) {
    NcclHardware hw = hardware(std::min(gpus, (ranks_ + nodes_ - 1) / nodes_));
    hw.nodes = nodes_;
    hw.ranks_per_node = (ranks_ + nodes_ - 1) / nodes_;
    const char* collnet = std::getenv("NCCL_COLLNET_ENABLE");
    hw.collnet = collnet && std::string(collnet) == "1";
    hw.multicast = hw.multicast && ranks_ > 1;
    if (!algo_param_ && !proto_param_) return;
    const NcclOp o = op_;
    const auto ap = algo_param_, pp = proto_param_;
    std::vector<std::string> algos, protos;
    if (ap) for (const auto& v : space.params()[*ap].values) algos.push_back(to_string(v));
    if (pp) for (const auto& v : space.params()[*pp].values) protos.push_back(to_string(v));
    space.set_membership(
        [o, ap, pp, hw, algos, protos](const Config& c) {
          const std::string a = ap ? algos[c.index[*ap]] : "default";
          const std::string pr = pp ? protos[c.index[*pp]] : "default";
          return nccl_hardware_excludes(o, a, pr, hw).empty();
        },
        "the algorithms and protocols this GPU can run");
  }

  Status launch(const Space& space, const Config& config, const std::string& key) {
    session_.reset();
    auto s = std::make_unique<Session>();
    s->key = key;
    nccl_unset_default_env();
    const bool remote = nodes_ > 1;
    std::string host = "127.0.0.1";
    if (remote) {
      char name[256] = {};
      ::gethostname(name, sizeof name - 1);
      host = space.extra().value("control_host", std::string(name));
    }
    ACCELTUNE_TRY_ASSIGN(const int port, open_control_socket(*s, remote));
    // The bootstrap root lives in this process for as long as the ranks initialise.
    ncclUniqueId id{};
    const ncclResult_t g = ncclGetUniqueId(&id);
    if (g != ncclSuccess) return runtime_error("ncclGetUniqueId: {}", ncclGetErrorString(g));
    std::string hex;
    for (char ch : id.internal) hex += fmt::format("{:02x}", static_cast<unsigned char>(ch));
    Json cfg = Json::object();
    for (size_t k = 0; k < space.params().size(); ++k) {
      const Param& p = space.params()[k];
      if (p.env.empty()) cfg[p.name] = static_cast<int64_t>(to_double(space.value(config, k)));
    }
    Json req = {{"op", std::string(to_string(op_))}, {"nranks", ranks_},  {"id", hex},
                {"config", cfg},                     {"control_host", host}, {"control_port", port},
                {"init_timeout_seconds", init_timeout_seconds_}, {"timeout_seconds", rank_timeout_seconds_}};
    // The session's secret, which every rank proves on the control socket; the ranks inherit it
    // (a launcher forwards it with the trial's variables).
    const std::string secret = random_hex();
    ::setenv(kNcclControlSecretVar, secret.c_str(), 1);
    ACCELTUNE_TRY(start_ranks(space, req, *s));
    ACCELTUNE_TRY(await_ranks(*s, secret));
    session_ = std::move(s);
    return {};
  }

  // The ranks' control socket, on loopback for one node; its port.
  static Expected<int> open_control_socket(Session& s, bool remote) {
    s.listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s.listen_fd < 0) return runtime_error("socket: {}", std::strerror(errno));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(remote ? INADDR_ANY : INADDR_LOOPBACK);
    if (::bind(s.listen_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(s.listen_fd, 1024) != 0) {
      return runtime_error("cannot open the ranks' control socket: {}", std::strerror(errno));
    }
    socklen_t len = sizeof a;
    ::getsockname(s.listen_fd, reinterpret_cast<sockaddr*>(&a), &len);
    return static_cast<int>(ntohs(a.sin_port));
  }

  static Status spawn_rank(std::vector<std::string> argv, Session& s) {
    std::vector<char*> args;
    for (auto& x : argv) args.push_back(x.data());
    args.push_back(nullptr);
    pid_t pid = 0;
    const int rc = ::posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ);
    if (rc != 0) return runtime_error("cannot start '{}': {}", argv[0], std::strerror(rc));
    s.pids.push_back(pid);
    return {};
  }

  // The launcher's argv with its placeholders filled and the trial's variables forwarded.
  std::vector<std::string> launcher_argv(const Space& space) const {
    std::vector<std::string> argv;
    const int per_node = (ranks_ + nodes_ - 1) / nodes_;
    for (const auto& j : space.extra()["launcher"]) {
      std::string t = j.get<std::string>();
      t = replace_all(t, "{ranks}", std::to_string(ranks_));
      t = replace_all(t, "{nodes}", std::to_string(nodes_));
      t = replace_all(t, "{ranks_per_node}", std::to_string(per_node));
      argv.push_back(t);
    }
    // Every rank must run with the variables this trial set (NCCL requires equal NCCL_ALGO,
    // NCCL_PROTO, ... on all ranks): forwarded in the launcher's own way.
    std::vector<std::string> names = {kNcclControlSecretVar};
    for (const auto& p : space.params()) {
      if (!p.env.empty() && std::getenv(p.env.c_str()) &&
          std::find(names.begin(), names.end(), p.env) == names.end()) {
        names.push_back(p.env);
      }
    }
    const auto forward = nccl_forward_env_args(launcher_kind(argv[0]), names);
    argv.insert(argv.begin() + 1, forward.begin(), forward.end());
    return argv;
  }

  // The ranks are the acceltune binary in its rank mode (the one setting, tuner/binary.hpp):
  // under the launcher across nodes, else one process per local GPU.
  Status start_ranks(const Space& space, const Json& req, Session& s) const {
    ACCELTUNE_TRY_ASSIGN(std::string exe, acceltune_binary());
    if (nodes_ > 1) {
      std::vector<std::string> argv = launcher_argv(space);
      argv.push_back(exe);
      argv.push_back("__nccl-rank");
      argv.push_back(req.dump());
      return spawn_rank(argv, s);
    }
    for (int r = 0; r < ranks_; ++r) {
      Json rr = req;
      rr["rank"] = r;
      rr["device"] = r;
      ACCELTUNE_TRY(spawn_rank({exe, "__nccl-rank", rr.dump()}, s));
    }
    return {};
  }

  // Every rank connects and says hello once its communicator is up (or why it is not).
  Status await_ranks(Session& s, const std::string& secret) const {
    std::vector<LineChannel> pending;
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(init_timeout_seconds_ + 2);
    while (static_cast<int>(pending.size()) < ranks_) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        return runtime_error("{} of {} ranks did not start within {} seconds", ranks_ - static_cast<int>(pending.size()),
                             ranks_, init_timeout_seconds_ + 2);
      }
      pollfd p{s.listen_fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 200))) > 0) {
        std::string refused;
        auto ch = accept_rank(s.listen_fd, secret, 5.0, &refused);
        if (ch && ch->open()) pending.push_back(std::move(*ch));
        if (!refused.empty()) std::fprintf(stderr, "acceltune: nccl: %s\n", refused.c_str());
      }
      for (pid_t pid : s.pids) {
        int status = 0;
        if (::waitpid(pid, &status, WNOHANG) == pid) {
          s.pids.erase(std::find(s.pids.begin(), s.pids.end(), pid));
          return runtime_error("a rank process exited before it joined (status {})", status);
        }
      }
    }
    s.ranks.resize(static_cast<size_t>(ranks_));
    for (auto& ch : pending) {
      const double left = std::max(0.1, std::chrono::duration<double>(until - std::chrono::steady_clock::now()).count());
      auto hello = ch.receive(left);
      if (!hello) return runtime_error("a rank did not finish NCCL initialisation: {} (within the init timeout)", hello.error().message);
      if (!hello->value("ok", false)) return runtime_error("{}", hello->value("error", "a rank failed to initialise"));
      const int r = hello->value("rank", -1);
      if (r < 0 || r >= ranks_ || s.ranks[static_cast<size_t>(r)].open()) return runtime_error("a rank announced a bad rank number {}", r);
      s.nccl_version = hello->value("nccl_version", 0);
      if (r == 0) s.nccl_config = hello->value("nccl_config", Json::object());
      s.ranks[static_cast<size_t>(r)] = std::move(ch);
    }
    return {};
  }

  Status run(const Space& space, const Config& config, uint64_t bytes, const MeasureSettings& settings,
             Measurement& m) {
    std::string key;
    for (size_t k = 0; k < space.params().size(); ++k) {
      if (space.params()[k].env.empty()) key += space.params()[k].name + "=" + to_string(space.value(config, k)) + ",";
    }
    if (nccl_effective_bytes(op_, bytes, ranks_) == 0) {
      m.state = State::invalid;
      m.error = fmt::format("{} bytes is less than one float per rank for {} over {} ranks", bytes, to_string(op_), ranks_);
      return {};
    }
    if (!session_ || session_->key != key) ACCELTUNE_TRY(launch(space, config, key));
    Session& s = *session_;
    ACCELTUNE_TRY_ASSIGN(auto setup, s.all(Json{{"cmd", "setup"}, {"bytes", bytes}}, rank_timeout_seconds_));
    const uint64_t effective = setup.at(0).value("bytes", uint64_t{0});
    // Each sample's ranks' times make one figure (the chosen one) and the other, kept per run
    // for the details.
    std::vector<double> other_per_run;
    auto sample = [&](int64_t runs) -> Expected<double> {
      ACCELTUNE_TRY_ASSIGN(auto replies, s.all(Json{{"cmd", "run"}, {"runs", runs}}, rank_timeout_seconds_ + 1));
      std::vector<double> seconds;
      for (const auto& r : replies) seconds.push_back(r.value("seconds", 0.0));
      const RankTimes t = nccl_combine_rank_times(seconds);
      const bool mean = rank_time_ == RankTime::mean;
      other_per_run.push_back((mean ? t.slowest : t.mean) / static_cast<double>(runs));
      return mean ? t.mean : t.slowest;
    };
    m = measure_external(effective, sample, settings);
    if (m.state == State::failed) return runtime_error("{}", m.error);
    // The timed samples are the last ones taken; before them came the warm-up.
    const size_t timed = std::min(m.samples_seconds.size(), other_per_run.size());
    std::vector<double> other(other_per_run.end() - static_cast<std::ptrdiff_t>(timed), other_per_run.end());
    std::sort(other.begin(), other.end());
    const double other_seconds = other.empty() ? 0 : other[other.size() / 2];
    ACCELTUNE_TRY_ASSIGN(auto checks, s.all(Json{{"cmd", "check"}}, rank_timeout_seconds_ + 10));
    for (const auto& c : checks) {
      if (!c.value("valid", false)) {
        m.state = State::invalid;
        m.error = c.value("why", "the collective's result is wrong");
        break;
      }
    }
    // The objective is busbw (comparable across collectives and rank counts); with one rank
    // that factor is 0, so algbw stands in.
    const double factor = nccl_busbw_factor(op_, ranks_);
    const double algbw = m.value;
    const double other_algbw = other_seconds > 0 ? static_cast<double>(effective) / other_seconds / 1e9 : 0;
    const bool mean = rank_time_ == RankTime::mean;
    m.details["algbw_gbps"] = algbw;
    m.details["busbw_gbps"] = algbw * factor;
    m.details["busbw_factor"] = factor;
    m.details["rank_time"] = mean ? "mean" : "slowest";
    m.details[mean ? "algbw_slowest_rank_gbps" : "algbw_mean_rank_gbps"] = other_algbw;
    m.details[mean ? "busbw_slowest_rank_gbps" : "busbw_mean_rank_gbps"] = other_algbw * factor;
    m.details["value_is"] = nccl_value_is(rank_time_, factor > 0);
    m.details["ranks"] = ranks_;
    m.details["bytes_effective"] = effective;
    m.details["nccl_version"] = s.nccl_version;
    m.details["nccl_config"] = s.nccl_config;
    if (factor > 0) {
      m.value *= factor;
      m.value_p10 *= factor;
      m.value_p90 *= factor;
      m.details["objective"] = "busbw";
    } else {
      m.details["objective"] = "algbw";
    }
    return {};
  }

  NcclOp op_ = NcclOp::allreduce;
  bool attached_ = false;
  RankTime rank_time_ = RankTime::mean;
  int ranks_ = 1, nodes_ = 1;
  double init_timeout_seconds_ = 8, rank_timeout_seconds_ = 5;
  std::optional<size_t> algo_param_, proto_param_;
  std::unique_ptr<Session> session_;
};

}  // namespace

ACCELTUNE_REGISTER_KERNEL("nccl", "NCCL collectives, one rank process per GPU (algorithm, protocol, channels, buffers)",
                          Nccl)

}  // namespace acceltune
