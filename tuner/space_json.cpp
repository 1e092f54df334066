// The JSON form of a space: reading and validating a space file (params with their domains and
// defaults, read against their tables in space_tables.cpp; sizes, constraints, the fields left to
// the kernel), and the normalised definition a study stores. The space's operations on configs
// are in space.cpp.
#include "tuner/space.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "tuner/space_domain.hpp"
#include "tuner/space_tables.hpp"

namespace acceltune {

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

namespace {

constexpr size_t kMaxDomain = 1'000'000;

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

  Status need(const Json& j, const std::string& kind, const char* field) const {
    if (!j.contains(field)) return fail(fmt::format("kind '{}' needs field '{}'", kind, field));
    return {};
  }
};

// The fields every param may have: its name, its variable, unit and doc.
Status read_names(const Json& j, const ParamReader& r, Param& p) {
  if (!j.is_object()) return r.fail("a param must be an object with a name");
  static const std::set<std::string> known = {"name", "kind", "min", "max", "step", "values",
                                              "default", "env", "unit", "doc", "needs"};
  for (const auto& [k, v] : j.items()) {
    if (!known.count(k)) {
      return r.fail(fmt::format("unknown field '{}' (known: name, kind, min, max, step, values, "
                                "default, env, unit, doc, needs)", k));
    }
  }
  if (!j.contains("name") || !j["name"].is_string()) return r.fail("missing string field 'name'");
  p.name = j["name"].get<std::string>();
  if (!is_param_name(p.name)) {
    return r.fail(fmt::format("name '{}' must be an identifier (letters, digits, '_')", p.name));
  }
  for (const char* f : {"env", "unit", "doc"}) {
    if (j.contains(f) && !j[f].is_string()) return r.fail(fmt::format("field '{}' must be a string", f));
  }
  p.env = j.value("env", "");
  p.unit = j.value("unit", "");
  p.doc = j.value("doc", "");
  return {};
}

// {"VALUE": {"VAR": "VALUE", ...}}: what a job needs set to run with that value.
Status read_needs(const Json& j, const ParamReader& r, Param& p) {
  if (!j.contains("needs")) return {};
  if (!j["needs"].is_object()) return r.fail("field 'needs' must map a value to the variables it needs");
  for (const auto& [value, vars] : j["needs"].items()) {
    if (!vars.is_object()) return r.fail(fmt::format("needs.{} must be an object of VARIABLE: \"value\" pairs", value));
    for (const auto& [var, v] : vars.items()) {
      if (!v.is_string()) return r.fail(fmt::format("needs.{}.{} must be a string", value, var));
      p.needs[value].emplace_back(var, v.get<std::string>());
    }
  }
  return {};
}

// The kind the space names, or the one its row implies; checked against the row.
Expected<std::string> read_kind(const Json& j, const ParamReader& r, const ParamRow& row, const std::string& path) {
  if (!j.contains("kind") && row.row) return kind_from_row(*row.row, j);
  if (!j.contains("kind") || !j["kind"].is_string()) {
    return r.fail("missing string field 'kind' (one of int, pow2, ordinal, categorical, bool)");
  }
  const std::string kind = j["kind"].get<std::string>();
  if (row.row) ACCELTUNE_TRY(check_kind(row, kind, path));
  return kind;
}

// An integer axis listed value by value (int, and pow2's normalised form); `why_not` refuses one.
Status read_listed_integers(const Json& j, const ParamReader& r, Param& p,
                            const std::function<std::string(int64_t)>& why_not) {
  if (!j["values"].is_array()) return r.fail("field 'values' must be an array");
  for (const auto& v : j["values"]) {
    ACCELTUNE_TRY_ASSIGN(int64_t x, r.integer(v, "values"));
    if (const std::string why = why_not(x); !why.empty()) return r.fail(why);
    p.values.emplace_back(x);
  }
  return {};
}

Status read_int_domain(const Json& j, const ParamReader& r, Param& p) {
  p.kind = ParamKind::int_range;
  if (j.contains("values")) return read_listed_integers(j, r, p, [](int64_t) { return std::string(); });
  ACCELTUNE_TRY(r.need(j, "int", "min"));
  ACCELTUNE_TRY(r.need(j, "int", "max"));
  ACCELTUNE_TRY_ASSIGN(int64_t lo, r.integer(j["min"], "min"));
  ACCELTUNE_TRY_ASSIGN(int64_t hi, r.integer(j["max"], "max"));
  int64_t step = 1;
  if (j.contains("step")) {
    ACCELTUNE_TRY_ASSIGN(step, r.integer(j["step"], "step"));
    if (step <= 0) return r.fail("field 'step' must be positive");
  }
  if (hi >= lo && static_cast<uint64_t>((hi - lo) / step) >= kMaxDomain) {
    return r.fail(fmt::format("domain {}..{} has more than {} values; use a step or pow2", lo, hi, kMaxDomain));
  }
  for (int64_t x = lo; x <= hi; x += step) p.values.emplace_back(x);
  return {};
}

Status read_pow2_domain(const Json& j, const ParamReader& r, Param& p) {
  p.kind = ParamKind::pow2;
  auto pow2 = [](int64_t x) { return x > 0 && (x & (x - 1)) == 0; };
  if (j.contains("values")) {  // the normalised form a study stores
    return read_listed_integers(
        j, r, p, [&](int64_t x) { return pow2(x) ? std::string() : fmt::format("value {} is not a power of two", x); });
  }
  ACCELTUNE_TRY(r.need(j, "pow2", "min"));
  ACCELTUNE_TRY(r.need(j, "pow2", "max"));
  ACCELTUNE_TRY_ASSIGN(int64_t lo, r.integer(j["min"], "min"));
  ACCELTUNE_TRY_ASSIGN(int64_t hi, r.integer(j["max"], "max"));
  if (!pow2(lo)) return r.fail(fmt::format("min {} is not a power of two", lo));
  if (!pow2(hi)) return r.fail(fmt::format("max {} is not a power of two", hi));
  for (int64_t x = lo; x <= hi && x > 0; x *= 2) {
    p.values.emplace_back(x);
    if (x > INT64_MAX / 2) break;
  }
  return {};
}

// Ordinal (increasing numbers) and categorical (strings; numbers and bools as their text) axes.
Status read_listed_domain(const Json& j, const ParamReader& r, const std::string& kind, Param& p) {
  p.kind = kind == "ordinal" ? ParamKind::ordinal : ParamKind::categorical;
  ACCELTUNE_TRY(r.need(j, kind, "values"));
  if (!j["values"].is_array()) return r.fail("field 'values' must be an array");
  for (const auto& v : j["values"]) {
    if (p.kind == ParamKind::ordinal) {
      if (!v.is_number()) return r.fail(fmt::format("ordinal value {} is not a number; use kind categorical", v.dump()));
      if (v.is_number_integer()) {
        p.values.emplace_back(v.get<int64_t>());
      } else {
        p.values.emplace_back(v.get<double>());
      }
    } else {
      if (!v.is_string() && !v.is_number() && !v.is_boolean()) {
        return r.fail(fmt::format("categorical value {} must be a string", v.dump()));
      }
      p.values.emplace_back(v.is_string() ? v.get<std::string>() : v.dump());
    }
  }
  for (size_t i = 1; p.kind == ParamKind::ordinal && i < p.values.size(); ++i) {
    if (!(to_double(p.values[i - 1]) < to_double(p.values[i]))) return r.fail("ordinal values must be strictly increasing");
  }
  return {};
}

// The domain by kind, then what every domain must be: not empty, not huge, no value twice.
Status read_domain(const Json& j, const ParamReader& r, const std::string& kind, Param& p) {
  if (kind == "int") {
    ACCELTUNE_TRY(read_int_domain(j, r, p));
  } else if (kind == "pow2") {
    ACCELTUNE_TRY(read_pow2_domain(j, r, p));
  } else if (kind == "ordinal" || kind == "categorical") {
    ACCELTUNE_TRY(read_listed_domain(j, r, kind, p));
  } else if (kind == "bool") {
    p.kind = ParamKind::boolean;
    p.values = {Value(false), Value(true)};
  } else {
    return r.fail(fmt::format("unknown kind '{}' (use int, pow2, ordinal, categorical or bool)", kind));
  }
  if (p.values.empty()) return r.fail("empty domain: the param has no value to take");
  if (p.values.size() > kMaxDomain) return r.fail("domain too large");
  std::set<std::string> seen;
  for (const auto& v : p.values) {
    if (!seen.insert(to_string(v)).second) return r.fail(fmt::format("value {} appears twice in the domain", to_string(v)));
  }
  return {};
}

// The default the space states, as an index into the domain.
Expected<size_t> read_default(const Json& j, const ParamReader& r, const Param& p) {
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
  if (!idx) return r.fail(fmt::format("default {} is not in the domain {}", d.dump(), describe_domain(p)));
  return *idx;
}

// One param of a space, read against its row where `tables` has one (a space file), else as it
// states itself (a study's stored definition, or a param no table describes).
Expected<Param> parse_param(const Json& j, const std::string& source, size_t index, const SpaceTables* tables) {
  std::string where = fmt::format("{}: params[{}]", source, index);
  if (j.is_object() && j.contains("name") && j["name"].is_string()) {
    where += fmt::format(" (\"{}\")", j["name"].get<std::string>());
  }
  const ParamReader r{where};
  Param p;
  ACCELTUNE_TRY(read_names(j, r, p));
  ACCELTUNE_TRY(read_needs(j, r, p));
  const std::string path = fmt::format("{}: params.{}", source, p.name);
  ParamRow row;
  if (tables) {
    ACCELTUNE_TRY_ASSIGN(row, tables->row_of(p.name, p.env, path));
  }
  ACCELTUNE_TRY_ASSIGN(const std::string kind, read_kind(j, r, row, path));
  ACCELTUNE_TRY(read_domain(j, r, kind, p));
  std::optional<size_t> idx;
  if (row.row) {
    ACCELTUNE_TRY(fit_to_row(j, row, path, p));
    ACCELTUNE_TRY_ASSIGN(idx, default_from_row(j, row, path, p));
  }
  if (!idx) {
    ACCELTUNE_TRY_ASSIGN(idx, read_default(j, r, p));
  }
  p.default_index = *idx;
  return p;
}

// The sizes field: numbers of bytes or size texts ("64K", "1K:1G:x4").
Expected<std::vector<uint64_t>> read_sizes(const Json& sz, const std::string& source) {
  if (!sz.is_array()) return input_error("{}: field 'sizes' must be an array such as [\"64K\", \"1M\"]", source);
  std::vector<uint64_t> sizes;
  for (size_t i = 0; i < sz.size(); ++i) {
    if (sz[i].is_number_unsigned() || sz[i].is_number_integer()) {
      if (sz[i].get<int64_t>() < 0) return input_error("{}: sizes[{}] is negative", source, i);
      sizes.push_back(sz[i].get<uint64_t>());
    } else if (sz[i].is_string()) {
      auto b = parse_sizes(sz[i].get<std::string>());
      if (!b) return input_error("{}: sizes[{}]: {}", source, i, b.error().message);
      sizes.insert(sizes.end(), b->begin(), b->end());
    } else {
      return input_error("{}: sizes[{}] must be a size such as \"64K\" or a number of bytes", source, i);
    }
  }
  return sizes;
}

}  // namespace

