// tcp-stream: the plain client of delivered gains is acceltune-tcp-client (kernels/tcp/tcp_client.c),
// a program of the project's own beside the acceltune binary that knows nothing of acceltune. It
// times the tcp-stream kernel's unit, one acknowledged run of N bytes (the sender writes N bytes,
// the receiver reads them all and answers one byte), per size over a fresh connection, with the
// kernel's defaults on its sockets: no SO_SNDBUF/SO_RCVBUF, no TCP_NODELAY, one write of the
// remainder at a time (the application's choices: the export only advises on those). Its value
// per size is N over the median seconds per run, in GB/s.
//
// It runs after what the reviewed tcp-script export sets (results/tcp_script.cpp), between two
// network namespaces this session creates (kernels/netns.hpp): the server in one
// (`ip netns exec <server> acceltune-tcp-client serve`), the sender in the other (`... send` with
// every size at once), so applying a script's settings changes nothing of the host: the veth
// pair's MTU, and the per-namespace sysctls tcp_wmem, tcp_rmem and tcp_congestion_control,
// written in both namespaces as the script is run on both hosts. A congestion control the
// namespace refuses as its default goes to the sender's sockets (--congestion) instead.
// net.core.wmem_max/rmem_max are left alone: they are not every kernel's per-namespace settings,
// and the client sets no fixed socket buffer they would cap.
//
// The arms alternate on the same namespaces, so every measure() sets every setting, the defaults
// arm's too: MTU 1500, the namespace's own tcp_wmem/tcp_rmem as created (autotuning), cubic.
//
// One NetnsPair per process (its names are at-<pid>-a/b): one session at a time, and not beside
// a tcp-stream kernel running with --netns in the same process.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

#include "kernels/shared/child_process.hpp"
#include "kernels/shared/netns.hpp"
#include "tuner/binary.hpp"
#include "tuner/delivery.hpp"
#include "tuner/value.hpp"

