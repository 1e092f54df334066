// The space's operations: param kinds, compiled constraints (muparser over the params' numeric
// values), validity, enumeration and counting of valid configs, keys, configs to and from JSON,
// neighbours and encoding. Reading a space file and its normalised definition are in
// space_json.cpp.
#include "tuner/space.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <muParser.h>

#include "tuner/space_domain.hpp"
#include "tuner/rng.hpp"

namespace acceltune {

std::string_view to_string(ParamKind kind) {
  switch (kind) {
    case ParamKind::int_range: return "int";
    case ParamKind::pow2: return "pow2";
    case ParamKind::ordinal: return "ordinal";
    case ParamKind::categorical: return "categorical";
    case ParamKind::boolean: return "bool";
  }
  return "?";
}

bool is_ordered(ParamKind kind) {
  return kind == ParamKind::int_range || kind == ParamKind::pow2 || kind == ParamKind::ordinal;
}

std::optional<size_t> Param::index_of(const Value& v) const {
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] == v) return i;
  }
  // 8 and 8.0 are the same ordinal value.
  if (is_numeric(v) && kind != ParamKind::categorical) {
    for (size_t i = 0; i < values.size(); ++i) {
      if (is_numeric(values[i]) && to_double(values[i]) == to_double(v)) return i;
    }
  }
  return std::nullopt;
}

// Compiled constraint expressions. muparser evaluates doubles, so every param is a variable
// holding its numeric value; categorical values become distinct numeric codes, and string
// literals in the expressions are rewritten to the same codes, so `method == "stream"` works.
class ConstraintSet {
 public:
  std::vector<double> vars;
  std::vector<std::unique_ptr<mu::Parser>> parsers;
  std::map<std::string, double> codes;

  double code_of(const std::string& s) const { return codes.at(s); }
};

std::string describe_domain(const Param& p) {
  std::string out = fmt::format("{} ", to_string(p.kind));
  if ((p.kind == ParamKind::int_range || p.kind == ParamKind::pow2) && p.values.size() > 6) {
    return out + fmt::format("{}..{}", to_string(p.values.front()), to_string(p.values.back()));
  }
  out += "[";
  for (size_t i = 0; i < p.values.size(); ++i) {
    out += (i ? ", " : "") + to_string(p.values[i]);
  }
  return out + "]";
}

namespace {

// Replaces "literal" in an expression by the numeric code of that categorical value.
Expected<std::string> rewrite_literals(const std::string& expr, const ConstraintSet& cs,
                                       const std::string& where) {
  std::string out;
  for (size_t i = 0; i < expr.size(); ++i) {
    char q = expr[i];
    if (q != '"' && q != '\'') {
      out += q;
      continue;
    }
    size_t end = expr.find(q, i + 1);
    if (end == std::string::npos) return input_error("{}: unterminated string literal", where);
    std::string lit = expr.substr(i + 1, end - i - 1);
    auto it = cs.codes.find(lit);
    if (it == cs.codes.end()) {
      return input_error("{}: compares with \"{}\", which is not a value of any categorical param",
                         where, lit);
    }
    out += fmt::format("({})", it->second);
    i = end;
  }
  return out;
}

}  // namespace

Status Space::compile() {
  auto cs = std::make_shared<ConstraintSet>();
  cs->vars.resize(params_.size());
  // Codes for categorical values: distinct strings get distinct codes, shared across params.
  for (const auto& p : params_) {
    if (p.kind != ParamKind::categorical) continue;
    for (const auto& v : p.values) {
      const std::string& s = std::get<std::string>(v);
      if (!cs->codes.count(s)) cs->codes[s] = 1000.0 + static_cast<double>(cs->codes.size());
    }
  }
  for (size_t i = 0; i < constraints_.size(); ++i) {
    const std::string where = fmt::format("{}: constraints[{}] (\"{}\")", source_, i, constraints_[i]);
    ACCELTUNE_TRY_ASSIGN(std::string expr, rewrite_literals(constraints_[i], *cs, where));
    auto parser = std::make_unique<mu::Parser>();
    try {
      parser->DefineConst("true", 1.0);
      parser->DefineConst("false", 0.0);
      for (size_t k = 0; k < params_.size(); ++k) parser->DefineVar(params_[k].name, &cs->vars[k]);
      parser->SetExpr(expr);
      for (size_t k = 0; k < params_.size(); ++k) {
        const Value& v = params_[k].default_value();
        cs->vars[k] = is_numeric(v) ? to_double(v) : cs->codes[std::get<std::string>(v)];
      }
      (void)parser->Eval();  // parses now, so errors surface at load time
    } catch (const mu::Parser::exception_type& e) {
      if (e.GetCode() == mu::ecUNASSIGNABLE_TOKEN) {
        std::string names;
        for (const auto& p : params_) names += (names.empty() ? "" : ", ") + p.name;
        return input_error("{}: '{}' is not a param of this space (params: {})", where, e.GetToken(),
                           names);
      }
      return input_error("{}: bad expression: {}", where, e.GetMsg());
    }
    cs->parsers.push_back(std::move(parser));
  }
  compiled_ = std::move(cs);
  count_cache_.reset();
  return {};
}

