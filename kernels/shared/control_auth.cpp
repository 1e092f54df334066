// The authenticated control session of kernels/shared/control_auth.hpp.
//
// The protocol (version 2). L is the listening side (acceltune serve, a kernel's in-process
// server, the nccl kernel's ranks socket), C the connecting side (a --peer client, a rank);
// `context` names the channel ("serve", "nccl-control"); K = SHA-256(secret); HMAC is
// HMAC-SHA-256; text in quotes is literal, "\n" a newline, | concatenation.
//
// 1. L -> C  {"auth": "hmac-sha256", "version": 2, "challenge": H}   H: 32 fresh random bytes (hex)
//            {"auth": "none"}                                        insecure: no secret on L
// 2. C -> L  the first line, the hello: B = C's object with "nonce": N added (32 fresh random
//            bytes), serialised, then ,"proof": Pc spliced before its closing brace, where
//              Pc = HMAC(K, "acceltune-control/2 client\n" | context | "\n" | H | "\n" | B)
//            covers the whole hello as sent (kind, version, params): a relay that changes any
//            byte of it, or replays a hello captured on another connection (another H), fails.
//            Insecure: the plain object.
// 3. L -> C  {"auth": "ok", "proof": Ps},
//              Ps = HMAC(K, "acceltune-control/2 server\n" | context | "\n" | H | "\n" | B)
//            or, when Pc is missing or wrong, {"ok": false, "error": "refused: ..."} and the end.
//            C refuses a listener whose Ps is missing or wrong (it does not hold the secret), one
//            that answers {"auth": "none"} while C holds a secret (a downgrade), and one that
//            speaks another version.
// 4. Keys. Both sides compute M = HMAC(K, "acceltune-control/2 session\n" | context | "\n" | H |
//    "\n" | N) and derive with crypto_kdf_derive_from_key(32 bytes, id, "acctlv2k", M):
//    id 1 the key of C's messages to L, id 2 of L's messages to C, id 3 the data key.
// 5. Every later message, both ways, is a JSON object line: the message with "seq": n added
//    last (n counts this direction's messages from 0), serialised as S, then ,"mac": T spliced
//    before its closing brace, where T = HMAC(direction key, n as 8 bytes big-endian | S) and n
//    is the counter the receiver expects next. The receiver checks the MAC over the bytes that
//    arrived, so no re-serialisation can differ from the sender's.
//    What ends the connection (the receiver stops reading, says why, and the server logs it with
//    the peer's address): a line without "mac" or "seq", not JSON, a MAC that fails (an altered
//    or injected message), a sequence number below the expected one (a replayed message) or
//    above it (a message went missing: dropped, or dropped and resent later).
// 6. Data connections a session opens (tcp-stream's streams): each sends first its index (4
//    bytes, network order) and a token HMAC(data key, "acceltune-data/2\n" | r as 8 bytes
//    big-endian | the index as 4 bytes big-endian), r being the sequence number of the control
//    request that opened it. The receiver refuses (and logs) a connection whose token is wrong
//    before a byte of it counts. Insecure: the token is 32 zero bytes, not checked.
// Insecure mode (no secret on either side) skips steps 3 to 5 and checks no token: plain lines,
// said so in the log. A side with a secret never accepts it.
#include "kernels/shared/control_auth.hpp"

#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

#include "kernels/shared/socket_channel.hpp"

