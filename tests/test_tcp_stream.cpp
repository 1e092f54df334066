// tcp-stream: the kernel in this process (loopback, an in-process peer server, namespaces a
// fixture makes) and through the command line (search --netns, serve / --peer, bad input, a
// search killed mid-run). Built twice: the loopback part (label integration, no root needed)
// and the namespace part (label netns; each test skips with the reason when namespaces cannot
// be made here).
#include <fcntl.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "kernels/tcp/netns.hpp"
#include "kernels/tcp/peer.hpp"
#include "tests/helpers.hpp"
#include "tuner/kernel.hpp"


namespace acceltune {
namespace {

namespace fs = std::filesystem;
using test::run_cli;

std::string space_text(const std::string& mtu_values = "[1500]", const std::string& extra = "") {
  return R"({"name": "tcp", "kernel": "tcp-stream", "sizes": ["64K"], )" + extra + R"( "params": [
    {"name": "mtu", "kind": "ordinal", "values": )" + mtu_values + R"(, "default": 1500},
    {"name": "sndbuf", "kind": "ordinal", "values": [0, 1048576], "default": 0},
    {"name": "rcvbuf", "kind": "ordinal", "values": [0, 1048576], "default": 0},
    {"name": "streams", "kind": "ordinal", "values": [1, 3], "default": 1},
    {"name": "write_size", "kind": "pow2", "min": 4096, "max": 262144, "default": 131072},
    {"name": "nodelay", "kind": "bool", "default": false},
    {"name": "zerocopy", "kind": "categorical", "values": ["none", "msg_zerocopy", "sendfile"], "default": "none"},
    {"name": "congestion", "kind": "categorical", "values": ["cubic", "reno"], "default": "cubic"},
    {"name": "align", "kind": "ordinal", "values": [0, 64], "default": 0}]})";
}

MeasureSettings quick() { return test::quick_settings(0.001, 0.03, 3); }

Config with(const Space& s, const std::vector<std::pair<std::string, std::string>>& sets) {
  return test::config_with(s, sets);
}

int mss_of(const Measurement& m) { return m.details.value("mss_bytes", 0); }