std::optional<size_t> Space::param_index(std::string_view name) const {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].name == name) return i;
  }
  return std::nullopt;
}

void Space::set_membership(std::function<bool(const Config&)> member, std::string what) {
  member_ = std::move(member);
  member_what_ = std::move(what);
  count_cache_.reset();
}

Expected<bool> Space::set_default_value(std::string_view name, const Value& v) {
  const auto k = param_index(name);
  if (!k) return input_error("{}: no param '{}'", source_, name);
  Param& p = params_[*k];
  bool grew = false;
  auto i = p.index_of(v);
  if (!i) {
    if (p.kind == ParamKind::boolean || (p.kind == ParamKind::categorical) != std::holds_alternative<std::string>(v)) {
      return input_error("{}: param '{}' cannot take the value {}", source_, name, to_string(v));
    }
    size_t at = p.values.size();
    if (is_ordered(p.kind)) {
      at = 0;
      while (at < p.values.size() && to_double(p.values[at]) < to_double(v)) ++at;
    }
    p.values.insert(p.values.begin() + static_cast<std::ptrdiff_t>(at), v);
    if (is_ordered(p.kind)) p.kind = ParamKind::ordinal;  // no longer a range or powers of two only
    i = at;
    grew = true;
  }
  p.default_index = *i;
  count_cache_.reset();
  ACCELTUNE_TRY(compile());
  return grew;
}

Config Space::default_config() const {
  Config c;
  c.index.reserve(params_.size());
  for (const auto& p : params_) c.index.push_back(static_cast<uint32_t>(p.default_index));
  return c;
}

std::string Space::why_invalid(const Config& c) const {
  if (c.index.size() != params_.size()) return "config does not match the space's params";
  for (size_t k = 0; k < params_.size(); ++k) {
    if (c.index[k] >= params_[k].values.size()) return "value index out of range";
  }
  if (member_ && !member_(c)) return member_what_;
  ConstraintSet& cs = *compiled_;
  for (size_t k = 0; k < params_.size(); ++k) {
    const Value& v = value(c, k);
    cs.vars[k] = is_numeric(v) ? to_double(v) : cs.code_of(std::get<std::string>(v));
  }
  for (size_t i = 0; i < cs.parsers.size(); ++i) {
    double r = 0;
    try {
      r = cs.parsers[i]->Eval();
    } catch (const mu::Parser::exception_type& e) {
      return fmt::format("constraint '{}' failed to evaluate: {}", constraints_[i], e.GetMsg());
    }
    if (!(r != 0.0) || std::isnan(r)) return fmt::format("violates constraint '{}'", constraints_[i]);
  }
  return "";
}

bool Space::is_valid(const Config& c) const { return why_invalid(c).empty(); }

std::optional<Config> Space::nearest_valid(const Config& c, int max_steps) const {
  if (is_valid(c)) return c;
  std::vector<Config> frontier = {c};
  std::set<std::string> seen = {key(c)};
  for (int depth = 0; depth < max_steps && !frontier.empty(); ++depth) {
    std::vector<Config> next;
    for (const auto& f : frontier) {
      for (size_t k = 0; k < params_.size(); ++k) {
        if (!is_ordered(params_[k].kind)) continue;
        for (int dir : {-1, +1}) {
          const int64_t i = static_cast<int64_t>(f.index[k]) + dir;
          if (i < 0 || i >= static_cast<int64_t>(params_[k].values.size())) continue;
          Config n = f;
          n.index[k] = static_cast<uint32_t>(i);
          if (!seen.insert(key(n)).second) continue;
          if (is_valid(n)) return n;
          next.push_back(n);
        }
      }
    }
    frontier = std::move(next);
  }
  return std::nullopt;
}

uint64_t Space::cartesian_size() const {
  uint64_t n = 1;
  for (const auto& p : params_) {
    if (n > UINT64_MAX / p.values.size()) return UINT64_MAX;
    n *= p.values.size();
  }
  return n;
}

Config Space::from_ordinal(uint64_t ordinal) const {
  Config c;
  c.index.resize(params_.size());
  for (size_t k = params_.size(); k-- > 0;) {
    uint64_t n = params_[k].values.size();
    c.index[k] = static_cast<uint32_t>(ordinal % n);
    ordinal /= n;
  }
  return c;
}

uint64_t Space::to_ordinal(const Config& c) const {
  uint64_t o = 0;
  for (size_t k = 0; k < params_.size(); ++k) o = o * params_[k].values.size() + c.index[k];
  return o;
}

void Space::for_each_valid(const std::function<bool(const Config&)>& fn) const {
  Config c;
  c.index.assign(params_.size(), 0);
  // Odometer over the cartesian product; the last param varies fastest.
  while (true) {
    if (is_valid(c) && !fn(c)) return;
    size_t k = params_.size();
    while (k-- > 0) {
      if (++c.index[k] < params_[k].values.size()) break;
      c.index[k] = 0;
    }
    if (k == static_cast<size_t>(-1)) return;
  }
}

