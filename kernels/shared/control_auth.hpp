// Authentication of control connections (acceltune serve and its clients, the NCCL ranks'
// control socket): a challenge-response on a shared secret, so the secret never crosses the
// wire. The listening side sends a fresh random challenge; the connecting side answers with
// HMAC-SHA-256(key, "acceltune-control/1" | context | challenge | its own nonce), where the key is
// SHA-256 of the secret. libsodium computes the MAC, the random bytes and the constant-time
// comparison (Debian's libsodium-dev: small, audited, and the same calls on every machine).
//
// The wire: one JSON line each way before anything else.
//   listener -> {"auth": "hmac-sha256", "challenge": HEX}     (or {"auth": "none"} when insecure)
//   connector -> its first line with "nonce": HEX and "proof": HEX added
#pragma once

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

// The proof of knowing `secret` for one challenge; `context` names the channel ("serve",
// "nccl-control") so a proof for one is worthless on another.
std::string control_proof(const std::string& secret, const std::string& context, const std::string& challenge,
                          const std::string& nonce);

// The largest line a peer may send before it has proved itself.
inline constexpr size_t kMaxAuthLineBytes = 64 * 1024;

// The listening side: sends the challenge (or {"auth": "none"} without a secret) and reads the
// connecting side's first line within `timeout_seconds`. Returns that line without its proof;
// an error says what was wrong (no proof, a wrong one, a line too long or too slow, not JSON).
Expected<Json> challenge_peer(int fd, const std::optional<std::string>& secret, const std::string& context,
                              double timeout_seconds);

// The connecting side: reads the challenge and sends `first` with the proof. Without a secret
// it can answer only a listener that asks for none; a listener that asks for a proof gets a
// clear error naming the variables to set.
Status answer_challenge(int fd, const std::optional<std::string>& secret, const std::string& context, Json first,
                        double timeout_seconds);

}  // namespace acceltune
