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
#include "kernels/ucx/ucx.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ucp/api/ucp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tuner/delivery.hpp"
#include "tuner/kernel.hpp"

extern char** environ;

namespace acceltune::ucx {

ConnectPeer& connect_peer_hook() {
  static ConnectPeer hook = nullptr;
  return hook;
}

namespace {

using clock_type = std::chrono::steady_clock;

// Every wait of one repetition or one control reply ends after this long, well below the
// runner's trial watchdog (10 s and more), so a stuck transport is a failed trial with a reason
// rather than a killed worker.
constexpr double kStallSeconds = 5.0;
// The responder waits passively while the initiator times a whole measurement (puts, which it
// only progresses) or sits between measurements; it still leaves when the control stream closes.
constexpr double kPassiveSeconds = 600.0;
constexpr double kIdleSeconds = 24 * 3600.0;

constexpr ucp_tag_t kTagData = 1, kTagAck = 2, kTagEnd = 3, kTagPong = 4;
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};

enum class Op { tag_bw, tag_lat, put_bw, put_lat };

Expected<Op> op_from_string(const std::string& s) {
  if (s == "tag_bw") return Op::tag_bw;
  if (s == "tag_lat") return Op::tag_lat;
  if (s == "put_bw") return Op::put_bw;
  if (s == "put_lat") return Op::put_lat;
  return input_error("operation '{}' is not one of tag_bw, tag_lat, put_bw, put_lat", s);
}

bool is_put(Op op) { return op == Op::put_bw || op == Op::put_lat; }
bool is_bw(Op op) { return op == Op::tag_bw || op == Op::put_bw; }

// Never zero, differs between neighbouring bytes and between sizes, so a receive buffer that
// holds it proves this transfer wrote it.
inline char pattern_byte(size_t i, uint64_t bytes) {
  return static_cast<char>(((i * 2654435761u + bytes * 40503u) >> 7) % 255 + 1);
}

void fill_pattern(char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) p[i] = pattern_byte(i, n);
}

// The first byte that differs from the pattern, or -1.
int64_t find_mismatch(const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != pattern_byte(i, n)) return static_cast<int64_t>(i);
  }
  return -1;
}

std::string to_hex(const void* data, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  const auto* b = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    out += digits[b[i] >> 4];
    out += digits[b[i] & 15];
  }
  return out;
}

