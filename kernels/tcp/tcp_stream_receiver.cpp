// tcp-stream's receiving side: the "tcp-stream" handler of a control server (kernels/shared/peer.hpp),
// in `acceltune serve` or on threads of the kernel's own process. It answers the control ops
// (setup, size, validate, bye; the protocol is in tcp_stream.cpp), accepts the data connections,
// reads each stream on a thread of its own, acknowledges every run and, when armed, compares each
// byte with the pattern.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "kernels/shared/netns.hpp"
#include "kernels/shared/peer.hpp"
#include "kernels/tcp/tcp_stream_io.hpp"

namespace acceltune::tcp_stream {
namespace {

struct ReceiverSession {
  struct Stream {
    int fd = -1;
    std::thread thread;
    std::atomic<uint64_t> share{0}, offset{0};  // set by the control thread between runs
    std::atomic<uint64_t> received{0};  // since the last size op or validation
    uint64_t mismatches = 0;
    uint64_t first_mismatch = UINT64_MAX;
  };
  std::vector<std::unique_ptr<Stream>> streams;
  size_t read_size = 128 << 10;
  size_t align = 0;
  std::atomic<bool> stop{false};
  std::atomic<bool> armed{false};
  std::mutex mu;
  std::condition_variable cv;
  int validated = 0;
  std::string error;  // the first receiver failure
  uint64_t max_bytes = 0;           // serve's --max-session-bytes (0: no cap)
  std::atomic<uint64_t> total{0};   // bytes received in this session

  ~ReceiverSession() { close(); }

  void close() {
    stop = true;
    for (auto& s : streams) {
      if (s->fd >= 0) ::shutdown(s->fd, SHUT_RDWR);
    }
    for (auto& s : streams) {
      if (s->thread.joinable()) s->thread.join();
      if (s->fd >= 0) ::close(s->fd);
    }
    streams.clear();
    stop = false;
  }

  void fail(const std::string& e) {
    std::lock_guard<std::mutex> l(mu);
    if (error.empty()) error = e;
    cv.notify_all();
  }

