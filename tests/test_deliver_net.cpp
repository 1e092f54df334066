// Delivered gains through the plain clients of the network families: ucx_perftest for ucx
// (kernels/ucx_deliver.cpp, only in a build with UCX) and acceltune-tcp-client between network
// namespaces for tcp-stream (kernels/tcp/tcp_deliver.cpp, root only; the client itself, run
// directly, also without root).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "kernels/shared/netns.hpp"
#include "tests/helpers.hpp"
#include "tuner/binary.hpp"
#include "tuner/delivery.hpp"
#include "tuner/scoped_env.hpp"

namespace acceltune {
namespace {

using Clock = std::chrono::steady_clock;

const std::vector<uint64_t> kSizes = {65536, 1048576};

bool on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "";
  size_t start = 0;
  while (start <= p.size()) {
    const size_t colon = p.find(':', start);
    const std::string dir = p.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0) return true;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return false;
}

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// ---------------- the job's environment ----------------

TEST(DeliverNetEnvironment, HygieneAndTunedVariablesOfThisProcessNeverReachTheJob) {
  const auto names = hygiene_env_names();
  // A value the user set before acceltune would be the user's own and rightly kept; this test
  // wants acceltune's.
  if (std::find(names.begin(), names.end(), "UCX_HANDLE_ERRORS") == names.end()) ::unsetenv("UCX_HANDLE_ERRORS");
  set_hygiene_env("UCX_HANDLE_ERRORS", "none");
  ASSERT_STREQ(std::getenv("UCX_HANDLE_ERRORS"), "none");
  ScopedEnv tuned("UCX_TLS", "shm");  // a trial's value, left in this process

  const Json study = Json::parse(R"({"space": {"params": [{"name": "tls", "env": "UCX_TLS"}]}})");
  DeliveryArm plan{"plan", {{"UCX_TLS", "tcp"}, {"UCX_RNDV_THRESH", "inf"}}, Json::object()};
  const std::vector<std::string> env = job_environment(study, plan);
  for (const auto& kv : env) EXPECT_NE(kv.rfind("UCX_HANDLE_ERRORS=", 0), 0u) << "the hygiene variable reached the job";
  EXPECT_EQ(std::count(env.begin(), env.end(), "UCX_TLS=tcp"), 1);
  EXPECT_EQ(std::count(env.begin(), env.end(), "UCX_TLS=shm"), 0);
  EXPECT_EQ(std::count(env.begin(), env.end(), "UCX_RNDV_THRESH=inf"), 1);
}

// ---------------- ucx: ucx_perftest ----------------

Json ucx_study(const std::string& operation = "tag_bw") {
  Json study = Json::parse(R"({
    "space": {"name": "ucx-tcp-test", "kernel": "ucx", "operation": "tag_bw", "window": 16,
              "sizes": [65536, 1048576],
              "params": [
                {"name": "tls", "kind": "categorical", "values": ["tcp"], "default": "tcp", "env": "UCX_TLS"},
                {"name": "rndv_thresh", "kind": "categorical", "values": ["auto", "inf"], "default": "auto",
                 "env": "UCX_RNDV_THRESH"}]},
    "workload": {"kernel": "ucx", "operation": "tag_bw", "sizes": [65536, 1048576], "dtype": "byte", "ranks": 2}
  })");
  study["workload"]["operation"] = operation;
  return study;
}

const DeliveryClient* ucx_client() { return DeliveryRegistry::instance().find("ucx"); }

class DeliverNetUcx : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ucx_client()) GTEST_SKIP() << "acceltune was built without UCX: there is no ucx delivery client";
    if (!on_path("ucx_perftest")) GTEST_SKIP() << "ucx_perftest is not installed (Debian package ucx-utils)";
    auto s = ucx_client()->open(ucx_study());
    ASSERT_TRUE(s) << s.error().message;
    session_ = std::move(*s);
  }
  std::unique_ptr<DeliverySession> session_;
};