namespace acceltune {
namespace {

constexpr const char* kClientName = "acceltune-tcp-client";
constexpr const char* kClientEnv = "ACCELTUNE_TCP_CLIENT";
// The client's own bounds (tcp_client.c): 3 s of "connection refused" while its server starts,
// 30 s per run, and a server no sender reached leaves after its idle time (--idle-seconds).
constexpr double kConnectSeconds = 3.0;
constexpr int kServerIdleSeconds = 5;
// A sender that never ends (which its own per-run bound should rule out) is ended after this,
// plus per size its connection and about 20 runs at a pessimistic 100 MB/s, so a large size is
// never cut off while still moving.
constexpr double kJobTimeoutSeconds = 60;
constexpr double kSlowestBytesPerSecond = 1e8;
constexpr double kRunsPerSizeAllowance = 20;
// A port in the server's namespace, which nothing else uses; every measure() takes the next one,
// so nothing of an earlier measure() (a connection still closing) meets the next one's server.
constexpr int kFirstPort = 5201, kPortCount = 1000;

// The settings a job gets from the reviewed script: the library defaults where the job-wide
// assignment has no value.
struct ScriptSettings {
  int mtu_bytes = 1500;
  int64_t sndbuf_bytes = 0;  // 0: autotuning as the namespace has it
  int64_t rcvbuf_bytes = 0;
  std::string congestion = "cubic";
};

Expected<ScriptSettings> settings_of(const Json& job) {
  ScriptSettings s;
  if (!job.is_object()) return input_error("the arm's job-wide assignment is not a JSON object: {}", job.dump());
  auto integer = [&](const char* name, int64_t lo, int64_t hi, int64_t* out) -> Status {
    if (!job.contains(name)) return {};
    if (!job[name].is_number_integer() || job[name].get<int64_t>() < lo || job[name].get<int64_t>() > hi) {
      return input_error("the arm's {} is {}, not an integer {}..{}", name, job[name].dump(), lo, hi);
    }
    *out = job[name].get<int64_t>();
    return {};
  };
  int64_t mtu = s.mtu_bytes;
  ACCELTUNE_TRY(integer("mtu", 576, 65535, &mtu));
  s.mtu_bytes = static_cast<int>(mtu);
  // Twice the largest is written to tcp_wmem/tcp_rmem, which hold an int.
  ACCELTUNE_TRY(integer("sndbuf", 0, int64_t{1} << 30, &s.sndbuf_bytes));
  ACCELTUNE_TRY(integer("rcvbuf", 0, int64_t{1} << 30, &s.rcvbuf_bytes));
  if (job.contains("congestion")) {
    static const std::regex name_re("[a-z0-9_]{1,15}");
    if (!job["congestion"].is_string() || !std::regex_match(job["congestion"].get<std::string>(), name_re)) {
      return input_error("the arm's congestion is {}, not a congestion control name", job["congestion"].dump());
    }
    s.congestion = job["congestion"].get<std::string>();
  }
  return s;
}

bool same_file(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// Reads (value == nullptr) or writes a sysctl ("net.ipv4.tcp_wmem") inside namespace `netns`
// only: the thread that opens it has joined the namespace and checks that it has, so the host's
// own settings are never touched. The errno of a refused write comes back in *write_errno.
Expected<std::string> netns_sysctl(const std::string& netns, const std::string& key, const std::string* value,
                                   int* write_errno = nullptr) {
  std::string path = "/proc/sys/" + key;
  std::replace(path.begin() + 10, path.end(), '.', '/');
  Expected<std::string> result = runtime_error("internal: the sysctl thread did not run");
  struct stat want {};
  if (::stat(("/run/netns/" + netns).c_str(), &want) != 0) {
    return runtime_error("network namespace '{}' is gone: {}", netns, std::strerror(errno));
  }
  Status joined = run_in_netns(netns, [&] {
    struct stat here {};
    if (::stat("/proc/thread-self/ns/net", &here) != 0 || !same_file(here, want)) {
      result = runtime_error("refusing to touch {}: this thread is not inside network namespace '{}'", key, netns);
      return;
    }
    if (!value) {
      std::ifstream f(path);
      std::string text;
      if (!f || !std::getline(f, text)) {
        result = runtime_error("cannot read {} in network namespace '{}'", key, netns);
        return;
      }
      result = text;
      return;
    }
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      result = runtime_error("cannot open {} in network namespace '{}': {}", key, netns, std::strerror(errno));
      return;
    }
    const ssize_t n = ::write(fd, value->data(), value->size());
    const int e = errno;
    ::close(fd);
    if (n == static_cast<ssize_t>(value->size())) {
      result = *value;
    } else {
      if (write_errno) *write_errno = n < 0 ? e : EIO;
      result = runtime_error("setting {}={} in network namespace '{}': {}", key, *value, netns,
                             std::strerror(n < 0 ? e : EIO));
    }
  });
  if (!joined) return joined.error();
  return result;
}

std::string available_congestion() {
  std::ifstream f("/proc/sys/net/ipv4/tcp_available_congestion_control");
  std::string text;
  std::getline(f, text);
  return text;
}

// A program's complaint for a message: its stderr without the surrounding blank space, its tail
// when long.
std::string complaint(const Child::Result& r) {
  std::string t = r.err;
  t.erase(0, std::min(t.size(), t.find_first_not_of(" \t\r\n")));
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  if (t.size() > 600) t = "..." + t.substr(t.size() - 600);
  if (!t.empty()) return t;
  if (r.timed_out) return "no output before it was stopped";
  return fmt::format("no output, exit status {}", r.exit_code);
}

// The client's lines "size=N median_seconds=T mean_seconds=M runs=R", as GB/s per size asked for
// (from the median, as the kernel's value is).
std::map<uint64_t, double> parse_client_lines(const std::string& out, const std::vector<uint64_t>& sizes) {
  static const std::regex line_re(R"(^size=(\d+) median_seconds=(\S+)(?: mean_seconds=\S+)? runs=(\d+)\s*$)");
  std::map<uint64_t, double> values;
  std::stringstream ss(out);
  for (std::string line; std::getline(ss, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, line_re)) continue;
    const uint64_t size = std::strtoull(m[1].str().c_str(), nullptr, 10);
    const double seconds = std::strtod(m[2].str().c_str(), nullptr);
    if (std::find(sizes.begin(), sizes.end(), size) == sizes.end()) continue;
    if (!(seconds > 0) || !std::isfinite(seconds) || std::stoll(m[3].str()) < 1) continue;
    values[size] = static_cast<double>(size) / seconds / 1e9;
  }
  return values;
}

class TcpClientSession final : public DeliverySession {
 public:
  TcpClientSession(std::unique_ptr<NetnsPair> pair, Json study, std::string ip, std::string client)
      : pair_(std::move(pair)), study_(std::move(study)), ip_(std::move(ip)), client_(std::move(client)) {}

