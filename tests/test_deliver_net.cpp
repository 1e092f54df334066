// Delivered gains through the plain clients of the network families: ucx_perftest for ucx
// (kernels/ucx_deliver.cpp, only in a build with UCX) and iperf3 between network namespaces for
// tcp-stream (kernels/tcp_deliver.cpp, root only).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "kernels/shared/netns.hpp"
#include "tests/helpers.hpp"
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

// ---------------- tcp-stream: iperf3 between namespaces ----------------

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
    if (!on_path("iperf3")) GTEST_SKIP() << "iperf3 is not installed (Debian package iperf3)";
    host_congestion_ = read_line("/proc/sys/net/ipv4/tcp_congestion_control");
    host_wmem_ = read_line("/proc/sys/net/ipv4/tcp_wmem");
    host_rmem_ = read_line("/proc/sys/net/ipv4/tcp_rmem");
    checking_host_ = true;
    auto s = client_->open(Json::parse(R"({"space": {"kernel": "tcp-stream"}, "workload": {"kernel": "tcp-stream"}})"));
    ASSERT_TRUE(s) << s.error().message;
    session_ = std::move(*s);
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

  // Measures both sizes under `job`; every value positive.
  void measure_ok(const char* name, const Json& job) {
    const auto t0 = Clock::now();
    auto r = session_->measure(DeliveryArm{name, {}, job}, kSizes);
    ASSERT_TRUE(r) << name << ": " << r.error().message;
    std::cout << "[ tcp      ] " << name << " arm " << job.dump() << ": " << seconds_since(t0) << " s;";
    for (uint64_t size : kSizes) {
      ASSERT_TRUE(r->count(size)) << name << " arm measured no value at " << size;
      EXPECT_GT(r->at(size), 0.0) << name << " at " << size;
      EXPECT_LT(r->at(size), 1000.0) << name << " at " << size;
      std::cout << " " << size << ": " << r->at(size) << " GB/s";
    }
    std::cout << "\n";
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

}  // namespace
}  // namespace acceltune
