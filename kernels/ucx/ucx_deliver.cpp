// ucx: the plain client of delivered gains is ucx_perftest (Debian ucx-utils), the tool users run
// to see what their UCX_* variables do, started as they start it: a server `ucx_perftest -p PORT`
// and a client `ucx_perftest 127.0.0.1 -p PORT -t TEST -s SIZE ...` on this host, both with the
// job's environment (job_environment: the arm's variables, none of acceltune's hygiene, no
// tuned variable of this process). One pair of processes per size; the value is the client's
// overall bandwidth.
//
// What the study's workload fixes is the same in both arms: the test (tag_bw -> tag_bw, tag_lat
// -> tag_lat, put_bw -> ucp_put_bw, put_lat -> ucp_put_lat) and, for bandwidths, the kernel's
// window of messages in flight (-O, the space's "window", 16 as the kernel when absent).
// Nothing else is added to the environment: over UCX_TLS=tcp, ucx_perftest finds lo by itself.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "kernels/shared/child_process.hpp"
#include "tuner/delivery.hpp"
#include "tuner/value.hpp"

namespace acceltune {
namespace {

using Clock = Child::Clock;

Clock::time_point after_seconds(Clock::time_point t, double seconds) {
  return t + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// One client run: calibrated to about kTargetRunSeconds, so this bounds a stuck transport.
constexpr double kRunTimeoutSeconds = 30.0;
// How long a client retries "connection refused" while its server starts listening.
constexpr double kListenSeconds = 5.0;
// The first run of a size moves about this many bytes (0.1-0.4 s over TCP on loopback); a run
// that then takes less than kMinRunSeconds or more than kMaxRunSeconds (wall clock, the tool's
// start included) rescales the size's iterations to kTargetRunSeconds for every later run.
constexpr double kFirstRunBytes = 512.0 * 1024 * 1024;
constexpr double kMinRunSeconds = 0.2, kMaxRunSeconds = 1.0, kTargetRunSeconds = 0.4;
constexpr int64_t kMinIterations = 20, kMaxIterations = 200000;
// The ucx kernel's window when the space names none (kernels/ucx.cpp).
constexpr int kDefaultWindow = 16;
// ucx_perftest's MB is 2^20 bytes.
constexpr double kPerftestMegabyte = 1024.0 * 1024.0;

// The last `max_chars` of a tool's output, on one line: where its own error message is.
std::string tail_of(const std::string& text, size_t max_chars = 500) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ' || t.back() == '\r')) t.pop_back();
  if (t.size() > max_chars) t = "..." + t.substr(t.size() - max_chars);
  for (char& c : t) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return t.empty() ? "no output" : t;
}

// A TCP port nobody listens on now (on any address, as ucx_perftest's server binds). Another
// process may take it before the server does; the caller retries on "Address already in use".
Expected<int> free_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return runtime_error("socket: {}", std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    const int e = errno;
    ::close(fd);
    return runtime_error("finding a free TCP port for ucx_perftest: {}", std::strerror(e));
  }
  ::close(fd);
  return static_cast<int>(ntohs(a.sin_port));
}

// The study's operation as an ucx_perftest test; bandwidth tests also take the window.
struct PerftestTest {
  const char* operation;
  const char* test;
  bool bandwidth;
};
constexpr PerftestTest kTests[] = {
    {"tag_bw", "tag_bw", true},
    {"tag_lat", "tag_lat", false},
    {"put_bw", "ucp_put_bw", true},
    {"put_lat", "ucp_put_lat", false},
};

// overall_bw (MB/s) of `-f -v` output: a CSV header "iterations,...,overall_bw,..." and the
// final line of figures.
Expected<double> parse_overall_megabytes_per_second(const std::string& out) {
  std::stringstream lines(out);
  std::vector<std::string> header;
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> cells;
    std::stringstream cs(line);
    for (std::string c; std::getline(cs, c, ',');) {
      c.erase(0, c.find_first_not_of(' '));
      cells.push_back(c);
    }
    if (!cells.empty() && cells[0] == "iterations") {
      header = cells;
      continue;
    }
    if (header.empty() || cells.size() != header.size()) continue;
    const auto col = std::find(header.begin(), header.end(), "overall_bw") - header.begin();
    if (col >= static_cast<long>(header.size())) break;
    char* end = nullptr;
    const double v = std::strtod(cells[static_cast<size_t>(col)].c_str(), &end);
    if (end && *end == '\0' && std::isfinite(v)) return v;
  }
  return runtime_error("ucx_perftest printed no overall_bw figure: {}", tail_of(out));
}

