// tcp-stream: a sender and a receiver moving a stream of non-zero bytes over TCP.
//
// Params: the link MTU (mtu), SO_SNDBUF / SO_RCVBUF (sndbuf, rcvbuf; 0 leaves the kernel's
// autotuning alone), parallel streams (streams, a thread each), the size of each write and read
// (write_size), TCP_NODELAY (nodelay), zero-copy send (zerocopy: none, msg_zerocopy, sendfile
// from a memfd), congestion control (congestion) and the offset of the buffers from page
// alignment (align).
//
// One run of N bytes: the sender moves N bytes split over the streams, each stream's receiver
// acknowledges its share with one byte on the same connection, and the run ends when every
// acknowledgement has arrived. Receivers count what they got; after timing, one extra run has
// the receiver compare each byte with the expected pattern at its offset.
//
// The far end is the "tcp-stream" handler of a control server (kernels/peer.hpp):
// - loopback (default): a server on threads of this process on 127.0.0.1; lo's MTU is not
//   changed, so a space's mtu is held at its default;
// - netns: two network namespaces this process creates and owns (kernels/netns.hpp), the
//   receivers' threads in one, the senders' in the other, the veth pair's MTU set per trial;
// - peer: `acceltune serve` on another host; an MTU changes only on links named by the space
//   ("link", this side) and by `serve --link` (the other side), and needs root on both.
//
// Control protocol (JSON lines; the client sends, the server answers each with {"ok": ...}):
//   hello {"kind": "tcp-stream", "version": 1}        -> link, link_mtu, congestion available
//   {"op": "setup", streams, rcvbuf, congestion, write_size, align, mtu?}
//        -> {"port": P}; the client connects `streams` data connections to P, each sending its
//           4-byte stream index first -> {"rcvbuf_bytes", "congestion"}
//   {"op": "size", "shares": [...], "offsets": [...]}  -> receivers expect these shares per run
//   {"op": "validate"} -> armed; the next run is compared byte by byte -> {"mismatches",
//        "first_mismatch", "received_bytes" (since the size op or the last validation)}
//   {"op": "bye"}
#include <fcntl.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "kernels/tcp/netns.hpp"
#include "kernels/tcp/peer.hpp"
#include "kernels/shared/team.hpp"
#include "tuner/kernel.hpp"

namespace acceltune {
namespace {

// Every wait on a data socket during a measurement: below any trial watchdog.
constexpr double kIoTimeout = 4.0;
// Control replies (a validation run included).
constexpr double kControlTimeout = 8.0;
constexpr const char* kNetnsEnv = "ACCELTUNE_TCP_NETNS";
constexpr size_t kPage = 4096;

inline char pattern_byte(uint64_t i) { return static_cast<char>(((i * 2654435761u) >> 7) % 255 + 1); }

void fill_pattern(char* p, uint64_t first_offset, size_t n) {
  for (size_t i = 0; i < n; ++i) p[i] = pattern_byte(first_offset + i);
}

std::vector<std::string> available_congestion() {
  std::ifstream f("/proc/sys/net/ipv4/tcp_available_congestion_control");
  std::vector<std::string> out;
  for (std::string w; f >> w;) out.push_back(w);
  return out;
}

// Congestion control modules of Linux: a name outside this list is a typo, not a missing module.
const std::set<std::string>& known_congestion() {
  static const std::set<std::string> k = {"reno",     "cubic", "bbr",      "bbr2",  "bbr3",     "bic",
                                          "dctcp",    "htcp",  "highspeed", "hybla", "illinois", "lp",
                                          "nv",       "scalable", "vegas",   "veno",  "westwood", "yeah",
                                          "cdg",      "prague"};
  return k;
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

// SO_SNDBUF / SO_RCVBUF; the FORCE variants (root) pass net.core.wmem_max / rmem_max, which is
// what the exported script raises them to.
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

Status send_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return runtime_error("the receiver took nothing for {:.0f} s", kIoTimeout);
      return runtime_error("send: {}", std::strerror(errno));
    }
    p += k;
    n -= static_cast<size_t>(k);
  }
  return {};
}

