// Authenticated control channels: acceltune serve refuses clients without the shared secret (and
// logs them), serves one with it, does only what its command line allows, survives malformed,
// oversized and slow control messages and a bounded fuzz run; the NCCL ranks' control socket
// refuses a connection that cannot prove the session's secret.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "kernels/nccl/nccl_control.hpp"
#include "kernels/shared/control_auth.hpp"
#include "kernels/shared/peer.hpp"
#include "tests/helpers.hpp"

namespace acceltune {
namespace {

namespace fs = std::filesystem;
using test::closed_by_far_end;
using test::eventually;
using test::run_cli;

const std::string kSecret = "correct-horse-battery-staple-42";

fs::path secret_file(const fs::path& dir, const std::string& secret, mode_t mode = 0600) {
  const fs::path f = dir / "secret";
  test::write_file(f, secret + "\n");
  ::chmod(f.c_str(), mode);
  return f;
}

int free_port() {
  int port = 0;
  auto l = listen_tcp("127.0.0.1", 0, &port);
  EXPECT_TRUE(l.has_value());
  if (l) ::close(*l);
  return port;
}



// A good client: proves the secret, says hello as tcp-stream, gets the server's reply.
bool served(int port, const std::string& secret = kSecret) {
  const std::optional<std::string> s = secret.empty() ? std::nullopt : std::optional<std::string>(secret);
  auto ch = connect_peer("127.0.0.1", port, s, Json{{"kind", "tcp-stream"}, {"version", 1}}, 5);
  if (!ch) return false;
  auto r = ch->recv(5);
  return r && r->value("ok", false);
}

TEST(ServeAuth, RefusesToStartWithoutASecretUnlessInsecure) {
  test::TempDir dir;
  auto r = run_cli({"serve", "--port", std::to_string(free_port())}, dir.path(),
                   "env -u ACCELTUNE_SECRET -u ACCELTUNE_SECRET_FILE");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("serve needs a shared secret"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--insecure"), std::string::npos) << r.err;
  // A secret file others may read is refused, naming the fix.
  const fs::path open = secret_file(dir.path(), kSecret, 0644);
  auto o = run_cli({"serve", "--port", std::to_string(free_port()), "--secret-file", open.string()}, dir.path());
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_NE(o.err.find("chmod 600"), std::string::npos) << o.err;
}

TEST(ServeAuth, OnlyAClientWithTheSecretGetsATransferAndRefusalsAreLogged) {
  test::TempDir dir;
  const fs::path secret = secret_file(dir.path(), kSecret);
  const int port = free_port();
  const fs::path log = dir.path() / "serve.log";
  const pid_t server = test::spawn_cli({"serve", "--port", std::to_string(port), "--secret-file", secret.string()},
                                       dir.path(), {}, log);
  ASSERT_TRUE(eventually([&] { return served(port); }, 10)) << test::read_file(log);
  const std::string peer = fmt::format("127.0.0.1:{}", port);
  const std::vector<std::string> bench = {"bench", "--space", "tcp-stream", "--peer", peer, "--sizes", "1M",
                                          "--set", "streams=2", "--max-seconds", "0.05", "--json"};
  // No secret: refused, with the variables to set.
  auto none = run_cli(bench, dir.path(), "env -u ACCELTUNE_SECRET -u ACCELTUNE_SECRET_FILE");
  EXPECT_NE(none.exit_code, 0) << none.out;
  EXPECT_NE(none.err.find("asks for the shared secret"), std::string::npos) << none.err;
  // The wrong secret: refused by the server.
  auto wrong = run_cli(bench, dir.path(), "ACCELTUNE_SECRET=another-secret-of-enough-length");
  EXPECT_NE(wrong.exit_code, 0) << wrong.out;
  EXPECT_NE(wrong.err.find("a wrong proof"), std::string::npos) << wrong.err;
  // The secret: a transfer.
  std::vector<std::string> with = bench;
  with.insert(with.end(), {"--secret-file", secret.string()});
  auto good = run_cli(with, dir.path());
  ASSERT_EQ(good.exit_code, 0) << good.err;
  const Json j = Json::parse(good.out);
  EXPECT_EQ(j["measurements"][0]["state"], "ok") << good.out;
  ::kill(server, SIGTERM);
  EXPECT_EQ(test::wait_exit(server, 10), 0);
  const std::string text = test::read_file(log);
  EXPECT_NE(text.find("refused 127.0.0.1: no proof of the shared secret"), std::string::npos) << text;
  EXPECT_NE(text.find("refused 127.0.0.1: a wrong proof"), std::string::npos) << text;
  EXPECT_NE(text.find("clients must prove the shared secret"), std::string::npos) << text;
  EXPECT_NE(text.find("serving this host only; pass --bind ADDRESS"), std::string::npos) << text;
}

TEST(ServeAuth, InsecureSaysSoOnEveryConnection) {
  test::TempDir dir;
  const int port = free_port();
  const fs::path log = dir.path() / "serve.log";
  const pid_t server = test::spawn_cli({"serve", "--port", std::to_string(port), "--insecure"}, dir.path(), {}, log);
  ASSERT_TRUE(eventually([&] { return served(port, ""); }, 10)) << test::read_file(log);
  ASSERT_TRUE(served(port, ""));
  ::kill(server, SIGTERM);
  EXPECT_EQ(test::wait_exit(server, 10), 0);
  const std::string text = test::read_file(log);
  size_t lines = 0;
  for (const auto& l : test::lines_of(text)) lines += l.find("INSECURE: serving 127.0.0.1 without authentication") != std::string::npos;
  EXPECT_GE(lines, 2u) << text;
}

TEST(ServeAuth, AClientMayAskOnlyForWhatServeAllows) {
  auto server = PeerServer::start("127.0.0.1", 0, Json{{"link", "lo"}, {"mtus", Json::array({65536})}}, "", kSecret);
  ASSERT_TRUE(server.has_value()) << server.error().message;
  const int port = (*server)->port();
  auto ch = connect_peer("127.0.0.1", port, kSecret, Json{{"kind", "tcp-stream"}, {"version", 1}}, 5);
  ASSERT_TRUE(ch.has_value()) << ch.error().message;
  auto hello = ch->recv(5);
  ASSERT_TRUE(hello && hello->value("ok", false));
  EXPECT_EQ((*hello)["mtus"], Json::array({65536}));
  ASSERT_TRUE(ch->send(Json{{"op", "setup"}, {"streams", 1}, {"mtu", 9000}}).ok());
  auto r = ch->recv(5);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_FALSE(r->value("ok", true));
  EXPECT_NE(r->value("error", "").find("refusing MTU 9000 on lo: this serve allows 65536"), std::string::npos) << *r;
  ch->close();
  // UCX on this side may use only serve's --link.
  auto u = connect_peer("127.0.0.1", port, kSecret,
                        Json{{"kind", "ucx"}, {"env", Json{{"UCX_NET_DEVICES", "eth9:1"}}}}, 5);
  ASSERT_TRUE(u.has_value()) << u.error().message;
  auto ur = u->recv(5);
  ASSERT_TRUE(ur.has_value()) << ur.error().message;
  EXPECT_NE(ur->value("error", "").find("refusing device 'eth9:1': this serve allows only its --link lo"),
            std::string::npos)
      << *ur;
}

// A control connection from a given loopback address (127.0.0.2 is another "host" here).
int connect_from(const char* source, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &a.sin_addr);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to), 0) << std::strerror(errno);
  return fd;
}