class PerftestSession final : public DeliverySession {
 public:
  PerftestSession(Json study, std::string perftest, const PerftestTest& test, int window)
      : study_(std::move(study)), perftest_(std::move(perftest)), test_(test), window_(window) {}

  Expected<std::map<uint64_t, double>> measure(const DeliveryArm& arm, const std::vector<uint64_t>& sizes) override {
    const std::vector<std::string> env = job_environment(study_, arm);
    std::map<uint64_t, double> out;
    std::string first_error;
    for (uint64_t size : sizes) {
      auto v = measure_size(env, arm.name, size);
      if (v) out[size] = *v;
      else if (first_error.empty()) first_error = v.error().message;
    }
    if (out.empty() && !sizes.empty()) {
      return runtime_error("acceltune verify: ucx_perftest measured no size under the {} arm: {}", arm.name,
                           first_error);
    }
    return out;
  }

 private:
  int64_t iterations_for(uint64_t size) {
    auto it = iterations_.find(size);
    if (it != iterations_.end()) return it->second;
    const double n = kFirstRunBytes / static_cast<double>(std::max<uint64_t>(size, 1));
    return std::clamp(static_cast<int64_t>(n), kMinIterations, kMaxIterations);
  }

  // The size's iterations stay as the first run sets them, so both arms run the same count.
  void calibrate(uint64_t size, int64_t iterations, double wall_seconds) {
    if (iterations_.count(size)) return;
    int64_t n = iterations;
    if (wall_seconds < kMinRunSeconds || wall_seconds > kMaxRunSeconds) {
      n = std::clamp(static_cast<int64_t>(static_cast<double>(iterations) * kTargetRunSeconds / std::max(wall_seconds, 1e-3)),
                     kMinIterations, kMaxIterations);
    }
    iterations_[size] = n;
  }

