// The control server of transfer kernels: in-process for loopback and netns, `acceltune serve`
// for --peer. The socket helpers it uses are the families' (kernels/shared/socket_channel).
#include "kernels/tcp/peer.hpp"

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

#include "kernels/tcp/netns.hpp"
#include "tuner/service.hpp"

namespace acceltune {

// ---- the server ----

namespace {
struct ServerState {
  Json options;
  std::string netns;
  int listen_fd = -1;
  int wake[2] = {-1, -1};
  std::atomic<bool> stop{false};
  std::atomic<int64_t> finished{0};

  struct Conn {
    int fd = -1;
    bool closed = false;
    std::atomic<bool> done{false};
    std::thread thread;
  };
  std::mutex mu;
  std::list<Conn> conns;

  ~ServerState() {
    for (int f : wake) {
      if (f >= 0) ::close(f);
    }
    if (listen_fd >= 0) ::close(listen_fd);
  }
};

void serve_connection(int fd, const Json& options) {
  auto hello = recv_json_line(fd, 10.0);
  if (!hello) return;  // a port scan or a client that went away
  if (!hello->is_object() || !(*hello).contains("kind") || !(*hello)["kind"].is_string()) {
    (void)send_json_line(fd, Json{{"ok", false}, {"error", "the first line must be a hello {\"kind\": ...}"}});
    return;
  }
  const std::string kind = (*hello)["kind"].get<std::string>();
  const PeerHandler* h = PeerHandlerRegistry::instance().find(kind);
  if (!h) {
    (void)send_json_line(fd, Json{{"ok", false},
                                  {"error", fmt::format("this acceltune serve has no handler for kind '{}' (it has: {})",
                                                        kind, join_names(PeerHandlerRegistry::instance().names()))}});
    return;
  }
  try {
    h->serve(fd, *hello, options);
  } catch (const std::exception& e) {
    (void)send_json_line(fd, Json{{"ok", false}, {"error", fmt::format("the '{}' handler failed: {}", kind, e.what())}});
  }
}

void accept_loop(const std::shared_ptr<ServerState>& st);

}  // namespace

struct PeerServer::State : ServerState {};

Expected<std::unique_ptr<PeerServer>> PeerServer::start(const std::string& bind_addr, int port, const Json& options,
                                                        const std::string& netns) {
  std::unique_ptr<PeerServer> server(new PeerServer());
  auto st = std::make_shared<State>();
  st->options = options.is_object() ? options : Json::object();
  st->options["netns"] = netns;
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

void accept_loop(const std::shared_ptr<ServerState>& st) {
  using Conn = ServerState::Conn;
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
    if (n <= 0 || st->stop) continue;
    if (!(p[0].revents & POLLIN)) continue;
    const int fd = ::accept4(st->listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard<std::mutex> lock(st->mu);
    Conn& c = st->conns.emplace_back();
    c.fd = fd;
    // The connection's thread inherits this thread's network namespace.
    c.thread = std::thread([st, &c] {
      serve_connection(c.fd, st->options);
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

int serve_peers(const Json& options) {
  const std::string bind = options.value("bind", "0.0.0.0");
  const int port = options.value("port", 18515);
  const bool once = options.value("once", false);
  struct sigaction sa {};
  sa.sa_handler = on_serve_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  auto server = PeerServer::start(bind, port, options);
  if (!server) {
    std::fprintf(stderr, "acceltune: %s\n", server.error().message.c_str());
    return server.error().exit_code();
  }
  const std::string link = options.value("link", "");
  std::fprintf(stderr, "acceltune serve: listening on %s for %s%s%s\n", host_port_text(bind, (*server)->port()).c_str(),
               join_names(PeerHandlerRegistry::instance().names()).c_str(),
               link.empty() ? "" : "; trials may change the MTU of ", link.c_str());
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
