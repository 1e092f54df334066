// The authenticated session beyond its first line (kernels/shared/control_auth.cpp): a relay on
// loopback between a client and `acceltune serve` (or the NCCL ranks' socket) that replays,
// alters, injects or rewrites lines is caught and the connection ends, logged with the peer's
// address and why; a stranger on a tcp-stream data port is refused before a byte counts; a
// client that holds a secret talks only to a server that proves it; serve refuses --insecure
// together with a secret.
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <list>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "kernels/nccl/nccl_control.hpp"
#include "kernels/shared/control_auth.hpp"
#include "kernels/shared/pattern.hpp"
#include "kernels/shared/peer.hpp"
#include "tests/helpers.hpp"

// Its own namespace: the unity build puts this file next to test_serve_auth.cpp's helpers.
namespace acceltune::session_test {
namespace {

namespace fs = std::filesystem;
using test::closed_by_far_end;
using test::eventually;

const std::string kSecret = "correct-horse-battery-staple-42";
const Json kHello{{"kind", "tcp-stream"}, {"version", 1}};



// A man in the middle on loopback: accepts connections and forwards each line to `to_port`
// and back, through `edit`, which sees the direction (true: client to server), the line's number
// in that direction (the handshake's lines included) and the line, and returns the lines to pass
// on instead (none: dropped). It records every line it saw.
class Relay {
 public:
  using Edit = std::function<std::vector<std::string>(bool up, size_t n, const std::string& line)>;
  Relay(int to_port, Edit edit) : to_port_(to_port), edit_(std::move(edit)) {
    auto l = listen_tcp("127.0.0.1", 0, &port_);
    EXPECT_TRUE(l.has_value());
    listen_fd_ = *l;
    thread_ = std::thread([this] { accept_loop(); });
  }
  ~Relay() {
    stop_ = true;
    thread_.join();  // no connection comes after this
    {
      std::lock_guard<std::mutex> l(mu_);
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : pumps_) t.join();
    for (int fd : fds_) ::close(fd);
    ::close(listen_fd_);
  }
  int port() const { return port_; }
  // The lines seen going up (client to server) on connection `c`.
  std::vector<std::string> up_lines(size_t c) {
    std::lock_guard<std::mutex> l(mu_);
    return c < up_.size() ? up_[c] : std::vector<std::string>{};
  }

 private:
  void accept_loop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      auto server = connect_tcp("127.0.0.1", to_port_, 5);
      if (!server) {
        ::close(client);
        continue;
      }
      std::lock_guard<std::mutex> l(mu_);
      const size_t c = up_.size();
      up_.emplace_back();
      fds_.push_back(client);
      fds_.push_back(*server);
      const int s = *server;
      pumps_.emplace_back([this, client, s, c] { pump(client, s, true, c); });
      pumps_.emplace_back([this, client, s, c] { pump(s, client, false, c); });
    }
  }
  void pump(int from, int to, bool up, size_t c) {
    for (size_t n = 0;; ++n) {
      auto line = recv_line(from, 30);
      if (!line) break;
      if (up) {
        std::lock_guard<std::mutex> l(mu_);
        up_[c].push_back(*line);
      }
      for (const auto& out : edit_(up, n, *line)) {
        const std::string text = out + "\n";
        if (!send_all(to, text.data(), text.size(), "relay")) break;
      }
    }
    ::shutdown(to, SHUT_WR);
  }

  int to_port_, port_ = 0, listen_fd_ = -1;
  Edit edit_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::list<std::thread> pumps_;
  std::vector<int> fds_;
  std::vector<std::vector<std::string>> up_;
};

std::vector<std::string> pass(bool, size_t, const std::string& line) { return {line}; }

std::string replaced(std::string line, const std::string& from, const std::string& to) {
  const size_t at = line.find(from);
  EXPECT_NE(at, std::string::npos) << from << " in " << line;
  if (at != std::string::npos) line.replace(at, from.size(), to);
  return line;
}

