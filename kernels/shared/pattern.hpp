// The data the transfer kernels move and check afterwards. Byte i of the pattern is never 0 and
// differs from its neighbours, so a destination left cleared, shifted or copied in part shows as
// a mismatch. A transfer that must differ from an earlier one of another size starts its pattern
// at another offset (ucx starts at the message size).
#pragma once

#include <cstddef>
#include <cstdint>

namespace acceltune {

inline unsigned char pattern_byte(uint64_t i) {
  return static_cast<unsigned char>(((i * 2654435761u) >> 7) % 255 + 1);
}

// Bytes [first, first + n) of the pattern, written to p.
inline void fill_pattern(void* p, uint64_t first, size_t n) {
  auto* b = static_cast<unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) b[i] = pattern_byte(first + i);
}

// The index of the first of n bytes at p that is not the pattern's byte first + index, or -1.
inline int64_t pattern_mismatch(const void* p, uint64_t first, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) {
    if (b[i] != pattern_byte(first + i)) return static_cast<int64_t>(i);
  }
  return -1;
}

}  // namespace acceltune
