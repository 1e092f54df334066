// tcp-stream across network namespaces (label netns): namespaces a fixture makes, search --netns,
// MTUs, kills that must leave no namespace behind; each test skips with the reason when
// namespaces cannot be made here (no root).
#include <gtest/gtest.h>

#include "tests/tcp_stream_helpers.hpp"

namespace acceltune {
namespace {

namespace fs = std::filesystem;
using namespace tcp_test;
using test::run_cli;

// Two namespaces joined by a veth pair that the fixture makes and removes.
class TcpStreamNetns : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!may_manage_netns()) GTEST_SKIP() << "network namespaces need root (CAP_SYS_ADMIN, CAP_NET_ADMIN)";
    const std::string p = std::to_string(::getpid());
    info_ = NetnsPairInfo{"at-" + p + "-t1", "at-" + p + "-t2", "veth-t1", "veth-t2", "198.18.1.1", "198.18.1.2"};
    for (const auto& step : std::vector<std::vector<std::string>>{
             {"ip", "netns", "add", info_.server},
             {"ip", "netns", "add", info_.client},
             {"ip", "link", "add", info_.server_link, "netns", info_.server, "type", "veth", "peer", "name",
              info_.client_link, "netns", info_.client},
             {"ip", "-n", info_.server, "addr", "add", info_.server_addr + "/24", "dev", info_.server_link},
             {"ip", "-n", info_.client, "addr", "add", info_.client_addr + "/24", "dev", info_.client_link},
             {"ip", "-n", info_.server, "link", "set", "dev", info_.server_link, "up"},
             {"ip", "-n", info_.client, "link", "set", "dev", info_.client_link, "up"}}) {
      auto r = run_command(step);
      if (!r) {
        TearDown();
        GTEST_SKIP() << "cannot make network namespaces here: " << r.error().message;
      }
    }
    made_ = true;
  }
  void TearDown() override {
    for (const auto& n : {info_.server, info_.client}) {
      if (netns_present(n)) (void)run_command({"ip", "netns", "del", n});
    }
  }
  NetnsPairInfo info_;
  bool made_ = false;
};

TEST_F(TcpStreamNetns, TheMtuShowsInThePathMss) {
  // The kernel takes namespaces that exist through the variable its workers read.
  ::setenv("ACCELTUNE_TCP_NETNS", info_.to_text().c_str(), 1);
  Space s = test::space_from_text(space_text("[1500, 9000]", R"("placement": "netns",)"));
  auto k = make_kernel(s);
  ::unsetenv("ACCELTUNE_TCP_NETNS");
  ASSERT_TRUE(k.has_value()) << k.error().message;
  Measurement small = (*k)->measure(s, with(s, {{"mtu", "1500"}}), 1 << 20, quick(), {});
  ASSERT_EQ(small.state, State::ok) << small.error;
  Measurement jumbo = (*k)->measure(s, with(s, {{"mtu", "9000"}, {"streams", "3"}}), 1 << 20, quick(), {});
  ASSERT_EQ(jumbo.state, State::ok) << jumbo.error;
  EXPECT_EQ(small.details.value("link_mtu", 0), 1500);
  EXPECT_EQ(jumbo.details.value("link_mtu", 0), 9000);
  // MSS = MTU - 20 (IP) - 20 (TCP) - 12 (timestamps).
  EXPECT_EQ(mss_of(small), 1448);
  EXPECT_EQ(mss_of(jumbo), 8948);
  auto server_mtu = get_link_mtu(info_.server, info_.server_link);  // both ends
  ASSERT_TRUE(server_mtu.has_value()) << server_mtu.error().message;
  EXPECT_EQ(*server_mtu, 9000);
  EXPECT_EQ(small.details.value("netns", ""), info_.server);
}

