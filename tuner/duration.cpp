// The definitions behind tuner/duration.hpp.
#include "tuner/duration.hpp"

#include <cmath>
#include <string>

namespace acceltune {

std::optional<double> parse_duration(std::string_view text_view, bool zero_allowed) {
  const std::string text(text_view);
  if (text.empty()) return std::nullopt;
  double total = 0;
  size_t i = 0;
  bool any = false;
  while (i < text.size()) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(text.substr(i), &used);
    } catch (...) {
      return std::nullopt;
    }
    if (used == 0 || !std::isfinite(v) || v < 0) return std::nullopt;
    i += used;
    double unit = 1;
    if (i < text.size()) {
      const char u = text[i];
      if (u == 's') unit = 1;
      else if (u == 'm') unit = 60;
      else if (u == 'h') unit = 3600;
      else return std::nullopt;
      ++i;
    } else if (any) {
      return std::nullopt;  // "1m30": a number without a unit after a unit
    }
    total += v * unit;
    any = true;
  }
  if (!(total > 0) && !(zero_allowed && total == 0)) return std::nullopt;
  return total;
}

bool round_may_start(const Deadline& deadline, int round, double last_round_seconds) {
  if (round == 0) return true;
  return !deadline_passed(deadline) && (round < 2 || !deadline_passed(deadline, last_round_seconds));
}

bool deadline_passed(const Deadline& deadline, double ahead) {
  return deadline && std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                            std::chrono::duration<double>(ahead)) >=
                         *deadline;
}

}  // namespace acceltune
