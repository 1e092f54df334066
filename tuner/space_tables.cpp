// Reading a space file's params against their tables: finding a param's row, the kind it takes,
// and the contradictions a space may not state (a kind that cannot hold the row's values, another
// unit or doc, a value or bound outside the domain, a narrowing without the default).
#include "tuner/space_tables.hpp"

#include <algorithm>
#include <map>

#include "tuner/env_params.hpp"
#include "tuner/kernel.hpp"

namespace acceltune {
namespace {

Value json_to_value(const Json& j) {
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_number()) return j.get<double>();
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_string()) return j.get<std::string>();
  return j.dump();
}

bool same_value(const Value& a, const Value& b) {
  const bool an = is_numeric(a) && !std::holds_alternative<bool>(a);
  const bool bn = is_numeric(b) && !std::holds_alternative<bool>(b);
  if (an && bn) return to_double(a) == to_double(b);
  return a.index() == b.index() && to_string(a) == to_string(b);
}

std::string quoted(const Value& v) {
  return std::holds_alternative<std::string>(v) ? "'" + to_string(v) + "'" : to_string(v);
}

// The field of `j` that gave a value of the param's domain: the list, or the bound it is.
std::string field_of(const Json& j, const Param& p, const Value& v) {
  if (j.contains("values")) return "values";
  if (same_value(v, p.values.front())) return "min";
  if (same_value(v, p.values.back())) return "max";
  return j.contains("step") ? "step" : "kind";
}

// The field of `j` that leaves `v` out of the param's domain.
std::string field_leaving_out(const Json& j, const Param& p, const Value& v) {
  if (j.contains("values") || !is_numeric(v)) return "values";
  if (to_double(v) < to_double(p.values.front())) return "min";
  if (to_double(v) > to_double(p.values.back())) return "max";
  return j.contains("step") ? "step" : "kind";
}

bool kind_fits(NativeKind row, ParamKind kind, bool env) {
  if (env && kind == ParamKind::categorical) return true;  // a variable's values are text
  switch (row) {
    case NativeKind::boolean: return kind == ParamKind::boolean;
    case NativeKind::choice: return kind == ParamKind::categorical;
    case NativeKind::integer: return kind == ParamKind::int_range || kind == ParamKind::pow2 || kind == ParamKind::ordinal;
    case NativeKind::number: return kind == ParamKind::int_range || kind == ParamKind::ordinal;
  }
  return false;
}

Status same_text(const Json& j, const char* field, const std::string& row_text, const ParamRow& r,
                 const std::string& path) {
  if (!j.contains(field) || j[field].get<std::string>() == row_text) return {};
  return input_error("{}.{}: \"{}\" differs from {}: \"{}\"; leave the field out (the table is the only "
                     "description of a param: `acceltune spaces --params {}`)",
                     path, field, j[field].get<std::string>(), r.owner, row_text, r.listing);
}

}  // namespace

SpaceTables::SpaceTables(const std::string& kernel) : kernel_(kernel) {
  const KernelInfo* info = KernelRegistry::instance().find(kernel);
  if (!info) return;
  const auto k = info->make();
  if (k->native_params() == std::vector<std::string>{"*"}) return;
  native_ = k->native_table();
}

Expected<ParamRow> SpaceTables::row_of(const std::string& name, const std::string& env, const std::string& path) const {
  if (!env.empty()) {
    const auto found = find_env_row(env);
    if (!found) return ParamRow{};
    if (!found->row) {
      return input_error("{}.env: {} is not one of the {} variables acceltune knows; check the name (`acceltune "
                         "spaces --params {}` lists them)",
                         path, env, found->table, found->table);
    }
    return ParamRow{found->row, "the " + found->table + " table", found->table};
  }
  if (!native_) return ParamRow{};
  // A param the table lacks is make_kernel's to refuse (it names what the kernel applies).
  return ParamRow{find_native(*native_, name), "the table of kernel '" + kernel_ + "'", kernel_};
}

std::string kind_from_row(const NativeParam& row, const Json& j) {
  if (row.kind == NativeKind::choice) return "categorical";
  if (j.contains("values")) {
    const Json& vs = j["values"];
    const bool text = vs.is_array() && std::any_of(vs.begin(), vs.end(), [](const Json& v) { return v.is_string(); });
    return text || row.kind == NativeKind::boolean ? "categorical" : "ordinal";
  }
  if (row.kind == NativeKind::boolean) return "bool";
  return row.pow2 ? "pow2" : "int";
}