TEST_F(TcpStreamNetns, PeerSetsTheMtuOfTheLinksItWasPointedAt) {
  // `acceltune serve --link` in one namespace, the study in the other: the two-host set-up.
  test::TempDir dir;
  const pid_t server = spawn_acceltune(
      {"serve", "--bind", info_.server_addr, "--port", "18515", "--link", info_.server_link, "--mtu", "1500,9000",
       "--insecure"},
      dir.path(),
      {"ip", "netns", "exec", info_.server});
  auto listening = [&] {
    bool up = false;
    (void)run_in_netns(info_.client, [&] {
      auto fd = connect_tcp(info_.server_addr, 18515, 1);
      if (fd) ::close(*fd);
      up = fd.has_value();
    });
    return up;
  };
  ASSERT_TRUE(eventually(listening, 5));
  test::write_file(dir / "peer.json", space_text("[1500, 9000]", "\"link\": \"" + info_.client_link + "\","));
  auto r = run_cli({"bench", "--space", (dir / "peer.json").string(), "--peer", info_.server_addr + ":18515", "--set",
                    "mtu=9000", "--sizes", "1M", "--max-seconds", "0.05", "--json"},
                   dir.path(), "ip netns exec " + info_.client);
  ::kill(server, SIGTERM);
  int status = 0;
  ::waitpid(server, &status, 0);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j = Json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  const Json& d = j["measurements"][0]["details"];
  EXPECT_EQ(d.value("placement", ""), "peer");
  EXPECT_EQ(d.value("mss_bytes", 0), 8948) << d.dump();
  EXPECT_EQ(get_link_mtu(info_.server, info_.server_link).value(), 9000);
  EXPECT_EQ(get_link_mtu(info_.client, info_.client_link).value(), 9000);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_F(TcpStreamNetns, AStudyRecordsItsLinkAndAnMtuBelowThePeers) {
  // The far end's link at 9000, this side's at 1500: the study records the NIC it crossed with the
  // peer's MTU, and the efficiency line says the link has no ceiling (a veth) and what to check.
  ASSERT_TRUE(set_link_mtu(info_.server, info_.server_link, 9000).ok());
  test::TempDir dir;
  const pid_t server = spawn_acceltune({"serve", "--bind", info_.server_addr, "--port", "18516", "--insecure"}, dir.path(),
                                       {"ip", "netns", "exec", info_.server});
  auto listening = [&] {
    bool up = false;
    (void)run_in_netns(info_.client, [&] {
      auto fd = connect_tcp(info_.server_addr, 18516, 1);
      if (fd) ::close(*fd);
      up = fd.has_value();
    });
    return up;
  };
  ASSERT_TRUE(eventually(listening, 5));
  auto r = run_cli({"search", "--space", "tcp-stream", "--peer", info_.server_addr + ":18516", "--sizes", "1M",
                    "--budget", "3", "--max-seconds", "0.05", "--certify-top", "0", "--verify-rounds", "0", "--out",
                    (dir / "s").string()},
                   dir.path(), "ip netns exec " + info_.client);
  ::kill(server, SIGTERM);
  ::waitpid(server, nullptr, 0);
  (void)set_link_mtu(info_.server, info_.server_link, 1500);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Json study = Json::parse(test::read_file(dir / "s" / "study.json"));
  EXPECT_EQ(study["link"], (Json{{"kind", "nic"}, {"interface", info_.client_link}, {"peer_mtu", 9000}})) << study["link"];
  EXPECT_NE(r.out.find("no ceiling: a virtual interface"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("check: " + info_.client_link + "'s MTU 1500 is below the peer's 9000"), std::string::npos)
      << r.out;
}

TEST_F(TcpStreamNetns, AKernelOwnsItsNamespacesAndRemovesThem) {
  std::vector<std::string> names = netns_names_of(::getpid());
  {
    Space s = test::space_from_text(space_text("[1500]", R"("placement": "netns",)"));
    auto k = make_kernel(s);
    ASSERT_TRUE(k.has_value()) << k.error().message;
    EXPECT_TRUE(netns_present(names[0]) && netns_present(names[1]));
    Measurement m = (*k)->measure(s, s.default_config(), 65536, quick(), {});
    EXPECT_EQ(m.state, State::ok) << m.error;
  }
  EXPECT_FALSE(netns_present(names[0]) || netns_present(names[1]));
  EXPECT_EQ(std::getenv("ACCELTUNE_TCP_NETNS"), nullptr);
}

// A tcp-stream search over --netns with these arguments, its study in DIR/study.
test::CliResult search_in_netns(const test::TempDir& dir, std::vector<std::string> args) {
  args.insert(args.begin(), {"search", "--space", "tcp-stream", "--netns"});
  args.insert(args.end(), {"--out", (dir / "study").string()});
  return run_cli(args, dir.path());
}

TEST_F(TcpStreamNetns, AShortSearchIsCertifiedAndLeavesNothing) {
  test::TempDir dir;
  auto r = search_in_netns(dir, {"--budget", "6", "--sizes", "64K,1M", "--max-seconds", "0.05", "--certify-top", "2",
                                 "--certify-rounds", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("gain [95% interval]"), std::string::npos) << r.out;  // the certified table
  EXPECT_TRUE(eventually([] { return leaked_netns().empty(); }, 5));  // a parallel test's kill may be in flight
  auto script = run_cli({"export", (dir / "study").string(), "--format", "tcp-script"});
  ASSERT_EQ(script.exit_code, 0) << script.err;
  EXPECT_EQ(script.out.rfind("#!/bin/sh", 0), 0u);
  EXPECT_NE(script.out.find("ip link set dev IFACE mtu"), std::string::npos) << script.out;
  test::write_file(dir / "tcp.sh", script.out);
  EXPECT_EQ(std::system(("sh -n " + (dir / "tcp.sh").string()).c_str()), 0);
  // Every trial measured in the namespaces of the search: certified rows come from real runs.
  const std::string trials = test::read_file(dir / "study" / "trials.jsonl");
  EXPECT_NE(trials.find("\"placement\":\"netns\""), std::string::npos);
}

TEST_F(TcpStreamNetns, WorkersReuseTheParentsNamespaces) {
  test::TempDir dir;
  auto r = search_in_netns(dir, {"--isolation", "worker", "--budget", "3", "--sizes", "64K", "--max-seconds", "0.03",
                                 "--certify-top", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  std::set<std::string> seen;
  for (const auto& line : test::lines_of(test::read_file(dir / "study" / "trials.jsonl"))) {
    Json t = Json::parse(line);
    for (const auto& m : t["measurements"]) seen.insert(m["details"].value("netns", "?"));
  }
  ASSERT_EQ(seen.size(), 1u);  // one pair for the whole study, made by the parent
  EXPECT_TRUE(std::regex_match(*seen.begin(), std::regex("at-[0-9]+-a"))) << *seen.begin();
  EXPECT_TRUE(eventually([] { return leaked_netns().empty(); }, 5));
}

TEST_F(TcpStreamNetns, AKilledSearchLeavesNoNamespace) {
  test::TempDir dir;
  for (int sig : {SIGKILL, SIGINT}) {
    const pid_t pid = spawn_acceltune({"search", "--space", "tcp-stream", "--netns", "--budget", "500", "--out",
                                       (dir / fmt::format("s{}", sig)).string()},
                                      dir.path());
    const auto names = netns_names_of(pid);
    ASSERT_TRUE(eventually([&] { return netns_present(names[0]); }, 10)) << "the search made no namespaces";
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // mid-run
    ::kill(pid, sig);
    int status = 0;
    ::waitpid(pid, &status, 0);
    // SIGKILL kills; SIGINT is a cancellation: the search stops and exits with 128 + SIGINT.
    if (sig == SIGKILL) EXPECT_TRUE(WIFSIGNALED(status)) << "signal " << sig;
    else EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + sig) << "signal " << sig << ", status " << status;
    EXPECT_TRUE(eventually([&] { return !netns_present(names[0]) && !netns_present(names[1]); }, 5))
        << "namespaces left after signal " << sig;
  }
}

TEST_F(TcpStreamNetns, WithoutRootNetnsIsOneLine) {
  if (std::system("setpriv --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no setpriv to drop root";
  const std::string drop = "setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all";
  if (std::system((drop + " " + test::acceltune_binary() + " --version >/dev/null 2>&1").c_str()) != 0) {
    GTEST_SKIP() << "the user nobody cannot run " << test::acceltune_binary();
  }
  test::TempDir dir;
  ::chmod(dir.path().c_str(), 0777);
  // A copy the user nobody can read wherever the source tree lives.
  const auto shipped = test::spaces_dir() / "tcp-stream.json";
  test::write_file(dir / "tcp-stream.json", test::read_file(shipped));
  ::chmod((dir / "tcp-stream.json").c_str(), 0644);
  auto r = run_cli({"bench", "--space", (dir / "tcp-stream.json").string(), "--netns"}, dir.path(), drop);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(test::lines_of(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find("needs root"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace acceltune
