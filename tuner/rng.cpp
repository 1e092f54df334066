// The definitions behind tuner/rng.hpp.
#include "tuner/rng.hpp"

#include <cmath>

namespace acceltune {

uint64_t Rng::below(uint64_t n) {
  if (n <= 1) return 0;
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do {
    x = next();
  } while (x >= limit);
  return x % n;
}

double Rng::normal() {
  // Box-Muller; one of the pair is enough here.
  double u1 = uniform();
  while (u1 <= 0.0) u1 = uniform();
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

uint64_t hash_combine(uint64_t seed, std::string_view text) {
  uint64_t h = 1469598103934665603ull ^ seed;  // FNV-1a over the text, seeded
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return Rng(h).next();
}

}  // namespace acceltune