Expected<Space> Space::from_json(const Json& doc, const std::string& source,
                                 const std::filesystem::path& base_dir) {
  return read(doc, source, base_dir, true);
}

Expected<Space> Space::from_definition(const Json& doc, const std::string& source,
                                       const std::filesystem::path& base_dir) {
  return read(doc, source, base_dir, false);
}

Expected<Space> Space::read(const Json& doc, const std::string& source, const std::filesystem::path& base_dir,
                            bool with_tables) {
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
    ACCELTUNE_TRY_ASSIGN(s.sizes_, read_sizes(doc["sizes"], source));
  }

  if (!doc.contains("params") || !doc["params"].is_array()) {
    return input_error("{}: missing array field 'params'", source);
  }
  const Json& params = doc["params"];
  if (params.empty()) return input_error("{}: 'params' is empty; a space needs at least one param", source);
  const std::optional<SpaceTables> tables = with_tables ? std::optional<SpaceTables>(s.kernel_) : std::nullopt;
  for (size_t i = 0; i < params.size(); ++i) {
    ACCELTUNE_TRY_ASSIGN(Param p, parse_param(params[i], source, i, tables ? &*tables : nullptr));
    if (s.param_index(p.name)) return input_error("{}: params[{}]: param name '{}' is used twice", source, i, p.name);
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
