// The control channel between the nccl kernel and its rank processes: one TCP connection per
// rank, one JSON object per line, every read with a deadline. TCP rather than pipes so ranks
// that a launcher (mpirun) starts on other nodes reach the kernel the same way as local ones.
// Every connection first proves the session's secret (kernels/shared/control_auth.hpp): the
// kernel draws one per session and hands it to its ranks in ACCELTUNE_NCCL_CONTROL_SECRET, so a
// process that merely reaches the port (it listens on every address across nodes) is refused.
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

class LineChannel {
 public:
  LineChannel() = default;
  explicit LineChannel(int fd) : fd_(fd) {}
  LineChannel(const LineChannel&) = delete;
  LineChannel& operator=(const LineChannel&) = delete;
  LineChannel(LineChannel&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  LineChannel& operator=(LineChannel&& o) noexcept {
    if (this != &o) {
      close();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  ~LineChannel() { close(); }

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool open() const { return fd_ >= 0; }
  int fd() const { return fd_; }

  // The framing is the shared socket channel's: one JSON object per line, a deadline on reads.
  Status send(const Json& j) {
    Status st = send_json_line(fd_, j);
    if (!st) return runtime_error("control channel send: {}", st.error().message);
    return {};
  }

  Expected<Json> receive(double timeout_seconds) {
    auto j = recv_json_line(fd_, timeout_seconds);
    if (!j) return runtime_error("control channel: {}", j.error().message);
    if (!j->is_object()) return runtime_error("control channel: malformed message '{}'", j->dump());
    return std::move(*j);
  }

 private:
  int fd_ = -1;
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
  LineChannel ch(fd);
  auto join = challenge_peer(fd, secret, kNcclControlContext, timeout_seconds);
  if (!join || !join->value("join", false)) {
    if (refused) {
      *refused = fmt::format("refused a connection to the ranks' control socket from {}: {}", remote_address(fd),
                             join ? std::string("no join") : join.error().message);
    }
    return LineChannel();
  }
  return ch;
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
  ACCELTUNE_TRY_ASSIGN(LineChannel ch, connect_control(host, port, timeout_seconds));
  ACCELTUNE_TRY(answer_challenge(ch.fd(), std::string(secret), kNcclControlContext, Json{{"join", true}},
                                 timeout_seconds));
  return ch;
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
        return LineChannel(fd);
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