TEST_F(DeliverNetUcx, DefaultsAndPlanArmsMeasureEverySize) {
  const DeliveryArm defaults{"defaults", {{"UCX_TLS", "tcp"}}, Json::object()};
  const DeliveryArm plan{"plan", {{"UCX_TLS", "tcp"}, {"UCX_RNDV_THRESH", "inf"}}, Json::object()};
  for (const DeliveryArm* arm : {&defaults, &plan, &defaults}) {
    const auto t0 = Clock::now();
    auto r = session_->measure(*arm, kSizes);
    ASSERT_TRUE(r) << arm->name << ": " << r.error().message;
    std::cout << "[ ucx      ] " << arm->name << " arm: " << seconds_since(t0) << " s;";
    for (uint64_t size : kSizes) {
      ASSERT_TRUE(r->count(size)) << arm->name << " arm measured no value at " << size;
      // Positive, and below what any memory moves: a figure in GB/s, not MB/s.
      EXPECT_GT(r->at(size), 0.0) << arm->name << " at " << size;
      EXPECT_LT(r->at(size), 1000.0) << arm->name << " at " << size;
      std::cout << " " << size << ": " << r->at(size) << " GB/s";
    }
    std::cout << "\n";
  }
}

TEST_F(DeliverNetUcx, ATransportUcxDoesNotHaveIsAnErrorInUcxsWords) {
  const DeliveryArm bogus{"plan", {{"UCX_TLS", "nosuchtransport"}}, Json::object()};
  const auto t0 = Clock::now();
  auto r = session_->measure(bogus, kSizes);
  ASSERT_FALSE(r) << "an unusable UCX_TLS measured " << r->size() << " sizes";
  EXPECT_NE(r.error().message.find("ucx_perftest"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("nosuchtransport"), std::string::npos) << r.error().message;
  EXPECT_LT(seconds_since(t0), 10.0) << "a failing client must not wait for its server's timeout";
}

TEST(DeliverNetUcxOpen, AMissingPerftestNamesThePackage) {
  if (!ucx_client()) GTEST_SKIP() << "acceltune was built without UCX: there is no ucx delivery client";
  test::TempDir empty;
  ScopedEnv path("PATH", empty.path().c_str());
  auto s = ucx_client()->open(ucx_study());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "acceltune verify: ucx_perftest not found; install the Debian package ucx-utils");
  EXPECT_EQ(s.error().exit_code(), 1);
}

TEST(DeliverNetUcxOpen, AnOperationPerftestDoesNotRunIsBadInput) {
  if (!ucx_client()) GTEST_SKIP() << "acceltune was built without UCX: there is no ucx delivery client";
  auto s = ucx_client()->open(ucx_study("allreduce"));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().exit_code(), 2);
  EXPECT_NE(s.error().message.find("allreduce"), std::string::npos) << s.error().message;
}

// ---------------- tcp-stream: acceltune-tcp-client between namespaces ----------------

// The client as the session finds it: ACCELTUNE_TCP_CLIENT, else beside the acceltune binary the
// test program points at (the build puts both in tools/).
std::string tcp_client_path() {
  const char* c = std::getenv("ACCELTUNE_TCP_CLIENT");
  if (c && *c) return c;
  return (std::filesystem::path(test::acceltune_binary()).parent_path() / "acceltune-tcp-client").string();
}

std::string sh_quote(const std::string& text) {
  std::string q = "'";
  for (char c : text) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// A port on 127.0.0.1 that nobody listens on: one the kernel just handed out, closed again.
int unused_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  ::close(fd);
  return ntohs(sa.sin_port);
}

TEST(DeliverNetTcpClient, BadArgumentsExitTwoWithTheUsage) {
  const std::string client = tcp_client_path();
  ASSERT_EQ(::access(client.c_str(), X_OK), 0) << client << " is built with acceltune (target acceltune-tcp-client)";
  for (const std::string args :
       {"", "bogus", "send --to 127.0.0.1 --port 5201", "send --to 127.0.0.1 --port 5201 --sizes 64K",
        "send --to 127.0.0.1 --port 5201 --sizes 0", "send --to 127.0.0.1 --port 5201 --sizes 1,,2",
        "send --to nohost --port 5201 --sizes 1", "send --to 127.0.0.1 --port 70000 --sizes 1",
        "send --to 127.0.0.1 --port 5201 --sizes 1 --seconds -1", "serve --bind 127.0.0.1 --port 5201 --sizes 1",
        "serve --port 5201"}) {
    const auto r = test::run_shell(sh_quote(client) + " " + args);
    EXPECT_EQ(r.exit_code, 2) << "'" << args << "': " << r.err;
    EXPECT_NE(r.err.find("usage: acceltune-tcp-client"), std::string::npos) << "'" << args << "': " << r.err;
    EXPECT_EQ(r.out, "") << "'" << args << "'";
  }
}