// A spawned acceltune with its own pid, for tests that signal it; `prefix` runs it through
// another command that execs it in place (ip netns exec NS).
pid_t spawn_acceltune(const std::vector<std::string>& args, const fs::path& cwd,
                      const std::vector<std::string>& prefix = {}) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(cwd.c_str()) != 0) ::_exit(127);
    const int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(devnull, 0);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    ::signal(SIGINT, SIG_DFL);  // as a foreground process gets it from a terminal
    std::vector<std::string> a = prefix;
    a.push_back(test::acceltune_binary());
    a.insert(a.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : a) argv.push_back(s.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

[[maybe_unused]] bool netns_present(const std::string& name) {
  const auto all = list_netns();
  return std::find(all.begin(), all.end(), name) != all.end();
}

template <typename Pred>
bool eventually(Pred p, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (p()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return p();
}

// Namespaces at-<pid>-* whose process is gone: what a leak looks like.
[[maybe_unused]] std::vector<std::string> leaked_netns() {
  static const std::regex re("at-([0-9]+)-.+");
  std::vector<std::string> out;
  for (const auto& n : list_netns()) {
    std::smatch m;
    if (std::regex_match(n, m, re) && ::kill(std::stoi(m[1].str()), 0) != 0 && errno == ESRCH) out.push_back(n);
  }
  return out;
}

#ifndef ACCELTUNE_TCP_TEST_NETNS

// ---------------- loopback: no root needed ----------------

TEST(TcpStreamLoopback, EverySendModeMovesAndValidatesTheBytes) {
  Space s = test::space_from_text(space_text());
  auto k = std::move(make_kernel(s).value());
  for (const char* zc : {"none", "msg_zerocopy", "sendfile"}) {
    for (const char* streams : {"1", "3"}) {
      const Config c = with(s, {{"zerocopy", zc}, {"streams", streams}, {"align", "64"}, {"write_size", "16384"}});
      // Sizes that split unevenly over the streams and the writes.
      for (uint64_t bytes : {uint64_t{65536}, uint64_t{100003}, uint64_t{1} << 20}) {
        Measurement m = k->measure(s, c, bytes, quick(), {});
        ASSERT_EQ(m.state, State::ok) << s.key(c) << " bytes " << bytes << ": " << m.error;
        EXPECT_GT(m.value, 0);
        EXPECT_EQ(m.details.value("placement", ""), "loopback");
        const uint64_t runs = m.details.value("runs", uint64_t{0});
        EXPECT_EQ(m.details.value("received_bytes", uint64_t{0}), runs * bytes);
        EXPECT_GT(mss_of(m), 0);
        if (std::string(zc) == "msg_zerocopy") {
          // Over loopback the kernel copies what MSG_ZEROCOPY pinned; the completions say so.
          EXPECT_GT(m.details.value("zerocopy_completions", 0), 0);
        }
      }
    }
  }
}

TEST(TcpStreamLoopback, BuffersNodelayAndCongestionAreApplied) {
  Space s = test::space_from_text(space_text());
  auto k = std::move(make_kernel(s).value());
  const Config c = with(s, {{"sndbuf", "1048576"}, {"rcvbuf", "1048576"}, {"nodelay", "true"}, {"congestion", "reno"}});
  Measurement m = k->measure(s, c, 1 << 20, quick(), {});
  ASSERT_EQ(m.state, State::ok) << m.error;
  EXPECT_EQ(m.details.value("congestion", ""), "reno");
  EXPECT_EQ(m.details.value("sndbuf_bytes", 0), 2 << 20);  // the kernel doubles a fixed size
  EXPECT_EQ(m.details.value("rcvbuf_bytes", 0), 2 << 20);
  Measurement d = k->measure(s, s.default_config(), 1 << 20, quick(), {});
  ASSERT_EQ(d.state, State::ok) << d.error;
  EXPECT_EQ(d.details.value("congestion", ""), "cubic");
}

TEST(TcpStreamLoopback, SeveralMtusAreHeldAtTheDefault) {
  Space s = test::space_from_text(space_text("[1500, 9000]"));
  ASSERT_TRUE(make_kernel(s).has_value());
  EXPECT_EQ(s.count_valid(), s.cartesian_size() / 2);
  const Config c = with(s, {{"mtu", "9000"}});
  EXPECT_NE(s.why_invalid(c).find("lo's MTU"), std::string::npos) << s.why_invalid(c);
}

TEST(TcpStreamLoopback, PeerPlacementTalksToAServer) {
  auto server = PeerServer::start("127.0.0.1", 0, Json{{"insecure", true}});
  ASSERT_TRUE(server.has_value()) << server.error().message;
  const std::string peer = fmt::format(R"("placement": "peer", "peer": "127.0.0.1:{}",)", (*server)->port());
  Space s = test::space_from_text(space_text("[1500]", peer));
  auto k = make_kernel(s);
  ASSERT_TRUE(k.has_value()) << k.error().message;
  Measurement m = (*k)->measure(s, with(s, {{"streams", "3"}}), 1 << 20, quick(), {});
  EXPECT_EQ(m.state, State::ok) << m.error;
  EXPECT_EQ(m.details.value("placement", ""), "peer");
  // Several MTUs need links on both sides that acceltune may change; this server has none, so
  // the space keeps the default MTU and another one is refused with the reason.
  Space many = test::space_from_text(space_text("[1500, 9000]", peer));
  ASSERT_TRUE(make_kernel(many).has_value());
  EXPECT_EQ(many.count_valid(), many.cartesian_size() / 2);
  const std::string why = many.why_invalid(with(many, {{"mtu", "9000"}}));
  EXPECT_NE(why.find("serve --link"), std::string::npos) << why;
}

TEST(TcpStreamLoopback, ServerAnswersAnUnknownKindWithOneErrorLine) {
  auto server = PeerServer::start("127.0.0.1", 0, Json::object(), "", std::string("a-test-secret-of-some-length"));
  ASSERT_TRUE(server.has_value());
  auto fd = connect_peer("127.0.0.1", (*server)->port(), std::string("a-test-secret-of-some-length"),
                         Json{{"kind", "no-such-kind"}}, 5);
  ASSERT_TRUE(fd.has_value()) << fd.error().message;
  auto reply = recv_json_line(*fd, 5);
  ASSERT_TRUE(reply.has_value()) << reply.error().message;
  EXPECT_FALSE(reply->value("ok", true));
  EXPECT_NE(reply->value("error", "").find("no-such-kind"), std::string::npos);
  ::close(*fd);
}

TEST(TcpStreamLoopback, SocketHelpersSayWhatFailed) {
  EXPECT_EQ(parse_host_port("[::1]:80")->first, "::1");
  EXPECT_EQ(parse_host_port("host:18515")->second, 18515);
  EXPECT_FALSE(parse_host_port("host").has_value());
  EXPECT_FALSE(parse_host_port("host:0").has_value());
  int port = 0;
  auto l = listen_tcp("127.0.0.1", 0, &port);
  ASSERT_TRUE(l.has_value());
  auto again = listen_tcp("127.0.0.1", port, nullptr);
  ASSERT_FALSE(again.has_value());
  EXPECT_NE(again.error().message.find("in use"), std::string::npos) << again.error().message;
  ::close(*l);
  auto refused = connect_tcp("127.0.0.1", port, 2);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("connection refused"), std::string::npos) << refused.error().message;
}

TEST(TcpStreamCli, BadInputIsOneLineWithTheDocumentedExitCode) {
  test::TempDir dir;
  // A name that is no congestion control at all: input, exit 2.
  std::string text = space_text();
  text.replace(text.find(R"(["cubic", "reno"])"), 17, R"(["cubic", "fast"])");
  test::write_file(dir / "cc.json", text);
  auto cc = run_cli({"bench", "--space", (dir / "cc.json").string(), "--max-seconds", "0.02"});
  EXPECT_EQ(cc.exit_code, 2) << cc.err;
  EXPECT_EQ(test::lines_of(cc.err).size(), 1u) << cc.err;
  EXPECT_NE(cc.err.find("'fast' is not a TCP congestion control"), std::string::npos) << cc.err;

  // A peer that is not there: a runtime failure, exit 1, before any trial.
  int port = 0;
  auto l = listen_tcp("127.0.0.1", 0, &port);
  ASSERT_TRUE(l.has_value());
  ::close(*l);
  auto peer = run_cli({"search", "--space", "tcp-stream", "--peer", fmt::format("127.0.0.1:{}", port), "--out",
                       (dir / "p").string()});
  EXPECT_EQ(peer.exit_code, 1) << peer.err;
  EXPECT_EQ(test::lines_of(peer.err).size(), 1u) << peer.err;
  EXPECT_NE(peer.err.find("connection refused"), std::string::npos) << peer.err;
  auto malformed = run_cli({"bench", "--space", "tcp-stream", "--peer", "nohost"});
  EXPECT_EQ(malformed.exit_code, 2) << malformed.err;

  // Loopback keeps lo's MTU: a space with several is held at its default, with one note...
  test::write_file(dir / "mtu.json", space_text("[1500, 9000]"));
  auto held = run_cli({"bench", "--space", (dir / "mtu.json").string(), "--max-seconds", "0.02"});
  EXPECT_EQ(held.exit_code, 0) << held.err;
  int mtu_lines = 0;  // (a host whose default congestion control is not cubic adds a note of its own)
  for (const auto& line : test::lines_of(held.err)) mtu_lines += line.find("'mtu'") != std::string::npos ? 1 : 0;
  EXPECT_EQ(mtu_lines, 1) << held.err;
  EXPECT_NE(held.err.find("held at its default 1500"), std::string::npos) << held.err;
  EXPECT_NE(held.err.find("lo's MTU"), std::string::npos) << held.err;
  // ...and asking for another MTU there is refused.
  auto other = run_cli({"bench", "--space", (dir / "mtu.json").string(), "--set", "mtu=9000"});
  EXPECT_EQ(other.exit_code, 2) << other.err;
  EXPECT_EQ(test::lines_of(other.err).size(), 1u) << other.err;
  EXPECT_NE(other.err.find("lo's MTU"), std::string::npos) << other.err;
}

TEST(TcpStreamCli, ServeIsTheFarEndOfPeer) {
  test::TempDir dir;
  int port = 0;
  auto l = listen_tcp("127.0.0.1", 0, &port);
  ASSERT_TRUE(l.has_value());
  ::close(*l);
  auto listening = [&] {
    auto fd = connect_tcp("127.0.0.1", port, 1);
    if (fd) ::close(*fd);  // a connection without a hello: the server drops it
    return fd.has_value();
  };
  const pid_t server =
      spawn_acceltune({"serve", "--bind", "127.0.0.1", "--port", std::to_string(port), "--insecure"}, dir.path());
  ASSERT_TRUE(eventually(listening, 5));
  auto r = run_cli({"bench", "--space", "tcp-stream", "--peer", fmt::format("127.0.0.1:{}", port), "--sizes", "1M",
                    "--set", "streams=2", "--max-seconds", "0.05", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  Json j = Json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["measurements"][0]["details"].value("placement", ""), "peer");
  ::kill(server, SIGTERM);
  int status = 0;
  ::waitpid(server, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // --once: the first client that disconnects ends it.
  const pid_t once = spawn_acceltune({"serve", "--bind", "127.0.0.1", "--port", std::to_string(port), "--once", "--insecure"},
                                     dir.path());
  ASSERT_TRUE(eventually(listening, 5));
  ASSERT_TRUE(eventually([&] { return ::waitpid(once, &status, WNOHANG) == once; }, 5));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

#else  // ACCELTUNE_TCP_TEST_NETNS

// ---------------- network namespaces: root needed ----------------

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

#endif

}  // namespace
}  // namespace acceltune
