// tcp-stream: the plain client of delivered gains is iperf3, a bulk transfer with iperf3's own
// streams and write size (the application's choice: the export only advises on those), after
// what the reviewed tcp-script export sets (results/tcp_script.cpp). It runs between two network
// namespaces this session creates (kernels/netns.hpp), so applying a script's settings changes
// nothing of the host: the veth pair's MTU, and the per-namespace sysctls tcp_wmem, tcp_rmem and
// tcp_congestion_control, written in both namespaces as the script is run on both hosts.
// net.core.wmem_max/rmem_max are left alone: they are not every kernel's per-namespace settings,
// and iperf3 (no -w) sets no fixed socket buffer they would cap.
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
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <thread>

#include "kernels/shared/netns.hpp"
#include "tuner/delivery.hpp"
#include "tuner/value.hpp"

namespace acceltune {
namespace {

using Clock = std::chrono::steady_clock;

// One client run: calibrated to about kTargetRunSeconds, so this bounds a stalled transfer.
constexpr double kRunTimeoutSeconds = 30.0;
// How long a client retries "connection refused" while its server starts listening.
constexpr double kConnectSeconds = 3.0;
// A one-off server that no client reached leaves after this long (iperf3 --idle-timeout).
constexpr int kServerIdleSeconds = 5;
// The first run of a size moves about this many bytes (0.2-0.8 s over the veth pair at 1.5-6
// GB/s); a run that then takes less than kMinRunSeconds or more than kMaxRunSeconds (wall clock,
// the tools' start included) rescales the size's transfer to kTargetRunSeconds for later runs.
constexpr double kFirstRunBytes = 1024.0 * 1024 * 1024;
constexpr double kMinRunSeconds = 0.2, kMaxRunSeconds = 1.0, kTargetRunSeconds = 0.5;
constexpr uint64_t kMaxRunBytes = uint64_t{64} << 30;
// iperf3's own default port, then onwards: a server left behind by a killed run keeps its port.
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

// iperf3's own sentence from a failed run's output (-J prints {"error": "..."}), else its tail.
std::string iperf3_complaint(const std::string& message) {
  static const std::regex error_re("\"error\"\\s*:\\s*\"([^\"]*)\"");
  std::smatch m;
  if (std::regex_search(message, m, error_re)) return m[1].str();
  return message.size() > 400 ? "..." + message.substr(message.size() - 400) : message;
}

// The JSON report of an iperf3 run (-J), or its complaint: iperf3 may exit 0 after a failed
// connect, with only {"error": ...} to say so.
Expected<Json> iperf3_report(const Expected<std::string>& run) {
  if (!run) return runtime_error("{}", iperf3_complaint(run.error().message));
  const std::string& text = *run;
  const auto first = text.find('{'), last = text.rfind('}');
  const Json report = first == std::string::npos || last == std::string::npos || last < first
                          ? Json()
                          : Json::parse(text.substr(first, last - first + 1), nullptr, false);
  if (report.is_object() && report.contains("error")) {
    return runtime_error("{}", report["error"].is_string() ? report["error"].get<std::string>() : report["error"].dump());
  }
  if (!report.is_object() || !report.contains("end")) {
    return runtime_error("iperf3 printed no JSON report: {}", iperf3_complaint(text));
  }
  return report;
}

class IperfSession final : public DeliverySession {
 public:
  explicit IperfSession(std::unique_ptr<NetnsPair> pair) : pair_(std::move(pair)) {}

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
    std::map<uint64_t, double> out;
    std::string first_error;
    for (uint64_t size : sizes) {
      auto v = measure_size(s, *applied, arm.name, size);
      if (v) out[size] = *v;
      else if (first_error.empty()) first_error = v.error().message;
    }
    if (out.empty() && !sizes.empty()) {
      return runtime_error("acceltune verify: iperf3 measured no size under the {} arm: {}", arm.name, first_error);
    }
    return out;
  }

 private:
  std::vector<std::string> namespaces() const { return {pair_->info().server, pair_->info().client}; }

  // Sets everything the script sets, in both namespaces; true when the congestion control must
  // come per socket (iperf3 -C) instead.
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

  uint64_t bytes_for(uint64_t size) {
    auto it = multiples_.find(size);
    const uint64_t unit = std::max<uint64_t>(size, 1);
    const uint64_t multiple =
        it != multiples_.end() ? it->second
                               : std::max<uint64_t>(1, static_cast<uint64_t>(kFirstRunBytes / static_cast<double>(unit)));
    return std::min(unit * multiple, std::max(unit, kMaxRunBytes));
  }

  // The size's transfer stays as its first run sets it, so both arms move the same bytes.
  void calibrate(uint64_t size, uint64_t bytes, double wall_seconds) {
    if (multiples_.count(size)) return;
    const uint64_t unit = std::max<uint64_t>(size, 1);
    double multiple = static_cast<double>(bytes / unit);
    if (wall_seconds < kMinRunSeconds || wall_seconds > kMaxRunSeconds) {
      multiple = multiple * kTargetRunSeconds / std::max(wall_seconds, 1e-3);
    }
    multiples_[size] = std::max<uint64_t>(1, static_cast<uint64_t>(multiple));
  }