Status recv_all(int fd, void* data, size_t n, const char* what) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t k = ::recv(fd, p, n, 0);
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return runtime_error("no {} within {:.0f} s", what, kIoTimeout);
      return runtime_error("receiving the {}: {}", what, std::strerror(errno));
    }
    if (k == 0) return runtime_error("the far end closed the data connection while sending the {}", what);
    p += k;
    n -= static_cast<size_t>(k);
  }
  return {};
}

// A page-aligned anonymous mapping; data() is `align` bytes past the page boundary.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  AlignedBuffer(size_t bytes, size_t align) : align_(align) {
    length_ = (bytes + align + kPage - 1) / kPage * kPage + kPage;
    void* p = ::mmap(nullptr, length_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error(fmt::format("mmap of {} bytes failed: {}", length_, std::strerror(errno)));
    base_ = static_cast<char*>(p);
    std::memset(base_, 0, length_);  // first touch outside any timing
  }
  ~AlignedBuffer() {
    if (base_) ::munmap(base_, length_);
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  char* data() const { return base_ + align_; }

 private:
  char* base_ = nullptr;
  size_t length_ = 0, align_ = 0;
};

// ======================= the receiving side (the "tcp-stream" peer handler) =======================

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
            if (b[i] != pattern_byte(base + static_cast<uint64_t>(i))) {
              if (s.mismatches++ == 0) s.first_mismatch = base + static_cast<uint64_t>(i);
            }
          }
        }
        got += static_cast<uint64_t>(n);
        if (got >= share) break;
      }
      s.received += got;
      const char ack = 'A';
      if (!send_all(s.fd, &ack, 1)) {
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

// Handles one op of a control connection; false ends the connection.
bool handle_op(int ctrl, const Json& msg, const Json& serve_options, ReceiverSession& rs) {
  const std::string op = msg.value("op", "");
  if (op == "bye") return false;
  if (op == "setup") {
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
    if (msg.contains("mtu") && msg["mtu"].is_number_integer()) {
      const std::string link = serve_options.value("link", "");
      const int mtu = msg["mtu"].get<int>();
      if (link.empty()) {
        (void)send_json_line(ctrl, not_ok(fmt::format("the server was started without --link, so it cannot set MTU {}",
                                                      mtu)));
        return true;
      }
      Status st = set_link_mtu("", link, mtu);
      if (!st) {
        (void)send_json_line(ctrl, not_ok(fmt::format("server: {}", st.error().message)));
        return true;
      }
    }
    int port = 0;
    const auto have = available_congestion();
    auto lfd = listen_tcp(local_address(ctrl), 0, &port, [&](int fd) -> Status {
      ACCELTUNE_TRY(set_buffer(fd, false, rcvbuf));
      // Only the sender's congestion control shapes the stream; the receiver's is set when
      // this host has it, for symmetry.
      if (std::find(have.begin(), have.end(), cc) != have.end()) (void)set_congestion(fd, cc);
      return {};
    });
    if (!lfd) {
      (void)send_json_line(ctrl, not_ok(lfd.error().message));
      return true;
    }
    if (!send_json_line(ctrl, ok(Json{{"port", port}}))) {
      ::close(*lfd);
      return false;
    }
    std::vector<int> fds(static_cast<size_t>(streams), -1);
    std::string err;
    for (int i = 0; i < streams && err.empty(); ++i) {
      auto fd = accept_tcp(*lfd, kIoTimeout);
      if (!fd) {
        err = fd.error().message;
        break;
      }
      set_timeouts(*fd, kIoTimeout, kIoTimeout);
      uint32_t index = 0;
      Status st = recv_all(*fd, &index, sizeof index, "stream index");
      if (!st || index >= static_cast<uint32_t>(streams) || fds[index] >= 0) {
        ::close(*fd);
        err = st ? "a data connection sent a bad stream index" : st.error().message;
        break;
      }
      const int one = 1;
      ::setsockopt(*fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // the 1-byte acknowledgements
      set_timeouts(*fd, kIoTimeout, 0.5);
      fds[index] = *fd;
    }
    ::close(*lfd);
    if (!err.empty()) {
      for (int fd : fds) {
        if (fd >= 0) ::close(fd);
      }
      (void)send_json_line(ctrl, not_ok(fmt::format("server: {}", err)));
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
    return send_json_line(ctrl, ok(Json{{"rcvbuf_bytes", get_int_opt(fd0, SOL_SOCKET, SO_RCVBUF)},
                                        {"congestion", get_congestion(fd0)}}))
        .ok();
  }
  if (op == "size") {
    const auto shares = msg.value("shares", std::vector<uint64_t>{});
    const auto offsets = msg.value("offsets", std::vector<uint64_t>{});
    if (shares.size() != rs.streams.size() || offsets.size() != shares.size()) {
      return send_json_line(ctrl, not_ok("size: one share and offset per stream expected")).ok();
    }
    for (size_t i = 0; i < shares.size(); ++i) {
      rs.streams[i]->share = shares[i];
      rs.streams[i]->offset = offsets[i];
      rs.streams[i]->received = 0;
    }
    return send_json_line(ctrl, ok()).ok();
  }
  if (op == "validate") {
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
    if (!send_json_line(ctrl, ok())) return false;
    std::unique_lock<std::mutex> l(rs.mu);
    const bool done = rs.cv.wait_for(l, std::chrono::duration<double>(kControlTimeout - 1.0),
                                     [&] { return rs.validated >= active || !rs.error.empty(); });
    rs.armed = false;
    if (!rs.error.empty()) return send_json_line(ctrl, not_ok("server: " + rs.error)).ok();
    if (!done) return send_json_line(ctrl, not_ok("server: the validation run did not complete")).ok();
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
    return send_json_line(ctrl, r).ok();
  }
  return send_json_line(ctrl, not_ok(fmt::format("unknown op '{}'", op))).ok();
}

void serve_tcp_stream(int ctrl, const Json& hello, const Json& serve_options) {
  (void)hello;
  const std::string link = serve_options.value("link", "");
  Json info = ok(Json{{"version", 1}, {"congestion", available_congestion()}, {"link", link},
                      {"may_set_mtu", !link.empty() && may_manage_netns()}});
  if (!link.empty()) {
    auto mtu = get_link_mtu("", link);
    info["link_mtu"] = mtu ? Json(*mtu) : Json(nullptr);
  }
  if (!send_json_line(ctrl, info)) return;
  ReceiverSession rs;
  while (true) {
    // Idle between measurements for as long as the client likes; a closed connection ends it.
    pollfd p{ctrl, POLLIN, 0};
    const int n = ::poll(&p, 1, 1000);
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    auto msg = recv_json_line(ctrl, kControlTimeout);
    if (!msg) break;
    if (!handle_op(ctrl, *msg, serve_options, rs)) break;
  }
}

ACCELTUNE_REGISTER(PeerHandler, "tcp-stream",
                   (PeerHandler{"the receiving end of tcp-stream", serve_tcp_stream}))

// ======================= the sending side (the kernel) =======================

enum class Zerocopy { none, msg_zerocopy, sendfile };

struct Settings {
  int mtu = 1500;
  int64_t sndbuf = 0, rcvbuf = 0;
  int streams = 1;
  int64_t write_size = 128 << 10;
  bool nodelay = false;
  Zerocopy zerocopy = Zerocopy::none;
  std::string congestion = "cubic";
  int64_t align = 0;

  // What the data connections depend on; a change means new connections.
  auto connection_key() const {
    return std::make_tuple(mtu, sndbuf, rcvbuf, streams, write_size, nodelay, zerocopy, congestion, align);
  }
};

// One process-wide pair of namespaces, shared by the kernels of this process.
Expected<std::shared_ptr<NetnsPair>> shared_netns_pair() {
  static std::mutex mu;
  static std::weak_ptr<NetnsPair> pair;
  std::lock_guard<std::mutex> l(mu);
  if (auto p = pair.lock()) return p;
  ACCELTUNE_TRY_ASSIGN(std::unique_ptr<NetnsPair> created, NetnsPair::create());
  std::shared_ptr<NetnsPair> p(std::move(created));
  pair = p;
  return p;
}

bool netns_exists(const std::string& name) { return ::access(("/run/netns/" + name).c_str(), F_OK) == 0; }

class TcpStream final : public Kernel {
 public:
  ~TcpStream() override {
    release_placement();
    if (memfd_ >= 0) ::close(memfd_);
  }

  std::vector<std::string> native_params() const override {
    return {"mtu", "sndbuf", "rcvbuf", "streams", "write_size", "nodelay", "zerocopy", "congestion", "align"};
  }
  std::vector<std::string> placements() const override { return {"loopback", "netns", "peer"}; }

  Status attach(Space& space) override {
    const Json& x = space.extra();
    placement_ = x.contains("placement") && x["placement"].is_string() ? x["placement"].get<std::string>() : "loopback";
    ACCELTUNE_TRY(check_params(space));
    ::signal(SIGPIPE, SIG_IGN);  // sendfile to a closed connection

    std::vector<std::function<bool(const Config&)>> keep;
    std::vector<std::string> why;
    ACCELTUNE_TRY(restrict_congestion(space, keep, why));
    const auto mtu_k = space.param_index("mtu");
    const bool mtu_varies = mtu_k && space.params()[*mtu_k].values.size() > 1;
    if (placement_ == "loopback" && mtu_varies) {
      hold_mtu_at_default(space, *mtu_k, keep, why, "the loopback placement does not change lo's MTU; use --netns (root)");
    }

    if (placement_ == "netns") {
      if (const char* env = std::getenv(kNetnsEnv); env && *env) {
        // A worker of a study (or a script) hands us namespaces that exist already.
        ACCELTUNE_TRY_ASSIGN(ns_, NetnsPairInfo::from_text(env));
        for (const auto& n : {ns_.server, ns_.client}) {
          if (!netns_exists(n)) {
            return runtime_error("{}={} names network namespace '{}', which does not exist", kNetnsEnv, env, n);
          }
        }
      } else {
        ACCELTUNE_TRY_ASSIGN(pair_, shared_netns_pair());
        ns_ = pair_->info();
        // Trials in worker processes reuse these namespaces; they never create their own.
        ::setenv(kNetnsEnv, ns_.to_text().c_str(), 1);
        set_env_ = true;
      }
    } else if (placement_ == "peer") {
      if (!x.contains("peer") || !x["peer"].is_string()) {
        return input_error("{}: placement 'peer' needs a field 'peer' (HOST:PORT); use --peer", space.source());
      }
      ACCELTUNE_TRY_ASSIGN(auto hp, parse_host_port(x["peer"].get<std::string>()));
      peer_host_ = hp.first;
      peer_port_ = hp.second;
      local_link_ = x.value("link", "");
      // Connect now: an unreachable peer is one line before the study starts, not a failed trial each.
      ACCELTUNE_TRY(open_session());
      if (mtu_varies) {
        std::string missing;
        if (local_link_.empty()) missing = "the space names no \"link\" (this host's interface)";
        else if (!may_manage_netns()) missing = "changing this host's MTU needs root";
        else if (!hello_.value("may_set_mtu", false)) {
          missing = hello_.value("link", "").empty() ? "the server was started without 'acceltune serve --link IFACE'"
                                                     : "the server may not change its link's MTU (not root)";
        }
        if (missing.empty()) {
          peer_sets_mtu_ = true;
        } else {
          hold_mtu_at_default(space, *mtu_k, keep, why,
                              "with --peer an MTU changes only on links acceltune was pointed at (a \"link\" in the "
                              "space and 'acceltune serve --link IFACE', both as root), and " + missing);
        }
      }
    }
    if (!keep.empty()) {
      std::string what;
      for (const auto& w : why) what += (what.empty() ? "" : "; ") + w;
      space.set_membership(
          [keep](const Config& c) {
            for (const auto& f : keep) {
              if (!f(c)) return false;
            }
            return true;
          },
          what);
    }
    return {};
  }

  Measurement measure(const Space& space, const Config& config, uint64_t bytes, const MeasureSettings& settings,
                      const MeasureContext&) override {
    Measurement m;
    m.bytes = bytes;
    for (const auto& n : notes_) {
      std::fprintf(stderr, "%sacceltune: note: %s\n", ::isatty(STDERR_FILENO) ? "\r\033[K" : "", n.c_str());
    }
    notes_.clear();
    const Settings s = read(space, config);
    auto failed = [&](const Error& e) {
      close_session();  // a broken session is rebuilt by the next measurement
      m.state = State::failed;
      m.error = e.message;
      return m;
    };
    Status st = prepare(s, bytes);
    if (!st) return failed(st.error());

    // The timed region: every stream's share out, every acknowledgement back.
    failed_ = false;
    for (auto& d : data_) d.zc_sent = d.zc_completed = d.zc_copied = 0;
    runs_ = 0;
    const std::function<void(int)> stream_run = [this](int t) { run_stream(t); };
    Measurement timed = measure_timed(bytes, [&] {
      if (failed_.load(std::memory_order_relaxed)) return;
      team_->run(stream_run);
      ++runs_;
    }, settings);
    if (failed_) return failed(runtime_error("tcp-stream: {}", first_run_error()));
    m = std::move(timed);

    // Validation outside the timing: one more run that the receiver compares byte by byte.
    auto v = request(Json{{"op", "validate"}});
    if (!v) return failed(v.error());
    team_->run(stream_run);
    if (failed_) return failed(runtime_error("tcp-stream: validation run: {}", first_run_error()));
    auto r = recv_json_line(ctrl_, kControlTimeout);
    if (!r) return failed(r.error());
    if (!r->value("ok", false)) return failed(runtime_error("{}", r->value("error", std::string("validation failed"))));
    const uint64_t expected = (runs_ + 1) * bytes;
    const uint64_t received = r->value("received_bytes", uint64_t{0});
    const uint64_t mismatches = r->value("mismatches", uint64_t{0});

    Json& d = m.details;
    d["placement"] = placement_;
    if (placement_ == "netns") d["netns"] = ns_.server;
    d["mss_bytes"] = mss_;
    // The buffers after the runs: what autotuning grew them to, or what a fixed size became.
    d["sndbuf_bytes"] = get_int_opt(data_.front().fd, SOL_SOCKET, SO_SNDBUF);
    d["rcvbuf_bytes"] = r->value("rcvbuf_bytes", rcvbuf_effective_);
    d["link_mtu"] = link_mtu_;
    d["path_mtu"] = path_mtu_;
    d["congestion"] = congestion_in_use_;
    d["streams"] = s.streams;
    d["runs"] = runs_ + 1;
    d["received_bytes"] = received;
    if (s.zerocopy == Zerocopy::msg_zerocopy) {
      uint64_t done = 0, copied = 0;
      for (const auto& st2 : data_) {
        done += st2.zc_completed;
        copied += st2.zc_copied;
      }
      d["zerocopy_completions"] = done;
      d["zerocopy_copied"] = copied;  // completions whose data the kernel copied after all
    }
    if (received != expected) {
      m.state = State::invalid;
      m.error = fmt::format("the receiver counted {} bytes over {} runs of {}, expected {}", received, runs_ + 1, bytes,
                            expected);
    } else if (mismatches > 0) {
      m.state = State::invalid;
      m.error = fmt::format("the receiver found {} bytes that differ from what was sent (first at offset {})",
                            mismatches, r->value("first_mismatch", uint64_t{0}));
    }
    return m;
  }

 private:
  struct DataStream {
    int fd = -1;
    uint64_t share = 0, offset = 0;
    uint64_t zc_sent = 0, zc_completed = 0, zc_copied = 0;
    std::string error;
  };

  // ---- set-up ----

  Status check_params(const Space& space) const {
    for (const auto& p : space.params()) {
      if (!p.env.empty()) continue;
      for (const auto& v : p.values) {
        const std::string text = to_string(v);
        auto number = [&](double lo, double hi, const char* range) -> Status {
          if (!is_numeric(v) || std::holds_alternative<bool>(v) || to_double(v) < lo || to_double(v) > hi) {
            return input_error("{}: param '{}' value '{}' is out of range for tcp-stream ({})", space.source(), p.name,
                               text, range);
          }
          return {};
        };
        if (p.name == "mtu") ACCELTUNE_TRY(number(576, 65535, "mtu 576..65535"));
        else if (p.name == "sndbuf" || p.name == "rcvbuf") ACCELTUNE_TRY(number(0, 1 << 30, "0 (autotuning) .. 1G"));
        else if (p.name == "streams") ACCELTUNE_TRY(number(1, 128, "streams 1..128"));
        else if (p.name == "write_size") ACCELTUNE_TRY(number(1, 256 << 20, "write_size 1..256M"));
        else if (p.name == "align") ACCELTUNE_TRY(number(0, kPage - 1, "align 0..4095, the offset from a page"));
        else if (p.name == "nodelay") {
          if (p.kind != ParamKind::boolean) return input_error("{}: param 'nodelay' must be kind bool", space.source());
        } else if (p.name == "zerocopy") {
          if (text != "none" && text != "msg_zerocopy" && text != "sendfile") {
            return input_error("{}: param 'zerocopy' value '{}' is not none, msg_zerocopy or sendfile", space.source(),
                               text);
          }
        } else if (p.name == "congestion") {
          if (!known_congestion().count(text)) {
            const auto have = available_congestion();
            return input_error("{}: param 'congestion' value '{}' is not a TCP congestion control (this host has: {})",
                               space.source(), text, join_names(have));
          }
        }
      }
    }
    return {};
  }

  // Where the kernel cannot change the link's MTU, the mtu param keeps its default: the value
  // names the link as it is (details.link_mtu says what that is). Asking for another is refused.
  void hold_mtu_at_default(const Space& space, size_t k, std::vector<std::function<bool(const Config&)>>& keep,
                           std::vector<std::string>& why, const std::string& reason) {
    const Param& p = space.params()[k];
    const uint32_t d = static_cast<uint32_t>(p.default_index);
    keep.push_back([k, d](const Config& c) { return c.index[k] == d; });
    why.push_back(fmt::format("mtu is held at its default {}: {}", to_string(p.default_value()), reason));
    std::string others;
    for (size_t i = 0; i < p.values.size(); ++i) {
      if (i != p.default_index) others += (others.empty() ? "" : ", ") + to_string(p.values[i]);
    }
    notes_.push_back(fmt::format("tcp-stream over {}: param 'mtu' is held at its default {} ({} left out): {}",
                                 placement_, to_string(p.default_value()), others, reason));
  }

  // Congestion controls the space lists but this host lacks are left out, with one note;
  // the default must be there.
  Status restrict_congestion(const Space& space, std::vector<std::function<bool(const Config&)>>& keep,
                             std::vector<std::string>& why) {
    const auto k = space.param_index("congestion");
    if (!k || !space.params()[*k].env.empty()) return {};
    const Param& p = space.params()[*k];
    const auto have = available_congestion();
    std::vector<bool> ok_index;
    std::vector<std::string> missing;
    for (const auto& v : p.values) {
      const bool there = std::find(have.begin(), have.end(), to_string(v)) != have.end();
      ok_index.push_back(there);
      if (!there) missing.push_back(to_string(v));
    }
    // The space's default is set explicitly on every socket; say so when a plain socket here gets another.
    std::ifstream f("/proc/sys/net/ipv4/tcp_congestion_control");
    std::string host_default;
    f >> host_default;
    if (!host_default.empty() && host_default != to_string(p.default_value())) {
      notes_.push_back(fmt::format("tcp-stream: this host's default congestion control is {}, the space's default is {}; "
                                   "every socket sets its config's value, so trial 0 runs {}",
                                   host_default, to_string(p.default_value()), to_string(p.default_value())));
    }
    if (missing.empty()) return {};
    if (!ok_index[p.default_index]) {
      return input_error("{}: the default congestion control '{}' is not available on this host (it has: {})",
                         space.source(), to_string(p.default_value()), join_names(have));
    }
    const size_t idx = *k;
    keep.push_back([idx, ok_index](const Config& c) { return ok_index[c.index[idx]]; });
    why.push_back(fmt::format("congestion control not available here ({})", join_names(missing)));
    notes_.push_back(fmt::format("tcp-stream: congestion control {} not available on this host (it has: {}); configs "
                                 "using {} are left out",
                                 join_names(missing), join_names(have), missing.size() == 1 ? "it" : "them"));
    return {};
  }

  static Settings read(const Space& space, const Config& c) {
    Settings s;
    for (size_t k = 0; k < space.params().size(); ++k) {
      const Param& p = space.params()[k];
      if (!p.env.empty()) continue;
      const Value& v = space.value(c, k);
      if (p.name == "mtu") s.mtu = static_cast<int>(to_double(v));
      else if (p.name == "sndbuf") s.sndbuf = static_cast<int64_t>(to_double(v));
      else if (p.name == "rcvbuf") s.rcvbuf = static_cast<int64_t>(to_double(v));
      else if (p.name == "streams") s.streams = static_cast<int>(to_double(v));
      else if (p.name == "write_size") s.write_size = static_cast<int64_t>(to_double(v));
      else if (p.name == "nodelay") s.nodelay = std::get<bool>(v);
      else if (p.name == "align") s.align = static_cast<int64_t>(to_double(v));
      else if (p.name == "congestion") s.congestion = to_string(v);
      else if (p.name == "zerocopy") {
        const std::string z = to_string(v);
        s.zerocopy = z == "msg_zerocopy" ? Zerocopy::msg_zerocopy : z == "sendfile" ? Zerocopy::sendfile : Zerocopy::none;
      }
    }
    return s;
  }

  // The control connection, and for loopback and netns the in-process server it talks to.
  Status open_session() {
    if (ctrl_ >= 0) return {};
    if (placement_ == "loopback" && !server_) {
      ACCELTUNE_TRY_ASSIGN(server_, PeerServer::start("127.0.0.1", 0, Json::object()));
      server_host_ = "127.0.0.1";
    } else if (placement_ == "netns" && !server_) {
      ACCELTUNE_TRY_ASSIGN(server_, PeerServer::start(ns_.server_addr, 0, Json::object(), ns_.server));
      server_host_ = ns_.server_addr;
    } else if (placement_ == "peer") {
      server_host_ = peer_host_;
    }
    const int port = server_ ? server_->port() : peer_port_;
    Expected<int> fd = runtime_error("not connected");
    ACCELTUNE_TRY(run_in_netns(client_netns(), [&] { fd = connect_tcp(server_host_, port, kControlTimeout); }));
    if (!fd) return fd.error();
    ctrl_ = *fd;
    const int one = 1;
    ::setsockopt(ctrl_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    set_timeouts(ctrl_, kControlTimeout, kControlTimeout);
    auto hello = request(Json{{"kind", "tcp-stream"}, {"version", 1}});
    if (!hello) {
      close_session();
      return hello.error();
    }
    hello_ = *hello;
    return {};
  }

  std::string client_netns() const { return placement_ == "netns" ? ns_.client : ""; }

  // Sends one control line and waits for its {"ok": true} answer.
  Expected<Json> request(const Json& msg) {
    ACCELTUNE_TRY(send_json_line(ctrl_, msg));
    ACCELTUNE_TRY_ASSIGN(Json r, recv_json_line(ctrl_, kControlTimeout));
    if (!r.value("ok", false)) {
      return runtime_error("{}", r.value("error", fmt::format("the far end refused '{}'", msg.value("op", "hello"))));
    }
    return r;
  }

  void close_data() {
    for (auto& d : data_) {
      if (d.fd >= 0) ::close(d.fd);
    }
    data_.clear();
    connected_.reset();
    sized_bytes_ = 0;
  }

  void close_session() {
    close_data();
    if (ctrl_ >= 0) {
      (void)send_json_line(ctrl_, Json{{"op", "bye"}});
      ::close(ctrl_);
      ctrl_ = -1;
    }
    applied_mtu_ = 0;
  }

  void release_placement() {
    close_session();
    server_.reset();
    if (set_env_) {
      ::unsetenv(kNetnsEnv);
      set_env_ = false;
    }
    pair_.reset();
  }

  Status apply_mtu(const Settings& s) {
    if (applied_mtu_ == s.mtu) return {};
    if (placement_ == "netns") {
      // Both ends; SIOCSIFMTU with the current value is a no-op, so only changes cost anything.
      ACCELTUNE_TRY(set_link_mtu(ns_.server, ns_.server_link, s.mtu));
      ACCELTUNE_TRY(set_link_mtu(ns_.client, ns_.client_link, s.mtu));
    } else if (placement_ == "peer" && peer_sets_mtu_) {
      ACCELTUNE_TRY(set_link_mtu("", local_link_, s.mtu));  // the server sets its side in setup
    }
    applied_mtu_ = s.mtu;
    return {};
  }

  Status prepare(const Settings& s, uint64_t bytes) {
    ACCELTUNE_TRY(open_session());
    ACCELTUNE_TRY(apply_mtu(s));
    if (!connected_ || *connected_ != s.connection_key()) ACCELTUNE_TRY(connect_streams(s));
    if (sized_bytes_ != bytes) ACCELTUNE_TRY(set_size(s, bytes));
    return {};
  }

  Status connect_streams(const Settings& s) {
    close_data();
    Json setup{{"op", "setup"},           {"streams", s.streams}, {"rcvbuf", s.rcvbuf},
               {"congestion", s.congestion}, {"write_size", s.write_size}, {"align", s.align}};
    if (peer_sets_mtu_) setup["mtu"] = s.mtu;
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
        const uint32_t index = static_cast<uint32_t>(i);
        st = send_all(*fd, &index, sizeof index);
      }
    });
    if (!in_ns) st = in_ns;
    if (!st) {
      close_data();
      // The server gives up on its side once its accept times out; the session is rebuilt.
      close_session();
      return st;
    }
    ACCELTUNE_TRY_ASSIGN(Json r2, recv_json_line(ctrl_, kControlTimeout));
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

  Status set_size(const Settings& s, uint64_t bytes) {
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

  // ---- the timed run of one stream ----

  void stream_failed(DataStream& d, std::string e) {
    if (d.error.empty()) d.error = std::move(e);
    failed_ = true;
  }

  std::string first_run_error() const {
    for (const auto& d : data_) {
      if (!d.error.empty()) return d.error;
    }
    return "a stream failed";
  }

  // Takes zero-copy completions off the error queue; waits for all when `all`.
  bool drain_zerocopy(DataStream& d, bool all) {
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

  void run_stream(int t) {
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
    Status st = recv_all(d.fd, &ack, 1, "acknowledgement");
    if (!st) return stream_failed(d, fmt::format("stream {}: {}", t, st.error().message));
    if (settings_.zerocopy == Zerocopy::msg_zerocopy) (void)drain_zerocopy(d, true);
  }

  std::string placement_ = "loopback";
  std::vector<std::string> notes_;
  // netns
  std::shared_ptr<NetnsPair> pair_;
  NetnsPairInfo ns_;
  bool set_env_ = false;
  // peer
  std::string peer_host_, local_link_;
  int peer_port_ = 0;
  bool peer_sets_mtu_ = false;
  // the session
  std::unique_ptr<PeerServer> server_;
  std::string server_host_;
  int ctrl_ = -1;
  Json hello_ = Json::object();
  int applied_mtu_ = 0;
  std::optional<decltype(Settings{}.connection_key())> connected_;
  Settings settings_;
  std::vector<DataStream> data_;
  std::unique_ptr<Team> team_;
  uint64_t sized_bytes_ = 0;
  std::unique_ptr<AlignedBuffer> send_buf_;
  int memfd_ = -1;
  std::atomic<bool> failed_{false};
  uint64_t runs_ = 0;
  // observations of the current connections
  int mss_ = 0, rcvbuf_effective_ = 0, link_mtu_ = 0, path_mtu_ = 0;
  std::string congestion_in_use_;
};

}  // namespace

ACCELTUNE_REGISTER_KERNEL("tcp-stream",
                          "a TCP stream between two ends (MTU, socket buffers, streams, write size, nodelay, "
                          "zero-copy, congestion control, alignment); loopback, --netns or --peer",
                          TcpStream)

}  // namespace acceltune