// `acceltune serve` with the secret, its log in a file.
struct Serve {
  test::TempDir dir;
  fs::path log = dir.path() / "serve.log";
  int port = 0;
  pid_t pid = -1;
  Serve() {
    const fs::path secret = dir.path() / "secret";
    test::write_file(secret, kSecret + "\n");
    ::chmod(secret.c_str(), 0600);
    auto l = listen_tcp("127.0.0.1", 0, &port);
    if (l) ::close(*l);
    pid = test::spawn_cli({"serve", "--port", std::to_string(port), "--secret-file", secret.string()}, dir.path(), {},
                          log);
    EXPECT_TRUE(eventually(
        [&] {
          auto ch = connect_peer("127.0.0.1", port, kSecret, Json{{"kind", "echo-none"}}, 2);
          return ch.has_value();
        },
        10))
        << text();
  }
  ~Serve() {
    ::kill(pid, SIGTERM);
    EXPECT_EQ(test::wait_exit(pid, 10), 0);
  }
  std::string text() const { return test::read_file(log); }
  bool logged(const std::string& what, double seconds = 5) const {
    return eventually([&] { return text().find(what) != std::string::npos; }, seconds);
  }
};

// A session through `relay`: the hello, the server's tcp-stream reply.
ControlChannel session_through(int port) {
  auto ch = connect_peer("127.0.0.1", port, kSecret, kHello, 5);
  EXPECT_TRUE(ch.has_value()) << ch.error().message;
  if (!ch) return ControlChannel();
  auto hello = ch->recv(5);
  EXPECT_TRUE(hello && hello->value("ok", false));
  return std::move(*ch);
}

const Json kNoStreams{{"op", "size"}, {"shares", Json::array()}, {"offsets", Json::array()}};

TEST(SessionAuth, AFirstLineReplayedOnAnotherConnectionIsRefused) {
  Serve serve;
  Relay relay(serve.port, pass);
  { ControlChannel ch = session_through(relay.port()); }
  const auto captured = relay.up_lines(0);
  ASSERT_FALSE(captured.empty());
  auto fd = connect_tcp("127.0.0.1", serve.port, 5);
  ASSERT_TRUE(fd.has_value());
  auto challenge = recv_json_line(*fd, 5);
  ASSERT_TRUE(challenge.has_value());
  const std::string replay = captured[0] + "\n";
  ASSERT_TRUE(send_all(*fd, replay.data(), replay.size(), "replay").ok());
  auto reply = recv_json_line(*fd, 5);
  ASSERT_TRUE(reply.has_value()) << reply.error().message;
  EXPECT_FALSE(reply->value("ok", true));
  EXPECT_NE(reply->value("error", "").find("a wrong proof"), std::string::npos) << *reply;
  EXPECT_TRUE(closed_by_far_end(*fd, 5));
  ::close(*fd);
  EXPECT_TRUE(serve.logged("refused 127.0.0.1: a wrong proof")) << serve.text();
}

TEST(SessionAuth, ARequestReplayedInsideTheSessionEndsIt) {
  Serve serve;
  // The first request after the hello (line 1 up) goes to the server twice.
  Relay relay(serve.port, [](bool up, size_t n, const std::string& line) {
    return up && n == 1 ? std::vector<std::string>{line, line} : std::vector<std::string>{line};
  });
  ControlChannel ch = session_through(relay.port());
  ASSERT_TRUE(ch.send(kNoStreams).ok());
  auto first = ch.recv(5);
  ASSERT_TRUE(first && first->value("ok", false));
  auto second = ch.recv(5);
  ASSERT_TRUE(second.has_value()) << second.error().message;
  EXPECT_FALSE(second->value("ok", true));
  EXPECT_NE(second->value("error", "").find("is a replay"), std::string::npos) << *second;
  EXPECT_TRUE(closed_by_far_end(ch.fd(), 5));
  EXPECT_TRUE(serve.logged("ended the session of 127.0.0.1: control message 1 is a replay")) << serve.text();
}