  // One server and one client at `size`: GB/s (1e9 bytes per second).
  Expected<double> measure_size(const std::vector<std::string>& env, const std::string& arm, uint64_t size) {
    const int64_t iterations = iterations_for(size);
    const int64_t warmup = std::clamp<int64_t>(iterations / 10, 10, 1000);
    const std::string where = fmt::format("ucx_perftest -t {} -s {} ({} arm)", test_.test, size, arm);
    std::string last_error;
    // A port taken between our look and the server's bind is tried again with another.
    for (int attempt = 0; attempt < 3; ++attempt) {
      ACCELTUNE_TRY_ASSIGN(const int port, free_tcp_port());
      ACCELTUNE_TRY_ASSIGN(auto server, Child::start({perftest_, "-p", std::to_string(port)}, env));
      const auto deadline = after_seconds(Clock::now(), kRunTimeoutSeconds + kListenSeconds);
      Child::Result server_result;
      std::atomic<bool> server_done{false};
      std::thread server_reader([&] {
        server_result = server->finish(deadline);
        server_done = true;
      });

      std::vector<std::string> client_argv = {perftest_, "127.0.0.1", "-p", std::to_string(port), "-t", test_.test,
                                              "-s", std::to_string(size), "-n", std::to_string(iterations),
                                              "-w", std::to_string(warmup), "-f", "-v"};
      if (test_.bandwidth) {
        client_argv.push_back("-O");
        client_argv.push_back(std::to_string(window_));
      }
      Child::Result client;
      double wall_seconds = 0;
      const auto listen_until = after_seconds(Clock::now(), kListenSeconds);
      while (true) {
        auto c = Child::start(client_argv, env);
        if (!c) {
          server->kill();
          server_reader.join();
          return c.error();
        }
        const auto t0 = Clock::now();
        client = (*c)->finish(after_seconds(t0, kRunTimeoutSeconds));
        wall_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
        // The server is not listening yet: the client could not connect and did nothing else.
        // (UCX logs to stdout unless UCX_LOG_FILE says otherwise: both streams are searched.)
        const bool refused = !client.ok() && (client.err + client.out).find("Connection refused") != std::string::npos;
        if (refused && !server_done && Clock::now() < listen_until) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          continue;
        }
        break;
      }
      // A server whose client is done has nothing left to wait for; a failed client leaves it
      // waiting for a connection, and a finished one lets it exit at once.
      const auto grace_until = Clock::now() + std::chrono::seconds(client.ok() ? 5 : 0);
      while (!server_done && Clock::now() < grace_until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      if (!server_done) server->kill();
      server_reader.join();
      if ((server_result.err + server_result.out).find("Address already in use") != std::string::npos) {
        last_error = fmt::format("{}: port {} was taken: {}", where, port, tail_of(server_result.err + server_result.out));
        continue;
      }
      if (client.timed_out) {
        return runtime_error("{} did not finish within {:.0f} s (killed): {}", where, kRunTimeoutSeconds,
                             tail_of(client.err + client.out));
      }
      if (!client.ok()) {
        // UCX's own complaint (a transport it does not have, a bad value) is the last thing it
        // printed, on either side.
        return runtime_error("{} failed (exit {}): {}{}", where, client.exit_code, tail_of(client.err + client.out),
                             server_result.ok() ? "" : fmt::format("; server (exit {}): {}", server_result.exit_code,
                                                                      tail_of(server_result.err + server_result.out)));
      }
      ACCELTUNE_TRY_ASSIGN(const double megabytes_per_second, parse_overall_megabytes_per_second(client.out));
      if (!(megabytes_per_second > 0)) {
        return runtime_error("{} reported a bandwidth of {} MB/s: {}", where, megabytes_per_second, tail_of(client.out));
      }
      calibrate(size, iterations, wall_seconds);
      return megabytes_per_second * kPerftestMegabyte / 1e9;
    }
    return runtime_error("{}", last_error);
  }

  Json study_;
  std::string perftest_;
  PerftestTest test_;
  int window_;
  std::map<uint64_t, int64_t> iterations_;  // per size, from its first run
};

Expected<std::unique_ptr<DeliverySession>> open_perftest(const Json& study) {
  const Json space = study.is_object() ? study.value("space", Json::object()) : Json::object();
  const Json workload = study.is_object() ? study.value("workload", Json::object()) : Json::object();
  std::string operation = workload.value("operation", std::string());
  if (operation.empty()) operation = space.value("operation", std::string("tag_bw"));
  const PerftestTest* test = nullptr;
  for (const auto& t : kTests) {
    if (operation == t.operation) test = &t;
  }
  if (!test) {
    return input_error("study.json: workload.operation '{}' of kernel ucx is not one of tag_bw, tag_lat, put_bw, put_lat",
                       operation);
  }
  int window = kDefaultWindow;
  if (space.contains("window")) {
    if (!space["window"].is_number_integer() || space["window"].get<int64_t>() < 1 ||
        space["window"].get<int64_t>() > 1024) {
      return input_error("study.json: space.window must be an integer 1..1024 (messages in flight per repetition)");
    }
    window = space["window"].get<int>();
  }
  const std::string perftest = find_on_path("ucx_perftest").value_or("");
  if (perftest.empty()) {
    return runtime_error("acceltune verify: ucx_perftest not found; install the Debian package ucx-utils");
  }
  return std::unique_ptr<DeliverySession>(new PerftestSession(study, perftest, *test, window));
}

}  // namespace
}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::DeliveryClient, "ucx",
                   (::acceltune::DeliveryClient{
                       "ucx_perftest (server and client on this host) with the job's UCX_* environment",
                       ::acceltune::open_perftest}))
