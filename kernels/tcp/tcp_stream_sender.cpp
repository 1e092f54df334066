// tcp-stream's sending side, the members of TcpStream (tcp_stream.hpp) that talk to the far end:
// the control session (the in-process server for loopback and netns, `acceltune serve` for peer),
// the link MTU, the data connections, the pattern to send (a buffer, or a memfd for sendfile) and
// the timed run of one stream with send, MSG_ZEROCOPY (and its completions) or sendfile.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "kernels/shared/control_auth.hpp"
#include "kernels/tcp/tcp_stream.hpp"

namespace acceltune::tcp_stream {

Status TcpStream::open_session() {
  if (ctrl_.open()) return {};
  // This host's own server proves a secret of this kernel's; a peer's, the configured one.
  std::optional<std::string> secret;
  if (placement_ == "peer") {
    ACCELTUNE_TRY_ASSIGN(secret, configured_secret());
  } else {
    if (local_secret_.empty()) local_secret_ = random_hex();
    secret = local_secret_;
  }
  if (placement_ == "loopback" && !server_) {
    ACCELTUNE_TRY_ASSIGN(server_, PeerServer::start("127.0.0.1", 0, Json::object(), "", secret));
    server_host_ = "127.0.0.1";
  } else if (placement_ == "netns" && !server_) {
    ACCELTUNE_TRY_ASSIGN(server_, PeerServer::start(ns_.server_addr, 0, Json::object(), ns_.server, secret));
    server_host_ = ns_.server_addr;
  } else if (placement_ == "peer") {
    server_host_ = peer_host_;
  }
  const int port = server_ ? server_->port() : peer_port_;
  Expected<ControlChannel> ch = runtime_error("not connected");
  ACCELTUNE_TRY(run_in_netns(client_netns(), [&] {
    ch = connect_peer(server_host_, port, secret, Json{{"kind", "tcp-stream"}, {"version", 1}}, kControlTimeout);
  }));
  if (!ch) return ch.error();
  ctrl_ = std::move(*ch);
  const int one = 1;
  ::setsockopt(ctrl_.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  set_timeouts(ctrl_.fd(), kControlTimeout, kControlTimeout);
  auto hello = ctrl_.recv(kControlTimeout);
  if (hello && !hello->value("ok", false)) {
    hello = runtime_error("{}", hello->value("error", std::string("the far end refused the hello")));
  }
  if (!hello) {
    close_session();
    return hello.error();
  }
  hello_ = *hello;
  return {};
}

Expected<Json> TcpStream::request(const Json& msg) {
  ACCELTUNE_TRY(ctrl_.send(msg));
  ACCELTUNE_TRY_ASSIGN(Json r, ctrl_.recv(kControlTimeout));
  if (!r.value("ok", false)) {
    return runtime_error("{}", r.value("error", fmt::format("the far end refused '{}'", msg.value("op", "hello"))));
  }
  return r;
}

void TcpStream::close_data() {
  for (auto& d : data_) {
    if (d.fd >= 0) ::close(d.fd);
  }
  data_.clear();
  connected_.reset();
  sized_bytes_ = 0;
}

void TcpStream::close_session() {
  close_data();
  if (ctrl_.open()) {
    if (ctrl_.broken().empty()) (void)ctrl_.send(Json{{"op", "bye"}});
    ctrl_.close();
  }
  applied_mtu_ = 0;
}

Status TcpStream::apply_mtu(const Settings& s) {
  if (applied_mtu_ == s.mtu) return {};
  if (placement_ == "netns") {
    // Both ends; SIOCSIFMTU with the current value is a no-op, so only changes cost anything.
    ACCELTUNE_TRY(set_link_mtu(ns_.server, ns_.server_link, s.mtu));
    ACCELTUNE_TRY(set_link_mtu(ns_.client, ns_.client_link, s.mtu));
  } else if (placement_ == "peer" && peer_sets_mtu_) {
    // Only an MTU the far end allows (serve --mtu): this side's link is not touched otherwise.
    const Json allowed = hello_.value("mtus", Json::array());
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), Json(s.mtu)) == allowed.end()) {
      return runtime_error("the far end allows MTU {} on its link (serve --mtu), not {}", allowed.dump(), s.mtu);
    }
    ACCELTUNE_TRY(set_link_mtu("", local_link_, s.mtu));  // the server sets its side in setup
  }
  applied_mtu_ = s.mtu;
  return {};
}

Status TcpStream::prepare(const Settings& s, uint64_t bytes) {
  ACCELTUNE_TRY(open_session());
  ACCELTUNE_TRY(apply_mtu(s));
  if (!connected_ || *connected_ != s.connection_key()) ACCELTUNE_TRY(connect_streams(s));
  if (sized_bytes_ != bytes) ACCELTUNE_TRY(set_size(s, bytes));
  return {};
}