  int next_port() {
    const int port = kFirstPort + port_offset_;
    port_offset_ = (port_offset_ + 1) % kPortCount;
    return port;
  }

  // One iperf3 server and client moving a multiple of `size`: GB/s (1e9 bytes per second).
  Expected<double> measure_size(const ScriptSettings& s, bool congestion_per_socket, const std::string& arm,
                                uint64_t size) {
    const NetnsPairInfo& in = pair_->info();
    const uint64_t bytes = bytes_for(size);
    const std::string port = std::to_string(next_port());
    const std::string where = fmt::format("iperf3 -n {} for size {} ({} arm)", bytes, size, arm);

    Expected<std::string> server = runtime_error("internal: the server thread did not run");
    std::atomic<bool> server_done{false};
    std::thread server_thread([&] {
      server = run_command({"ip", "netns", "exec", in.server, "iperf3", "-s", "-1", "-B", in.server_addr, "-p", port,
                            "--idle-timeout", std::to_string(kServerIdleSeconds)},
                           kRunTimeoutSeconds + kConnectSeconds + kServerIdleSeconds);
      server_done = true;
    });
    std::vector<std::string> client_argv = {"ip", "netns", "exec", in.client, "iperf3", "-c", in.server_addr,
                                            "-p", port, "-n", std::to_string(bytes), "-J"};
    if (congestion_per_socket) {
      client_argv.push_back("-C");
      client_argv.push_back(s.congestion);
    }
    Expected<Json> report = runtime_error("internal: the client did not run");
    double wall_seconds = 0;
    const auto connect_until = Clock::now() + std::chrono::duration<double>(kConnectSeconds);
    while (true) {
      const auto t0 = Clock::now();
      report = iperf3_report(run_command(client_argv, kRunTimeoutSeconds));
      wall_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      const bool refused = !report && report.error().message.find("Connection refused") != std::string::npos;
      if (refused && !server_done && Clock::now() < connect_until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      break;
    }
    // A server no client reached leaves by its idle timeout, seconds at most.
    server_thread.join();
    if (!report) {
      return runtime_error("{} failed: {}; server: {}", where, report.error().message,
                           server ? iperf3_complaint(*server) : iperf3_complaint(server.error().message));
    }
    const Json received = (*report)["end"].value("sum_received", Json::object());
    const double bits_per_second = received.value("bits_per_second", 0.0);
    // The receiver's count stops when the sender says it is done, before it drains its socket
    // buffer, so it is a little short of -n; the sender's must be all of it.
    const double sent_bytes = (*report)["end"].value("sum_sent", Json::object()).value("bytes", 0.0);
    if (!(bits_per_second > 0)) return runtime_error("{}: iperf3 reported no received bandwidth", where);
    if (sent_bytes < static_cast<double>(bytes)) {
      return runtime_error("{}: the sender moved {:.0f} of {} bytes", where, sent_bytes, bytes);
    }
    const std::string used = (*report)["end"].value("sender_tcp_congestion", std::string());
    if (!used.empty() && used != s.congestion) {
      return runtime_error("{}: the sender used congestion control '{}', not the arm's '{}'", where, used, s.congestion);
    }
    calibrate(size, bytes, wall_seconds);
    return bits_per_second / 8 / 1e9;
  }

  std::unique_ptr<NetnsPair> pair_;
  std::map<std::string, std::string> initial_;  // "<netns> <key>" -> value as created
  std::map<uint64_t, uint64_t> multiples_;      // per size, from its first run
  int port_offset_ = 0;
};

Expected<std::unique_ptr<DeliverySession>> open_iperf(const Json&) {
  if (!may_manage_netns()) {
    return runtime_error("acceltune verify: a tcp-stream study is verified with iperf3 between network namespaces "
                         "acceltune creates, which needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN); run it as root");
  }
  if (auto iperf = run_command({"iperf3", "--version"}); !iperf) {
    if (iperf.error().message.find("is not installed") != std::string::npos) {
      return runtime_error("acceltune verify: iperf3 not found; install the Debian package iperf3");
    }
    return iperf.error();
  }
  ACCELTUNE_TRY_ASSIGN(auto pair, NetnsPair::create());
  auto session = std::make_unique<IperfSession>(std::move(pair));
  ACCELTUNE_TRY(session->remember_defaults());
  return std::unique_ptr<DeliverySession>(std::move(session));
}

}  // namespace
}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::DeliveryClient, "tcp-stream",
                   (::acceltune::DeliveryClient{
                       "iperf3 between two network namespaces after the tcp-script's MTU and TCP sysctls",
                       ::acceltune::open_iperf}))
