// tcp-stream: the helpers both ends share (declared in tcp_stream_io.hpp): the congestion
// controls this host offers, socket timeouts, buffer sizes and congestion control, and sending
// or receiving a whole buffer within the data connections' deadline.
#include "kernels/tcp/tcp_stream_io.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cstdint>
#include <fstream>

namespace acceltune::tcp_stream {

std::vector<std::string> available_congestion() {
  std::ifstream f("/proc/sys/net/ipv4/tcp_available_congestion_control");
  std::vector<std::string> out;
  for (std::string w; f >> w;) out.push_back(w);
  return out;
}

void set_timeouts(int fd, double send_seconds, double recv_seconds) {
  auto tv = [](double s) {
    timeval t{};
    t.tv_sec = static_cast<time_t>(s);
    t.tv_usec = static_cast<suseconds_t>((s - static_cast<double>(t.tv_sec)) * 1e6);
    return t;
  };
  const timeval snd = tv(send_seconds), rcv = tv(recv_seconds);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof snd);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &rcv, sizeof rcv);
}

Status set_buffer(int fd, bool send_side, int64_t bytes) {
  if (bytes <= 0) return {};
  const int v = static_cast<int>(std::min<int64_t>(bytes, INT32_MAX / 2));
  if (::setsockopt(fd, SOL_SOCKET, send_side ? SO_SNDBUFFORCE : SO_RCVBUFFORCE, &v, sizeof v) == 0) return {};
  if (::setsockopt(fd, SOL_SOCKET, send_side ? SO_SNDBUF : SO_RCVBUF, &v, sizeof v) == 0) return {};
  return runtime_error("{}: {}", send_side ? "SO_SNDBUF" : "SO_RCVBUF", std::strerror(errno));
}

Status set_congestion(int fd, const std::string& cc) {
  if (cc.empty()) return {};
  if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc.data(), static_cast<socklen_t>(cc.size())) == 0) return {};
  if (errno == ENOENT) return runtime_error("congestion control '{}' is not available on this host", cc);
  if (errno == EPERM) {
    return runtime_error("congestion control '{}' is not in net.ipv4.tcp_allowed_congestion_control here (root may "
                         "use any)", cc);
  }
  return runtime_error("TCP_CONGESTION '{}': {}", cc, std::strerror(errno));
}

std::string get_congestion(int fd) {
  char buf[32] = "";
  socklen_t len = sizeof buf - 1;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, buf, &len) != 0) return "";
  buf[std::min<size_t>(len, sizeof buf - 1)] = 0;
  return buf;
}

int get_int_opt(int fd, int level, int name) {
  int v = 0;
  socklen_t len = sizeof v;
  if (::getsockopt(fd, level, name, &v, &len) != 0) return -1;
  return v;
}

}  // namespace acceltune::tcp_stream
