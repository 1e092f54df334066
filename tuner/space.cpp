#include "tuner/space.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <muParser.h>

#include "tuner/strategy.hpp"

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

bool is_param_name(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string json_error_position(const std::string& text, size_t byte_offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < text.size() && i + 1 < byte_offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return fmt::format("line {}, column {}", line, column);
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

namespace {

constexpr size_t kMaxDomain = 1'000'000;


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

struct ParamReader {
  const std::string& where;  // "file: params[2] ("chunk")"

  Error fail(const std::string& what) const { return input_error("{}: {}", where, what); }

  Expected<int64_t> integer(const Json& j, const char* field) const {
    if (j.is_string() && j.get<std::string>() == "cores") {
      return static_cast<int64_t>(std::max(1u, std::thread::hardware_concurrency()));
    }
    if (j.is_number_integer()) return j.get<int64_t>();
    if (j.is_number_float()) {
      double d = j.get<double>();
      if (d == std::floor(d) && std::abs(d) < 9e18) return static_cast<int64_t>(d);
    }
    return fail(fmt::format("field '{}' must be an integer (or \"cores\"), not {}", field, j.dump()));
  }
};

Expected<Param> parse_param(const Json& j, const std::string& where) {
  ParamReader r{where};
  if (!j.is_object()) return r.fail("a param must be an object with name, kind and default");
  static const std::set<std::string> known = {"name", "kind", "min", "max", "step", "values",
                                              "default", "env", "unit", "doc", "needs"};
  for (const auto& [k, v] : j.items()) {
    if (!known.count(k)) {
      return r.fail(fmt::format("unknown field '{}' (known: name, kind, min, max, step, values, "
                                "default, env, unit, doc, needs)", k));
    }
  }
  Param p;
  if (!j.contains("name") || !j["name"].is_string()) return r.fail("missing string field 'name'");
  p.name = j["name"].get<std::string>();
  if (!is_param_name(p.name)) {
    return r.fail(fmt::format("name '{}' must be an identifier (letters, digits, '_')", p.name));
  }
  if (!j.contains("kind") || !j["kind"].is_string()) {
    return r.fail("missing string field 'kind' (one of int, pow2, ordinal, categorical, bool)");
  }
  const std::string kind = j["kind"].get<std::string>();
  for (const char* f : {"env", "unit", "doc"}) {
    if (j.contains(f)) {
      if (!j[f].is_string()) return r.fail(fmt::format("field '{}' must be a string", f));
    }
  }
  p.env = j.value("env", "");
  p.unit = j.value("unit", "");
  p.doc = j.value("doc", "");
  if (j.contains("needs")) {
    // {"VALUE": {"VAR": "VALUE", ...}}: what a job needs set to run with that value.
    if (!j["needs"].is_object()) return r.fail("field 'needs' must map a value to the variables it needs");
    for (const auto& [value, vars] : j["needs"].items()) {
      if (!vars.is_object()) {
        return r.fail(fmt::format("needs.{} must be an object of VARIABLE: \"value\" pairs", value));
      }
      for (const auto& [var, v] : vars.items()) {
        if (!v.is_string()) return r.fail(fmt::format("needs.{}.{} must be a string", value, var));
        p.needs[value].emplace_back(var, v.get<std::string>());
      }
    }
  }

  auto need = [&](const char* f) -> Status {
    if (!j.contains(f)) return r.fail(fmt::format("kind '{}' needs field '{}'", kind, f));
    return {};
  };

  if (kind == "int") {
    p.kind = ParamKind::int_range;
    if (j.contains("values")) {
      if (!j["values"].is_array()) return r.fail("field 'values' must be an array");
      for (const auto& v : j["values"]) {
        ACCELTUNE_TRY_ASSIGN(int64_t x, r.integer(v, "values"));
        p.values.emplace_back(x);
      }
    } else {
      ACCELTUNE_TRY(need("min"));
      ACCELTUNE_TRY(need("max"));
      ACCELTUNE_TRY_ASSIGN(int64_t lo, r.integer(j["min"], "min"));
      ACCELTUNE_TRY_ASSIGN(int64_t hi, r.integer(j["max"], "max"));
      int64_t step = 1;
      if (j.contains("step")) {
        ACCELTUNE_TRY_ASSIGN(step, r.integer(j["step"], "step"));
        if (step <= 0) return r.fail("field 'step' must be positive");
      }
      if (hi >= lo && static_cast<uint64_t>((hi - lo) / step) >= kMaxDomain) {
        return r.fail(fmt::format("domain {}..{} has more than {} values; use a step or pow2", lo, hi,
                                  kMaxDomain));
      }
      for (int64_t x = lo; x <= hi; x += step) p.values.emplace_back(x);
    }
  } else if (kind == "pow2") {
    p.kind = ParamKind::pow2;
    auto pow2 = [](int64_t x) { return x > 0 && (x & (x - 1)) == 0; };
    if (j.contains("values")) {  // the normalised form a study stores
      if (!j["values"].is_array()) return r.fail("field 'values' must be an array");
      for (const auto& v : j["values"]) {
        ACCELTUNE_TRY_ASSIGN(int64_t x, r.integer(v, "values"));
        if (!pow2(x)) return r.fail(fmt::format("value {} is not a power of two", x));
        p.values.emplace_back(x);
      }
    } else {
    ACCELTUNE_TRY(need("min"));
    ACCELTUNE_TRY(need("max"));
    ACCELTUNE_TRY_ASSIGN(int64_t lo, r.integer(j["min"], "min"));
    ACCELTUNE_TRY_ASSIGN(int64_t hi, r.integer(j["max"], "max"));
    if (!pow2(lo)) return r.fail(fmt::format("min {} is not a power of two", lo));
    if (!pow2(hi)) return r.fail(fmt::format("max {} is not a power of two", hi));
    for (int64_t x = lo; x <= hi && x > 0; x *= 2) {
      p.values.emplace_back(x);
      if (x > INT64_MAX / 2) break;
    }
    }
  } else if (kind == "ordinal" || kind == "categorical") {
    p.kind = kind == "ordinal" ? ParamKind::ordinal : ParamKind::categorical;
    ACCELTUNE_TRY(need("values"));
    if (!j["values"].is_array()) return r.fail("field 'values' must be an array");
    for (const auto& v : j["values"]) {
      if (p.kind == ParamKind::ordinal) {
        if (v.is_number_integer()) {
          p.values.emplace_back(v.get<int64_t>());
        } else if (v.is_number()) {
          p.values.emplace_back(v.get<double>());
        } else {
          return r.fail(fmt::format("ordinal value {} is not a number; use kind categorical", v.dump()));
        }
      } else {
        if (v.is_string()) {
          p.values.emplace_back(v.get<std::string>());
        } else if (v.is_number() || v.is_boolean()) {
          p.values.emplace_back(v.is_string() ? v.get<std::string>() : v.dump());
        } else {
          return r.fail(fmt::format("categorical value {} must be a string", v.dump()));
        }
      }
    }
    if (p.kind == ParamKind::ordinal) {
      for (size_t i = 1; i < p.values.size(); ++i) {
        if (!(to_double(p.values[i - 1]) < to_double(p.values[i]))) {
          return r.fail("ordinal values must be strictly increasing");
        }
      }
    }
  } else if (kind == "bool") {
    p.kind = ParamKind::boolean;
    p.values = {Value(false), Value(true)};
  } else {
    return r.fail(fmt::format("unknown kind '{}' (use int, pow2, ordinal, categorical or bool)", kind));
  }

  if (p.values.empty()) return r.fail("empty domain: the param has no value to take");
  if (p.values.size() > kMaxDomain) return r.fail("domain too large");
  {
    std::set<std::string> seen;
    for (const auto& v : p.values) {
      if (!seen.insert(to_string(v)).second) {
        return r.fail(fmt::format("value {} appears twice in the domain", to_string(v)));
      }
    }
  }

  if (!j.contains("default")) {
    return r.fail(fmt::format("missing field 'default': give the library's default value, one of {}",
                              describe_domain(p)));
  }
  const Json& d = j["default"];
  std::optional<size_t> idx;
  if (p.kind == ParamKind::boolean) {
    if (d.is_boolean()) idx = d.get<bool>() ? 1 : 0;
  } else if (p.kind == ParamKind::categorical) {
    if (d.is_string()) idx = p.index_of(Value(d.get<std::string>()));
    else if (d.is_number() || d.is_boolean()) idx = p.index_of(Value(d.dump()));
  } else if (d.is_number_integer()) {
    idx = p.index_of(Value(d.get<int64_t>()));
  } else if (d.is_number()) {
    idx = p.index_of(Value(d.get<double>()));
  } else if (d.is_string() && d.get<std::string>() == "cores") {
    auto cores = r.integer(d, "default");
    if (cores) idx = p.index_of(Value(*cores));
  }
  if (!idx) {
    return r.fail(fmt::format("default {} is not in the domain {}", d.dump(), describe_domain(p)));
  }
  p.default_index = *idx;
  return p;
}

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

Expected<Space> Space::from_json(const Json& doc, const std::string& source,
                                 const std::filesystem::path& base_dir) {
  if (!doc.is_object()) return input_error("{}: a space must be a JSON object", source);
  Space s;
  s.source_ = source;
  s.base_dir_ = base_dir;
  auto str_field = [&](const char* f, std::string& out, bool required) -> Status {
    if (!doc.contains(f)) {
      if (required) return input_error("{}: missing string field '{}'", source, f);
      return {};
    }
    if (!doc[f].is_string()) return input_error("{}: field '{}' must be a string", source, f);
    out = doc[f].get<std::string>();
    return {};
  };
  ACCELTUNE_TRY(str_field("name", s.name_, true));
  ACCELTUNE_TRY(str_field("kernel", s.kernel_, true));
  ACCELTUNE_TRY(str_field("operation", s.operation_, false));
  ACCELTUNE_TRY(str_field("description", s.description_, false));
  if (s.operation_.empty()) s.operation_ = s.kernel_;

  if (doc.contains("sizes")) {
    const Json& sz = doc["sizes"];
    if (!sz.is_array()) return input_error("{}: field 'sizes' must be an array such as [\"64K\", \"1M\"]", source);
    for (size_t i = 0; i < sz.size(); ++i) {
      if (sz[i].is_number_unsigned() || sz[i].is_number_integer()) {
        if (sz[i].get<int64_t>() < 0) return input_error("{}: sizes[{}] is negative", source, i);
        s.sizes_.push_back(sz[i].get<uint64_t>());
      } else if (sz[i].is_string()) {
        auto b = parse_sizes(sz[i].get<std::string>());
        if (!b) return input_error("{}: sizes[{}]: {}", source, i, b.error().message);
        s.sizes_.insert(s.sizes_.end(), b->begin(), b->end());
      } else {
        return input_error("{}: sizes[{}] must be a size such as \"64K\" or a number of bytes", source, i);
      }
    }
  }

  if (!doc.contains("params") || !doc["params"].is_array()) {
    return input_error("{}: missing array field 'params'", source);
  }
  const Json& params = doc["params"];
  if (params.empty()) return input_error("{}: 'params' is empty; a space needs at least one param", source);
  for (size_t i = 0; i < params.size(); ++i) {
    std::string where = fmt::format("{}: params[{}]", source, i);
    if (params[i].is_object() && params[i].contains("name") && params[i]["name"].is_string()) {
      where += fmt::format(" (\"{}\")", params[i]["name"].get<std::string>());
    }
    ACCELTUNE_TRY_ASSIGN(Param p, parse_param(params[i], where));
    if (s.param_index(p.name)) return input_error("{}: param name '{}' is used twice", where, p.name);
    s.params_.push_back(std::move(p));
  }

  if (doc.contains("constraints")) {
    const Json& cs = doc["constraints"];
    if (!cs.is_array()) return input_error("{}: field 'constraints' must be an array of strings", source);
    for (size_t i = 0; i < cs.size(); ++i) {
      if (!cs[i].is_string()) return input_error("{}: constraints[{}] must be a string", source, i);
      s.constraints_.push_back(cs[i].get<std::string>());
    }
  }

  static const std::set<std::string> core_fields = {"name", "kernel", "operation", "description",
                                                    "sizes", "params", "constraints"};
  for (const auto& [k, v] : doc.items()) {
    if (!core_fields.count(k)) s.extra_[k] = v;
  }

  ACCELTUNE_TRY(s.compile());
  bool any_valid = false;
  s.for_each_valid([&](const Config&) {
    any_valid = true;
    return false;
  });
  if (!any_valid) {
    return input_error("{}: no config satisfies the constraints; relax them or widen the domains",
                       source);
  }
  return s;
}

Expected<Space> Space::load_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return input_error("{}: cannot read the space file ({})", path.string(), std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::parse_error& e) {
    std::string what = e.what();
    // nlohmann prefixes "[json.exception.parse_error.101] parse error at line L, column C: ".
    auto colon = what.find(": ");
    std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
    return input_error("{}: malformed JSON at {}: {}", path.string(),
                       json_error_position(text, e.byte), detail);
  }
  std::filesystem::path base = path.parent_path();
  if (base.empty()) base = ".";
  return from_json(doc, path.string(), base);
}

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

Json Space::definition() const {
  Json d = Json::object();
  d["name"] = name_;
  d["kernel"] = kernel_;
  d["operation"] = operation_;
  if (!description_.empty()) d["description"] = description_;
  Json sizes = Json::array();
  for (uint64_t b : sizes_) sizes.push_back(b);
  d["sizes"] = sizes;
  Json ps = Json::array();
  for (const auto& p : params_) {
    Json jp = Json::object();
    jp["name"] = p.name;
    jp["kind"] = std::string(to_string(p.kind));
    Json vals = Json::array();
    for (const auto& v : p.values) vals.push_back(to_json(v));
    jp["values"] = vals;
    jp["default"] = to_json(p.default_value());
    if (!p.env.empty()) jp["env"] = p.env;
    if (!p.unit.empty()) jp["unit"] = p.unit;
    if (!p.doc.empty()) jp["doc"] = p.doc;
    if (!p.needs.empty()) {
      Json n = Json::object();
      for (const auto& [value, vars] : p.needs) {
        for (const auto& [var, v] : vars) n[value][var] = v;
      }
      jp["needs"] = n;
    }
    ps.push_back(jp);
  }
  d["params"] = ps;
  d["constraints"] = constraints_;
  for (const auto& [k, v] : extra_.items()) d[k] = v;
  return d;
}

}  // namespace acceltune
