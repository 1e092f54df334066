// ucx: UCP tag send/receive and put (RMA) between two processes, bandwidth and latency.
//
// Operations (the space's "operation"):
//   tag_bw   a window of tagged sends per repetition, then the receiver's acknowledgement
//   tag_lat  ping-pong of tagged messages; the latency is half the round trip
//   put_bw   a window of puts into the responder's registered buffer, then a flush
//   put_lat  one put, then a flush that waits for its remote completion
// All report GB/s of the bytes moved (higher is better); latencies go to the details.
//
// Params are UCX's own environment variables (UCX_TLS, UCX_RNDV_THRESH, ...), which UCX reads
// once at ucp_init: the runner gives every trial a fresh worker process with them set, and the
// responder must see the same values, so on this host it is forked from the worker before any
// UCX call; with --peer the server's child sets the variables sent in the hello.
//
// This file is the initiator; the responder is in ucx_responder.cpp, and what both ends share (the
// UCP wrapper and the control stream) in ucx_ucp.hpp.
#include "kernels/ucx/ucx.hpp"
#include "kernels/shared/socket_channel.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ucp/api/ucp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kernels/ucx/ucx_ucp.hpp"
#include "tuner/delivery.hpp"
#include "tuner/kernel.hpp"

extern char** environ;

namespace acceltune::ucx {

ConnectPeer& connect_peer_hook() {
  static ConnectPeer hook = nullptr;
  return hook;
}

namespace {

// The responder and the connection to it, set up once per process at the first measurement.
struct Session {
  pid_t child = -1;
  ControlChannel control;  // owns the connection
  std::unique_ptr<Channel> ch;
  std::unique_ptr<Ucp> u;
  Json ep_info = Json::object();