TEST(DeliverNetTcpClient, ASendNobodyListensForFailsWithinFourSecondsNamingTheStep) {
  const std::string client = tcp_client_path();
  ASSERT_EQ(::access(client.c_str(), X_OK), 0) << client << " is built with acceltune (target acceltune-tcp-client)";
  const int port = unused_port();
  ASSERT_GT(port, 0);
  const auto t0 = Clock::now();
  const auto r = test::run_shell(fmt::format("{} send --to 127.0.0.1 --port {} --sizes 65536,1048576",
                                             sh_quote(client), port));
  const double took = seconds_since(t0);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  // It retries "refused" for 3 s while a server may still be starting, then gives up.
  EXPECT_GE(took, 2.5);
  EXPECT_LT(took, 4.5);
  EXPECT_EQ(r.out, "") << "no size was measured";
  EXPECT_EQ(test::lines_of(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find("send: connecting (size 65536)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Connection refused"), std::string::npos) << r.err;
}

TEST(DeliverNetTcpClient, ServeAndSendOverLoopbackPrintALinePerSizeAndTheServerQuits) {
  const std::string client = tcp_client_path();
  ASSERT_EQ(::access(client.c_str(), X_OK), 0) << client << " is built with acceltune (target acceltune-tcp-client)";
  const int port = unused_port();
  ASSERT_GT(port, 0);
  test::TempDir dir;
  // The server in the background, its exit status in a file; the sender in the foreground (the
  // whole line in a subshell, whose streams run_shell collects).
  const auto r = test::run_shell(fmt::format(
      "( ({0} serve --bind 127.0.0.1 --port {1}; echo $? > {2}) & {0} send --to 127.0.0.1 --port {1} --sizes 1,4096 "
      "--seconds 0.05; rc=$?; wait; exit $rc )",
      sh_quote(client), port, sh_quote((dir / "server-rc").string())));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto lines = test::lines_of(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_EQ(lines[0].rfind("size=1 median_seconds=", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("size=4096 median_seconds=", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find(" runs="), std::string::npos) << lines[1];
  EXPECT_EQ(read_line((dir / "server-rc").string()), "0") << "the sender's N = 0 ends the server";
}

TEST(DeliverNetTcpClient, TheServerRejectsBytesThatAreNotTheSendersPattern) {
  const std::string client = tcp_client_path();
  ASSERT_EQ(::access(client.c_str(), X_OK), 0) << client << " is built with acceltune (target acceltune-tcp-client)";
  const int port = unused_port();
  ASSERT_GT(port, 0);
  test::CliResult served;
  std::thread server([&] {
    served =
        test::run_shell(fmt::format("{} serve --bind 127.0.0.1 --port {} --idle-seconds 5", sh_quote(client), port));
  });
  // A run of 16 bytes, all zero: byte 0 of a run is 7.
  unsigned char run[8 + 16] = {};
  run[7] = 16;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(static_cast<uint16_t>(port));
  int fd = -1;
  for (const auto until = Clock::now() + std::chrono::seconds(3); Clock::now() < until;) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) break;
    ::close(fd);
    fd = -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GE(fd, 0) << "the server did not listen";
  if (fd >= 0) {
    EXPECT_EQ(::send(fd, run, sizeof run, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof run));
    char answer = 0;
    EXPECT_LE(::recv(fd, &answer, 1, 0), 0) << "the server answered a wrong run";
    ::close(fd);
  }
  server.join();
  EXPECT_EQ(served.exit_code, 1) << served.err;
  EXPECT_NE(served.err.find("serve: checking the bytes (size 16): wrong byte at offset 0 of the first run: 0 instead "
                            "of 7"),
            std::string::npos)
      << served.err;
}

Json tcp_job(int mtu, int64_t sndbuf, int64_t rcvbuf, const std::string& congestion) {
  return Json{{"mtu", mtu}, {"sndbuf", sndbuf}, {"rcvbuf", rcvbuf}, {"congestion", congestion}};
}

// A sysctl as `sysctl -n` inside a namespace shows it: a second way to read it than the client's.
std::string netns_sysctl_text(const std::string& ns, const std::string& key) {
  auto r = run_command({"ip", "netns", "exec", ns, "sysctl", "-n", key});
  if (!r) return "error: " + r.error().message;
  std::string s = *r;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

class DeliverNetTcp : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = DeliveryRegistry::instance().find("tcp-stream");
    ASSERT_NE(client_, nullptr) << "the tcp-stream delivery client is built into every acceltune";
    if (!may_manage_netns()) GTEST_SKIP() << "network namespaces need root (CAP_SYS_ADMIN, CAP_NET_ADMIN)";
    // Built with acceltune, beside it: never a reason to skip.
    ASSERT_EQ(::access(tcp_client_path().c_str(), X_OK), 0)
        << tcp_client_path() << " is built with acceltune (target acceltune-tcp-client)";
    host_congestion_ = read_line("/proc/sys/net/ipv4/tcp_congestion_control");
    host_wmem_ = read_line("/proc/sys/net/ipv4/tcp_wmem");
    host_rmem_ = read_line("/proc/sys/net/ipv4/tcp_rmem");
    checking_host_ = true;
    reopen();
    const auto names = netns_names_of(::getpid());
    server_ns_ = names[0];
    client_ns_ = names[1];
  }
  void TearDown() override {
    session_.reset();
    if (!checking_host_) return;
    // The host's own stack is never the client's to change.
    EXPECT_EQ(read_line("/proc/sys/net/ipv4/tcp_congestion_control"), host_congestion_);
    EXPECT_EQ(read_line("/proc/sys/net/ipv4/tcp_wmem"), host_wmem_);
    EXPECT_EQ(read_line("/proc/sys/net/ipv4/tcp_rmem"), host_rmem_);
    const auto left = list_netns();
    for (const auto& n : {server_ns_, client_ns_}) {
      EXPECT_EQ(std::count(left.begin(), left.end(), n), 0) << "namespace " << n << " was left behind";
    }
  }

  // A fresh session (one per process: the old one's namespaces go first).
  void reopen() {
    session_.reset();
    auto s = client_->open(Json::parse(R"({"space": {"kernel": "tcp-stream"}, "workload": {"kernel": "tcp-stream"}})"));
    ASSERT_TRUE(s) << s.error().message;
    session_ = std::move(*s);
  }

  // Measures `sizes` under `job`; every value positive and in GB/s.
  std::map<uint64_t, double> measure_ok(const char* name, const Json& job,
                                        const std::vector<uint64_t>& sizes = kSizes) {
    const auto t0 = Clock::now();
    auto r = session_->measure(DeliveryArm{name, {}, job}, sizes);
    EXPECT_TRUE(r) << name << ": " << r.error().message;
    if (!r) return {};
    std::cout << "[ tcp      ] " << name << " arm " << job.dump() << ": " << seconds_since(t0) << " s;";
    for (uint64_t size : sizes) {
      EXPECT_TRUE(r->count(size)) << name << " arm measured no value at " << size;
      if (!r->count(size)) continue;
      EXPECT_GT(r->at(size), 0.0) << name << " at " << size;
      EXPECT_LT(r->at(size), 1000.0) << name << " at " << size;
      std::cout << " " << size << ": " << r->at(size) << " GB/s";
    }
    std::cout << "\n";
    return *r;
  }

  void expect_mtu(int mtu) {
    auto a = get_link_mtu(server_ns_, "veth-a");
    auto b = get_link_mtu(client_ns_, "veth-b");
    ASSERT_TRUE(a) << a.error().message;
    ASSERT_TRUE(b) << b.error().message;
    EXPECT_EQ(*a, mtu);
    EXPECT_EQ(*b, mtu);
  }

  const DeliveryClient* client_ = nullptr;
  std::unique_ptr<DeliverySession> session_;
  std::string server_ns_, client_ns_;
  std::string host_congestion_, host_wmem_, host_rmem_;
  bool checking_host_ = false;
};

TEST_F(DeliverNetTcp, EachArmSetsTheScriptsSettingsAndTheDefaultsPutThemBack) {
  const std::string wmem_as_created = netns_sysctl_text(client_ns_, "net.ipv4.tcp_wmem");
  const std::string rmem_as_created = netns_sysctl_text(server_ns_, "net.ipv4.tcp_rmem");

  measure_ok("plan", tcp_job(9000, 4194304, 1048576, "cubic"));
  expect_mtu(9000);
  for (const auto& ns : {server_ns_, client_ns_}) {
    EXPECT_EQ(netns_sysctl_text(ns, "net.ipv4.tcp_wmem"), "4096\t16384\t8388608") << ns;
    EXPECT_EQ(netns_sysctl_text(ns, "net.ipv4.tcp_rmem"), "4096\t131072\t2097152") << ns;
  }

  measure_ok("defaults", tcp_job(1500, 0, 0, "cubic"));
  expect_mtu(1500);
  EXPECT_EQ(netns_sysctl_text(client_ns_, "net.ipv4.tcp_wmem"), wmem_as_created);
  EXPECT_EQ(netns_sysctl_text(server_ns_, "net.ipv4.tcp_rmem"), rmem_as_created);
}

TEST_F(DeliverNetTcp, TheArmsCongestionControlIsTheNamespacesDefault) {
  // reno is built into every kernel and always allowed as a namespace's default.
  measure_ok("plan", tcp_job(1500, 0, 0, "reno"));
  EXPECT_EQ(netns_sysctl_text(client_ns_, "net.ipv4.tcp_congestion_control"), "reno");
  EXPECT_EQ(netns_sysctl_text(server_ns_, "net.ipv4.tcp_congestion_control"), "reno");
}

TEST_F(DeliverNetTcp, ACongestionControlThisHostLacksIsAnError) {
  auto r = session_->measure(DeliveryArm{"plan", {}, tcp_job(1500, 0, 0, "nosuchcc")}, kSizes);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("'nosuchcc' is not available"), std::string::npos) << r.error().message;
}

TEST_F(DeliverNetTcp, AJobValueOfTheWrongTypeIsBadInput) {
  auto r = session_->measure(DeliveryArm{"plan", {}, Json{{"mtu", "jumbo"}}}, kSizes);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().exit_code(), 2);
  EXPECT_NE(r.error().message.find("mtu"), std::string::npos) << r.error().message;
}

