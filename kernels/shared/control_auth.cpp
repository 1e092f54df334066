// The challenge-response of control connections (kernels/shared/control_auth.hpp).
#include "kernels/shared/control_auth.hpp"

#include <sodium.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "kernels/shared/socket_channel.hpp"

namespace acceltune {
namespace {

bool sodium_ready() {
  static const bool ok = sodium_init() >= 0;
  return ok;
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

}  // namespace

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
  if (!sodium_ready()) throw std::runtime_error("libsodium failed to initialise");
  std::string raw(bytes, '\0');
  randombytes_buf(raw.data(), raw.size());
  return to_hex(reinterpret_cast<const unsigned char*>(raw.data()), raw.size());
}

std::string control_proof(const std::string& secret, const std::string& context, const std::string& challenge,
                          const std::string& nonce) {
  if (!sodium_ready()) throw std::runtime_error("libsodium failed to initialise");
  unsigned char key[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(key, reinterpret_cast<const unsigned char*>(secret.data()), secret.size());
  const std::string message = "acceltune-control/1\n" + context + "\n" + challenge + "\n" + nonce;
  unsigned char mac[crypto_auth_hmacsha256_BYTES];
  crypto_auth_hmacsha256_state st;
  crypto_auth_hmacsha256_init(&st, key, sizeof key);
  crypto_auth_hmacsha256_update(&st, reinterpret_cast<const unsigned char*>(message.data()), message.size());
  crypto_auth_hmacsha256_final(&st, mac);
  sodium_memzero(key, sizeof key);
  return to_hex(mac, sizeof mac);
}

Expected<Json> challenge_peer(int fd, const std::optional<std::string>& secret, const std::string& context,
                              double timeout_seconds) {
  const std::string challenge = secret ? random_hex() : "";
  Json ask = secret ? Json{{"auth", "hmac-sha256"}, {"challenge", challenge}} : Json{{"auth", "none"}};
  ACCELTUNE_TRY(send_json_line(fd, ask));
  auto line = recv_json_line(fd, timeout_seconds, kMaxAuthLineBytes);
  if (!line) return runtime_error("no proof of the shared secret ({})", line.error().message);
  Json first = std::move(*line);
  if (!first.is_object()) return runtime_error("the first line is not a JSON object");
  const Json proof = first.contains("proof") ? first["proof"] : Json(nullptr);
  const Json nonce = first.contains("nonce") ? first["nonce"] : Json(nullptr);
  first.erase("proof");
  first.erase("nonce");
  if (!secret) return first;
  if (!proof.is_string() || !nonce.is_string()) return runtime_error("no proof of the shared secret");
  const std::string p = proof.get<std::string>(), n = nonce.get<std::string>();
  if (!is_hex(p, crypto_auth_hmacsha256_BYTES) || !is_hex(n, 32)) return runtime_error("a malformed proof");
  const std::string want = control_proof(*secret, context, challenge, n);
  if (sodium_memcmp(want.data(), p.data(), want.size()) != 0) return runtime_error("a wrong proof (another secret)");
  return first;
}

Status answer_challenge(int fd, const std::optional<std::string>& secret, const std::string& context, Json first,
                        double timeout_seconds) {
  auto ask = recv_json_line(fd, timeout_seconds, kMaxAuthLineBytes);
  if (!ask) return runtime_error("no challenge from the far end: {}", ask.error().message);
  const std::string kind = ask->is_object() ? ask->value("auth", "") : "";
  if (kind == "hmac-sha256") {
    if (!secret) {
      return input_error("the far end asks for the shared secret: set {} to a file holding it (chmod 600), or {}, on "
                         "this side as on the far end",
                         kSecretFileVar, kSecretVar);
    }
    const std::string challenge = ask->value("challenge", "");
    if (!is_hex(challenge, 32)) return runtime_error("the far end sent a malformed challenge");
    const std::string nonce = random_hex();
    first["nonce"] = nonce;
    first["proof"] = control_proof(*secret, context, challenge, nonce);
  } else if (kind != "none") {
    return runtime_error("the far end is not an acceltune control channel of this version (it sent {})",
                         ask->dump().substr(0, 120));
  }
  return send_json_line(fd, first);
}

}  // namespace acceltune
