// The native param tables: their domains in words, the check of a space against them, and the
// values a kernel reads for one config (defaults for what a space omits).
#include "tuner/native_params.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <stdexcept>

namespace acceltune {
namespace {

std::string number_text(double x, const std::string& unit) {
  if (x == std::floor(x) && std::fabs(x) < 9.0e15) {
    const auto i = static_cast<int64_t>(x);
    // Sizes print in their short form where it is exact (1073741824 -> 1G).
    if (unit == "bytes" && i >= 1024 && (i & (i - 1)) == 0) return format_bytes(static_cast<uint64_t>(i));
    return std::to_string(i);
  }
  return to_string(Value{x});
}

bool same_name(std::string_view a, std::string_view b, bool any_case) {
  if (!any_case) return a == b;
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

bool is_choice(const NativeParam& p, std::string_view name) {
  return std::any_of(p.choices.begin(), p.choices.end(),
                     [&](const std::string& c) { return same_name(c, name, p.any_case); });
}

// An env row's value given as text ("1048576", "64K" for bytes): the number it names, or none.
std::optional<Value> number_in_text(const NativeParam& p, const std::string& text) {
  if (p.unit == "bytes") {
    auto b = parse_bytes(text);
    if (b && *b <= static_cast<uint64_t>(INT64_MAX)) return Value{static_cast<int64_t>(*b)};
    return std::nullopt;
  }
  if (p.kind == NativeKind::integer) {
    int64_t i = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), i);
    if (ec == std::errc() && end == text.data() + text.size()) return Value{i};
    return std::nullopt;
  }
  double d = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
  if (ec == std::errc() && end == text.data() + text.size()) return Value{d};
  return std::nullopt;
}

}  // namespace

std::string_view to_string(NativeKind kind) {
  switch (kind) {
    case NativeKind::integer: return "integer";
    case NativeKind::number: return "number";
    case NativeKind::choice: return "choice";
    case NativeKind::boolean: return "bool";
  }
  return "?";
}

NativeParam integer_param(std::string name, int64_t min, int64_t max, int64_t fallback, std::string unit,
                          std::string doc) {
  NativeParam p;
  p.name = std::move(name);
  p.kind = NativeKind::integer;
  p.min = static_cast<double>(min);
  p.max = static_cast<double>(max);
  p.fallback = fallback;
  p.unit = std::move(unit);
  p.doc = std::move(doc);
  return p;
}

NativeParam number_param(std::string name, double min, double max, double fallback, std::string unit,
                         std::string doc) {
  NativeParam p;
  p.name = std::move(name);
  p.kind = NativeKind::number;
  p.min = min;
  p.max = max;
  p.fallback = fallback;
  p.unit = std::move(unit);
  p.doc = std::move(doc);
  return p;
}

NativeParam choice_param(std::string name, std::vector<std::string> choices, std::string fallback, std::string doc) {
  NativeParam p;
  p.name = std::move(name);
  p.kind = NativeKind::choice;
  p.choices = std::move(choices);
  p.fallback = std::move(fallback);
  p.doc = std::move(doc);
  return p;
}

NativeParam bool_param(std::string name, bool fallback, std::string doc) {
  NativeParam p;
  p.name = std::move(name);
  p.kind = NativeKind::boolean;
  p.fallback = fallback;
  p.doc = std::move(doc);
  return p;
}

NativeParam env_integer(std::string var, int64_t min, int64_t max, std::string unit, std::string unset_as,
                        std::string doc) {
  NativeParam p = integer_param(std::move(var), min, max, 0, std::move(unit), std::move(doc));
  p.env = true;
  p.fallback = std::string("unset");
  p.unset_as = std::move(unset_as);
  return p;
}

NativeParam env_choice(std::string var, std::vector<std::string> choices, std::string unset_as, std::string doc) {
  NativeParam p = choice_param(std::move(var), std::move(choices), "", std::move(doc));
  p.env = true;
  p.fallback = std::string("unset");
  p.unset_as = std::move(unset_as);
  return p;
}

std::string describe_default(const NativeParam& p) {
  if (p.env) return p.unset_as.empty() ? "unset" : "unset (" + p.unset_as + ")";
  const bool number = is_numeric(p.fallback) && !std::holds_alternative<bool>(p.fallback);
  return number ? number_text(to_double(p.fallback), p.unit) : to_string(p.fallback);
}

