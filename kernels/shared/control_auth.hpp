// Authenticated control sessions (acceltune serve and its clients, the NCCL ranks' control
// socket): a mutual challenge-response on a shared secret, so the secret never crosses the wire,
// then a session whose every message carries a MAC over a per-direction counter, and data
// connections that prove their session before a byte counts. libsodium computes the MACs, the
// key derivation, the random bytes and the constant-time comparisons (Debian's libsodium-dev:
// small, audited, and the same calls on every machine). The protocol, message by message, is
// described at the top of control_auth.cpp.
//
// The listening side calls challenge_peer, the connecting side answer_challenge; both get a
// ControlChannel, and after that talk only through it: send(Json) and recv(timeout).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "tuner/expected.hpp"
#include "tuner/value.hpp"

namespace acceltune {

// The environment variables that carry the shared secret: a file holding it (only its first line
// counts; the file must not be readable by group or others), or the secret itself.
inline constexpr const char* kSecretFileVar = "ACCELTUNE_SECRET_FILE";
inline constexpr const char* kSecretVar = "ACCELTUNE_SECRET";

// The secret this process was given (ACCELTUNE_SECRET_FILE first, then ACCELTUNE_SECRET); none
// when neither is set. A file that cannot be read, is empty or is open to others is an input error
// naming the file and what to do.
Expected<std::optional<std::string>> configured_secret();

// 32 random bytes in hex, for a challenge, a nonce or a one-session secret.
std::string random_hex(size_t bytes = 32);

// The largest line a peer may send before it has proved itself.
inline constexpr size_t kMaxAuthLineBytes = 64 * 1024;
// The version of the session protocol; the listener's challenge names it.
inline constexpr int kControlProtocolVersion = 2;
// What a data connection sends first: its 4-byte stream index (network order), then its token.
inline constexpr size_t kDataTokenBytes = 32;

// One control connection after the handshake: JSON objects, one a line. With keys (a secret on
// both sides) every message carries "seq" and "mac" (control_auth.cpp says how they are made);
// a message that fails its check ends the channel: recv returns why, now and on every later
// call, and broken() keeps the reason for the log. Without keys (insecure mode, or a socketpair
// to a child of this process) the lines are plain. One thread at a time.
class ControlChannel {
 public:
  ControlChannel() = default;
  // A channel without keys on fd; it does not own fd.
  static ControlChannel plain(int fd);
  ControlChannel(ControlChannel&& o) noexcept;
  ControlChannel& operator=(ControlChannel&& o) noexcept;
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;
  ~ControlChannel();  // wipes the keys; closes fd when it owns it

  Status send(const Json& message);
  // The next message within timeout_seconds, without its "seq" and "mac".
  Expected<Json> recv(double timeout_seconds, size_t max_bytes = size_t{16} << 20);

  int fd() const { return fd_; }
  bool open() const { return fd_ >= 0; }
  bool authenticated() const { return keyed_; }
  // Why the channel ended: a message that failed its check ("" while none has).
  const std::string& broken() const { return broken_; }
  // Messages sent and received so far: the next message's "seq" each way.
  uint64_t sent() const { return sent_; }
  uint64_t received() const { return received_; }
  // From now on the channel closes fd when it goes (or on close()).
  void own_fd() { owns_ = true; }
  // Gives the connection up unclosed: the channel is empty after, and fd the caller's.
  int release_fd();
  void close();

  // The token of data connection `index` opened for the request this side sent (or received) as
  // message `request_seq`: a MAC under the session's data key. All zeros on a channel without keys.
  std::array<unsigned char, kDataTokenBytes> data_token(uint64_t request_seq, uint32_t index) const;
  // Whether `token` is that token (constant time); any token on a channel without keys.
  bool data_token_matches(uint64_t request_seq, uint32_t index, const unsigned char* token) const;

 private:
  friend struct ChannelKeys;
  void wipe();
  int fd_ = -1;
  bool owns_ = false;
  bool keyed_ = false;
  unsigned char send_key_[32] = {}, recv_key_[32] = {}, data_key_[32] = {};
  uint64_t sent_ = 0, received_ = 0;
  std::string broken_;
};

// What the listening side learned from a connecting side that proved itself.
struct AcceptedPeer {
  Json first;              // its first line without "nonce" and "proof"
  ControlChannel channel;  // on fd, not owning it
};

// The listening side: sends the challenge (or {"auth": "none"} without a secret), reads the
// connecting side's first line within `timeout_seconds`, checks its proof and sends its own.
// `context` names the channel ("serve", "nccl-control") so a proof for one is worthless on
// another. An error says what was wrong (no proof, a wrong one, a line too long or too slow,
// not JSON); the caller tells the far end and ends the connection.
Expected<AcceptedPeer> challenge_peer(int fd, const std::optional<std::string>& secret, const std::string& context,
                                      double timeout_seconds);

// The connecting side: reads the challenge, sends `first` with its proof and checks the
// listener's. Without a secret it can answer only a listener that asks for none; with one it
// talks only to a listener that proves the same secret. The channel does not own fd.
Expected<ControlChannel> answer_challenge(int fd, const std::optional<std::string>& secret, const std::string& context,
                                          Json first, double timeout_seconds);

// HMAC-SHA-256 under `key` (32 bytes) of `seq` (8 bytes, big-endian) and `text`, in hex: the MAC
// the channel puts on each message, exposed for the benchmark.
std::string control_mac(const unsigned char* key, uint64_t seq, const std::string& text);

}  // namespace acceltune
