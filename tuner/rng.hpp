// The seeded random stream of strategies, spaces and landscapes: splitmix64, portable and
// seedable (std distributions differ between libraries, and a study must replay identically from
// its stored seed).
#pragma once

#include <cstdint>
#include <string_view>

namespace acceltune {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n), without modulo bias.
  uint64_t below(uint64_t n);
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double normal();

 private:
  uint64_t state_;
};

// A seed derived from another seed and a text (a strategy's own stream, a param's noise).
uint64_t hash_combine(uint64_t seed, std::string_view text);

}  // namespace acceltune