TEST(SessionAuth, ARequestAlteredAfterTheProofEndsTheSession) {
  Serve serve;
  // The relay changes the setup's streams: the bench asked for 2.
  Relay relay(serve.port, [](bool up, size_t, const std::string& line) {
    if (up && line.find("\"op\":\"setup\"") != std::string::npos) {
      return std::vector<std::string>{replaced(line, "\"streams\":2", "\"streams\":1")};
    }
    return std::vector<std::string>{line};
  });
  auto r = test::run_cli({"bench", "--space", "tcp-stream", "--peer", fmt::format("127.0.0.1:{}", relay.port()),
                          "--sizes", "1M", "--set", "streams=2", "--max-seconds", "0.05", "--json"},
                         serve.dir.path(), "ACCELTUNE_SECRET=" + kSecret);
  const Json j = Json::parse(r.out, nullptr, false);
  const bool measured = !j.is_discarded() && j.contains("measurements") && !j["measurements"].empty() &&
                        j["measurements"][0].value("state", "") == "ok";
  EXPECT_FALSE(measured) << r.out;
  EXPECT_NE((r.out + r.err).find("the server ended the session"), std::string::npos) << r.out << r.err;
  EXPECT_TRUE(serve.logged("ended the session of 127.0.0.1: control message 0 fails its MAC")) << serve.text();
}

TEST(SessionAuth, AHelloChangedByARelayIsRefused) {
  Serve serve;
  Relay relay(serve.port, [](bool up, size_t n, const std::string& line) {
    return std::vector<std::string>{up && n == 0 ? replaced(line, "\"version\":1", "\"version\":7") : line};
  });
  auto ch = connect_peer("127.0.0.1", relay.port(), kSecret, kHello, 5);
  ASSERT_FALSE(ch.has_value());
  EXPECT_NE(ch.error().message.find("a wrong proof"), std::string::npos) << ch.error().message;
  EXPECT_TRUE(serve.logged("refused 127.0.0.1: a wrong proof (another secret, or a hello changed on the way)"))
      << serve.text();
}

TEST(SessionAuth, AnInjectedMessageEndsTheSessionEitherWay) {
  Serve serve;
  const std::string zeros(64, '0');
  // Up: a message of the relay's own before the client's first request.
  Relay up(serve.port, [&](bool to_server, size_t n, const std::string& line) {
    if (to_server && n == 1) return std::vector<std::string>{R"({"op":"bye","seq":0,"mac":")" + zeros + "\"}", line};
    return std::vector<std::string>{line};
  });
  {
    ControlChannel ch = session_through(up.port());
    ASSERT_TRUE(ch.send(kNoStreams).ok());
    auto r = ch.recv(5);
    ASSERT_TRUE(r.has_value()) << r.error().message;
    EXPECT_FALSE(r->value("ok", true));
    EXPECT_NE(r->value("error", "").find("fails its MAC"), std::string::npos) << *r;
  }
  EXPECT_TRUE(serve.logged("ended the session of 127.0.0.1: control message 0 fails its MAC")) << serve.text();
  // Down: an answer the server never sent, before the server's first (lines 0 and 1 are the
  // challenge and the server's proof). The client ends the session.
  Relay down(serve.port, [&](bool to_server, size_t n, const std::string& line) {
    if (!to_server && n == 2) return std::vector<std::string>{R"({"ok":true,"seq":0,"mac":")" + zeros + "\"}", line};
    return std::vector<std::string>{line};
  });
  auto ch = connect_peer("127.0.0.1", down.port(), kSecret, kHello, 5);
  ASSERT_TRUE(ch.has_value()) << ch.error().message;
  auto hello = ch->recv(5);
  ASSERT_FALSE(hello.has_value());
  EXPECT_NE(hello.error().message.find("control message 0 fails its MAC"), std::string::npos) << hello.error().message;
  EXPECT_FALSE(ch->recv(5).has_value());  // and stays ended
  EXPECT_FALSE(ch->broken().empty());
}