  void receive(Stream& s) {
    AlignedBuffer buf(read_size, align);
    char* const b = buf.data();
    while (!stop) {
      // One run: the first bytes may take any time to come (the client is between
      // measurements); the rest of the run must keep flowing.
      uint64_t got = 0;
      bool validating = false;
      double stalled = 0;
      uint64_t share = 0, offset = 0;
      while (true) {
        // Before a run's first bytes the share may still change; at most one share is in flight
        // (the sender waits for the acknowledgement), so reading up to read_size is safe.
        const size_t want = got == 0 ? read_size : static_cast<size_t>(std::min<uint64_t>(read_size, share - got));
        const ssize_t n = ::recv(s.fd, b, want, 0);
        if (n < 0) {
          if (errno == EINTR) continue;
          if (errno == EAGAIN || errno == EWOULDBLOCK) {  // SO_RCVTIMEO of 0.5 s
            if (stop) return;
            if (got > 0 && (stalled += 0.5) > kIoTimeout) {
              fail(fmt::format("stream stalled mid-run after {} of {} bytes", got, share));
              return;
            }
            continue;
          }
          if (!stop) fail(fmt::format("receive: {}", std::strerror(errno)));
          return;
        }
        if (n == 0) return;  // the client closed the connection
        if (got == 0) {
          share = s.share;
          offset = s.offset;
          validating = armed.load();
          if (static_cast<uint64_t>(n) > share) {
            fail(fmt::format("{} bytes arrived for a share of {}", n, share));
            return;
          }
        }
        stalled = 0;
        if (validating) {
          const uint64_t base = offset + got;
          for (ssize_t i = 0; i < n; ++i) {
            if (static_cast<unsigned char>(b[i]) != pattern_byte(base + static_cast<uint64_t>(i))) {
              if (s.mismatches++ == 0) s.first_mismatch = base + static_cast<uint64_t>(i);
            }
          }
        }
        got += static_cast<uint64_t>(n);
        if (got >= share) break;
      }
      s.received += got;
      if (max_bytes > 0 && (total += got) > max_bytes) {
        fail(fmt::format("this session moved more than the server's --max-session-bytes {}", max_bytes));
        ::shutdown(s.fd, SHUT_RDWR);  // the sender's wait for the acknowledgement ends now
        return;
      }
      const char ack = 'A';
      if (!send_all(s.fd, &ack, 1, "acknowledgement")) {
        if (!stop) fail("cannot send the acknowledgement");
        return;
      }
      if (validating) {
        std::lock_guard<std::mutex> l(mu);
        ++validated;
        cv.notify_all();
      }
    }
  }
};

Json ok(Json j = Json::object()) {
  j["ok"] = true;
  return j;
}
Json not_ok(const std::string& e) { return Json{{"ok", false}, {"error", e}}; }

// The MTU a setup asks for, set when serve was started with its link and allows the value;
// otherwise why not ("" when set or not asked).
std::string set_mtu_if_asked(const Json& msg, const Json& serve_options) {
  if (!msg.contains("mtu") || !msg["mtu"].is_number_integer()) return "";
  const std::string link = serve_options.value("link", "");
  const int mtu = msg["mtu"].get<int>();
  if (link.empty()) return fmt::format("the server was started without --link, so it cannot set MTU {}", mtu);
  // Only the values serve was started with.
  const Json allowed = serve_options.value("mtus", Json::array());
  bool listed = false;
  std::string names;
  for (const auto& a : allowed) {
    listed = listed || a == Json(mtu);
    names += (names.empty() ? "" : ", ") + a.dump();
  }
  if (!listed) {
    return fmt::format("refusing MTU {} on {}: this serve allows {} (its --mtu)", mtu, link,
                       names.empty() ? "no change" : names);
  }
  Status st = set_link_mtu("", link, mtu);
  return st ? "" : fmt::format("server: {}", st.error().message);
}

// The setup's data connections (the setup being the session's message `setup_seq`), each placed by
// the index it sends first and admitted by its session token. A connection without the right
// token is refused and logged before a byte of it counts, and the wait goes on for the real ones.
// Why not all came ("" when they did).
std::string accept_streams(int lfd, int port, int streams, const ControlChannel& ctrl, uint64_t setup_seq,
                           const Json& serve_options, std::vector<int>& fds) {
  fds.assign(static_cast<size_t>(streams), -1);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(2 * kIoTimeout);
  for (int placed = 0; placed < streams;) {
    const double left = std::chrono::duration<double>(until - std::chrono::steady_clock::now()).count();
    if (left <= 0) return fmt::format("{} of {} data connections did not come", streams - placed, streams);
    // A client that gives up (closes its control connection) ends the wait.
    pollfd p[2] = {{lfd, POLLIN, 0}, {ctrl.fd(), POLLRDHUP, 0}};
    const int n = ::poll(p, 2, static_cast<int>(left * 1000) + 1);
    if (n < 0 && errno != EINTR) return fmt::format("poll: {}", std::strerror(errno));
    if (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR)) return "the client closed the control connection";
    if (n <= 0 || !(p[0].revents & POLLIN)) continue;
    auto fd = accept_tcp(lfd, 1.0);
    if (!fd) return fd.error().message;
    set_timeouts(*fd, kIoTimeout, kIoTimeout);
    unsigned char first[4 + kDataTokenBytes];
    Status st = recv_all(*fd, first, sizeof first, std::min(left, 2.0), "stream index and token");
    uint32_t index = 0;
    std::memcpy(&index, first, 4);
    index = ntohl(index);
    std::string why;
    if (!st) {
      why = "no session token (" + st.error().message + ")";
    } else if (index >= static_cast<uint32_t>(streams)) {
      why = fmt::format("a stream index {} of {}", index, streams);
    } else if (!ctrl.data_token_matches(setup_seq, index, first + 4)) {
      why = "a wrong session token (not this session's data connection)";
    } else if (fds[index] >= 0) {
      why = fmt::format("stream {} a second time", index);
    }
    if (!why.empty()) {
      serve_log(serve_options, fmt::format("refused a data connection from {} to tcp-stream port {}: {}",
                                           remote_address(*fd), port, why));
      ::close(*fd);
      continue;
    }
    const int one = 1;
    ::setsockopt(*fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // the 1-byte acknowledgements
    set_timeouts(*fd, kIoTimeout, 0.5);
    fds[index] = *fd;
    ++placed;
  }
  return "";
}

bool handle_setup(ControlChannel& ctrl, const Json& msg, const Json& serve_options, ReceiverSession& rs) {
  const uint64_t setup_seq = ctrl.received() - 1;  // this setup's sequence number: its connections prove it
  rs.close();
  {
    std::lock_guard<std::mutex> l(rs.mu);
    rs.error.clear();
  }
  const int streams = msg.value("streams", 1);
  const int64_t rcvbuf = msg.value("rcvbuf", int64_t{0});
  const std::string cc = msg.value("congestion", "");
  rs.read_size = static_cast<size_t>(std::max<int64_t>(1, msg.value("write_size", int64_t{128 << 10})));
  rs.align = static_cast<size_t>(msg.value("align", int64_t{0}));
  if (const std::string why = set_mtu_if_asked(msg, serve_options); !why.empty()) {
    (void)ctrl.send(not_ok(why));
    return true;
  }
  int port = 0;
  const auto have = available_congestion();
  auto lfd = listen_tcp(local_address(ctrl.fd()), 0, &port, [&](int fd) -> Status {
    ACCELTUNE_TRY(set_buffer(fd, false, rcvbuf));
    // Only the sender's congestion control shapes the stream; the receiver's is set when
    // this host has it, for symmetry.
    if (std::find(have.begin(), have.end(), cc) != have.end()) (void)set_congestion(fd, cc);
    return {};
  });
  if (!lfd) {
    (void)ctrl.send(not_ok(lfd.error().message));
    return true;
  }
  if (!ctrl.send(ok(Json{{"port", port}}))) {
    ::close(*lfd);
    return false;
  }
  std::vector<int> fds;
  const std::string err = accept_streams(*lfd, port, streams, ctrl, setup_seq, serve_options, fds);
  ::close(*lfd);
  if (!err.empty()) {
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
    (void)ctrl.send(not_ok(fmt::format("server: {}", err)));
    return true;
  }
  for (int fd : fds) {
    auto s = std::make_unique<ReceiverSession::Stream>();
    s->fd = fd;
    rs.streams.push_back(std::move(s));
  }
  for (auto& s : rs.streams) {
    ReceiverSession::Stream* sp = s.get();
    sp->thread = std::thread([&rs, sp] { rs.receive(*sp); });
  }
  const int fd0 = rs.streams.front()->fd;
  return ctrl.send(ok(Json{{"rcvbuf_bytes", get_int_opt(fd0, SOL_SOCKET, SO_RCVBUF)},
                                      {"congestion", get_congestion(fd0)}}))
      .ok();
}

bool handle_validate(ControlChannel& ctrl, ReceiverSession& rs) {
  int active = 0;
  for (auto& s : rs.streams) {
    s->mismatches = 0;
    s->first_mismatch = UINT64_MAX;
    active += s->share > 0 ? 1 : 0;
  }
  {
    std::lock_guard<std::mutex> l(rs.mu);
    rs.validated = 0;
  }
  rs.armed = true;
  if (!ctrl.send(ok())) return false;
  std::unique_lock<std::mutex> l(rs.mu);
  const bool done = rs.cv.wait_for(l, std::chrono::duration<double>(kControlTimeout - 1.0),
                                   [&] { return rs.validated >= active || !rs.error.empty(); });
  rs.armed = false;
  if (!rs.error.empty()) return ctrl.send(not_ok("server: " + rs.error)).ok();
  if (!done) return ctrl.send(not_ok("server: the validation run did not complete")).ok();
  uint64_t mismatches = 0, first = UINT64_MAX, received = 0;
  for (auto& s : rs.streams) {
    mismatches += s->mismatches;
    first = std::min(first, s->first_mismatch);
    received += s->received.exchange(0);  // each measurement ends with its validation run
  }
  Json r = ok(Json{{"mismatches", mismatches}, {"received_bytes", received}});
  // After the runs, so autotuning shows what it grew the buffer to.
  if (!rs.streams.empty()) r["rcvbuf_bytes"] = get_int_opt(rs.streams.front()->fd, SOL_SOCKET, SO_RCVBUF);
  if (mismatches) r["first_mismatch"] = first;
  return ctrl.send(r).ok();
}

// Handles one op of a control connection; false ends the connection.
bool handle_op(ControlChannel& ctrl, const Json& msg, const Json& serve_options, ReceiverSession& rs) {
  const std::string op = msg.value("op", "");
  if (op == "bye") return false;
  if (op == "setup") return handle_setup(ctrl, msg, serve_options, rs);
  if (op == "size") {
    const auto shares = msg.value("shares", std::vector<uint64_t>{});
    const auto offsets = msg.value("offsets", std::vector<uint64_t>{});
    if (shares.size() != rs.streams.size() || offsets.size() != shares.size()) {
      return ctrl.send(not_ok("size: one share and offset per stream expected")).ok();
    }
    for (size_t i = 0; i < shares.size(); ++i) {
      rs.streams[i]->share = shares[i];
      rs.streams[i]->offset = offsets[i];
      rs.streams[i]->received = 0;
    }
    return ctrl.send(ok()).ok();
  }
  if (op == "validate") return handle_validate(ctrl, rs);
  return ctrl.send(not_ok(fmt::format("unknown op '{}'", op))).ok();
}

void serve_tcp_stream(ControlChannel& ctrl, const Json& hello, const Json& serve_options) {
  (void)hello;
  const std::string link = serve_options.value("link", "");
  Json info = ok(Json{{"version", 1}, {"congestion", available_congestion()}, {"link", link},
                      {"may_set_mtu", !link.empty() && may_manage_netns()},
                      {"mtus", serve_options.value("mtus", Json::array())}});
  // The MTU of the link served on: the one named with --link, else the interface that holds this
  // connection's address (the client weighs its own MTU against it).
  const std::string served = link.empty() ? local_interface(ctrl.fd()) : link;
  if (!served.empty()) {
    auto mtu = get_link_mtu("", served);
    info["link_mtu"] = mtu ? Json(*mtu) : Json(nullptr);
  }
  if (!ctrl.send(info)) return;
  ReceiverSession rs;
  rs.max_bytes = serve_options.value("max_session_bytes", uint64_t{0});
  while (true) {
    // Idle between measurements for as long as the client likes; a closed connection ends it.
    pollfd p{ctrl.fd(), POLLIN, 0};
    const int n = ::poll(&p, 1, 1000);
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    auto msg = ctrl.recv(kControlTimeout);
    if (!msg) break;
    if (!handle_op(ctrl, *msg, serve_options, rs)) break;
  }
}

ACCELTUNE_REGISTER(PeerHandler, "tcp-stream",
                   (PeerHandler{"the receiving end of tcp-stream", serve_tcp_stream}))

}  // namespace
}  // namespace acceltune::tcp_stream