const NativeParam* find_native(const NativeTable& table, std::string_view name) {
  for (const auto& p : table) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string describe_domain(const NativeParam& p) {
  switch (p.kind) {
    case NativeKind::boolean:
      return "true, false";
    case NativeKind::choice: {
      if (p.choices.empty()) return p.domain;
      std::string s;
      for (const auto& c : p.choices) s += (s.empty() ? "" : ", ") + c;
      return p.list ? s + " (a comma list; ^ for all but)" : s;
    }
    case NativeKind::number:
    case NativeKind::integer:
      break;
  }
  std::string words;
  for (const auto& w : p.words) words += w + (&w == &p.words.back() ? " or " : ", ");
  const std::string range = number_text(p.min, p.unit) + ".." + number_text(p.max, p.unit);
  if (p.pow2) return words + "powers of two in " + range;
  if (p.multiple_of > 1) return words + "multiples of " + std::to_string(p.multiple_of) + " in " + range;
  return words + range;
}

std::string outside_domain(const NativeParam& p, const Value& v) {
  const auto* text = std::get_if<std::string>(&v);
  if (p.env && unsets_env(v)) return "";  // the variable left unset
  switch (p.kind) {
    case NativeKind::boolean:
      return std::holds_alternative<bool>(v) ? "" : "takes true or false";
    case NativeKind::choice:
      if (text) {
        if (p.choices.empty()) return "";  // the kernel checks the name
        if (is_choice(p, *text)) return "";
        if (p.list) {
          // "a,b", or "^a,b" for all but a and b.
          const std::string_view names = std::string_view(*text).substr(text->rfind('^', 0) == 0 ? 1 : 0);
          bool all = !names.empty();
          for (size_t b = 0, e = 0; b <= names.size() && all; b = e + 1) {
            e = std::min(names.find(',', b), names.size());
            all = is_choice(p, names.substr(b, e - b));
          }
          if (all) return "";
        }
      }
      return "is not one of " + describe_domain(p);
    case NativeKind::number:
    case NativeKind::integer:
      break;
  }
  if (text && std::find(p.words.begin(), p.words.end(), *text) != p.words.end()) return "";
  if (text && p.env) {
    // An env row's number comes as text: read it, then check it as a number.
    if (const auto n = number_in_text(p, *text)) return outside_domain(p, *n);
    return "is not a number" + std::string(p.words.empty() ? "" : " or one of its words") + " (" + describe_domain(p) + ")";
  }
  if (!is_numeric(v) || std::holds_alternative<bool>(v)) return "takes a number";
  const double x = to_double(v);
  if (!std::isfinite(x) || x < p.min || x > p.max) return "is outside " + describe_domain(p);
  if (p.kind == NativeKind::number) return "";
  if (x != std::floor(x)) return "takes a whole number";
  const auto i = static_cast<int64_t>(x);
  if (p.pow2 && (i <= 0 || (i & (i - 1)) != 0)) return "is not a power of two (" + describe_domain(p) + ")";
  if (p.multiple_of > 1 && i % p.multiple_of != 0) return "is not one of the " + describe_domain(p);
  return "";
}

Status check_native_values(const NativeTable& table, const Space& space, const std::string& kernel) {
  for (const auto& param : space.params()) {
    if (!param.env.empty()) continue;
    const NativeParam* row = find_native(table, param.name);
    if (!row) continue;
    for (const auto& v : param.values) {
      const std::string why = outside_domain(*row, v);
      if (!why.empty()) {
        const std::string text = std::holds_alternative<std::string>(v) ? "'" + to_string(v) + "'" : to_string(v);
        return input_error("{}: param '{}' value {} {} (kernel '{}': {}; `acceltune spaces --params {}` lists "
                           "its params)",
                           space.source(), param.name, text, why, kernel, row->doc, kernel);
      }
    }
  }
  return {};
}

std::string format_native_table(const NativeTable& table) {
  std::vector<std::vector<std::string>> rows = {{"name", "kind", "domain", "default", "unit", "doc"}};
  for (const auto& p : table) {
    rows.push_back({p.name, std::string(to_string(p.kind)), describe_domain(p), describe_default(p),
                    p.unit.empty() ? "-" : p.unit, p.doc});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows) {
    for (size_t c = 0; c + 1 < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  std::string out;
  for (const auto& r : rows) {
    for (size_t c = 0; c < r.size(); ++c) {
      out += r[c];
      if (c + 1 < r.size()) out += std::string(width[c] - r[c].size() + 2, ' ');
    }
    out += '\n';
  }
  return out;
}

NativeValues::NativeValues(const NativeTable& table, const Space& space, const Config& config) {
  for (const auto& p : table) values_[p.name] = p.fallback;
  for (size_t k = 0; k < space.params().size(); ++k) {
    const Param& p = space.params()[k];
    if (!p.env.empty()) continue;
    auto it = values_.find(p.name);
    if (it != values_.end()) it->second = space.value(config, k);
  }
}

const Value& NativeValues::at(std::string_view name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw std::logic_error("no native param '" + std::string(name) + "' in the kernel's table");
  return it->second;
}

int64_t NativeValues::integer(std::string_view name) const {
  const Value& v = at(name);
  return std::holds_alternative<int64_t>(v) ? std::get<int64_t>(v) : static_cast<int64_t>(to_double(v));
}

double NativeValues::number(std::string_view name) const { return to_double(at(name)); }

const std::string& NativeValues::choice(std::string_view name) const {
  const Value& v = at(name);
  if (!std::holds_alternative<std::string>(v)) throw std::logic_error("native param '" + std::string(name) + "' is not a choice");
  return std::get<std::string>(v);
}

bool NativeValues::boolean(std::string_view name) const {
  const Value& v = at(name);
  if (!std::holds_alternative<bool>(v)) throw std::logic_error("native param '" + std::string(name) + "' is not a bool");
  return std::get<bool>(v);
}

}  // namespace acceltune