  // The namespaces' tcp_wmem/tcp_rmem as created: what "0, autotuning" restores.
  Status remember_defaults() {
    for (const std::string& ns : namespaces()) {
      for (const char* key : {"net.ipv4.tcp_wmem", "net.ipv4.tcp_rmem"}) {
        ACCELTUNE_TRY_ASSIGN(std::string v, netns_sysctl(ns, key, nullptr));
        initial_[ns + " " + key] = v;
      }
    }
    return {};
  }

  Expected<std::map<uint64_t, double>> measure(const DeliveryArm& arm, const std::vector<uint64_t>& sizes) override {
    ACCELTUNE_TRY_ASSIGN(const ScriptSettings s, settings_of(arm.job));
    auto applied = apply(s);
    if (!applied) {
      return runtime_error("acceltune verify: applying the {} arm's tcp-script settings failed: {}", arm.name,
                           applied.error().message);
    }
    if (sizes.empty()) return std::map<uint64_t, double>{};
    return run_client(s, *applied, arm, sizes);
  }

 private:
  std::vector<std::string> namespaces() const { return {pair_->info().server, pair_->info().client}; }

  // Sets everything the script sets, in both namespaces; true when the congestion control must
  // come per socket (the client's --congestion) instead.
  Expected<bool> apply(const ScriptSettings& s) {
    const NetnsPairInfo& in = pair_->info();
    ACCELTUNE_TRY(set_link_mtu(in.server, in.server_link, s.mtu_bytes));
    ACCELTUNE_TRY(set_link_mtu(in.client, in.client_link, s.mtu_bytes));
    bool per_socket = false;
    for (const std::string& ns : namespaces()) {
      const std::string wmem = s.sndbuf_bytes > 0 ? fmt::format("4096 16384 {}", 2 * s.sndbuf_bytes)
                                                  : initial_.at(ns + " net.ipv4.tcp_wmem");
      const std::string rmem = s.rcvbuf_bytes > 0 ? fmt::format("4096 131072 {}", 2 * s.rcvbuf_bytes)
                                                  : initial_.at(ns + " net.ipv4.tcp_rmem");
      ACCELTUNE_TRY(netns_sysctl(ns, "net.ipv4.tcp_wmem", &wmem));
      ACCELTUNE_TRY(netns_sysctl(ns, "net.ipv4.tcp_rmem", &rmem));
      int e = 0;
      auto cc = netns_sysctl(ns, "net.ipv4.tcp_congestion_control", &s.congestion, &e);
      if (cc) continue;
      if (e == ENOENT) {
        return runtime_error("congestion control '{}' is not available on this host (it has: {}); load its module "
                             "(modprobe tcp_{}) or leave it out of the space",
                             s.congestion, available_congestion(), s.congestion);
      }
      // Outside the host's own namespace Linux makes only the algorithms of the host's
      // net.ipv4.tcp_allowed_congestion_control a default, and the host is not ours to change;
      // root may still set any available one on a socket, which is what a namespace default
      // would give each new connection.
      if (e == EPERM) {
        per_socket = true;
        continue;
      }
      return cc.error();
    }
    return per_socket;
  }

  int next_port() {
    const int port = kFirstPort + port_offset_;
    port_offset_ = (port_offset_ + 1) % kPortCount;
    return port;
  }

