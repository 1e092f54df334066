// tcp-stream over loopback (label integration, no root needed): the kernel in this process with an
// in-process peer server, and through the command line (serve / --peer, bad input, a search killed
// mid-run). The namespace tests are in test_tcp_stream_netns.cpp.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/tcp_stream_helpers.hpp"

namespace acceltune {
namespace {

namespace fs = std::filesystem;
using namespace tcp_test;
using test::run_cli;

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
  EXPECT_EQ(d.details.value("congestion", ""), to_string(s.params()[*s.param_index("congestion")].default_value()));
}

// Congestion control is a host setting: trial 0 runs the host's own, which joins the domain when
// the space does not list it, so a plan is never judged against a default this host does not run.
TEST(TcpStreamLoopback, TrialZeroRunsTheHostsCongestionControl) {
  std::string host;
  std::ifstream("/proc/sys/net/ipv4/tcp_congestion_control") >> host;
  if (host.empty()) GTEST_SKIP() << "this host has no /proc/sys/net/ipv4/tcp_congestion_control";
  if (host == "reno") GTEST_SKIP() << "this host runs reno, the space's own default";
  std::string text = space_text();
  const std::string listed = R"("values": ["cubic", "reno"], "default": "cubic")";
  ASSERT_NE(text.find(listed), std::string::npos);
  text.replace(text.find(listed), listed.size(), R"("values": ["reno"], "default": "reno")");
  Space s = test::space_from_text(text);
  auto k = make_kernel(s);
  ASSERT_TRUE(k.has_value()) << k.error().message;
  const Param& p = s.params()[*s.param_index("congestion")];
  EXPECT_EQ(to_string(p.default_value()), host);
  ASSERT_EQ(p.values.size(), 2u);  // reno, and the host's own joined it
  EXPECT_EQ(to_string(p.values[0]), "reno");
  EXPECT_EQ(s.definition()["params"][7]["default"], host);
  Measurement d = (*k)->measure(s, s.default_config(), 1 << 20, quick(), {});
  ASSERT_EQ(d.state, State::ok) << d.error;
  EXPECT_EQ(d.details.value("congestion", ""), host);
  // A worker reads the stored definition and attaches again: nothing more changes.
  auto stored = Space::from_definition(s.definition(), "study.json", ".");
  ASSERT_TRUE(stored.has_value()) << stored.error().message;
  Space again = std::move(*stored);
  ASSERT_TRUE(make_kernel(again).has_value());
  EXPECT_EQ(again.definition()["params"][7], s.definition()["params"][7]);
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
  auto ch = connect_peer("127.0.0.1", (*server)->port(), std::string("a-test-secret-of-some-length"),
                         Json{{"kind", "no-such-kind"}}, 5);
  ASSERT_TRUE(ch.has_value()) << ch.error().message;
  auto reply = ch->recv(5);
  ASSERT_TRUE(reply.has_value()) << reply.error().message;
  EXPECT_FALSE(reply->value("ok", true));
  EXPECT_NE(reply->value("error", "").find("no-such-kind"), std::string::npos);
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

}  // namespace
}  // namespace acceltune