TEST(ServeAuth, OneClientHostAtATimeUnlessToldOtherwise) {
  auto server = PeerServer::start("127.0.0.1", 0, Json{{"sessions", 1}}, "", kSecret);
  ASSERT_TRUE(server.has_value()) << server.error().message;
  const int port = (*server)->port();
  const Json hello{{"kind", "tcp-stream"}, {"version", 1}};
  const int a = connect_from("127.0.0.1", port);
  auto ca = answer_challenge(a, kSecret, "serve", hello, 5);
  ASSERT_TRUE(ca.has_value()) << ca.error().message;
  auto ra = ca->recv(5);
  ASSERT_TRUE(ra && ra->value("ok", false));
  // Another connection from the same host is part of its session.
  EXPECT_TRUE(served(port));
  // Another host waits its turn, told who holds the server.
  const int b = connect_from("127.0.0.2", port);
  auto cb = answer_challenge(b, kSecret, "serve", hello, 5);
  ASSERT_TRUE(cb.has_value()) << cb.error().message;
  auto rb = cb->recv(5);
  ASSERT_TRUE(rb.has_value()) << rb.error().message;
  EXPECT_FALSE(rb->value("ok", true));
  EXPECT_NE(rb->value("error", "").find("busy with 127.0.0.1"), std::string::npos) << *rb;
  ::close(b);
  ::close(a);
  EXPECT_TRUE(eventually(
      [&] {
        const int c = connect_from("127.0.0.2", port);
        auto cc = answer_challenge(c, kSecret, "serve", hello, 5);
        const bool ok = cc.has_value() && [&] {
          auto r = cc->recv(5);
          return r && r->value("ok", false);
        }();
        ::close(c);
        return ok;
      },
      5));
}

