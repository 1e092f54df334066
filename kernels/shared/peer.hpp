// The far end of transfer kernels (its socket helpers are in kernels/shared/socket_channel.hpp).
//
// `acceltune serve` (and, on this host, a kernel's own in-process server) listens on a control
// port. A client connects and both sides prove they hold the shared secret (kernels/shared/
// control_auth.hpp: the server's challenge, the client's first line, the hello {"kind":
// "tcp-stream", ...} or {"kind": "ucx", ...}, with its proof, the server's proof). The handler
// registered under that kind then owns the session, a ControlChannel whose every message carries
// a MAC, until it closes; the server keeps accepting other clients meanwhile (a thread per
// connection). A malformed, oversized, slow or tampered line ends that connection only, logged
// with the client's address and why.
//
// The server's options (a JSON object; handlers see it as serve_options):
//   "link"                  the interface trials may change the MTU of ("" : none)
//   "mtus"                  the MTU values a trial may ask for on it (array)
//   "sessions"              client hosts served at once (0: any number)
//   "max_session_seconds"   a connection is ended after this long (0: no cap)
//   "max_session_bytes"     a handler refuses to move more than this per connection (0: no cap)
//   "insecure"              serve without a secret (every connection says so); contradicts a secret
//   "auth_timeout_seconds"  how long a client has for its first line (default 10)
//   "log"                   print refusals and session ends to stderr (acceltune serve)
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "kernels/shared/control_auth.hpp"
#include "kernels/shared/socket_channel.hpp"
#include "tuner/registry.hpp"
#include "tuner/value.hpp"

namespace acceltune {

struct PeerHandler {
  std::string description;
  // ch: the session, after both proofs (the handler talks only through it and closes nothing;
  // the server closes the connection after). hello: the first line. serve_options: the server's
  // options ({"bind", "port", "link", "netns", "log", ...}).
  std::function<void(ControlChannel& ch, const Json& hello, const Json& serve_options)> serve;
};

// A line of the server's log ("acceltune serve: TEXT" on stderr) when serve_options["log"] is set:
// for handlers that refuse something (a stranger on a data port).
void serve_log(const Json& serve_options, const std::string& text);
using PeerHandlerRegistry = Registry<PeerHandler>;

// A control server on a thread of this process (loopback and netns placements): it accepts
// until stopped, and each connection runs its handler on a thread of its own. With a network
// namespace name, the server's threads (and so every socket they open) live in that namespace.
class PeerServer {
 public:
  // `secret`: what clients must prove they hold; none only with options["insecure"] (both at once
  // is an input error: the two contradict each other).
  static Expected<std::unique_ptr<PeerServer>> start(const std::string& bind_addr, int port, const Json& options,
                                                     const std::string& netns = "",
                                                     const std::optional<std::string>& secret = std::nullopt);
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

// A client's session with a server: connects, answers the challenge with `secret`, sends
// `hello` and checks the server's proof; the caller reads the handler's reply from the channel,
// which owns the connection.
Expected<ControlChannel> connect_peer(const std::string& host, int port, const std::optional<std::string>& secret,
                           const Json& hello, double timeout_seconds);

// The loop of `acceltune serve`: registered as the "peer" service. Returns the exit code.
int serve_peers(const Json& options);

}  // namespace acceltune
