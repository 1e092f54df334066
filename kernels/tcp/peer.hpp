// The far end of transfer kernels (its socket helpers are in kernels/shared/socket_channel.hpp).
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

#include "kernels/shared/socket_channel.hpp"
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