TEST(ServeAuth, MalformedOversizedAndSlowMessagesEndOnlyTheirConnection) {
  auto server = PeerServer::start("127.0.0.1", 0, Json{{"auth_timeout_seconds", 0.5}}, "", kSecret);
  ASSERT_TRUE(server.has_value()) << server.error().message;
  const int port = (*server)->port();
  auto raw = [&] {
    auto fd = connect_tcp("127.0.0.1", port, 5);
    EXPECT_TRUE(fd.has_value());
    auto challenge = recv_json_line(*fd, 5);
    EXPECT_TRUE(challenge && challenge->value("auth", "") == "hmac-sha256");
    return *fd;
  };
  {  // not JSON
    const int fd = raw();
    ASSERT_TRUE(send_all(fd, "this is not json\n", 17, "junk").ok());
    EXPECT_TRUE(closed_by_far_end(fd, 5));
    ::close(fd);
  }
  EXPECT_TRUE(served(port));
  {  // a line longer than an unauthenticated client may send
    const int fd = raw();
    const std::string big(200 * 1024, 'x');
    (void)send_all(fd, big.data(), big.size(), "big");
    EXPECT_TRUE(closed_by_far_end(fd, 5));
    ::close(fd);
  }
  EXPECT_TRUE(served(port));
  {  // half a line, then nothing: the server gives up after its timeout
    const int fd = raw();
    ASSERT_TRUE(send_all(fd, "{\"kind\":", 8, "half").ok());
    EXPECT_TRUE(closed_by_far_end(fd, 5));
    ::close(fd);
  }
  EXPECT_TRUE(served(port));
  {  // authenticated, then a message of the wrong types
    auto ch = connect_peer("127.0.0.1", port, kSecret, Json{{"kind", "tcp-stream"}}, 5);
    ASSERT_TRUE(ch.has_value());
    ASSERT_TRUE(ch->recv(5).has_value());
    ASSERT_TRUE(ch->send(Json{{"op", "setup"}, {"streams", "many"}, {"rcvbuf", Json::array()}}).ok());
    EXPECT_TRUE(closed_by_far_end(ch->fd(), 5));
  }
  EXPECT_TRUE(served(port));
}

