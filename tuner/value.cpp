// The definitions behind tuner/value.hpp: param values and message sizes.
#include "tuner/value.hpp"

#include <charconv>
#include <cmath>

namespace acceltune {

std::string to_string(const Value& v) {
  struct Visitor {
    std::string operator()(int64_t x) const { return std::to_string(x); }
    std::string operator()(double x) const { return fmt::format("{}", x); }
    std::string operator()(bool x) const { return x ? "true" : "false"; }
    std::string operator()(const std::string& x) const { return x; }
  };
  return std::visit(Visitor{}, v);
}

Json to_json(const Value& v) {
  return std::visit([](const auto& x) { return Json(x); }, v);
}

bool is_numeric(const Value& v) { return !std::holds_alternative<std::string>(v); }

double to_double(const Value& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (auto* d = std::get_if<double>(&v)) return *d;
  if (auto* b = std::get_if<bool>(&v)) return *b ? 1.0 : 0.0;
  return std::nan("");
}

bool operator_less(const Value& a, const Value& b) {
  if (is_numeric(a) && is_numeric(b)) return to_double(a) < to_double(b);
  return to_string(a) < to_string(b);
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

Expected<uint64_t> parse_bytes(std::string_view text) {
  std::string_view s = trim(text);
  if (s.empty()) return input_error("empty size; write a number of bytes such as 4096 or 64K");
  double number = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), number);
  if (ec != std::errc() || number < 0) {
    return input_error("bad size '{}'; write a number of bytes such as 4096, 64K, 1M or 2G", text);
  }
  std::string_view unit(ptr, static_cast<size_t>(s.data() + s.size() - ptr));
  unit = trim(unit);
  double scale = 1;
  if (!unit.empty()) {
    char u = static_cast<char>(unit.front() | 0x20);
    switch (u) {
      case 'k': scale = 1024.0; break;
      case 'm': scale = 1024.0 * 1024; break;
      case 'g': scale = 1024.0 * 1024 * 1024; break;
      case 't': scale = 1024.0 * 1024 * 1024 * 1024; break;
      case 'b': scale = 1; break;
      default:
        return input_error("bad size unit in '{}'; use K, M, G or T (powers of 1024)", text);
    }
    std::string_view rest = u == 'b' ? unit.substr(1) : unit.substr(1);
    if (!(rest.empty() || rest == "B" || rest == "b" || rest == "iB" || rest == "ib")) {
      return input_error("bad size unit in '{}'; use K, M, G or T (powers of 1024)", text);
    }
  }
  double bytes = number * scale;
  if (bytes != std::floor(bytes) || bytes > 1.8e19) {
    return input_error("size '{}' is not a whole number of bytes", text);
  }
  return static_cast<uint64_t>(bytes);
}

Expected<std::vector<uint64_t>> parse_sizes(std::string_view text) {
  std::vector<uint64_t> sizes;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string_view item =
        trim(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (item.empty()) return input_error("empty entry in size list '{}'", text);
    size_t c1 = item.find(':');
    if (c1 == std::string_view::npos) {
      ACCELTUNE_TRY_ASSIGN(uint64_t b, parse_bytes(item));
      sizes.push_back(b);
    } else {
      size_t c2 = item.find(':', c1 + 1);
      if (c2 == std::string_view::npos) {
        return input_error("bad size range '{}'; write FROM:TO:xFACTOR or FROM:TO:+STEP", item);
      }
      ACCELTUNE_TRY_ASSIGN(uint64_t from, parse_bytes(item.substr(0, c1)));
      ACCELTUNE_TRY_ASSIGN(uint64_t to, parse_bytes(item.substr(c1 + 1, c2 - c1 - 1)));
      std::string_view step = trim(item.substr(c2 + 1));
      if (from > to) return input_error("size range '{}' runs backwards", item);
      if (step.size() >= 2 && (step[0] == 'x' || step[0] == '*')) {
        double factor = 0;
        auto [p, ec] = std::from_chars(step.data() + 1, step.data() + step.size(), factor);
        if (ec != std::errc() || p != step.data() + step.size() || factor <= 1.0) {
          return input_error("bad factor in size range '{}'; write e.g. x2 or x4", item);
        }
        if (from == 0) return input_error("size range '{}' multiplies from 0", item);
        for (double b = static_cast<double>(from); b <= static_cast<double>(to) * (1 + 1e-12);
             b *= factor) {
          sizes.push_back(static_cast<uint64_t>(std::llround(b)));
        }
      } else if (step.size() >= 2 && step[0] == '+') {
        ACCELTUNE_TRY_ASSIGN(uint64_t inc, parse_bytes(step.substr(1)));
        if (inc == 0) return input_error("size range '{}' steps by 0", item);
        for (uint64_t b = from; b <= to; b += inc) sizes.push_back(b);
      } else {
        return input_error("bad step in size range '{}'; write xFACTOR or +STEP", item);
      }
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (sizes.size() > 4096) return input_error("size list '{}' has more than 4096 sizes", text);
  for (uint64_t b : sizes) {
    if (b == 0) return input_error("a size of 0 bytes moves nothing in '{}'; give sizes from 1 byte, e.g. 4K,64K,1M", text);
  }
  return sizes;
}

std::string format_bytes(uint64_t bytes) {
  if (bytes == 0) return "-";
  static constexpr const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  uint64_t b = bytes;
  while (u < 4 && b % 1024 == 0) {
    b /= 1024;
    ++u;
  }
  return fmt::format("{}{}", b, units[u]);
}

std::string gain_interval_text(double ratio, double low, double high) {
  return fmt::format("{:.2f}x [{:.2f}, {}]", ratio, low, std::isfinite(high) ? fmt::format("{:.2f}", high) : "inf");
}

std::string interval_meaning(double low, double high, double margin) {
  if (low > 1.0) return "faster";
  if (high < 1.0) return low < margin ? "slower" : "within the no-harm margin";
  return "no significant difference";
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

}  // namespace acceltune