namespace acceltune {
namespace {

constexpr const char* kLabel = "acceltune-control/2";
constexpr const char kKdfContext[crypto_kdf_CONTEXTBYTES + 1] = "acctlv2k";
constexpr size_t kMacHex = 2 * crypto_auth_hmacsha256_BYTES;

bool sodium_ready() {
  static const bool ok = sodium_init() >= 0;
  return ok;
}

void need_sodium() {
  if (!sodium_ready()) throw std::runtime_error("libsodium failed to initialise");
}

std::string to_hex(const unsigned char* p, size_t n) {
  std::string out(n * 2 + 1, '\0');
  sodium_bin2hex(out.data(), out.size(), p, n);
  out.pop_back();
  return out;
}

bool is_hex(const std::string& s, size_t bytes) {
  if (s.size() != bytes * 2) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

void put_be(unsigned char* out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i, v >>= 8) out[i] = static_cast<unsigned char>(v & 0xff);
}

// HMAC-SHA-256 of the pieces, one after another, into mac.
void hmac(const unsigned char* key, std::initializer_list<std::pair<const void*, size_t>> pieces,
          unsigned char mac[crypto_auth_hmacsha256_BYTES]) {
  crypto_auth_hmacsha256_state st;
  crypto_auth_hmacsha256_init(&st, key, 32);
  for (const auto& [p, n] : pieces) crypto_auth_hmacsha256_update(&st, static_cast<const unsigned char*>(p), n);
  crypto_auth_hmacsha256_final(&st, mac);
}

// K = SHA-256(secret), wiped when it goes.
struct SecretKey {
  unsigned char k[crypto_hash_sha256_BYTES];
  explicit SecretKey(const std::string& secret) {
    need_sodium();
    crypto_hash_sha256(k, reinterpret_cast<const unsigned char*>(secret.data()), secret.size());
  }
  ~SecretKey() { sodium_memzero(k, sizeof k); }
  SecretKey(const SecretKey&) = delete;
  SecretKey& operator=(const SecretKey&) = delete;
};

// HMAC(K, label " " role "\n" context "\n" challenge "\n" tail) into out: the proofs (tail: the
// hello as sent) and the session's master key (tail: the nonce).
void labelled_mac(const SecretKey& key, const std::string& role, const std::string& context,
                  const std::string& challenge, const std::string& tail, unsigned char out[32]) {
  const std::string head = std::string(kLabel) + " " + role + "\n" + context + "\n" + challenge + "\n";
  hmac(key.k, {{head.data(), head.size()}, {tail.data(), tail.size()}}, out);
}

std::string proof(const SecretKey& key, const std::string& role, const std::string& context,
                  const std::string& challenge, const std::string& hello) {
  unsigned char mac[32];
  labelled_mac(key, role, context, challenge, hello, mac);
  return to_hex(mac, sizeof mac);
}

bool same_hex(const std::string& a, const std::string& b) {
  return a.size() == b.size() && sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

// A serialised object with ,"FIELD":"HEX" spliced before its closing brace.
std::string splice(const std::string& body, const char* field, const std::string& hex) {
  return body.substr(0, body.size() - 1) + ",\"" + field + "\":\"" + hex + "\"}";
}

// The inverse: the body as the sender serialised it and the tag, when the line ends that way.
bool unsplice(const std::string& line, const char* field, std::string* body, std::string* hex) {
  const std::string mid = std::string(",\"") + field + "\":\"";
  const size_t tail = mid.size() + kMacHex + 2;
  if (line.size() < tail + 2 || line.compare(line.size() - 2, 2, "\"}") != 0 ||
      line.compare(line.size() - tail, mid.size(), mid) != 0) {
    return false;
  }
  *hex = line.substr(line.size() - kMacHex - 2, kMacHex);
  *body = line.substr(0, line.size() - tail) + "}";
  return is_hex(*hex, crypto_auth_hmacsha256_BYTES);
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

// A string field of a line from the far end; "" when absent or not a string (never throws).
std::string text_of(const Json& j, const char* field) {
  return j.is_object() && j.contains(field) && j[field].is_string() ? j[field].get<std::string>() : "";
}

}  // namespace

// Sets a channel's keys from the session's master key (step 4).
struct ChannelKeys {
  static void set(ControlChannel& ch, const unsigned char master[32], bool connector) {
    unsigned char c2l[32], l2c[32];
    crypto_kdf_derive_from_key(c2l, sizeof c2l, 1, kKdfContext, master);
    crypto_kdf_derive_from_key(l2c, sizeof l2c, 2, kKdfContext, master);
    crypto_kdf_derive_from_key(ch.data_key_, sizeof ch.data_key_, 3, kKdfContext, master);
    std::memcpy(ch.send_key_, connector ? c2l : l2c, 32);
    std::memcpy(ch.recv_key_, connector ? l2c : c2l, 32);
    sodium_memzero(c2l, sizeof c2l);
    sodium_memzero(l2c, sizeof l2c);
    ch.keyed_ = true;
  }
  static void derive(ControlChannel& ch, const SecretKey& key, const std::string& context, const std::string& challenge,
                     const std::string& nonce, bool connector) {
    unsigned char master[32];
    labelled_mac(key, "session", context, challenge, nonce, master);
    set(ch, master, connector);
    sodium_memzero(master, sizeof master);
  }
};

Expected<std::optional<std::string>> configured_secret() {
  if (const char* file = std::getenv(kSecretFileVar); file && *file) {
    struct stat st {};
    if (::stat(file, &st) != 0) {
      return input_error("{}={}: cannot read it ({}); write the shared secret there, or unset {}", kSecretFileVar, file,
                         std::strerror(errno), kSecretFileVar);
    }
    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
      return input_error("{}={}: the secret file is open to group or others (mode {:o}); run chmod 600 {}",
                         kSecretFileVar, file, st.st_mode & 0777, file);
    }
    std::ifstream in(file);
    std::string secret;
    std::getline(in, secret);
    while (!secret.empty() && (secret.back() == '\r' || secret.back() == ' ' || secret.back() == '\t')) secret.pop_back();
    if (!in && secret.empty()) return input_error("{}={}: cannot read it", kSecretFileVar, file);
    if (secret.size() < 16) {
      return input_error("{}={}: the secret is {} characters; use at least 16 (for example: openssl rand -hex 32 > {})",
                         kSecretFileVar, file, secret.size(), file);
    }
    return std::optional<std::string>(secret);
  }
  if (const char* s = std::getenv(kSecretVar); s && *s) {
    if (std::string(s).size() < 16) {
      return input_error("{}: the secret is {} characters; use at least 16", kSecretVar, std::string(s).size());
    }
    return std::optional<std::string>(std::string(s));
  }
  return std::optional<std::string>();
}

std::string random_hex(size_t bytes) {
  need_sodium();
  std::string raw(bytes, '\0');
  randombytes_buf(raw.data(), raw.size());
  return to_hex(reinterpret_cast<const unsigned char*>(raw.data()), raw.size());
}

std::string control_mac(const unsigned char* key, uint64_t seq, const std::string& text) {
  need_sodium();
  unsigned char n[8], mac[crypto_auth_hmacsha256_BYTES];
  put_be(n, seq, 8);
  hmac(key, {{n, sizeof n}, {text.data(), text.size()}}, mac);
  return to_hex(mac, sizeof mac);
}

// ---- the channel ----

ControlChannel ControlChannel::plain(int fd) {
  ControlChannel ch;
  ch.fd_ = fd;
  return ch;
}

ControlChannel::ControlChannel(ControlChannel&& o) noexcept { *this = std::move(o); }

ControlChannel& ControlChannel::operator=(ControlChannel&& o) noexcept {
  if (this == &o) return *this;
  close();
  fd_ = o.fd_;
  owns_ = o.owns_;
  keyed_ = o.keyed_;
  std::memcpy(send_key_, o.send_key_, sizeof send_key_);
  std::memcpy(recv_key_, o.recv_key_, sizeof recv_key_);
  std::memcpy(data_key_, o.data_key_, sizeof data_key_);
  sent_ = o.sent_;
  received_ = o.received_;
  broken_ = std::move(o.broken_);
  o.fd_ = -1;
  o.owns_ = false;
  o.wipe();
  return *this;
}

ControlChannel::~ControlChannel() { close(); }

void ControlChannel::wipe() {
  sodium_memzero(send_key_, sizeof send_key_);
  sodium_memzero(recv_key_, sizeof recv_key_);
  sodium_memzero(data_key_, sizeof data_key_);
  keyed_ = false;
  sent_ = received_ = 0;
  broken_.clear();
}

int ControlChannel::release_fd() {
  const int fd = fd_;
  owns_ = false;
  close();
  return fd;
}

void ControlChannel::close() {
  if (owns_ && fd_ >= 0) ::close(fd_);
  fd_ = -1;
  owns_ = false;
  wipe();
}

Status ControlChannel::send(const Json& message) {
  if (fd_ < 0) return runtime_error("control connection: not connected");
  if (!keyed_) return send_json_line(fd_, message);
  if (!message.is_object()) return runtime_error("control connection: a message must be a JSON object");
  Json m = message;
  m.erase("mac");
  m.erase("seq");
  m["seq"] = sent_;
  const std::string body = dump(m);
  const std::string line = splice(body, "mac", control_mac(send_key_, sent_, body)) + "\n";
  ++sent_;
  return send_all(fd_, line.data(), line.size(), "control message");
}

Expected<Json> ControlChannel::recv(double timeout_seconds, size_t max_bytes) {
  if (!broken_.empty()) return runtime_error("{}", broken_);
  if (fd_ < 0) return runtime_error("control connection: not connected");
  if (!keyed_) {
    auto j = recv_json_line(fd_, timeout_seconds, max_bytes);
    if (j && !j->is_object()) return runtime_error("control connection: a line that is not a JSON object");
    return j;
  }
  ACCELTUNE_TRY_ASSIGN(const std::string line, recv_line(fd_, timeout_seconds, max_bytes));
  auto refuse = [&](std::string why) -> Error {
    broken_ = fmt::format("control message {} {}; the session is ended", received_, why);
    return runtime_error("{}", broken_);
  };
  std::string body, mac;
  if (!unsplice(line, "mac", &body, &mac)) return refuse("carries no MAC (an injected or altered line)");
  Json j = Json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return refuse("is not a JSON object (an altered line)");
  if (!j.contains("seq") || !j["seq"].is_number_unsigned()) return refuse("carries no sequence number");
  const uint64_t seq = j["seq"].get<uint64_t>();
  if (!same_hex(control_mac(recv_key_, seq, body), mac)) {
    return refuse("fails its MAC (altered, or injected by someone without the session's key)");
  }
  if (seq < received_) return refuse(fmt::format("is a replay: it repeats sequence number {}", seq));
  if (seq > received_) {
    return refuse(fmt::format("is out of order: sequence number {} where {} was due (a message went missing)", seq,
                              received_));
  }
  ++received_;
  j.erase("seq");
  return j;
}

std::array<unsigned char, kDataTokenBytes> ControlChannel::data_token(uint64_t request_seq, uint32_t index) const {
  std::array<unsigned char, kDataTokenBytes> out{};
  if (!keyed_) return out;
  static const std::string label = "acceltune-data/2\n";
  unsigned char r[8], i[4];
  put_be(r, request_seq, 8);
  put_be(i, index, 4);
  hmac(data_key_, {{label.data(), label.size()}, {r, sizeof r}, {i, sizeof i}}, out.data());
  return out;
}

bool ControlChannel::data_token_matches(uint64_t request_seq, uint32_t index, const unsigned char* token) const {
  if (!keyed_) return true;
  const auto want = data_token(request_seq, index);
  return sodium_memcmp(want.data(), token, want.size()) == 0;
}

// ---- the handshake ----

Expected<AcceptedPeer> challenge_peer(int fd, const std::optional<std::string>& secret, const std::string& context,
                                      double timeout_seconds) {
  const std::string challenge = secret ? random_hex() : "";
  Json ask = secret ? Json{{"auth", "hmac-sha256"}, {"version", kControlProtocolVersion}, {"challenge", challenge}}
                    : Json{{"auth", "none"}};
  ACCELTUNE_TRY(send_json_line(fd, ask));
  auto line = recv_line(fd, timeout_seconds, kMaxAuthLineBytes);
  if (!line) return runtime_error("no proof of the shared secret ({})", line.error().message);
  std::string body, tag;
  const bool tagged = unsplice(*line, "proof", &body, &tag);
  Json first = Json::parse(tagged ? body : *line, nullptr, false);
  if (first.is_discarded()) return runtime_error("the first line is not JSON: '{}'", line->substr(0, 120));
  if (!first.is_object()) return runtime_error("the first line is not a JSON object");
  const Json nonce = first.contains("nonce") ? first["nonce"] : Json(nullptr);
  first.erase("proof");
  first.erase("nonce");
  if (!secret) return AcceptedPeer{std::move(first), ControlChannel::plain(fd)};
  if (!tagged || !nonce.is_string()) return runtime_error("no proof of the shared secret");
  const std::string n = nonce.get<std::string>();
  if (!is_hex(n, 32)) return runtime_error("a malformed proof");
  const SecretKey key(*secret);
  if (!same_hex(proof(key, "client", context, challenge, body), tag)) {
    return runtime_error("a wrong proof (another secret, or a hello changed on the way)");
  }
  ACCELTUNE_TRY(send_json_line(fd, Json{{"auth", "ok"}, {"proof", proof(key, "server", context, challenge, body)}}));
  AcceptedPeer out{std::move(first), ControlChannel::plain(fd)};
  ChannelKeys::derive(out.channel, key, context, challenge, n, false);
  return out;
}

namespace {

// The listener's answer to a proved hello: its own proof, or why it refused.
Status check_listener_proof(int fd, const SecretKey& key, const std::string& context, const std::string& challenge,
                            const std::string& body, double timeout_seconds) {
  auto reply = recv_json_line(fd, timeout_seconds, kMaxAuthLineBytes);
  if (!reply) return runtime_error("the far end did not prove the shared secret: {}", reply.error().message);
  if (const std::string error = text_of(*reply, "error"); !error.empty()) return runtime_error("{}", error);
  const std::string got = text_of(*reply, "proof");
  if (text_of(*reply, "auth") != "ok" || !is_hex(got, crypto_auth_hmacsha256_BYTES)) {
    return runtime_error("the far end did not prove the shared secret (it sent {}): it is not the acceltune serve "
                         "meant, or a relay is in between",
                         reply->dump().substr(0, 120));
  }
  if (!same_hex(proof(key, "server", context, challenge, body), got)) {
    return runtime_error("the far end's proof of the shared secret is wrong: it holds another secret, or is not the "
                         "acceltune serve meant");
  }
  return {};
}

}  // namespace

Expected<ControlChannel> answer_challenge(int fd, const std::optional<std::string>& secret, const std::string& context,
                                          Json first, double timeout_seconds) {
  auto ask = recv_json_line(fd, timeout_seconds, kMaxAuthLineBytes);
  if (!ask) return runtime_error("no challenge from the far end: {}", ask.error().message);
  const std::string kind = text_of(*ask, "auth");
  first.erase("proof");
  first.erase("nonce");
  if (kind == "none") {
    if (secret) {
      return input_error("the far end serves without authentication (serve --insecure) but this side holds a shared "
                         "secret ({} or {}): refusing an unauthenticated session; run serve with the same secret, or "
                         "unset the secret here to use an insecure serve",
                         kSecretFileVar, kSecretVar);
    }
    ACCELTUNE_TRY(send_json_line(fd, first));
    return ControlChannel::plain(fd);
  }
  if (kind != "hmac-sha256") {
    return runtime_error("the far end is not an acceltune control channel of this version (it sent {})",
                         ask->dump().substr(0, 120));
  }
  if (!secret) {
    return input_error("the far end asks for the shared secret: set {} to a file holding it (chmod 600), or {}, on "
                       "this side as on the far end",
                       kSecretFileVar, kSecretVar);
  }
  const Json version = ask->contains("version") ? (*ask)["version"] : Json(1);
  if (version != Json(kControlProtocolVersion)) {
    return runtime_error("the far end speaks control protocol version {}, this side {}: run the same acceltune on both",
                         version.dump(), kControlProtocolVersion);
  }
  const std::string challenge = text_of(*ask, "challenge");
  if (!is_hex(challenge, 32)) return runtime_error("the far end sent a malformed challenge");
  const std::string nonce = random_hex();
  first["nonce"] = nonce;
  const std::string body = dump(first);
  const SecretKey key(*secret);
  const std::string line = splice(body, "proof", proof(key, "client", context, challenge, body)) + "\n";
  ACCELTUNE_TRY(send_all(fd, line.data(), line.size(), "the first line"));
  ACCELTUNE_TRY(check_listener_proof(fd, key, context, challenge, body, timeout_seconds));
  ControlChannel ch = ControlChannel::plain(fd);
  ChannelKeys::derive(ch, key, context, challenge, nonce, true);
  return ch;
}

}  // namespace acceltune