Status TcpStream::connect_streams(const Settings& s) {
  close_data();
  Json setup{{"op", "setup"},           {"streams", s.streams}, {"rcvbuf", s.rcvbuf},
             {"congestion", s.congestion}, {"write_size", s.write_size}, {"align", s.align}};
  if (peer_sets_mtu_) setup["mtu"] = s.mtu;
  // The data connections prove they belong to this session and this setup.
  const uint64_t setup_seq = ctrl_.sent();
  ACCELTUNE_TRY_ASSIGN(Json r, request(setup));
  const int port = r.value("port", 0);
  data_.resize(static_cast<size_t>(s.streams));
  Status st;
  Status in_ns = run_in_netns(client_netns(), [&] {
    for (int i = 0; i < s.streams && st; ++i) {
      auto fd = connect_tcp(server_host_, port, kIoTimeout, [&](int sock) -> Status {
        ACCELTUNE_TRY(set_buffer(sock, true, s.sndbuf));
        const int on = 1;
        if (s.nodelay) ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        if (s.zerocopy == Zerocopy::msg_zerocopy && ::setsockopt(sock, SOL_SOCKET, SO_ZEROCOPY, &on, sizeof on) != 0) {
          return runtime_error("SO_ZEROCOPY: {}", std::strerror(errno));
        }
        return set_congestion(sock, s.congestion);
      });
      if (!fd) {
        st = fd.error();
        break;
      }
      data_[static_cast<size_t>(i)].fd = *fd;
      set_timeouts(*fd, kIoTimeout, kIoTimeout);
      unsigned char first[4 + kDataTokenBytes];
      const uint32_t index = htonl(static_cast<uint32_t>(i));
      std::memcpy(first, &index, 4);
      const auto token = ctrl_.data_token(setup_seq, static_cast<uint32_t>(i));
      std::memcpy(first + 4, token.data(), token.size());
      st = send_all(*fd, first, sizeof first, "stream index and token");
    }
  });
  if (!in_ns) st = in_ns;
  if (!st) {
    close_data();
    // The server gives up on its side once its accept times out; the session is rebuilt.
    close_session();
    return st;
  }
  ACCELTUNE_TRY_ASSIGN(Json r2, ctrl_.recv(kControlTimeout));
  if (!r2.value("ok", false)) {
    close_data();
    return runtime_error("{}", r2.value("error", std::string("the far end refused the data connections")));
  }
  rcvbuf_effective_ = r2.value("rcvbuf_bytes", 0);
  const int fd0 = data_.front().fd;
  mss_ = get_int_opt(fd0, IPPROTO_TCP, TCP_MAXSEG);
  path_mtu_ = get_int_opt(fd0, IPPROTO_IP, IP_MTU);
  congestion_in_use_ = get_congestion(fd0);
  if (placement_ == "netns") {
    auto lm = get_link_mtu(ns_.client, ns_.client_link);
    link_mtu_ = lm ? *lm : -1;
  } else if (placement_ == "loopback") {
    auto lm = get_link_mtu("", "lo");
    link_mtu_ = lm ? *lm : -1;
  } else {
    auto lm = local_link_.empty() ? Expected<int>(runtime_error("no link")) : get_link_mtu("", local_link_);
    link_mtu_ = lm ? *lm : path_mtu_;
  }
  if (!team_ || team_->size() != s.streams) {
    team_.reset();
    team_ = std::make_unique<Team>(s.streams);
  }
  settings_ = s;
  connected_ = s.connection_key();
  return {};
}

Status TcpStream::set_size(const Settings& s, uint64_t bytes) {
  const size_t n = data_.size();
  const uint64_t share = bytes / n / kPage * kPage;
  Json shares = Json::array(), offsets = Json::array();
  for (size_t i = 0; i < n; ++i) {
    data_[i].offset = share * i;
    data_[i].share = i + 1 == n ? bytes - share * i : share;
    shares.push_back(data_[i].share);
    offsets.push_back(data_[i].offset);
  }
  ACCELTUNE_TRY(request(Json{{"op", "size"}, {"shares", shares}, {"offsets", offsets}}));
  // The sender's bytes: a buffer, or for sendfile a memfd, holding the pattern.
  const size_t align = static_cast<size_t>(s.align);
  if (s.zerocopy == Zerocopy::sendfile) {
    send_buf_.reset();
    if (memfd_ >= 0) ::close(memfd_);
    memfd_ = ::memfd_create("acceltune-tcp-stream", MFD_CLOEXEC);
    if (memfd_ < 0) return runtime_error("memfd_create: {}", std::strerror(errno));
    AlignedBuffer tmp(std::min<uint64_t>(bytes, 16 << 20), 0);
    for (uint64_t off = 0; off < bytes;) {
      const size_t k = static_cast<size_t>(std::min<uint64_t>(bytes - off, 16 << 20));
      fill_pattern(tmp.data(), off, k);
      if (::pwrite(memfd_, tmp.data(), k, static_cast<off_t>(align + off)) != static_cast<ssize_t>(k)) {
        return runtime_error("writing the memfd: {}", std::strerror(errno));
      }
      off += k;
    }
  } else {
    if (memfd_ >= 0) ::close(memfd_);
    memfd_ = -1;
    send_buf_ = std::make_unique<AlignedBuffer>(bytes, align);
    fill_pattern(send_buf_->data(), 0, bytes);
  }
  sized_bytes_ = bytes;
  return {};
}