TEST(SessionAuth, AMessageDroppedAndResentLaterEndsTheSession) {
  Serve serve;
  std::string held;
  Relay relay(serve.port, [&](bool up, size_t n, const std::string& line) {
    if (up && n == 1) {  // held back
      held = line;
      return std::vector<std::string>{};
    }
    if (up && n == 2) return std::vector<std::string>{line, held};
    return std::vector<std::string>{line};
  });
  ControlChannel ch = session_through(relay.port());
  ASSERT_TRUE(ch.send(kNoStreams).ok());
  ASSERT_TRUE(ch.send(kNoStreams).ok());
  auto r = ch.recv(5);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_FALSE(r->value("ok", true));
  EXPECT_NE(r->value("error", "").find("out of order"), std::string::npos) << *r;
  EXPECT_TRUE(serve.logged("ended the session of 127.0.0.1: control message 0 is out of order: sequence number 1 "
                           "where 0 was due"))
      << serve.text();
}

TEST(SessionAuth, AStrangerOnADataPortIsRefusedLoggedAndNotCounted) {
  Serve serve;
  auto ch = connect_peer("127.0.0.1", serve.port, kSecret, kHello, 5);
  ASSERT_TRUE(ch.has_value()) << ch.error().message;
  ASSERT_TRUE(ch->recv(5).has_value());
  const uint64_t setup_seq = ch->sent();
  ASSERT_TRUE(ch->send(Json{{"op", "setup"}, {"streams", 1}, {"write_size", 65536}}).ok());
  auto setup = ch->recv(5);
  ASSERT_TRUE(setup && setup->value("ok", false)) << (setup ? setup->dump() : setup.error().message);
  const int data_port = setup->value("port", 0);
  const uint32_t index0 = htonl(0);
  // The stranger knows the protocol but not the session: its token is wrong; it sends data too.
  auto stranger = connect_tcp("127.0.0.1", data_port, 5);
  ASSERT_TRUE(stranger.has_value());
  std::string junk(4 + kDataTokenBytes + 4096, '\x5a');
  std::memcpy(junk.data(), &index0, 4);
  (void)send_all(*stranger, junk.data(), junk.size(), "stranger");
  ASSERT_TRUE(serve.logged(fmt::format("refused a data connection from 127.0.0.1 to tcp-stream port {}: a wrong "
                                       "session token",
                                       data_port)))
      << serve.text();
  EXPECT_TRUE(closed_by_far_end(*stranger, 5));
  ::close(*stranger);
  // The session's own stream.
  auto data = connect_tcp("127.0.0.1", data_port, 5);
  ASSERT_TRUE(data.has_value());
  unsigned char first[4 + kDataTokenBytes];
  std::memcpy(first, &index0, 4);
  const auto token = ch->data_token(setup_seq, 0);
  std::memcpy(first + 4, token.data(), token.size());
  ASSERT_TRUE(send_all(*data, first, sizeof first, "token").ok());
  auto joined = ch->recv(5);
  ASSERT_TRUE(joined && joined->value("ok", false)) << (joined ? joined->dump() : joined.error().message);
  const size_t bytes = 256 << 10;
  std::vector<char> payload(bytes);
  fill_pattern(payload.data(), 0, bytes);
  ASSERT_TRUE(ch->send(Json{{"op", "size"}, {"shares", Json::array({bytes})}, {"offsets", Json::array({0})}}).ok());
  ASSERT_TRUE(ch->recv(5).has_value());
  auto run = [&] {
    ASSERT_TRUE(send_all(*data, payload.data(), payload.size(), "run").ok());
    char ack = 0;
    ASSERT_TRUE(recv_all(*data, &ack, 1, 5, "ack").ok());
  };
  run();
  ASSERT_TRUE(ch->send(Json{{"op", "validate"}}).ok());
  ASSERT_TRUE(ch->recv(5).has_value());
  run();
  auto v = ch->recv(5);
  ASSERT_TRUE(v.has_value()) << v.error().message;
  EXPECT_EQ(v->value("mismatches", uint64_t{99}), 0u) << *v;
  EXPECT_EQ(v->value("received_bytes", uint64_t{0}), 2 * bytes) << *v;
  ::close(*data);
}