TEST_F(DeliverNetTcp, EverySizeUnderBothArmsAndARunIsOneRequestAndItsAnswer) {
  const std::vector<uint64_t> sizes = {1024, 65536, 1048576, 16777216};
  for (const auto& [name, job] : {std::pair<const char*, Json>{"defaults", tcp_job(1500, 0, 0, "cubic")},
                                  std::pair<const char*, Json>{"plan", tcp_job(9000, 4194304, 4194304, "reno")}}) {
    const std::map<uint64_t, double> v = measure_ok(name, job, sizes);
    if (v.size() != sizes.size()) continue;  // measure_ok said which
    // Each size is its own transfer (an iperf3 -n run repeated the same bulk transfer per size):
    // the seconds per run grow with the bytes of a run.
    for (size_t i = 2; i < sizes.size(); ++i) {
      const double shorter = static_cast<double>(sizes[i - 1]) / v.at(sizes[i - 1]);
      const double longer = static_cast<double>(sizes[i]) / v.at(sizes[i]);
      EXPECT_GT(longer, shorter) << name << ": a run of " << sizes[i] << " bytes took no longer than one of "
                                 << sizes[i - 1];
    }
    // Every run waits for its answer, so a small run is mostly a round trip: a 1 KiB run took
    // 1/6 to 1/2 of a 64 KiB one's time here (its rate 1/40 to 1/10 of 64 KiB's), where a bulk
    // transfer would take 1/64 of it at the same rate. Below half the rate is a run of more than
    // 1/32 of the time. 64 KiB against 16 MiB decides nothing on a veth pair, whose round trip is
    // a few tens of microseconds while 16 MiB runs out of the caches: on this 2-core machine under
    // other load 64 KiB came out faster (1.7-2.4 against 1.3-1.9 GB/s), quiet it was slower (2.1-2.4
    // against 3.3-5.2 GB/s).
    EXPECT_LT(v.at(1024), 0.5 * v.at(65536)) << name << ": the answer's round trip does not show at 1 KiB";
  }
}

