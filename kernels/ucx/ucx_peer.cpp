// The ucx kernel across hosts: the client side of --peer HOST:PORT, and the "ucx" handler of
// `acceltune serve`. The handler forks a child per connection that sets the UCX_* variables the
// client sent (UCX reads them once, at ucp_init) and runs the responder on the session (the
// child's copy of it: keys and counters go on from where the handshake left them). UCX's own
// wire carries the data; acceltune opens no data connection of its own here.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "kernels/shared/control_auth.hpp"
#include "kernels/shared/peer.hpp"
#include "kernels/ucx/ucx.hpp"

namespace acceltune::ucx {
namespace {

// Only UCX's own variables cross the wire, and only with plain names.
bool is_ucx_variable(const std::string& name) {
  if (name.rfind("UCX_", 0) != 0 || name.size() == 4) return false;
  for (char c : name) {
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

Expected<ControlChannel> connect_to_peer(const std::string& host_port, const Json& env, double timeout_seconds) {
  ACCELTUNE_TRY_ASSIGN(auto hp, parse_host_port(host_port));
  ACCELTUNE_TRY_ASSIGN(const auto secret, configured_secret());
  return connect_peer(hp.first, hp.second, secret, Json{{"kind", "ucx"}, {"env", env}}, timeout_seconds);
}

// The interfaces a client's UCX_NET_DEVICES may name: only serve's --link ("" when none may).
std::string devices_refused(const std::string& devices, const std::string& link) {
  size_t at = 0;
  while (at <= devices.size()) {
    size_t end = devices.find(',', at);
    if (end == std::string::npos) end = devices.size();
    const std::string dev = devices.substr(at, end - at);
    const std::string name = dev.substr(0, dev.find(':'));
    if (dev != "all" && name != link) return dev;
    if (dev == "all" && !link.empty()) return dev;
    at = end + 1;
  }
  return "";
}

void serve_ucx(ControlChannel& ch, const Json& hello, const Json& serve_options) {
  const int fd = ch.fd();
  Json env = hello.contains("env") && hello["env"].is_object() ? hello["env"] : Json::object();
  for (const auto& [k, v] : env.items()) {
    if (!is_ucx_variable(k) || !v.is_string()) {
      (void)ch.send(Json{{"error", fmt::format("peer: refusing variable '{}': only UCX_* names with string "
                                                          "values are accepted", k)}});
      return;
    }
  }
  // This side uses only the interface serve was started with.
  if (env.contains("UCX_NET_DEVICES")) {
    const std::string link = serve_options.value("link", "");
    const std::string bad = devices_refused(env["UCX_NET_DEVICES"].get<std::string>(), link);
    if (!bad.empty()) {
      (void)ch.send(Json{{"error", link.empty() ? fmt::format("peer: refusing UCX_NET_DEVICES={}: this serve "
                                                                         "was started without --link, so it names no "
                                                                         "interface a client may choose",
                                                                         env["UCX_NET_DEVICES"].get<std::string>())
                                                           : fmt::format("peer: refusing device '{}': this serve allows "
                                                                         "only its --link {}",
                                                                         bad, link)}});
      return;
    }
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    (void)ch.send(Json{{"error", fmt::format("peer: fork failed: {}", std::strerror(errno))}});
    return;
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    // The server's listening socket and other clients' connections stay with the server.
    if (fd > 3) ::close_range(3, static_cast<unsigned>(fd - 1), 0);
    ::close_range(static_cast<unsigned>(fd + 1), ~0u, 0);
    // The server's own UCX_* settings give way to the client's, which define the trial.
    for (char** e = environ; *e;) {
      if (std::strncmp(*e, "UCX_", 4) == 0) {
        const std::string name(*e, std::strchr(*e, '=') - *e);
        ::unsetenv(name.c_str());
      } else {
        ++e;
      }
    }
    for (const auto& [k, v] : env.items()) ::setenv(k.c_str(), v.get<std::string>().c_str(), 1);
    const int code = run_responder(ch);
    // The parent's copy of the session never sees this child's messages: the child says why it ended.
    if (!ch.broken().empty()) {
      serve_log(serve_options, fmt::format("ended the ucx session of {}: {}", remote_address(fd), ch.broken()));
    }
    ::_exit(code);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

const bool registered = [] {
  connect_peer_hook() = connect_to_peer;
  return true;
}();

}  // namespace
}  // namespace acceltune::ucx

namespace acceltune {
ACCELTUNE_REGISTER(PeerHandler, "ucx",
                   (PeerHandler{"the far end of the ucx kernel (a child process per connection with the client's "
                                "UCX_* variables)",
                                ucx::serve_ucx}))
}  // namespace acceltune
