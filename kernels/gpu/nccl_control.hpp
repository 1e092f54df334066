// The control channel between the nccl kernel and its rank processes: one TCP connection per
// rank, one JSON object per line, every read with a deadline. TCP rather than pipes so ranks
// that a launcher (mpirun) starts on other nodes reach the kernel the same way as local ones.
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
#include <chrono>
#include <cstring>
#include <string>

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

// Connects to HOST:PORT (the kernel's listening socket), trying until the deadline.
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