TEST(SessionAuth, AClientWithASecretRefusesAServerThatAsksForNone) {
  int port = 0;
  auto lfd = listen_tcp("127.0.0.1", 0, &port);
  ASSERT_TRUE(lfd.has_value());
  std::string got = "nothing";
  std::thread fake([&] {
    auto fd = accept_tcp(*lfd, 5);
    if (!fd) return;
    (void)send_json_line(*fd, Json{{"auth", "none"}});
    auto line = recv_line(*fd, 2);
    got = line ? *line : "nothing";
    ::close(*fd);
  });
  auto ch = connect_peer("127.0.0.1", port, kSecret, kHello, 5);
  fake.join();
  ::close(*lfd);
  ASSERT_FALSE(ch.has_value());
  EXPECT_NE(ch.error().message.find("serves without authentication"), std::string::npos) << ch.error().message;
  EXPECT_EQ(got, "nothing");  // not even the hello went out
  // A real insecure server, likewise.
  auto insecure = PeerServer::start("127.0.0.1", 0, Json{{"insecure", true}});
  ASSERT_TRUE(insecure.has_value());
  EXPECT_FALSE(connect_peer("127.0.0.1", (*insecure)->port(), kSecret, kHello, 5).has_value());
  EXPECT_TRUE(connect_peer("127.0.0.1", (*insecure)->port(), std::nullopt, kHello, 5).has_value());
}

TEST(SessionAuth, AClientRefusesAServerThatCannotProveTheSecret) {
  int port = 0;
  auto lfd = listen_tcp("127.0.0.1", 0, &port);
  ASSERT_TRUE(lfd.has_value());
  // The fake asks as serve does, reads the hello, then answers without the secret: a made-up
  // proof, then none at all.
  const std::vector<Json> answers = {Json{{"auth", "ok"}, {"proof", random_hex()}}, Json{{"ok", true}}};
  std::thread fake([&] {
    for (const Json& answer : answers) {
      auto fd = accept_tcp(*lfd, 5);
      if (!fd) return;
      (void)send_json_line(*fd, Json{{"auth", "hmac-sha256"}, {"version", 2}, {"challenge", random_hex()}});
      (void)recv_line(*fd, 5);
      (void)send_json_line(*fd, answer);
      (void)closed_by_far_end(*fd, 5);
      ::close(*fd);
    }
  });
  auto wrong = connect_peer("127.0.0.1", port, kSecret, kHello, 5);
  auto none = connect_peer("127.0.0.1", port, kSecret, kHello, 5);
  fake.join();
  ::close(*lfd);
  ASSERT_FALSE(wrong.has_value());
  EXPECT_NE(wrong.error().message.find("the far end's proof of the shared secret is wrong"), std::string::npos)
      << wrong.error().message;
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message.find("the far end did not prove the shared secret"), std::string::npos)
      << none.error().message;
  // A real server with another secret refuses the client first.
  auto other = PeerServer::start("127.0.0.1", 0, Json::object(), "", std::string("another-secret-of-enough-length"));
  ASSERT_TRUE(other.has_value());
  auto refused = connect_peer("127.0.0.1", (*other)->port(), kSecret, kHello, 5);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("a wrong proof"), std::string::npos) << refused.error().message;
}

TEST(SessionAuth, NoTwoConnectionsShareAChallenge) {
  auto server = PeerServer::start("127.0.0.1", 0, Json::object(), "", kSecret);
  ASSERT_TRUE(server.has_value());
  std::set<std::string> seen;
  const int n = 300;
  for (int i = 0; i < n; ++i) {
    auto fd = connect_tcp("127.0.0.1", (*server)->port(), 5);
    ASSERT_TRUE(fd.has_value());
    auto ask = recv_json_line(*fd, 5);
    ::close(*fd);
    ASSERT_TRUE(ask.has_value());
    const std::string c = ask->value("challenge", "");
    EXPECT_EQ(c.size(), 64u) << *ask;
    seen.insert(c);
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(n));
}