// Random input against the control-message parser for a bounded time: lines of random bytes,
// hellos with mangled proofs, and authenticated sessions sending random ops with random field
// types. Every connection ends; the server keeps serving.
TEST(ServeAuth, FuzzTheControlMessagesForABoundedTime) {
  auto server = PeerServer::start("127.0.0.1", 0, Json{{"auth_timeout_seconds", 0.3}}, "", kSecret);
  ASSERT_TRUE(server.has_value()) << server.error().message;
  const int port = (*server)->port();
  std::mt19937_64 rng(20261206);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  auto random_value = [&]() -> Json {
    switch (pick(7)) {
      case 0: return static_cast<int64_t>(rng());
      case 1: return -1;
      case 2: return "x" + std::to_string(rng() % 1000);
      case 3: return Json::array({1, "two", nullptr});
      case 4: return Json::object({{"a", 1}});
      case 5: return nullptr;
      default: return 1e300;
    }
  };
  const char* ops[] = {"setup", "size", "validate", "run", "bye", "nope", ""};
  const char* fields[] = {"streams", "rcvbuf", "congestion", "write_size", "align", "mtu", "bytes", "op", "kind", "env"};
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(4);
  int connections = 0;
  while (std::chrono::steady_clock::now() < until) {
    ++connections;
    const size_t mode = pick(3);
    if (mode == 0) {  // random bytes before any proof
      auto fd = connect_tcp("127.0.0.1", port, 5);
      ASSERT_TRUE(fd.has_value());
      std::string junk(1 + pick(300), '\0');
      for (char& c : junk) c = static_cast<char>(rng());
      if (pick(2)) junk += '\n';
      (void)send_all(*fd, junk.data(), junk.size(), "junk");
      EXPECT_TRUE(closed_by_far_end(*fd, 5)) << "connection " << connections;
      ::close(*fd);
    } else if (mode == 1) {  // a hello with a mangled proof
      auto fd = connect_tcp("127.0.0.1", port, 5);
      ASSERT_TRUE(fd.has_value());
      auto ch = recv_json_line(*fd, 5);
      ASSERT_TRUE(ch.has_value());
      std::string proof = random_hex();  // the right one is unknown without the secret
      Json hello{{"kind", "tcp-stream"}, {"nonce", pick(2) ? Json(random_hex()) : random_value()}, {"proof", proof}};
      (void)send_json_line(*fd, hello);
      EXPECT_TRUE(closed_by_far_end(*fd, 5)) << "connection " << connections;
      ::close(*fd);
    } else {  // authenticated, then random ops
      auto session = connect_peer("127.0.0.1", port, kSecret, Json{{"kind", pick(4) ? "tcp-stream" : "zzz"}}, 5);
      ASSERT_TRUE(session.has_value()) << session.error().message;
      for (size_t k = 0, n = 1 + pick(4); k < n; ++k) {
        Json msg{{"op", ops[pick(7)]}};
        for (size_t f = 0, m = pick(4); f < m; ++f) msg[fields[pick(10)]] = random_value();
        if (!session->send(msg)) break;
        if (!session->recv(2)) break;
      }
    }
  }
  EXPECT_GT(connections, 20);
  EXPECT_TRUE(served(port)) << "after " << connections << " fuzzed connections";
}

TEST(NcclControlAuth, TheRanksSocketRefusesAConnectionWithoutTheSecret) {
  int port = 0;
  auto lfd = listen_tcp("127.0.0.1", 0, &port);
  ASSERT_TRUE(lfd.has_value());
  const std::string session = random_hex();
  // A process that reaches the port and says it is a rank, without the secret.
  std::thread stranger([&] {
    auto ch = connect_control("127.0.0.1", port, 5);
    if (!ch) return;
    (void)answer_challenge(ch->fd(), std::nullopt, kNcclControlContext, Json{{"join", true}}, 5);
  });
  std::string refused;
  auto got = accept_rank(*lfd, session, 5, &refused);
  stranger.join();
  ASSERT_TRUE(got.has_value()) << got.error().message;
  EXPECT_FALSE(got->open());
  EXPECT_NE(refused.find("refused a connection to the ranks' control socket from 127.0.0.1"), std::string::npos)
      << refused;
  // One with another session's secret.
  std::thread other([&] {
    auto ch = connect_control("127.0.0.1", port, 5);
    if (!ch) return;
    (void)answer_challenge(ch->fd(), random_hex(), kNcclControlContext, Json{{"join", true}}, 5);
  });
  refused.clear();
  got = accept_rank(*lfd, session, 5, &refused);
  other.join();
  ASSERT_TRUE(got.has_value());
  EXPECT_FALSE(got->open());
  EXPECT_NE(refused.find("a wrong proof"), std::string::npos) << refused;
  // A rank with the session's secret joins, and the channel carries lines.
  ::setenv(kNcclControlSecretVar, session.c_str(), 1);
  std::thread rank([&] {
    auto ch = join_control("127.0.0.1", port, 5);
    ASSERT_TRUE(ch.has_value()) << ch.error().message;
    EXPECT_TRUE(ch->send(Json{{"rank", 0}, {"ok", true}}).ok());
  });
  refused.clear();
  got = accept_rank(*lfd, session, 5, &refused);
  rank.join();
  ::unsetenv(kNcclControlSecretVar);
  ASSERT_TRUE(got.has_value());
  ASSERT_TRUE(got->open()) << refused;
  auto hello = got->receive(5);
  ASSERT_TRUE(hello.has_value()) << hello.error().message;
  EXPECT_EQ(hello->value("rank", -1), 0);
  ::close(*lfd);
}

}  // namespace
}  // namespace acceltune
