// The far end of transfer kernels, and the small socket helpers they share.
//
// `acceltune serve` (and, on this host, a kernel's own in-process server) listens on a control
// port. A client connects and sends one JSON line, the hello: {"kind": "tcp-stream", ...} or
// {"kind": "ucx", ...}. The handler registered under that kind then owns the connection until it
// closes; the server keeps accepting other clients meanwhile (a thread per connection).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "tuner/registry.hpp"
#include "tuner/value.hpp"

namespace acceltune {

struct PeerHandler {
  std::string description;
  // fd: the control connection (the handler closes nothing; the server closes fd after).
  // hello: the first line. serve_options: the server's options ({"bind", "port", "link", "netns"}).
  std::function<void(int fd, const Json& hello, const Json& serve_options)> serve;
};
using PeerHandlerRegistry = Registry<PeerHandler>;

// One JSON object per line over a stream socket.
Status send_json_line(int fd, const Json& j);
// Waits at most timeout_seconds for a whole line; a closed connection is an error.
Expected<Json> recv_json_line(int fd, double timeout_seconds);

// "HOST:PORT" (also "[v6]:PORT") into its parts; errors name the text.
Expected<std::pair<std::string, int>> parse_host_port(const std::string& text);
// A connected TCP socket to host:port within timeout_seconds; errors say what failed
// ("cannot connect to 198.18.0.2:18515: connection refused; is 'acceltune serve' running there?").
Expected<int> connect_tcp(const std::string& host, int port, double timeout_seconds);
// A listening TCP socket on bind_addr:port (port 0: ephemeral); the chosen port in *bound_port.
Expected<int> listen_tcp(const std::string& bind_addr, int port, int* bound_port);

// As connect_tcp, with `prepare` called on the socket before it connects (options that must be
// set before the handshake, such as buffer sizes); its error fails the call.
Expected<int> connect_tcp(const std::string& host, int port, double timeout_seconds,
                          const std::function<Status(int fd)>& prepare);
// As listen_tcp, with `prepare` called on the socket before it binds (accepted sockets inherit
// the listener's buffer sizes and congestion control).
Expected<int> listen_tcp(const std::string& bind_addr, int port, int* bound_port,
                         const std::function<Status(int fd)>& prepare);
// Waits at most timeout_seconds for a connection on a listening socket.
Expected<int> accept_tcp(int listen_fd, double timeout_seconds);
// The numeric address of either side of a connected socket ("198.18.0.1").
std::string local_address(int fd);
std::string remote_address(int fd);

// A control server on a thread of this process (loopback and netns placements): it accepts
// until stopped, and each connection runs its handler on a thread of its own. With a network
// namespace name, the server's threads (and so every socket they open) live in that namespace.
class PeerServer {
 public:
  static Expected<std::unique_ptr<PeerServer>> start(const std::string& bind_addr, int port, const Json& options,
                                                     const std::string& netns = "");
  ~PeerServer();  // stops accepting, shuts client connections down, joins the threads
  int port() const { return port_; }
  // Control connections whose handler has returned so far.
  int64_t finished_connections() const;

 private:
  PeerServer() = default;
  struct State;
  std::shared_ptr<State> state_;
  std::thread thread_;
  int port_ = 0;
};

// The loop of `acceltune serve`: registered as the "peer" service. Returns the exit code.
int serve_peers(const Json& options);

}  // namespace acceltune