  Session() = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() {
    if (ch) (void)ch->send(Json{{"cmd", "quit"}});
    u.reset();
    ch.reset();
    control.close();
    if (child > 0) {
      int status = 0;
      const auto deadline = clock_type::now() + std::chrono::seconds(2);
      while (::waitpid(child, &status, WNOHANG) == 0) {
        if (clock_type::now() > deadline) {
          ::kill(child, SIGKILL);
          ::waitpid(child, &status, 0);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
  }
};

// The responder on this host: forked before this process touches UCX, so it inherits the
// trial's environment and a clean library state.
Expected<int> fork_responder(pid_t* child) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return runtime_error("socketpair failed: {}", std::strerror(errno));
  }
  const pid_t parent = ::getpid();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(sv[0]);
    ::close(sv[1]);
    return runtime_error("fork of the UCX responder failed: {}", std::strerror(errno));
  }
  if (pid == 0) {
    // Dies with the worker; it stays in the worker's process group, which the watchdog kills.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    ::close(sv[0]);
    // Holding the worker's result pipe open would delay the runner's end-of-trial.
    if (sv[1] > 3) ::close_range(3, static_cast<unsigned>(sv[1] - 1), 0);
    ::close_range(static_cast<unsigned>(sv[1] + 1), ~0u, 0);
    ControlChannel control = ControlChannel::plain(sv[1]);  // a socketpair to this process's own child
    ::_exit(run_responder(control));
  }
  ::close(sv[1]);
  *child = pid;
  return sv[0];
}

// The UCX_* variables of this process: what the responder on another host must set.
Json ucx_environment() {
  Json env = Json::object();
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (kv.rfind("UCX_", 0) == 0 && eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

// What the endpoint uses, from UCX's own description of it: each lane's transport and device,
// and the protocol thresholds of tagged sends.
Json describe_ep(ucp_ep_h ep) {
  Json d = Json::object();
  char* text = nullptr;
  size_t len = 0;
  FILE* f = ::open_memstream(&text, &len);
  if (!f) return d;
  ucp_ep_print_info(ep, f);
  std::fclose(f);
  std::string all(text, len);
  std::free(text);
  std::set<std::string> transports;
  Json lanes = Json::array();
  std::string tag_send;
  size_t pos = 0;
  while (pos < all.size()) {
    size_t nl = all.find('\n', pos);
    if (nl == std::string::npos) nl = all.size();
    std::string line = all.substr(pos, nl - pos);
    pos = nl + 1;
    const auto first = line.find_first_not_of("# ");
    if (first == std::string::npos) continue;
    line = line.substr(first);
    if (line.rfind("lane[", 0) == 0) {
      // "lane[0]:  2:posix/memory.0 md[1] -> md[1]/posix/sysdev[255] am am_bw#0"
      const auto colon = line.find(':');
      const auto tl_start = line.find(':', line.find_first_not_of(' ', colon + 1));
      const auto tl_end = line.find(' ', tl_start);
      if (tl_start != std::string::npos) {
        std::string tl = line.substr(tl_start + 1, tl_end - tl_start - 1);
        const auto dot = tl.rfind('.');
        if (dot != std::string::npos && tl.find('/') != std::string::npos && dot > tl.find('/')) tl.erase(dot);
        transports.insert(tl);
      }
      std::string compact;
      for (char c : line) {
        if (c == ' ' && !compact.empty() && compact.back() == ' ') continue;
        compact += c;
      }
      lanes.push_back(compact);
    } else if (line.rfind("tag_send:", 0) == 0) {
      tag_send = line.substr(9);
      tag_send.erase(0, tag_send.find_first_not_of(' '));
    }
  }
  d["ucx_transports"] = Json(std::vector<std::string>(transports.begin(), transports.end()));
  d["ucx_lanes"] = lanes;
  if (!tag_send.empty()) d["ucx_tag_send"] = tag_send;
  return d;
}

class UcxKernel final : public Kernel {
 public:
  std::vector<std::string> placements() const override { return {"loopback", "peer"}; }

  Status attach(Space& space) override {
    auto op = op_from_string(space.operation().empty() ? "tag_bw" : space.operation());
    if (!op) return input_error("{}: {}", space.source(), op.error().message);
    op_ = *op;
    for (const auto& p : space.params()) {
      if (p.env.rfind("UCX_", 0) != 0) {
        return input_error("{}: param '{}' of kernel ucx must set a UCX_* variable (\"env\": \"UCX_...\"); the kernel "
                           "applies no params itself", space.source(), p.name);
      }
    }
    const Json& x = space.extra();
    if (x.contains("window")) {
      if (!x["window"].is_number_integer() || x["window"].get<int64_t>() < 1 || x["window"].get<int64_t>() > 1024) {
        return input_error("{}: field 'window' must be an integer 1..1024 (messages in flight per repetition)",
                           space.source());
      }
      window_ = x["window"].get<int>();
    }
    if (x.value("placement", std::string("loopback")) == "peer") {
      if (!x.contains("peer") || !x["peer"].is_string()) {
        return input_error("{}: placement 'peer' needs a field 'peer' (HOST:PORT); use --peer", space.source());
      }
      if (!connect_peer_hook()) {
        return input_error("{}: this acceltune was built without the peer server; the ucx kernel can only run "
                           "on this host (drop --peer)", space.source());
      }
      peer_ = x["peer"].get<std::string>();
    }
    // A space that pins UCX_TLS to TCP measures the network stack even on one host.
    tcp_only_ = false;
    for (const auto& p : space.params()) {
      if (p.env != "UCX_TLS") continue;
      tcp_only_ = true;
      for (const auto& v : p.values) {
        if (to_string(v) != "tcp") tcp_only_ = false;
      }
    }
    return {};
  }

  Json link() const override {
    if (!peer_.empty()) {
      auto hp = parse_host_port(peer_);
      const std::string iface = hp ? interface_toward(hp->first) : "";
      if (iface.empty()) return nullptr;
      if (iface == "lo") return Json{{"kind", "loopback"}};
      return Json{{"kind", "nic"}, {"interface", iface}};
    }
    // On one host UCX moves the bytes through shared memory unless TCP is pinned.
    return tcp_only_ ? Json{{"kind", "loopback"}} : Json{{"kind", "host-memory"}};
  }

  Measurement measure(const Space&, const Config&, uint64_t bytes, const MeasureSettings& settings,
                      const MeasureContext&) override {
    Measurement m;
    m.bytes = bytes;
    m.details["operation"] = op_name();
    if (!session_ && session_error_.empty()) {
      auto s = open_session();
      if (s) session_ = std::move(*s);
      else session_error_ = s.error().message;
    }
    if (!session_) {
      m.state = State::failed;
      m.error = session_error_;
      return m;
    }
    try {
      m = measure_on(*session_, bytes, settings);
    } catch (const std::exception& e) {
      // The two ends may disagree on where they are now; later sizes would measure nonsense.
      session_.reset();
      session_error_ = fmt::format("the UCX connection was dropped after an earlier failure: {}", e.what());
      m = Measurement{};
      m.bytes = bytes;
      m.state = State::failed;
      m.error = e.what();
      m.details["operation"] = op_name();
    }
    return m;
  }

 private:
  std::string op_name() const {
    switch (op_) {
      case Op::tag_bw: return "tag_bw";
      case Op::tag_lat: return "tag_lat";
      case Op::put_bw: return "put_bw";
      case Op::put_lat: return "put_lat";
    }
    return "";
  }

  Expected<std::unique_ptr<Session>> open_session() {
    auto s = std::make_unique<Session>();
    if (peer_.empty()) {
      ACCELTUNE_TRY_ASSIGN(const int fd, fork_responder(&s->child));
      s->control = ControlChannel::plain(fd);
      s->control.own_fd();
    } else {
      ACCELTUNE_TRY_ASSIGN(s->control, connect_peer_hook()(peer_, ucx_environment(), kStallSeconds * 2));
    }
    s->ch = std::make_unique<Channel>(s->control);
    ACCELTUNE_TRY_ASSIGN(s->u, open_ucp());
    ACCELTUNE_TRY_ASSIGN(Json hello, expect_reply(*s->ch, kStallSeconds * 2));
    if (!hello.contains("address")) return runtime_error("the UCX responder sent no worker address");
    ACCELTUNE_TRY(s->ch->send(Json{{"address", to_hex(s->u->address.data(), s->u->address.size())}}));
    ACCELTUNE_TRY(connect_ep(*s->u, from_hex(hello["address"].get<std::string>())));
    ACCELTUNE_TRY(expect_reply(*s->ch, kStallSeconds * 2));
    s->ep_info = describe_ep(s->u->ep);
    return s;
  }

  Measurement measure_on(Session& s, uint64_t bytes, const MeasureSettings& settings) {
    Ucp& u = *s.u;
    const int window = is_bw(op_) ? window_ : 1;
    Buffer src(bytes), back(bytes);
    fill_pattern(src.data, bytes);
    Json cmd = {{"cmd", "run"}, {"op", op_name()}, {"bytes", bytes}, {"window", window}};
    if (Status st = s.ch->send(cmd); !st) throw TransferError(st.error().message);
    auto reply = expect_reply(*s.ch, kStallSeconds * 2);
    if (!reply) throw TransferError(reply.error().message);

    ucp_rkey_h rkey = nullptr;
    uint64_t remote = 0;
    if (is_put(op_)) {
      const std::string packed = from_hex((*reply)["rkey"].get<std::string>());
      const ucs_status_t st = ucp_ep_rkey_unpack(u.ep, packed.data(), &rkey);
      if (st != UCS_OK) throw TransferError(fmt::format("ucp_ep_rkey_unpack failed{}: {}", tls_hint(), status_text(st)));
      remote = (*reply)["remote_address"].get<uint64_t>();
    }
    struct RkeyGuard {
      ucp_rkey_h k;
      ~RkeyGuard() {
        if (k) ucp_rkey_destroy(k);
      }
    } rkey_guard{rkey};

    Requests reqs(u);
    uint64_t ack = 0;
    const size_t n = bytes;
    std::function<void()> rep;
    switch (op_) {
      case Op::tag_bw:
        rep = [&] {
          reqs.add(recv_tag(u, &ack, sizeof ack, kTagAck, kFullMask), "posting the acknowledgement receive");
          for (int i = 0; i < window; ++i) reqs.add(send_tag(u, src.data, n, kTagData), "ucp_tag_send_nbx");
          reqs.wait_all(kStallSeconds);
        };
        break;
      case Op::tag_lat:
        rep = [&] {
          reqs.add(recv_tag(u, back.data, n, kTagPong, kFullMask), "posting the reply receive");
          reqs.add(send_tag(u, src.data, n, kTagData), "ucp_tag_send_nbx");
          reqs.wait_all(kStallSeconds);
        };
        break;
      case Op::put_bw:
      case Op::put_lat:
        rep = [&] {
          ucp_request_param_t p = plain_param();
          for (int i = 0; i < window; ++i) reqs.add(ucp_put_nbx(u.ep, src.data, n, remote, rkey, &p), "ucp_put_nbx");
          ucp_request_param_t f = plain_param();
          reqs.add(ucp_ep_flush_nbx(u.ep, &f), "ucp_ep_flush_nbx");
          reqs.wait_all(kStallSeconds);
        };
        break;
    }
    // A tag latency repetition moves the message there and back.
    const uint64_t moved = op_ == Op::tag_lat ? 2 * bytes : bytes * static_cast<uint64_t>(window);
    Measurement m = measure_timed(moved, rep, settings);
    m.bytes = bytes;

    char none = 0;
    reqs.add(send_tag(u, &none, 0, kTagEnd), "sending the end marker");
    reqs.wait_all(kStallSeconds);
    auto check = expect_reply(*s.ch, kStallSeconds * 2);
    if (!check) throw TransferError(check.error().message);

    m.details = s.ep_info;
    m.details["operation"] = op_name();
    if (is_bw(op_)) m.details["window"] = window;
    if (!is_bw(op_)) {
      m.details["latency_seconds"] = op_ == Op::tag_lat ? m.median_seconds / 2 : m.median_seconds;
    }
    if (!check->value("valid", false)) {
      m.state = State::invalid;
      m.error = fmt::format("the receiver's buffer differs from the sent pattern at byte {}",
                            check->value("mismatch_at", int64_t{-1}));
    } else if (op_ == Op::tag_lat) {
      if (const int64_t bad = find_mismatch(back.data, bytes); bad >= 0) {
        m.state = State::invalid;
        m.error = fmt::format("the reply differs from the sent pattern at byte {}", bad);
      }
    }
    return m;
  }

  Op op_ = Op::tag_bw;
  int window_ = 16;
  std::string peer_;
  bool tcp_only_ = false;
  std::unique_ptr<Session> session_;
  std::string session_error_;
};

}  // namespace
}  // namespace acceltune::ucx

namespace acceltune {
namespace {
// UCX's library constructor installs a fatal-signal handler that prints a long backtrace; in a
// worker that crashes (any kernel's, since every acceltune process loads UCX) it buries the
// kernel's own message in the trial's output tail. Worker processes inherit this and start
// without the handler, unless the user chose otherwise.
const bool ucx_quiet_workers = [] {
  set_hygiene_env("UCX_HANDLE_ERRORS", "none");
  return true;
}();
}  // namespace
ACCELTUNE_REGISTER_KERNEL("ucx",
                          "UCP tag send/receive and put between two processes (UCX_* variables: transports, "
                          "protocol thresholds, rendezvous scheme)",
                          ucx::UcxKernel)
}  // namespace acceltune