Status check_kind(const ParamRow& r, const std::string& kind, const std::string& path) {
  const std::map<std::string, ParamKind> kinds = {{"int", ParamKind::int_range},   {"pow2", ParamKind::pow2},
                                                  {"ordinal", ParamKind::ordinal}, {"categorical", ParamKind::categorical},
                                                  {"bool", ParamKind::boolean}};
  const auto k = kinds.find(kind);
  if (k == kinds.end() || kind_fits(r.row->kind, k->second, r.row->env)) return {};  // an unknown kind is refused later
  std::string fitting;
  for (const auto& [name, pk] : kinds) {
    if (kind_fits(r.row->kind, pk, r.row->env)) fitting += (fitting.empty() ? "" : " or ") + name;
  }
  return input_error("{}.kind: '{}' cannot hold the {} param of {} ({}); use {}, or leave kind out", path, kind,
                     to_string(r.row->kind), r.owner, describe_domain(*r.row), fitting);
}

Status fit_to_row(const Json& j, const ParamRow& r, const std::string& path, Param& p) {
  const NativeParam& row = *r.row;
  ACCELTUNE_TRY(same_text(j, "unit", row.unit, r, path));
  ACCELTUNE_TRY(same_text(j, "doc", row.doc, r, path));
  p.unit = row.unit;
  p.doc = row.doc;
  auto refuse = [&](const std::string& field, const Value& v, const std::string& why) {
    return input_error("{}.{}: param '{}' value {} {} ({}: {}; `acceltune spaces --params {}` lists it)", path, field,
                       p.name, quoted(v), why, r.owner, row.doc, r.listing);
  };
  if (!j.contains("values") && j.contains("min") && j.contains("max")) {
    // A range's bounds first, so a message names the bound and not a value inside it.
    const Value lo = p.values.front();
    const Value hi = j["max"].is_number() ? json_to_value(j["max"]) : p.values.back();
    if (const std::string why = outside_domain(row, lo); !why.empty()) return refuse("min", lo, why);
    if (const std::string why = outside_domain(row, hi); !why.empty()) return refuse("max", hi, why);
  }
  for (const auto& v : p.values) {
    if (const std::string why = outside_domain(row, v); !why.empty()) return refuse(field_of(j, p, v), v, why);
  }
  return {};
}

Expected<std::optional<size_t>> default_from_row(const Json& j, const ParamRow& r, const std::string& path,
                                                 const Param& p) {
  const NativeParam& row = *r.row;
  // One value pins the param: the space's context, measured by every trial, trial 0 included.
  if (p.values.size() == 1) return j.contains("default") ? std::optional<size_t>{} : std::optional<size_t>{0};
  if (row.env) {
    if (j.contains("default")) return std::optional<size_t>{};  // the space's own baseline
    for (size_t i = 0; i < p.values.size(); ++i) {
      if (unsets_env(p.values[i]) || (!row.unset_as.empty() && to_string(p.values[i]) == row.unset_as)) {
        return std::optional<size_t>{i};
      }
    }
    return input_error("{}.values: the variable's default is unset, which the narrowing leaves out; add \"{}\" (left "
                       "unset){}, or name the space's baseline in \"default\"",
                       path, kUnsetEnvValue, row.unset_as.empty() ? "" : " or " + row.unset_as + " (what it then is)");
  }
  if (j.contains("default") && !same_value(json_to_value(j["default"]), row.fallback)) {
    return input_error("{}.default: {} is not the default of {}, {}; leave the field out (the default is what the "
                       "kernel does when a space omits the param, and what trial 0 measures)",
                       path, j["default"].dump(), r.owner, describe_default(row));
  }
  if (const auto i = p.index_of(row.fallback)) return std::optional<size_t>{*i};
  return input_error("{}.{}: the narrowing leaves out the default of {}, {}, which trial 0 measures; include it",
                     path, field_leaving_out(j, p, row.fallback), r.owner, describe_default(row));
}

}  // namespace acceltune
