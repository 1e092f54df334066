// The socket channel the families share: JSON lines over a stream socket (the control connections
// of tcp-stream, ucx, nccl and the far end), whole buffers sent and received with a deadline,
// and TCP connect, listen and accept with errors that say what failed.
#include "kernels/shared/socket_channel.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

namespace acceltune {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point deadline_after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

double seconds_left(Clock::time_point deadline) {
  return std::chrono::duration<double>(deadline - Clock::now()).count();
}

int poll_ms(double seconds) {
  if (seconds <= 0) return 0;
  return static_cast<int>(std::min(seconds * 1000.0 + 1.0, 3600e3));
}

// Polls one fd for `events`, restarting on EINTR; 1 ready, 0 timed out, -1 error (errno set).
int wait_fd(int fd, short events, Clock::time_point deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, poll_ms(seconds_left(deadline)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n;
    return 1;
  }
}

std::string address_text(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = "";
  if (ss.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(ss).sin_addr, buf, sizeof buf);
  } else if (ss.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr, buf, sizeof buf);
  }
  return buf;
}

struct AddrInfo {
  addrinfo* list = nullptr;
  ~AddrInfo() {
    if (list) ::freeaddrinfo(list);
  }
};

}  // namespace

std::string host_port_text(const std::string& host, int port) {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

Status send_json_line(int fd, const Json& j) {
  // Text that came from the far end (an error quoting its bytes) may not be UTF-8: replaced, so a
  // reply never throws.
  const std::string line = j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::send(fd, line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return runtime_error("control connection: the far end stopped reading");
      return runtime_error("control connection: send failed: {}", std::strerror(errno));
    }
    off += static_cast<size_t>(n);
  }
  return {};
}

Expected<std::string> recv_line(int fd, double timeout_seconds, size_t max_bytes) {
  // Peeks, then takes at most the bytes up to the newline, so nothing after the line is
  // consumed: the socket needs no buffer of its own.
  const auto deadline = deadline_after(timeout_seconds);
  std::string line;
  char buf[65536];
  while (true) {
    const int r = wait_fd(fd, POLLIN, deadline);
    if (r < 0) return runtime_error("control connection: poll failed: {}", std::strerror(errno));
    if (r == 0) return runtime_error("control connection: no reply within {:.0f} s", timeout_seconds);
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return runtime_error("control connection: receive failed: {}", std::strerror(errno));
    }
    if (n == 0) return runtime_error("control connection closed by the far end");
    const void* nl = std::memchr(buf, '\n', static_cast<size_t>(n));
    const size_t take = nl ? static_cast<size_t>(static_cast<const char*>(nl) - buf) + 1 : static_cast<size_t>(n);
    const ssize_t got = ::recv(fd, buf, take, MSG_DONTWAIT);
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return runtime_error("control connection: receive failed: {}", std::strerror(errno));
    }
    line.append(buf, static_cast<size_t>(got));
    if (!line.empty() && line.back() == '\n') break;
    if (line.size() > max_bytes) {
      return runtime_error("control connection: a line longer than {} bytes", max_bytes);
    }
  }
  line.pop_back();
  return line;
}

Expected<Json> recv_json_line(int fd, double timeout_seconds, size_t max_bytes) {
  ACCELTUNE_TRY_ASSIGN(const std::string line, recv_line(fd, timeout_seconds, max_bytes));
  Json j = Json::parse(line, nullptr, false);
  if (j.is_discarded()) {
    return runtime_error("control connection: not a JSON line: '{}'", line.substr(0, 120));
  }
  return j;
}

Expected<std::pair<std::string, int>> parse_host_port(const std::string& text) {
  std::string host, port_text;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return input_error("'{}' is not HOST:PORT (an IPv6 address is written [ADDR]:PORT)", text);
    }
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || text.find(':') != colon) {
      return input_error("'{}' is not HOST:PORT (an IPv6 address is written [ADDR]:PORT)", text);
    }
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  if (host.empty()) return input_error("'{}' has no host before the port", text);
  int port = 0;
  bool digits = !port_text.empty() && port_text.size() <= 5;
  for (char c : port_text) digits = digits && c >= '0' && c <= '9';
  if (digits) port = std::stoi(port_text);
  if (!digits || port < 1 || port > 65535) {
    return input_error("'{}': the port '{}' is not a number from 1 to 65535", text, port_text);
  }
  return std::make_pair(host, port);
}

Expected<int> connect_tcp(const std::string& host, int port, double timeout_seconds) {
  return connect_tcp(host, port, timeout_seconds, nullptr);
}