void TcpStream::stream_failed(DataStream& d, std::string e) {
  if (d.error.empty()) d.error = std::move(e);
  failed_ = true;
}

std::string TcpStream::first_run_error() const {
  for (const auto& d : data_) {
    if (!d.error.empty()) return d.error;
  }
  return "a stream failed";
}

bool TcpStream::drain_zerocopy(DataStream& d, bool all) {
  while (d.zc_completed < d.zc_sent) {
    pollfd p{d.fd, 0, 0};
    const int n = ::poll(&p, 1, all ? static_cast<int>(kIoTimeout * 1000) : 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      if (!all) return true;
      stream_failed(d, fmt::format("zero-copy completions missing after {:.0f} s", kIoTimeout));
      return false;
    }
    char control[128];
    msghdr msg{};
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t r = ::recvmsg(d.fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT);
    if (r < 0) {
      if (errno == EAGAIN || errno == EINTR) {
        if (!all) return true;
        continue;
      }
      stream_failed(d, fmt::format("reading zero-copy completions: {}", std::strerror(errno)));
      return false;
    }
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (!((c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR) ||
            (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR))) {
        continue;
      }
      sock_extended_err serr;
      std::memcpy(&serr, CMSG_DATA(c), sizeof serr);
      if (serr.ee_origin != SO_EE_ORIGIN_ZEROCOPY) continue;
      const uint64_t count = static_cast<uint32_t>(serr.ee_data - serr.ee_info) + 1ull;
      d.zc_completed += count;
      if (serr.ee_code & SO_EE_CODE_ZEROCOPY_COPIED) d.zc_copied += count;
    }
  }
  return true;
}

void TcpStream::run_stream(int t) {
  DataStream& d = data_[static_cast<size_t>(t)];
  if (d.share == 0 || failed_.load(std::memory_order_relaxed)) return;
  const size_t ws = static_cast<size_t>(settings_.write_size);
  uint64_t done = 0;
  while (done < d.share) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(ws, d.share - done));
    ssize_t n;
    switch (settings_.zerocopy) {
      case Zerocopy::sendfile: {
        off_t off = static_cast<off_t>(static_cast<uint64_t>(settings_.align) + d.offset + done);
        n = ::sendfile(d.fd, memfd_, &off, chunk);
        break;
      }
      case Zerocopy::msg_zerocopy:
        n = ::send(d.fd, send_buf_->data() + d.offset + done, chunk, MSG_ZEROCOPY | MSG_NOSIGNAL);
        if (n > 0) ++d.zc_sent;
        if (n < 0 && errno == ENOBUFS) {  // too many completions outstanding (optmem_max)
          if (!drain_zerocopy(d, false)) return;
          pollfd p{d.fd, 0, 0};
          ::poll(&p, 1, 10);
          continue;
        }
        break;
      default:
        n = ::send(d.fd, send_buf_->data() + d.offset + done, chunk, MSG_NOSIGNAL);
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return stream_failed(d, fmt::format("stream {}: the receiver took nothing for {:.0f} s", t, kIoTimeout));
      }
      return stream_failed(d, fmt::format("stream {}: {}: {}", t,
                                          settings_.zerocopy == Zerocopy::sendfile ? "sendfile" : "send",
                                          std::strerror(errno)));
    }
    if (n == 0) return stream_failed(d, fmt::format("stream {}: the connection closed", t));
    done += static_cast<uint64_t>(n);
  }
  char ack = 0;
  Status st = recv_all(d.fd, &ack, 1, kIoTimeout, "acknowledgement");
  if (!st) return stream_failed(d, fmt::format("stream {}: {}", t, st.error().message));
  if (settings_.zerocopy == Zerocopy::msg_zerocopy) (void)drain_zerocopy(d, true);
}

}  // namespace acceltune::tcp_stream