// A sender standing in for the client: `serve` waits to be ended, `send` prints what it is given
// and fails as told.
std::string fake_client(const test::TempDir& dir, const std::string& out, const std::string& err, int rc) {
  const std::string path = (dir / "fake-tcp-client").string();
  std::ofstream f(path);
  f << "#!/bin/sh\n"
    << "if [ \"$1\" = serve ]; then exec sleep 60; fi\n"
    << "printf '%s' " << sh_quote(out) << "\n"
    << "printf '%s\\n' " << sh_quote(err) << " >&2\n"
    << "exit " << rc << "\n";
  f.close();
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

TEST_F(DeliverNetTcp, ASizeWithoutItsLineIsAbsentAndTheServerIsNotWaitedFor) {
  test::TempDir dir;
  const std::string err = "acceltune-tcp-client: send: reading the answer (size 1048576): Connection reset by peer";
  ScopedEnv client("ACCELTUNE_TCP_CLIENT", fake_client(dir, "size=65536 median_seconds=0.0001 runs=40\n", err, 1));
  reopen();
  const auto t0 = Clock::now();
  auto r = session_->measure(DeliveryArm{"plan", {}, tcp_job(1500, 0, 0, "cubic")}, kSizes);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->size(), 1u);
  ASSERT_TRUE(r->count(65536));
  EXPECT_NEAR(r->at(65536), 65536 / 0.0001 / 1e9, 1e-9);
  EXPECT_LT(seconds_since(t0), 4.0) << "a failed sender's server is ended, not waited for";
}