uint64_t Space::count_valid() const {
  if (!count_cache_) {
    const uint64_t total = cartesian_size();
    if (total <= kCountExactLimit) {
      uint64_t n = 0;
      for_each_valid([&](const Config&) {
        ++n;
        return true;
      });
      count_cache_ = n;
      count_exact_ = true;
    } else {
      // Too many to enumerate: estimate the valid fraction from a fixed sample.
      Rng rng(0x5eed);
      uint64_t hits = 0;
      constexpr uint64_t kSamples = 20000;
      for (uint64_t i = 0; i < kSamples; ++i) hits += is_valid(from_ordinal(rng.below(total))) ? 1 : 0;
      const double est = static_cast<double>(total) * static_cast<double>(std::max<uint64_t>(hits, 1)) / kSamples;
      count_cache_ = est >= 1.8e19 ? UINT64_MAX : static_cast<uint64_t>(est);
      count_exact_ = false;
    }
  }
  return *count_cache_;
}

bool Space::count_is_exact() const {
  (void)count_valid();
  return count_exact_;
}

std::string Space::key(const Config& c) const {
  std::vector<size_t> order(params_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return params_[a].name < params_[b].name; });
  std::string k;
  for (size_t i : order) {
    if (!k.empty()) k += ',';
    k += params_[i].name;
    k += '=';
    k += to_string(value(c, i));
  }
  return k;
}

Json Space::config_to_json(const Config& c) const {
  Json j = Json::object();
  for (size_t k = 0; k < params_.size(); ++k) j[params_[k].name] = to_json(value(c, k));
  return j;
}

Expected<Config> Space::config_from_json(const Json& j) const {
  if (!j.is_object()) return input_error("a config must be a JSON object of param values");
  Config c;
  c.index.resize(params_.size());
  for (size_t k = 0; k < params_.size(); ++k) {
    const Param& p = params_[k];
    if (!j.contains(p.name)) return input_error("config has no value for param '{}'", p.name);
    const Json& v = j[p.name];
    std::optional<size_t> idx;
    if (v.is_boolean()) idx = p.index_of(Value(v.get<bool>()));
    else if (v.is_number_integer()) idx = p.index_of(Value(v.get<int64_t>()));
    else if (v.is_number()) idx = p.index_of(Value(v.get<double>()));
    else if (v.is_string()) idx = p.index_of(Value(v.get<std::string>()));
    if (!idx) return input_error("value {} of param '{}' is not in its domain", v.dump(), p.name);
    c.index[k] = static_cast<uint32_t>(*idx);
  }
  return c;
}

Status Space::set_value(Config& c, const std::string& name, const std::string& text) const {
  auto k = param_index(name);
  if (!k) {
    std::string names;
    for (const auto& p : params_) names += (names.empty() ? "" : ", ") + p.name;
    return input_error("space '{}' has no param '{}' (params: {})", name_, name, names);
  }
  const Param& p = params_[*k];
  for (size_t i = 0; i < p.values.size(); ++i) {
    if (to_string(p.values[i]) == text) {
      c.index[*k] = static_cast<uint32_t>(i);
      return {};
    }
  }
  if (p.kind == ParamKind::int_range || p.kind == ParamKind::pow2 || p.kind == ParamKind::ordinal) {
    auto b = parse_bytes(text);  // lets "chunk=1M" work
    if (b) {
      if (auto i = p.index_of(Value(static_cast<int64_t>(*b)))) {
        c.index[*k] = static_cast<uint32_t>(*i);
        return {};
      }
    }
  }
  return input_error("value '{}' is not in the domain of param '{}' ({})", text, name, describe_domain(p));
}

std::vector<Config> Space::neighbours(const Config& c) const {
  std::vector<Config> out;
  for (size_t k = 0; k < params_.size(); ++k) {
    const uint32_t n = static_cast<uint32_t>(params_[k].values.size());
    auto try_index = [&](uint32_t i) {
      Config nb = c;
      nb.index[k] = i;
      if (is_valid(nb)) out.push_back(std::move(nb));
    };
    if (is_ordered(params_[k].kind)) {
      if (c.index[k] > 0) try_index(c.index[k] - 1);
      if (c.index[k] + 1 < n) try_index(c.index[k] + 1);
    } else {
      for (uint32_t i = 0; i < n; ++i) {
        if (i != c.index[k]) try_index(i);
      }
    }
  }
  return out;
}

std::vector<double> Space::encode(const Config& c) const {
  std::vector<double> x(params_.size());
  for (size_t k = 0; k < params_.size(); ++k) {
    const size_t n = params_[k].values.size();
    x[k] = n > 1 ? static_cast<double>(c.index[k]) / static_cast<double>(n - 1) : 0.0;
  }
  return x;
}

}  // namespace acceltune
