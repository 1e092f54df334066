// The socket channel the kernel families share: JSON lines over a stream socket, whole buffers
// with a deadline, and TCP connect, listen and accept whose errors say what failed.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "tuner/expected.hpp"
#include "tuner/value.hpp"

namespace acceltune {

// One JSON object per line over a stream socket.
Status send_json_line(int fd, const Json& j);
// Waits at most timeout_seconds for a whole line; a closed connection is an error.
// recv_line returns its text without the newline; recv_json_line parses it.
Expected<std::string> recv_line(int fd, double timeout_seconds, size_t max_bytes = size_t{16} << 20);
Expected<Json> recv_json_line(int fd, double timeout_seconds, size_t max_bytes = size_t{16} << 20);

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
// The interface this host's routes send traffic for `host` through ("eth0", "lo"): the
// address a datagram socket connected to it would use, matched to its interface (no packet is
// sent). Empty when the host does not resolve or no interface holds that address.
std::string interface_toward(const std::string& host);
// The interface that holds a connected socket's local address; empty when none does.
std::string local_interface(int fd);
std::string remote_address(int fd);

// "HOST:PORT", with brackets around an IPv6 host.
std::string host_port_text(const std::string& host, int port);

// All n bytes, or an error naming `what` ("the ping-pong message").
Status send_all(int fd, const void* data, size_t n, std::string_view what);
// Exactly n bytes within timeout_seconds; a closed connection or the deadline is an error naming `what`.
Status recv_all(int fd, void* data, size_t n, double timeout_seconds, std::string_view what);

}  // namespace acceltune
