// The native param tables: their domains in words, the check of a space against them, and the
// values a kernel reads for one config (defaults for what a space omits).
#include "tuner/native_params.hpp"

#include <cmath>
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

}  // namespace

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
      return s;
    }
    case NativeKind::number:
    case NativeKind::integer:
      break;
  }
  const std::string range = number_text(p.min, p.unit) + ".." + number_text(p.max, p.unit);
  if (p.pow2) return "powers of two in " + range;
  if (p.multiple_of > 1) return "multiples of " + std::to_string(p.multiple_of) + " in " + range;
  return range;
}

std::string outside_domain(const NativeParam& p, const Value& v) {
  switch (p.kind) {
    case NativeKind::boolean:
      return std::holds_alternative<bool>(v) ? "" : "takes true or false";
    case NativeKind::choice:
      if (std::holds_alternative<std::string>(v)) {
        if (p.choices.empty()) return "";  // the kernel checks the name
        for (const auto& c : p.choices) {
          if (c == std::get<std::string>(v)) return "";
        }
      }
      return "is not one of " + describe_domain(p);
    case NativeKind::number:
    case NativeKind::integer:
      break;
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
    const char* kind = p.kind == NativeKind::integer  ? "integer"
                       : p.kind == NativeKind::number ? "number"
                       : p.kind == NativeKind::choice ? "choice"
                                                      : "bool";
    const std::string fallback =
        is_numeric(p.fallback) && !std::holds_alternative<bool>(p.fallback) ? number_text(to_double(p.fallback), p.unit)
                                                                             : to_string(p.fallback);
    rows.push_back({p.name, kind, describe_domain(p), fallback, p.unit.empty() ? "-" : p.unit, p.doc});
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