  // One server and one sender over all sizes: GB/s (1e9 bytes per second) per size it measured.
  Expected<std::map<uint64_t, double>> run_client(const ScriptSettings& s, bool congestion_per_socket,
                                                  const DeliveryArm& arm, const std::vector<uint64_t>& sizes) {
    const NetnsPairInfo& in = pair_->info();
    const std::string port = std::to_string(next_port());
    const std::vector<std::string> env = job_environment(study_, arm);
    double timeout = kJobTimeoutSeconds;
    for (uint64_t size : sizes) {
      timeout += kConnectSeconds + kRunsPerSizeAllowance * static_cast<double>(size) / kSlowestBytesPerSecond;
    }

    const std::vector<std::string> server_argv = {ip_,     "netns",  "exec",   in.server,      client_,
                                                  "serve", "--bind", in.server_addr, "--port", port,
                                                  "--idle-seconds", std::to_string(kServerIdleSeconds)};
    ChildOptions options;
    options.own_group = true;
    ACCELTUNE_TRY_ASSIGN(auto server, Child::start(server_argv, env, options));

    std::vector<std::string> size_texts;
    for (uint64_t size : sizes) size_texts.push_back(std::to_string(size));
    std::vector<std::string> sender_argv = {ip_,   "netns", "exec",        in.client, client_, "send",
                                            "--to", in.server_addr, "--port", port,   "--sizes", join(size_texts, ",")};
    if (congestion_per_socket) {
      sender_argv.push_back("--congestion");
      sender_argv.push_back(s.congestion);
    }
    auto sender = Child::run(sender_argv, env, timeout, options);
    // A sender that failed sent no "quit": its server would wait out its idle time.
    if (!sender || !sender->ok()) server->kill();
    const Child::Result served =
        server->finish(Child::Clock::now() + std::chrono::duration_cast<Child::Clock::duration>(
                                                 std::chrono::duration<double>(kServerIdleSeconds + 5.0)));
    if (!sender) return sender.error();

    const std::string where = fmt::format("acceltune verify: {} under the {} arm", kClientName, arm.name);
    if (sender->ok() && !served.ok()) {
      // The sender's lines stand only when its server saw every run through (it checks the bytes).
      return runtime_error("{}: its server failed: {}", where, complaint(served));
    }
    std::map<uint64_t, double> values = parse_client_lines(sender->out, sizes);
    const size_t distinct = std::set<uint64_t>(sizes.begin(), sizes.end()).size();
    if (sender->ok() && values.size() != distinct) {
      return runtime_error("{}: it exited 0 but printed {} of {} sizes: {}", where, values.size(), distinct,
                           sender->out.empty() ? "no output" : sender->out);
    }
    // A size that failed is absent; the sizes before it stand.
    if (values.empty()) {
      const std::string why = sender->timed_out
                                  ? fmt::format("it did not finish within {:.0f} s", timeout)
                                  : complaint(*sender);
      const bool server_said = !served.err.empty() && served.err.find_first_not_of(" \t\r\n") != std::string::npos;
      return runtime_error("{} measured no size: {}{}", where, why,
                           server_said ? "; server: " + complaint(served) : std::string());
    }
    return values;
  }

  std::unique_ptr<NetnsPair> pair_;
  Json study_;
  std::string ip_, client_;
  std::map<std::string, std::string> initial_;  // "<netns> <key>" -> value as created
  int port_offset_ = 0;
};

Expected<std::unique_ptr<DeliverySession>> open_tcp_client(const Json& study) {
  if (!may_manage_netns()) {
    return runtime_error("acceltune verify: a tcp-stream study is verified with {} between network namespaces "
                         "acceltune creates, which needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN); run it as root",
                         kClientName);
  }
  ACCELTUNE_TRY_ASSIGN(std::string client, companion_binary(kClientName, kClientEnv, "the TCP client"));
  const std::string ip = find_program("ip");
  if (ip.empty()) return runtime_error("acceltune verify: the ip command not found; install the Debian package iproute2");
  ACCELTUNE_TRY_ASSIGN(auto pair, NetnsPair::create());
  auto session = std::make_unique<TcpClientSession>(std::move(pair), study, ip, std::move(client));
  ACCELTUNE_TRY(session->remember_defaults());
  return std::unique_ptr<DeliverySession>(std::move(session));
}

}  // namespace
}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::DeliveryClient, "tcp-stream",
                   (::acceltune::DeliveryClient{
                       "a plain request/response TCP client (acceltune-tcp-client) between two network namespaces "
                       "after the tcp-script's MTU and congestion control",
                       ::acceltune::open_tcp_client}))