std::string from_hex(const std::string& s) {
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  std::string out(s.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(nibble(s[2 * i]) << 4 | nibble(s[2 * i + 1]));
  return out;
}

// JSON lines over a stream socket, with a deadline on every read.
class Channel {
 public:
  explicit Channel(int fd) : fd_(fd) {}

  Status send(const Json& j) {
    const std::string text = j.dump() + "\n";
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::send(fd_, text.data() + done, text.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return runtime_error("the UCX control connection failed on send: {}", std::strerror(errno));
      done += static_cast<size_t>(n);
    }
    return {};
  }

  Expected<Json> recv(double timeout_seconds) {
    const auto deadline = clock_type::now() + std::chrono::duration<double>(timeout_seconds);
    for (;;) {
      const auto nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        Json j = Json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object()) return runtime_error("the UCX control connection sent a malformed line");
        return j;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now()).count();
      if (left <= 0) return runtime_error("no reply on the UCX control connection within {:.0f} s", timeout_seconds);
      pollfd p{fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
      if (r < 0 && errno != EINTR) return runtime_error("poll on the UCX control connection failed: {}", std::strerror(errno));
      if (r <= 0) continue;
      char tmp[4096];
      const ssize_t n = ::read(fd_, tmp, sizeof tmp);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return runtime_error("the far end of the UCX control connection closed it");
      buf_.append(tmp, static_cast<size_t>(n));
    }
  }

  // True once the far end has closed or reset the stream.
  bool hung_up() const {
    pollfd p{fd_, POLLRDHUP, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
  }

  int fd() const { return fd_; }

 private:
  int fd_;
  std::string buf_;
};

// A reply that carries an error from the far end becomes that error.
Expected<Json> expect_reply(Channel& ch, double timeout_seconds) {
  ACCELTUNE_TRY_ASSIGN(Json j, ch.recv(timeout_seconds));
  if (j.contains("error")) return runtime_error("{}", j["error"].get<std::string>());
  return j;
}

// Page-aligned, first touched on allocation so no page fault lands in the timed region.
struct Buffer {
  char* data = nullptr;
  size_t length = 0;
  Buffer() = default;
  explicit Buffer(size_t bytes) {
    length = std::max<size_t>(bytes, 64);
    void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error(fmt::format("mmap of {} bytes failed: {}", length, std::strerror(errno)));
    data = static_cast<char*>(p);
    std::memset(data, 0, length);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (data) ::munmap(data, length);
  }
};

// A failure inside the timed region: ends measure_timed, becomes a failed measurement.
struct TransferError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string status_text(ucs_status_t s) { return ucs_status_string(s); }

// One process's UCP objects.
struct Ucp {
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  ucp_ep_h ep = nullptr;
  std::string address;  // this worker's address, to send to the other end

  Ucp() = default;
  Ucp(const Ucp&) = delete;
  Ucp& operator=(const Ucp&) = delete;
  ~Ucp() {
    if (ep) {
      // Forced: a flushing close waits for the far end, which may be gone already.
      ucp_request_param_t param{};
      param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      param.flags = UCP_EP_CLOSE_FLAG_FORCE;
      void* req = ucp_ep_close_nbx(ep, &param);
      if (UCS_PTR_IS_PTR(req)) {
        const auto deadline = clock_type::now() + std::chrono::seconds(2);
        while (ucp_request_check_status(req) == UCS_INPROGRESS && clock_type::now() < deadline) {
          ucp_worker_progress(worker);
        }
        ucp_request_free(req);
      }
    }
    if (worker) ucp_worker_destroy(worker);
    if (context) ucp_cleanup(context);
  }

  void progress() { ucp_worker_progress(worker); }
};

std::string tls_hint() {
  const char* tls = std::getenv("UCX_TLS");
  return tls ? fmt::format(" with UCX_TLS={}", tls) : std::string();
}

Expected<std::unique_ptr<Ucp>> open_ucp() {
  auto u = std::make_unique<Ucp>();
  ucp_config_t* config = nullptr;
  ucs_status_t s = ucp_config_read(nullptr, nullptr, &config);
  if (s != UCS_OK) {
    return runtime_error("UCX rejected its configuration: {}; check the UCX_* values of this config", status_text(s));
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_RMA;
  s = ucp_init(&params, config, &u->context);
  ucp_config_release(config);
  if (s != UCS_OK) {
    u->context = nullptr;
    return runtime_error("ucp_init failed{}: {}; `ucx_info -d` lists the transports of this host", tls_hint(),
                         status_text(s));
  }
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  s = ucp_worker_create(u->context, &wp, &u->worker);
  if (s != UCS_OK) {
    u->worker = nullptr;
    return runtime_error("ucp_worker_create failed{}: {}; `ucx_info -d` lists the transports of this host", tls_hint(),
                         status_text(s));
  }
  ucp_address_t* addr = nullptr;
  size_t len = 0;
  s = ucp_worker_get_address(u->worker, &addr, &len);
  if (s != UCS_OK) return runtime_error("ucp_worker_get_address failed: {}", status_text(s));
  u->address.assign(reinterpret_cast<const char*>(addr), len);
  ucp_worker_release_address(u->worker, addr);
  return u;
}

Status connect_ep(Ucp& u, const std::string& remote_address) {
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  ep.address = reinterpret_cast<const ucp_address_t*>(remote_address.data());
  ep.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  const ucs_status_t s = ucp_ep_create(u.worker, &ep, &u.ep);
  if (s != UCS_OK) {
    u.ep = nullptr;
    return runtime_error("UCX cannot reach the other process{}: {}; the transports must exist on both ends "
                         "(`ucx_info -d` lists them)", tls_hint(), status_text(s));
  }
  return {};
}

// Waits for every request of a repetition; the requests are freed either way.
class Requests {
 public:
  explicit Requests(Ucp& u) : u_(u) { reqs_.reserve(1100); }
  ~Requests() { release(); }

  // What an nbx call returned: done, an error, or a request to wait for.
  void add(ucs_status_ptr_t r, const char* what) {
    if (r == nullptr) return;
    if (UCS_PTR_IS_ERR(r)) {
      throw TransferError(fmt::format("{} failed{}: {}", what, tls_hint(), status_text(UCS_PTR_STATUS(r))));
    }
    reqs_.push_back(r);
  }

  // Progresses until all complete; throws on an error or a stall. With `watch`, a closed control
  // connection also ends the wait (the responder outliving its initiator).
  void wait_all(double timeout_seconds, const Channel* watch = nullptr) {
    const auto deadline = clock_type::now() + std::chrono::duration<double>(timeout_seconds);
    size_t spins = 0;
    while (!reqs_.empty()) {
      u_.progress();
      for (size_t i = 0; i < reqs_.size();) {
        const ucs_status_t s = ucp_request_check_status(reqs_[i]);
        if (s == UCS_INPROGRESS) {
          ++i;
          continue;
        }
        ucp_request_free(reqs_[i]);
        reqs_[i] = reqs_.back();
        reqs_.pop_back();
        if (s != UCS_OK) throw TransferError(fmt::format("a UCX transfer failed{}: {}", tls_hint(), status_text(s)));
      }
      if (++spins % 4096 == 0) {
        if (clock_type::now() > deadline) {
          throw TransferError(fmt::format("a UCX transfer did not complete within {:.0f} s{}", timeout_seconds,
                                          tls_hint()));
        }
        if (watch && watch->hung_up()) throw TransferError("the initiator closed the control connection");
      }
    }
  }

  void release() {
    for (void* r : reqs_) {
      ucp_request_cancel(u_.worker, r);
      ucp_request_free(r);
    }
    reqs_.clear();
  }

 private:
  Ucp& u_;
  std::vector<void*> reqs_;
};

ucp_request_param_t plain_param() {
  ucp_request_param_t p{};
  return p;
}

ucs_status_ptr_t send_tag(Ucp& u, const void* buf, size_t n, ucp_tag_t tag) {
  ucp_request_param_t p = plain_param();
  return ucp_tag_send_nbx(u.ep, buf, n, tag, &p);
}

ucs_status_ptr_t recv_tag(Ucp& u, void* buf, size_t n, ucp_tag_t tag, ucp_tag_t mask) {
  ucp_request_param_t p = plain_param();
  return ucp_tag_recv_nbx(u.worker, buf, n, tag, mask, &p);
}

// ---------------------------------------------------------------------------------------------
// The responder.

struct Registered {
  Ucp& u;
  ucp_mem_h mem = nullptr;
  explicit Registered(Ucp& ucp) : u(ucp) {}
  Registered(const Registered&) = delete;
  Registered& operator=(const Registered&) = delete;
  ~Registered() {
    if (mem) ucp_mem_unmap(u.context, mem);
  }
};

// Tagged receives into one buffer until the end marker arrives. Returns normally at the marker.
void respond_tag(Ucp& u, Channel& ch, Op op, char* buf, size_t bytes, int window) {
  // Posted receives match any tag, so the end marker completes one of them; it carries no data.
  std::vector<void*> posted;
  std::vector<char> complete;
  posted.reserve(static_cast<size_t>(window));
  complete.reserve(static_cast<size_t>(window));
  Requests sends(u);
  auto post_window = [&] {
    posted.clear();
    complete.assign(static_cast<size_t>(window), 0);
    for (int i = 0; i < window; ++i) {
      ucs_status_ptr_t r = recv_tag(u, buf, bytes, 0, 0);
      if (UCS_PTR_IS_ERR(r)) throw TransferError(fmt::format("ucp_tag_recv_nbx failed: {}", status_text(UCS_PTR_STATUS(r))));
      posted.push_back(r);
    }
  };
  auto cancel_rest = [&] {
    for (size_t i = 0; i < posted.size(); ++i) {
      if (complete[i]) continue;
      ucp_request_cancel(u.worker, posted[i]);
      while (ucp_request_check_status(posted[i]) == UCS_INPROGRESS) u.progress();
      ucp_request_free(posted[i]);
    }
    posted.clear();
  };
  try {
    post_window();
    for (;;) {
      // Waits for this window; an end marker among the completions ends the loop.
      bool ended = false;
      size_t spins = 0, done = 0;
      const auto deadline = clock_type::now() + std::chrono::duration<double>(kPassiveSeconds);
      while (done < posted.size() && !ended) {
        u.progress();
        for (size_t i = 0; i < posted.size(); ++i) {
          if (complete[i]) continue;
          ucp_tag_recv_info_t info{};
          const ucs_status_t s = ucp_tag_recv_request_test(posted[i], &info);
          if (s == UCS_INPROGRESS) continue;
          complete[i] = 1;
          ucp_request_free(posted[i]);
          ++done;
          if (s != UCS_OK) throw TransferError(fmt::format("a UCX receive failed: {}", status_text(s)));
          if (info.sender_tag == kTagEnd) ended = true;
        }
        if (++spins % 4096 == 0) {
          if (clock_type::now() > deadline) throw TransferError("the responder waited too long for data");
          if (ch.hung_up()) throw TransferError("the initiator closed the control connection");
        }
      }
      if (ended) {
        cancel_rest();
        return;
      }
      if (op == Op::tag_bw) {
        // The next window is posted before the acknowledgement, so its data finds receives waiting.
        post_window();
        static const uint64_t ack = 0;
        sends.add(send_tag(u, &ack, sizeof ack, kTagAck), "sending the acknowledgement");
      } else {
        sends.add(send_tag(u, buf, bytes, kTagPong), "sending the reply");
        sends.wait_all(kStallSeconds, &ch);
        post_window();
      }
      sends.wait_all(kStallSeconds, &ch);
    }
  } catch (...) {
    cancel_rest();
    throw;
  }
}

// Puts need no action here beyond progress (emulated RMA runs on the responder's worker); waits
// for the end marker.
void respond_put(Ucp& u, Channel& ch) {
  char marker = 0;
  Requests reqs(u);
  reqs.add(recv_tag(u, &marker, 0, kTagEnd, kFullMask), "posting the end receive");
  reqs.wait_all(kPassiveSeconds, &ch);
}

Status respond_one(Ucp& u, Channel& ch, const Json& cmd) {
  if (!cmd.contains("op") || !cmd.contains("bytes") || !cmd.contains("window")) {
    return runtime_error("the UCX control command lacks op, bytes or window");
  }
  ACCELTUNE_TRY_ASSIGN(Op op, op_from_string(cmd["op"].get<std::string>()));
  const auto bytes = cmd["bytes"].get<uint64_t>();
  const int window = cmd["window"].get<int>();
  Buffer buf(bytes);
  Registered reg(u);
  Json reply = Json::object();
  reply["ok"] = true;
  if (is_put(op)) {
    ucp_mem_map_params_t mp{};
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = buf.data;
    mp.length = bytes;
    ucs_status_t s = ucp_mem_map(u.context, &mp, &reg.mem);
    if (s != UCS_OK) {
      reg.mem = nullptr;
      return runtime_error("ucp_mem_map of {} bytes failed{}: {}", bytes, tls_hint(), status_text(s));
    }
    void* rkey = nullptr;
    size_t rkey_len = 0;
    s = ucp_rkey_pack(u.context, reg.mem, &rkey, &rkey_len);
    if (s != UCS_OK) return runtime_error("ucp_rkey_pack failed{}: {}", tls_hint(), status_text(s));
    reply["rkey"] = to_hex(rkey, rkey_len);
    ucp_rkey_buffer_release(rkey);
    reply["remote_address"] = reinterpret_cast<uint64_t>(buf.data);
  }
  ACCELTUNE_TRY(ch.send(reply));
  Json result = Json::object();
  try {
    if (is_put(op)) respond_put(u, ch);
    else respond_tag(u, ch, op, buf.data, bytes, op == Op::tag_bw ? window : 1);
    const int64_t bad = find_mismatch(buf.data, bytes);
    result["valid"] = bad < 0;
    if (bad >= 0) result["mismatch_at"] = bad;
  } catch (const TransferError& e) {
    result["error"] = fmt::format("responder: {}", e.what());
  }
  return ch.send(result);
}

}  // namespace

int run_responder(int control_fd) {
  Channel ch(control_fd);
  auto u = open_ucp();
  if (!u) {
    (void)ch.send(Json{{"error", u.error().message}});
    return 1;
  }
  if (!ch.send(Json{{"address", to_hex((*u)->address.data(), (*u)->address.size())}})) return 1;
  auto hello = expect_reply(ch, kStallSeconds * 2);
  if (!hello || !hello->contains("address")) return 1;
  if (Status st = connect_ep(**u, from_hex((*hello)["address"].get<std::string>())); !st) {
    (void)ch.send(Json{{"error", st.error().message}});
    return 1;
  }
  if (!ch.send(Json{{"ok", true}})) return 1;
  for (;;) {
    auto cmd = ch.recv(kIdleSeconds);
    if (!cmd) return 0;  // the initiator went away: the normal end
    const std::string what = cmd->value("cmd", "");
    if (what == "quit") return 0;
    if (what != "run") return 1;
    Status st = [&]() -> Status {
      try {
        return respond_one(**u, ch, *cmd);
      } catch (const std::exception& e) {
        return runtime_error("responder: {}", e.what());
      }
    }();
    if (!st) {
      (void)ch.send(Json{{"error", st.error().message}});
      return 1;
    }
  }
}

namespace {

// ---------------------------------------------------------------------------------------------
// The initiator: the kernel.

// The responder and the connection to it, set up once per process at the first measurement.
struct Session {
  pid_t child = -1;
  int fd = -1;
  std::unique_ptr<Channel> ch;
  std::unique_ptr<Ucp> u;
  Json ep_info = Json::object();

  Session() = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() {
    if (ch) (void)ch->send(Json{{"cmd", "quit"}});
    u.reset();
    if (fd >= 0) ::close(fd);
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
    ::_exit(run_responder(sv[1]));
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
  std::vector<std::string> native_params() const override { return {}; }
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
    return {};
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
      ACCELTUNE_TRY_ASSIGN(s->fd, fork_responder(&s->child));
    } else {
      ACCELTUNE_TRY_ASSIGN(s->fd, connect_peer_hook()(peer_, ucx_environment(), kStallSeconds * 2));
    }
    s->ch = std::make_unique<Channel>(s->fd);
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
