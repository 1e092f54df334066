// The control channel between the nccl kernel and its rank processes: one TCP connection per
// rank, one JSON object per line, every read with a deadline. TCP rather than pipes so ranks
// that a launcher (mpirun) starts on other nodes reach the kernel the same way as local ones.
// Every connection first proves the session's secret, and the kernel proves it back
// (kernels/shared/control_auth.hpp, context "nccl-control"): the kernel draws one per session and
// hands it to its ranks in ACCELTUNE_NCCL_CONTROL_SECRET, so a process that merely reaches the
// port (it listens on every address across nodes) is refused, and every later message both ways
// carries a MAC over its per-direction counter: an altered, injected, replayed or reordered
// command or answer ends that rank's channel, and the measurement fails saying why.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <string>

#include "kernels/shared/control_auth.hpp"
#include "kernels/shared/socket_channel.hpp"
#include "tuner/expected.hpp"
#include "tuner/value.hpp"

namespace acceltune {

// One rank's control session (kernels/shared/control_auth.hpp: both sides proved the session's
// secret, every message carries a MAC over its per-direction counter); owns the connection.
class LineChannel {
 public:
  LineChannel() = default;
  explicit LineChannel(ControlChannel ch) : ch_(std::move(ch)) { ch_.own_fd(); }

  void close() { ch_.close(); }
  bool open() const { return ch_.open(); }
  int fd() const { return ch_.fd(); }
  ControlChannel& session() { return ch_; }

  Status send(const Json& j) {
    Status st = ch_.send(j);
    if (!st) return runtime_error("control channel send: {}", st.error().message);
    return {};
  }

  // A message that fails its check (altered, injected, replayed, out of order) ends the channel.
  Expected<Json> receive(double timeout_seconds) {
    auto j = ch_.recv(timeout_seconds);
    if (!j) return runtime_error("control channel: {}", j.error().message);
    return std::move(*j);
  }

 private:
  ControlChannel ch_;
};

// The variable that carries the session's secret from the kernel to its ranks.
inline constexpr const char* kNcclControlSecretVar = "ACCELTUNE_NCCL_CONTROL_SECRET";
inline constexpr const char* kNcclControlContext = "nccl-control";

// Accepts one connection and makes it prove `secret` within `timeout_seconds`: its first line is
// {"join": true} with the proof. A connection that does not prove it is closed, and `refused`
// says who and why (an empty channel then, not an error: the caller goes on waiting for ranks).
inline Expected<LineChannel> accept_rank(int listen_fd, const std::string& secret, double timeout_seconds,
                                         std::string* refused) {
  const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return runtime_error("accept on the ranks' control socket: {}", std::strerror(errno));
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  auto join = challenge_peer(fd, secret, kNcclControlContext, timeout_seconds);
  const bool joins = join && join->first.contains("join") && join->first["join"] == Json(true);
  if (!joins) {
    if (refused) {
      *refused = fmt::format("refused a connection to the ranks' control socket from {}: {}", remote_address(fd),
                             join ? std::string("no join") : join.error().message);
    }
    if (!join) (void)send_json_line(fd, Json{{"ok", false}, {"error", "refused: " + join.error().message}});
    ::close(fd);
    return LineChannel();
  }
  return LineChannel(std::move(join->channel));
}

// Connects to HOST:PORT (the kernel's listening socket), trying until the deadline, and proves
// the session's secret (from ACCELTUNE_NCCL_CONTROL_SECRET).
inline Expected<LineChannel> connect_control(const std::string& host, int port, double timeout_seconds);

inline Expected<LineChannel> join_control(const std::string& host, int port, double timeout_seconds) {
  const char* secret = std::getenv(kNcclControlSecretVar);
  if (!secret || !*secret) {
    return runtime_error("{} is not set: a rank proves the session's secret, which the kernel passes to the ranks it "
                         "starts (a launcher must forward it)",
                         kNcclControlSecretVar);
  }
  ACCELTUNE_TRY_ASSIGN(LineChannel raw, connect_control(host, port, timeout_seconds));
  ACCELTUNE_TRY_ASSIGN(ControlChannel ch, answer_challenge(raw.fd(), std::string(secret), kNcclControlContext,
                                                           Json{{"join", true}}, timeout_seconds));
  (void)raw.session().release_fd();  // now the session's
  return LineChannel(std::move(ch));
}

inline Expected<LineChannel> connect_control(const std::string& host, int port, double timeout_seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int g = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (g != 0) return runtime_error("cannot resolve control host '{}': {}", host, gai_strerror(g));
  std::string last = "timed out";
  for (;;) {
    for (addrinfo* a = res; a; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        ::freeaddrinfo(res);
        return LineChannel(ControlChannel::plain(fd));
      }
      last = std::strerror(errno);
      ::close(fd);
    }
    if (std::chrono::steady_clock::now() > until) break;
    ::usleep(50000);
  }
  ::freeaddrinfo(res);
  return runtime_error("cannot reach the control channel at {}:{}: {}", host, port, last);
}

}  // namespace acceltune
