// The control server of transfer kernels: in-process for loopback and netns, `acceltune serve`
// for --peer. The socket helpers it uses are the families' (kernels/shared/socket_channel).
#include "kernels/shared/peer.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <list>
#include <mutex>
#include <set>

#include "kernels/shared/control_auth.hpp"
#include "kernels/shared/netns.hpp"
#include "tuner/service.hpp"

namespace acceltune {

// ---- the server ----

// Named, not in the anonymous namespace: PeerServer::State derives from it.
struct PeerServerState {
  Json options;
  std::optional<std::string> secret;
  std::string netns;
  int listen_fd = -1;
  int wake[2] = {-1, -1};
  std::atomic<bool> stop{false};
  std::atomic<int64_t> finished{0};

  struct Conn {
    int fd = -1;
    bool closed = false;
    std::string host;  // the client's address
    std::chrono::steady_clock::time_point started;
    std::atomic<bool> admitted{false};  // authenticated and within the session limit
    std::atomic<bool> capped{false};    // ended for running past max_session_seconds
    std::atomic<bool> done{false};
    std::thread thread;
  };
  std::mutex mu;
  std::list<Conn> conns;

  ~PeerServerState() {
    for (int f : wake) {
      if (f >= 0) ::close(f);
    }
    if (listen_fd >= 0) ::close(listen_fd);
  }
};

void serve_log(const Json& serve_options, const std::string& text) {
  if (!serve_options.is_object() || !serve_options.value("log", false)) return;
  std::fprintf(stderr, "acceltune serve: %s\n", text.c_str());
  std::fflush(stderr);
}

namespace {
using Clock = std::chrono::steady_clock;

void log_line(const PeerServerState& st, const std::string& text) { serve_log(st.options, text); }

// Whether serving `me` would exceed the number of client hosts served at once: connections from
// a host already being served are part of its session.
std::string busy_with(PeerServerState& st, const PeerServerState::Conn& me) {
  const int64_t limit = st.options.value("sessions", int64_t{0});
  if (limit <= 0) return "";
  std::lock_guard<std::mutex> l(st.mu);
  std::set<std::string> hosts;
  for (const auto& c : st.conns) {
    if (&c == &me || !c.admitted || c.done) continue;
    if (c.host == me.host) return "";
    hosts.insert(c.host);
  }
  if (static_cast<int64_t>(hosts.size()) < limit) return "";
  std::string who;
  for (const auto& h : hosts) who += (who.empty() ? "" : ", ") + h;
  return fmt::format("this acceltune serve is busy with {} (it serves {} client host{} at once: --sessions); try "
                     "again when that study ends",
                     who, limit, limit == 1 ? "" : "s");
}

// The session after both proofs: the handler of the hello's kind, or why there is none.
void run_handler(PeerServerState& st, PeerServerState::Conn& conn, ControlChannel& ch, const Json& hello) {
  const Json& options = st.options;
  if (!hello.contains("kind") || !hello["kind"].is_string()) {
    (void)ch.send(Json{{"ok", false}, {"error", "the first line must be a hello {\"kind\": ...}"}});
    return;
  }
  if (const std::string busy = busy_with(st, conn); !busy.empty()) {
    log_line(st, fmt::format("refused {}: busy", conn.host));
    (void)ch.send(Json{{"ok", false}, {"error", busy}});
    return;
  }
  conn.admitted = true;
  const std::string kind = hello["kind"].get<std::string>();
  const PeerHandler* h = PeerHandlerRegistry::instance().find(kind);
  if (!h) {
    (void)ch.send(Json{{"ok", false},
                       {"error", fmt::format("this acceltune serve has no handler for kind '{}' (it has: {})", kind,
                                             join_names(PeerHandlerRegistry::instance().names()))}});
    return;
  }
  try {
    h->serve(ch, hello, options);
  } catch (const std::exception& e) {
    // A message the handler could not read (a wrong type, a missing field) ends this connection.
    (void)ch.send(Json{{"ok", false}, {"error", fmt::format("the '{}' handler failed: {}", kind, e.what())}});
  }
}

void serve_connection(PeerServerState& st, PeerServerState::Conn& conn) {
  const int fd = conn.fd;
  const Json& options = st.options;
  // The first exchange: the challenge, the client's hello with its proof, the server's proof;
  // one short line within 10 s, whatever the client sends.
  auto accepted = challenge_peer(fd, st.secret, "serve", options.value("auth_timeout_seconds", 10.0));
  if (!accepted) {
    log_line(st, fmt::format("refused {}: {}", conn.host, accepted.error().message));
    (void)send_json_line(fd, Json{{"ok", false}, {"error", "refused: " + accepted.error().message}});
    return;
  }
  if (!st.secret) log_line(st, fmt::format("INSECURE: serving {} without authentication (--insecure)", conn.host));
  ControlChannel& ch = accepted->channel;
  run_handler(st, conn, ch, accepted->first);
  if (!ch.broken().empty()) {
    // A message that failed its check: the session ends here, and the client hears why.
    log_line(st, fmt::format("ended the session of {}: {}", conn.host, ch.broken()));
    (void)ch.send(Json{{"ok", false}, {"error", "the server ended the session: " + ch.broken()}});
  }
  if (conn.capped) {
    log_line(st, fmt::format("ended the session of {}: it ran past --max-session-seconds {}", conn.host,
                             options.value("max_session_seconds", 0.0)));
  }
}

void accept_loop(const std::shared_ptr<PeerServerState>& st);

}  // namespace

struct PeerServer::State : PeerServerState {};

Expected<std::unique_ptr<PeerServer>> PeerServer::start(const std::string& bind_addr, int port, const Json& options,
                                                        const std::string& netns,
                                                        const std::optional<std::string>& secret) {
  std::unique_ptr<PeerServer> server(new PeerServer());
  auto st = std::make_shared<State>();
  st->options = options.is_object() ? options : Json::object();
  st->options["netns"] = netns;
  st->secret = secret;
  if (!secret && !st->options.value("insecure", false)) {
    return input_error("a control server needs a shared secret, or the option 'insecure'");
  }
  if (secret && st->options.value("insecure", false)) {
    return input_error("a control server with a shared secret and the option 'insecure': the two contradict each other");
  }
  if (::pipe2(st->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    return runtime_error("cannot create a pipe: {}", std::strerror(errno));
  }
  std::promise<Expected<int>> ready;
  auto ready_future = ready.get_future();
  int bound = 0;
  server->thread_ = std::thread([st, bind_addr, port, netns, &ready, &bound] {
    if (!netns.empty()) {
      Status in = enter_netns(netns);
      if (!in) {
        ready.set_value(in.error());
        return;
      }
    }
    auto fd = listen_tcp(bind_addr, port, &bound);
    if (!fd) {
      ready.set_value(fd.error());
      return;
    }
    st->listen_fd = *fd;
    ready.set_value(*fd);
    accept_loop(st);
  });
  auto r = ready_future.get();
  if (!r) {
    server->thread_.join();
    return r.error();
  }
  server->state_ = st;
  server->port_ = bound;
  return server;
}

int64_t PeerServer::finished_connections() const { return state_ ? state_->finished.load() : 0; }

PeerServer::~PeerServer() {
  if (state_) {
    state_->stop = true;
    const char c = 1;
    (void)!::write(state_->wake[1], &c, 1);
  }
  if (thread_.joinable()) thread_.join();
}

namespace {

void accept_loop(const std::shared_ptr<PeerServerState>& st) {
  using Conn = PeerServerState::Conn;
  auto reap = [&](bool all) {
    std::list<Conn> finished;
    {
      std::lock_guard<std::mutex> lock(st->mu);
      for (auto it = st->conns.begin(); it != st->conns.end();) {
        if (all || it->done) {
          auto next = std::next(it);
          finished.splice(finished.end(), st->conns, it);
          it = next;
        } else {
          ++it;
        }
      }
    }
    for (auto& c : finished) c.thread.join();
  };
  while (!st->stop) {
    pollfd p[2] = {{st->listen_fd, POLLIN, 0}, {st->wake[0], POLLIN, 0}};
    const int n = ::poll(p, 2, 200);
    reap(false);
    // Sessions past their time cap end: their handler sees the connection closed.
    if (const double cap = st->options.value("max_session_seconds", 0.0); cap > 0) {
      std::lock_guard<std::mutex> lock(st->mu);
      for (auto& c : st->conns) {
        if (!c.closed && !c.capped && Clock::now() - c.started > std::chrono::duration<double>(cap)) {
          c.capped = true;
          ::shutdown(c.fd, SHUT_RDWR);
        }
      }
    }
    if (n <= 0 || st->stop) continue;
    if (!(p[0].revents & POLLIN)) continue;
    const int fd = ::accept4(st->listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard<std::mutex> lock(st->mu);
    Conn& c = st->conns.emplace_back();
    c.fd = fd;
    c.host = remote_address(fd);
    c.started = Clock::now();
    // The connection's thread inherits this thread's network namespace.
    c.thread = std::thread([st, &c] {
      serve_connection(*st, c);
      {
        std::lock_guard<std::mutex> l(st->mu);
        ::close(c.fd);
        c.closed = true;
      }
      ++st->finished;
      c.done = true;
    });
  }
  {
    // Wake every handler that waits on its control connection; they see it closed and return.
    std::lock_guard<std::mutex> lock(st->mu);
    for (auto& c : st->conns) {
      if (!c.closed) ::shutdown(c.fd, SHUT_RDWR);
    }
  }
  reap(true);
}

std::atomic<int> g_serve_signal{0};

void on_serve_signal(int sig) { g_serve_signal = sig; }

}  // namespace

Expected<ControlChannel> connect_peer(const std::string& host, int port, const std::optional<std::string>& secret,
                                      const Json& hello, double timeout_seconds) {
  ACCELTUNE_TRY_ASSIGN(int fd, connect_tcp(host, port, timeout_seconds));
  auto ch = answer_challenge(fd, secret, "serve", hello, timeout_seconds);
  if (!ch) {
    ::close(fd);
    return Error{ch.error().kind, fmt::format("{}: {}", host_port_text(host, port), ch.error().message)};
  }
  ch->own_fd();
  return std::move(*ch);
}

int serve_peers(const Json& options) {
  const std::string bind = options.value("bind", "127.0.0.1");
  const int port = options.value("port", 18515);
  const bool once = options.value("once", false);
  const bool insecure = options.value("insecure", false);
  auto secret = configured_secret();
  if (!secret) {
    std::fprintf(stderr, "acceltune: %s\n", secret.error().message.c_str());
    return secret.error().exit_code();
  }
  if (*secret && insecure) {
    std::fprintf(stderr,
                 "acceltune: serve --insecure and a shared secret (%s or %s is set) contradict each other: --insecure "
                 "serves without authentication, the secret asks for it; unset the secret to serve insecurely, or drop "
                 "--insecure\n",
                 kSecretFileVar, kSecretVar);
    return 2;
  }
  if (!*secret && !insecure) {
    std::fprintf(stderr,
                 "acceltune: serve needs a shared secret: write one to a file only you can read (openssl rand -hex 32 "
                 "> FILE; chmod 600 FILE), give the same to the hosts that run --peer, and pass --secret-file FILE "
                 "(or set %s); --insecure serves without one, to anyone who reaches the port\n",
                 kSecretFileVar);
    return 2;
  }
  struct sigaction sa {};
  sa.sa_handler = on_serve_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  Json opts = options;
  opts["log"] = true;
  // A link without listed MTUs keeps the one it has.
  const std::string served_link = options.value("link", "");
  if (!served_link.empty() && opts.value("mtus", Json::array()).empty()) {
    auto now = get_link_mtu("", served_link);
    if (!now) {
      std::fprintf(stderr, "acceltune: --link %s: %s\n", served_link.c_str(), now.error().message.c_str());
      return 2;
    }
    opts["mtus"] = Json::array({*now});
  }
  auto server = PeerServer::start(bind, port, opts, "", *secret);
  if (!server) {
    std::fprintf(stderr, "acceltune: %s\n", server.error().message.c_str());
    return server.error().exit_code();
  }
  const std::string link = options.value("link", "");
  std::string mtus;
  for (const auto& m : opts.value("mtus", Json::array())) mtus += (mtus.empty() ? "" : ", ") + m.dump();
  std::fprintf(stderr, "acceltune serve: listening on %s for %s%s%s%s; %s\n",
               host_port_text(bind, (*server)->port()).c_str(), join_names(PeerHandlerRegistry::instance().names()).c_str(),
               link.empty() ? "" : "; trials may set the MTU of ", link.c_str(),
               link.empty() ? "" : (" to " + (mtus.empty() ? std::string("its current value only") : mtus)).c_str(),
               insecure ? "INSECURE: no authentication (--insecure)" : "clients must prove the shared secret");
  if (bind == "127.0.0.1" || bind == "::1" || bind == "localhost") {
    std::fprintf(stderr, "acceltune serve: serving this host only; pass --bind ADDRESS (this host's address on the "
                         "network the peers use) to serve a network\n");
  }
  std::fflush(stderr);
  while (g_serve_signal == 0) {
    if (once && (*server)->finished_connections() > 0) break;
    ::usleep(50000);
  }
  server->reset();
  if (g_serve_signal != 0) std::fprintf(stderr, "acceltune serve: stopped by signal %d\n", g_serve_signal.load());
  return 0;
}

}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::ServiceInfo, "peer",
                   (::acceltune::ServiceInfo{"the far end of transfer kernels for --peer", ::acceltune::serve_peers}))