Expected<int> connect_tcp(const std::string& host, int port, double timeout_seconds,
                          const std::function<Status(int fd)>& prepare) {
  const std::string where = host_port_text(host, port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  AddrInfo ai;
  const std::string port_text = std::to_string(port);
  const int gai = ::getaddrinfo(host.c_str(), port_text.c_str(), &hints, &ai.list);
  if (gai != 0) return runtime_error("cannot connect to {}: cannot resolve '{}': {}", where, host, ::gai_strerror(gai));
  const auto deadline = deadline_after(timeout_seconds);
  std::string last = "no address";
  for (addrinfo* a = ai.list; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      last = std::strerror(errno);
      continue;
    }
    if (prepare) {
      Status st = prepare(fd);
      if (!st) {
        ::close(fd);
        return st.error();
      }
    }
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    int err = rc == 0 ? 0 : errno;
    if (rc != 0 && err == EINPROGRESS) {
      const int r = wait_fd(fd, POLLOUT, deadline);
      if (r == 0) {
        ::close(fd);
        return runtime_error("cannot connect to {}: no answer within {:.0f} s; is 'acceltune serve' running there "
                             "and the port open?", where, timeout_seconds);
      }
      socklen_t len = sizeof err;
      if (r < 0 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    }
    if (err == 0) {
      const int flags = ::fcntl(fd, F_GETFL);
      ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
      return fd;
    }
    ::close(fd);
    last = std::strerror(err);
    if (err == ECONNREFUSED) {
      last = "connection refused; is 'acceltune serve' running there?";
    }
  }
  return runtime_error("cannot connect to {}: {}", where, last);
}

Expected<int> listen_tcp(const std::string& bind_addr, int port, int* bound_port) {
  return listen_tcp(bind_addr, port, bound_port, nullptr);
}

Expected<int> listen_tcp(const std::string& bind_addr, int port, int* bound_port,
                         const std::function<Status(int fd)>& prepare) {
  const std::string where = host_port_text(bind_addr, port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE | AI_NUMERICHOST;
  AddrInfo ai;
  const std::string port_text = std::to_string(port);
  const int gai = ::getaddrinfo(bind_addr.empty() ? nullptr : bind_addr.c_str(), port_text.c_str(), &hints, &ai.list);
  if (gai != 0) return input_error("cannot listen on {}: '{}' is not a numeric address", where, bind_addr);
  const int fd = ::socket(ai.list->ai_family, ai.list->ai_socktype | SOCK_CLOEXEC, ai.list->ai_protocol);
  if (fd < 0) return runtime_error("cannot listen on {}: socket: {}", where, std::strerror(errno));
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (prepare) {
    Status st = prepare(fd);
    if (!st) {
      ::close(fd);
      return st.error();
    }
  }
  if (::bind(fd, ai.list->ai_addr, ai.list->ai_addrlen) != 0) {
    const int e = errno;
    ::close(fd);
    if (e == EADDRINUSE) return runtime_error("cannot listen on {}: the port is in use (choose another with --port)", where);
    if (e == EADDRNOTAVAIL) return runtime_error("cannot listen on {}: no interface has that address", where);
    return runtime_error("cannot listen on {}: {}", where, std::strerror(e));
  }
  if (::listen(fd, 128) != 0) {
    const int e = errno;
    ::close(fd);
    return runtime_error("cannot listen on {}: {}", where, std::strerror(e));
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  if (bound_port) {
    *bound_port = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6&>(ss).sin6_port)
                                           : ntohs(reinterpret_cast<sockaddr_in&>(ss).sin_port);
  }
  return fd;
}

Expected<int> accept_tcp(int listen_fd, double timeout_seconds) {
  const auto deadline = deadline_after(timeout_seconds);
  while (true) {
    const int r = wait_fd(listen_fd, POLLIN, deadline);
    if (r < 0) return runtime_error("accept: poll failed: {}", std::strerror(errno));
    if (r == 0) return runtime_error("no data connection arrived within {:.0f} s", timeout_seconds);
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) return fd;
    if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) continue;
    return runtime_error("accept failed: {}", std::strerror(errno));
  }
}

std::string local_address(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
  return address_text(ss);
}

std::string remote_address(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
  return address_text(ss);
}

Status send_all(int fd, const void* data, size_t n, std::string_view what) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return runtime_error("the far end took none of the {} in time", what);
      return runtime_error("sending the {}: {}", what, std::strerror(errno));
    }
    if (k == 0) return runtime_error("the far end went away while taking the {}", what);
    p += k;
    n -= static_cast<size_t>(k);
  }
  return {};
}

Status recv_all(int fd, void* data, size_t n, double timeout_seconds, std::string_view what) {
  char* p = static_cast<char*>(data);
  const auto deadline = deadline_after(timeout_seconds);
  while (n > 0) {
    const int r = wait_fd(fd, POLLIN, deadline);
    if (r < 0) return runtime_error("waiting for the {}: {}", what, std::strerror(errno));
    if (r == 0) return runtime_error("no {} within {:.0f} s", what, timeout_seconds);
    const ssize_t k = ::recv(fd, p, n, MSG_DONTWAIT);
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return runtime_error("receiving the {}: {}", what, std::strerror(errno));
    }
    if (k == 0) return runtime_error("the far end closed the connection while sending the {}", what);
    p += k;
    n -= static_cast<size_t>(k);
  }
  return {};
}

namespace {

// The interface that holds this socket address; empty when none does.
std::string interface_holding(const sockaddr_storage& local) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "";
  std::string name;
  for (ifaddrs* a = list; a && name.empty(); a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != local.ss_family) continue;
    if (local.ss_family == AF_INET) {
      const auto* x = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
      const auto* y = reinterpret_cast<const sockaddr_in*>(&local);
      if (x->sin_addr.s_addr == y->sin_addr.s_addr) name = a->ifa_name;
    } else if (local.ss_family == AF_INET6) {
      const auto* x = reinterpret_cast<const sockaddr_in6*>(a->ifa_addr);
      const auto* y = reinterpret_cast<const sockaddr_in6*>(&local);
      if (std::memcmp(&x->sin6_addr, &y->sin6_addr, sizeof x->sin6_addr) == 0) name = a->ifa_name;
    }
  }
  ::freeifaddrs(list);
  return name;
}

}  // namespace

std::string interface_toward(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), "9", &hints, &res) != 0 || !res) return "";
  const int fd = ::socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  const bool routed = fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
                      ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(res);
  return routed ? interface_holding(local) : "";
}

std::string local_interface(int fd) {
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return "";
  return interface_holding(local);
}

}  // namespace acceltune