TEST(SessionAuth, ServeRefusesInsecureTogetherWithASecret) {
  test::TempDir dir;
  const fs::path secret = dir.path() / "secret";
  test::write_file(secret, kSecret + "\n");
  ::chmod(secret.c_str(), 0600);
  auto exit_of = [&](const std::vector<std::string>& args, const std::vector<std::string>& env, std::string* err) {
    const fs::path log = dir.path() / "serve.log";
    const pid_t pid = test::spawn_cli(args, dir.path(), env, log);
    int code = test::wait_exit(pid, 10);
    if (code == -1) {
      ::kill(pid, SIGKILL);
      (void)test::wait_exit(pid, 5);
    }
    *err = test::read_file(log);
    return code;
  };
  std::string err;
  EXPECT_EQ(exit_of({"serve", "--port", "1", "--insecure", "--secret-file", secret.string()}, {}, &err), 2) << err;
  EXPECT_NE(err.find("--insecure and --secret-file"), std::string::npos) << err;
  EXPECT_EQ(exit_of({"serve", "--port", "1", "--insecure"}, {"ACCELTUNE_SECRET=" + kSecret}, &err), 2) << err;
  EXPECT_NE(err.find("serve --insecure and a shared secret"), std::string::npos) << err;
  EXPECT_NE(err.find("ACCELTUNE_SECRET"), std::string::npos) << err;
  auto both = PeerServer::start("127.0.0.1", 0, Json{{"insecure", true}}, "", kSecret);
  ASSERT_FALSE(both.has_value());
  EXPECT_NE(both.error().message.find("contradict"), std::string::npos);
}

// The NCCL ranks' control socket: the same session rules, on the CPU.
TEST(NcclControlSession, AReplayedAnswerAndAnAlteredCommandEndTheRanksChannel) {
  int port = 0;
  auto lfd = listen_tcp("127.0.0.1", 0, &port);
  ASSERT_TRUE(lfd.has_value());
  const std::string session = random_hex();
  // Up (rank to kernel): line 2, the rank's answer (after the join and its hello), twice. Down
  // (kernel to rank): line 3, the second command, altered.
  Relay relay(port, [](bool up, size_t n, const std::string& line) {
    if (up && n == 2) return std::vector<std::string>{line, line};
    if (!up && n == 3) return std::vector<std::string>{replaced(line, "\"bytes\":1024", "\"bytes\":4096")};
    return std::vector<std::string>{line};
  });
  ::setenv(kNcclControlSecretVar, session.c_str(), 1);
  std::string rank_saw;
  std::thread rank([&] {
    auto ch = join_control("127.0.0.1", relay.port(), 5);
    ASSERT_TRUE(ch.has_value()) << ch.error().message;
    ASSERT_TRUE(ch->send(Json{{"rank", 0}, {"ok", true}}).ok());
    auto cmd = ch->receive(5);
    ASSERT_TRUE(cmd.has_value()) << cmd.error().message;
    ASSERT_TRUE(ch->send(Json{{"ok", true}, {"seconds", 0.5}}).ok());
    auto next = ch->receive(5);
    rank_saw = next ? next->dump() : next.error().message;
  });
  std::string refused;
  auto got = accept_rank(*lfd, session, 5, &refused);
  ASSERT_TRUE(got.has_value());
  ASSERT_TRUE(got->open()) << refused;
  ASSERT_TRUE(got->receive(5).has_value());
  ASSERT_TRUE(got->send(Json{{"cmd", "run"}, {"bytes", 1024}}).ok());
  auto answer = got->receive(5);
  ASSERT_TRUE(answer && answer->value("ok", false));
  auto again = got->receive(5);
  ASSERT_FALSE(again.has_value());
  EXPECT_NE(again.error().message.find("control message 2 is a replay: it repeats sequence number 1"), std::string::npos)
      << again.error().message;
  ASSERT_TRUE(got->send(Json{{"cmd", "run"}, {"bytes", 1024}}).ok());
  rank.join();
  ::unsetenv(kNcclControlSecretVar);
  EXPECT_NE(rank_saw.find("control message 1 fails its MAC"), std::string::npos) << rank_saw;
  ::close(*lfd);
}

}  // namespace
}  // namespace acceltune::session_test