TEST_F(DeliverNetTcp, NoSizeMeasuredIsAnErrorInTheClientsWords) {
  test::TempDir dir;
  const std::string err = "acceltune-tcp-client: send: connecting (size 65536): Network is unreachable";
  ScopedEnv client("ACCELTUNE_TCP_CLIENT", fake_client(dir, "", err, 1));
  reopen();
  auto r = session_->measure(DeliveryArm{"defaults", {}, tcp_job(1500, 0, 0, "cubic")}, kSizes);
  ASSERT_FALSE(r) << "a sender that measured nothing gave " << r->size() << " sizes";
  EXPECT_NE(r.error().message.find("acceltune-tcp-client under the defaults arm measured no size"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("connecting (size 65536): Network is unreachable"), std::string::npos)
      << r.error().message;
}

TEST(DeliverNetTcpOpen, AMissingClientSaysHowToBuildIt) {
  const DeliveryClient* c = DeliveryRegistry::instance().find("tcp-stream");
  ASSERT_NE(c, nullptr);
  if (!may_manage_netns()) GTEST_SKIP() << "network namespaces need root (CAP_SYS_ADMIN, CAP_NET_ADMIN)";
  const Json study = Json::parse(R"({"space": {"kernel": "tcp-stream"}, "workload": {"kernel": "tcp-stream"}})");
  test::TempDir empty;
  {
    ScopedEnv named("ACCELTUNE_TCP_CLIENT", (empty / "nothing-here").string());
    auto s = c->open(study);
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("ACCELTUNE_TCP_CLIENT names"), std::string::npos) << s.error().message;
  }
  ScopedEnv unset("ACCELTUNE_TCP_CLIENT", std::nullopt);
  const std::string was = *acceltune_binary();
  set_acceltune_binary((empty / "acceltune").string());
  auto s = c->open(study);
  set_acceltune_binary(was);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().exit_code(), 1);
  EXPECT_NE(s.error().message.find("build the target acceltune-tcp-client or set ACCELTUNE_TCP_CLIENT"),
            std::string::npos)
      << s.error().message;
}

}  // namespace
}  // namespace acceltune
