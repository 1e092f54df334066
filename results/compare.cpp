// The definitions behind results/compare.hpp: the comparison of studies of one space measured on
// different machines or hardware generations.
#include "results/compare.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "probe/links.hpp"
#include "tuner/study.hpp"

namespace acceltune {

namespace {

std::optional<double> finite(double v) {
  if (std::isfinite(v)) return v;
  return std::nullopt;
}

Json opt_json(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

std::string sizes_text(const std::vector<uint64_t>& sizes) {
  std::vector<std::string> parts;
  for (uint64_t b : sizes) parts.push_back(format_bytes(b));
  return parts.empty() ? "none" : join(parts, ",");
}

// Keys whose values change from one probe to the next on the same machine, or that are derived.
bool volatile_key(const std::string& key) {
  static const std::set<std::string> exact = {"id",       "fingerprint_fields", "telemetry", "time", "timestamp",
                                              "probed_at", "created_at", "uptime_seconds", "loadavg", "load",
                                              "notes",    "note"};
  if (exact.count(key)) return true;
  for (const char* part : {"temperature", "temp_c", "power", "clock", "freq", "mhz", "current", "utilization"}) {
    if (key.find(part) != std::string::npos) return true;
  }
  return false;
}

Json strip_volatile(const Json& j) {
  if (j.is_object()) {
    Json out = Json::object();
    for (const auto& [k, v] : j.items()) {
      if (!volatile_key(k)) out[k] = strip_volatile(v);
    }
    return out;
  }
  if (j.is_array()) {
    Json out = Json::array();
    for (const auto& v : j) out.push_back(strip_volatile(v));
    return out;
  }
  return j;
}

void flatten_into(const Json& j, const std::string& path, std::vector<std::pair<std::string, Json>>& out) {
  if (j.is_object()) {
    if (j.empty() && !path.empty()) out.emplace_back(path, j);
    for (const auto& [k, v] : j.items()) flatten_into(v, path.empty() ? k : path + "." + k, out);
    return;
  }
  if (j.is_array()) {
    const bool scalars = std::all_of(j.begin(), j.end(), [](const Json& e) { return !e.is_structured(); });
    if (scalars) {
      out.emplace_back(path, j);
      return;
    }
    for (size_t i = 0; i < j.size(); ++i) flatten_into(j[i], fmt::format("{}[{}]", path, i), out);
    return;
  }
  out.emplace_back(path, j);
}

std::string fp_string(const Json& fp, const char* key) {
  return fp.contains(key) && fp[key].is_string() ? fp[key].get<std::string>() : "";
}

// The space definition without what does not change the meaning of a config.
Json space_core(const Json& def) {
  Json d = def;
  for (const char* k : {"name", "description", "sizes", "search"}) d.erase(k);
  return d;
}

// The leaf fields whose values are not the same in every object, in the first object's order.
std::vector<FieldDifference> field_differences(const std::vector<Json>& objects) {
  std::vector<std::string> order;  // first object's field order, then fields only others have
  std::set<std::string> seen;
  std::vector<std::map<std::string, Json>> flat(objects.size());
  for (size_t k = 0; k < objects.size(); ++k) {
    for (auto& [path, v] : flatten_fields(objects[k])) {
      if (seen.insert(path).second) order.push_back(path);
      flat[k][path] = v;
    }
  }
  std::vector<FieldDifference> out;
  for (const auto& path : order) {
    FieldDifference d;
    d.field = path;
    bool differ = false;
    for (size_t k = 0; k < flat.size(); ++k) {
      auto it = flat[k].find(path);
      d.values.push_back(it == flat[k].end() ? Json(nullptr) : it->second);
      if (d.values.back() != d.values.front()) differ = true;
    }
    if (differ) out.push_back(std::move(d));
  }
  return out;
}

}  // namespace

std::string format_number(double v) {
  if (!std::isfinite(v)) return "-";
  if (std::abs(v) >= 100 && std::abs(v) < 1e7) return fmt::format("{:.1f}", v);
  if (v == 0) return "0";
  return fmt::format("{:#.3g}", v);
}

std::string show_param_value(const Json& v, const std::string& unit) {
  if (v.is_null()) return "-";
  if (unit == "bytes" && v.is_number_integer() && v.get<int64_t>() > 0) return format_bytes(v.get<uint64_t>());
  return v.is_string() ? v.get<std::string>() : v.dump();
}

const Trial* default_trial(const StudyData& s) {
  const std::string key = s.space.key(s.space.default_config());
  for (const auto& t : s.trials) {
    if (t.key == key && t.effort >= 1.0) return &t;
  }
  return nullptr;
}

Json comparable_fingerprint(const Json& study, bool* subset) {
  if (subset) *subset = false;
  const Json fp = study.value("fingerprint", Json::object());
  Json fields;
  if (fp.is_object() && fp.contains("fingerprint_fields")) {
    fields = fp["fingerprint_fields"];
  } else if (study.contains("fingerprint_fields")) {
    fields = study["fingerprint_fields"];
  }
  if (fields.is_object()) {
    if (subset) *subset = true;
    return fields;
  }
  if (fields.is_array() && fp.is_object()) {
    // A list of the dotted paths that the id hashes: pick them from the probe.
    const auto all = flatten_fields(fp);
    Json picked = Json::object();
    for (const auto& f : fields) {
      if (!f.is_string()) continue;
      const std::string want = f.get<std::string>();
      for (const auto& [path, v] : all) {
        if (path == want || path.rfind(want + ".", 0) == 0 || path.rfind(want + "[", 0) == 0) picked[path] = v;
      }
    }
    if (subset) *subset = true;
    return picked;
  }
  return strip_volatile(fp.is_object() ? fp : Json::object());
}

std::vector<std::pair<std::string, Json>> flatten_fields(const Json& j) {
  std::vector<std::pair<std::string, Json>> out;
  flatten_into(j, "", out);
  return out;
}

Json Comparison::to_json() const {
  Json j = Json::object();
  j["unit"] = unit;
  Json ss = Json::array();
  for (const auto& s : studies) {
    ss.push_back(Json{{"label", s.label},
                      {"dir", s.dir},
                      {"space", s.space},
                      {"kernel", s.kernel},
                      {"operation", s.operation},
                      {"fingerprint_id", s.fingerprint_id},
                      {"host", s.host},
                      {"cpu_model", s.cpu_model},
                      {"logical_cores", s.logical_cores},
                      {"usable_cores", s.usable_cores},
                      {"trials", s.trials},
                      {"trials_ok", s.trials_ok},
                      {"certified", s.certified},
                      {"finished", s.finished},
                      {"created_at", s.created_at},
                      {"delivery", Json{{"state", s.delivery_state}, {"why", s.delivery_why},
                                        {"client", s.delivery_client}}},
                      {"efficiency", s.efficiency}});
  }
  j["studies"] = ss;
  Json sz = Json::array();
  for (size_t i = 0; i < sizes.size(); ++i) {
    Json per = Json::array();
    for (const auto& c : cells[i]) {
      Json e = Json::object();
      e["default_value"] = opt_json(c.default_value);
      e["default_p10"] = opt_json(c.default_p10);
      e["default_p90"] = opt_json(c.default_p90);
      e["best_value"] = opt_json(c.best_value);
      e["best_p10"] = opt_json(c.best_p10);
      e["best_p90"] = opt_json(c.best_p90);
      e["best_trial"] = c.best_trial ? Json(*c.best_trial) : Json(nullptr);
      e["best_config"] = c.best_config;
      e["gain"] = opt_json(c.gain);
      // Certified and delivered, each named; null where the study was not certified or the
      // delivery not verified ("delivered_state" says which).
      e["certified"] = c.certified ? Json{{"ratio", opt_json(c.certified_ratio)},
                                          {"ci_low", opt_json(c.ci_low)},
                                          {"ci_high", opt_json(c.ci_high)},
                                          {"significant", c.significant}}
                                   : Json(nullptr);
      if (c.delivered) {
        const Delivered& d = *c.delivered;
        e["delivered"] = Json{{"ratio", d.ratio},
                              {"ci_low", d.ci_low},
                              {"ci_high", opt_json(finite(d.ci_high))},
                              {"value", d.value},
                              {"default_value", d.default_value},
                              {"rounds", d.rounds},
                              {"slower", d.slower},
                              {"faster", d.faster}};
      } else {
        e["delivered"] = nullptr;
      }
      e["delivered_state"] = c.delivered ? "measured" : "not verified";
      e["best_vs_first"] = opt_json(c.best_vs_first);
      e["default_vs_first"] = opt_json(c.default_vs_first);
      per.push_back(e);
    }
    sz.push_back(Json{{"bytes", sizes[i]}, {"size", format_bytes(sizes[i])}, {"studies", per}});
  }
  j["sizes"] = sz;
  Json others = Json::array();
  for (const auto& [b, labels] : other_sizes) {
    others.push_back(Json{{"bytes", b}, {"size", format_bytes(b)}, {"studies", labels}});
  }
  j["other_sizes"] = others;
  Json cd = Json::array();
  for (const auto& d : config_differences) {
    cd.push_back(Json{{"bytes", d.bytes}, {"size", format_bytes(d.bytes)}, {"param", d.param}, {"values", d.values}});
  }
  j["config_differences"] = cd;
  Json fd = Json::array();
  for (const auto& d : fingerprint_differences) fd.push_back(Json{{"field", d.field}, {"values", d.values}});
  j["fingerprint_differences"] = fd;
  Json ofd = Json::array();
  for (const auto& d : other_fingerprint_differences) ofd.push_back(Json{{"field", d.field}, {"values", d.values}});
  j["other_fingerprint_differences"] = ofd;
  j["fingerprint_compared"] = fingerprint_subset ? "fingerprint_fields" : "whole fingerprint minus volatile fields";
  j["warnings"] = warnings;
  return j;
}

namespace {

// What the side-by-side shows of one study: where it ran, how far it got, what it delivered.
CompareStudy describe_study(const StudyData& s, size_t k) {
  CompareStudy cs;
  cs.dir = s.dir;
  cs.label = fmt::format("#{}", k + 1);
  cs.space = s.space.name();
  cs.kernel = s.workload.kernel;
  cs.operation = s.workload.operation;
  const Json fp = s.study.value("fingerprint", Json::object());
  if (fp.is_object()) {
    cs.fingerprint_id = fp_string(fp, "id");
    cs.host = fp_string(fp, "host");
    const Json cpu = fp.value("cpu", Json::object());
    if (cpu.is_object()) {
      cs.cpu_model = cpu.value("model", "");
      cs.logical_cores = cpu.value("logical_cores", int64_t{0});
      cs.usable_cores = cpu.value("usable_cores", cs.logical_cores);
    }
  }
  cs.trials = static_cast<int64_t>(s.trials.size());
  cs.trials_ok = static_cast<int64_t>(
      std::count_if(s.trials.begin(), s.trials.end(), [](const Trial& t) { return t.state == State::ok; }));
  cs.certified = s.best.certified;
  cs.finished = s.finished;
  cs.created_at = s.study.value("created_at", "");
  cs.delivery_state = s.best.delivery.state;
  cs.delivery_why = s.best.delivery.why;
  cs.delivery_client = s.best.delivery.client;
  const Efficiency e = efficiency_of(s.study, s.best);
  cs.efficiency = e.to_json();
  cs.efficiency_text = e.short_text();
  return cs;
}

bool has_size(const StudyData& s, uint64_t bytes) {
  const auto& sz = s.workload.sizes;
  return std::find(sz.begin(), sz.end(), bytes) != sz.end();
}

// The sizes every study measured, ascending; refused where a side-by-side is meaningless (other
// kernels, no size in common).
Expected<std::vector<uint64_t>> comparable_sizes(const std::vector<StudyData>& in) {
  const StudyData& first = in[0];
  for (size_t k = 1; k < in.size(); ++k) {
    if (in[k].workload.kernel != first.workload.kernel) {
      return input_error("{} measures kernel '{}' but {} measures kernel '{}'; compare studies of the same kernel",
                         first.dir, first.workload.kernel, in[k].dir, in[k].workload.kernel);
    }
  }
  std::vector<uint64_t> common = first.workload.sizes;
  for (size_t k = 1; k < in.size(); ++k) {
    std::vector<uint64_t> keep;
    for (uint64_t b : common) {
      if (has_size(in[k], b)) keep.push_back(b);
    }
    common = std::move(keep);
  }
  if (common.empty()) {
    std::vector<std::string> parts;
    for (const auto& s : in) parts.push_back(fmt::format("{} ({})", s.dir, sizes_text(s.workload.sizes)));
    return input_error("the studies share no message size: {}; compare studies measured at common sizes",
                       join(parts, ", "));
  }
  std::sort(common.begin(), common.end());
  return common;
}

std::string unfinished_warning(const std::string& label, const std::string& dir) {
  return fmt::format("{} ({}) has no best.json: it is still running or was stopped; its table is computed from "
                     "the trials so far",
                     label, dir);
}

// Comparable, with care: what differs between the first study and each other one.
void warn_differences(const std::vector<StudyData>& in, Comparison& c) {
  const StudyData& first = in[0];
  const std::string first_label = c.studies[0].label;
  for (size_t k = 1; k < in.size(); ++k) {
    const StudyData& s = in[k];
    const std::string& lab = c.studies[k].label;
    if (s.space.name() != first.space.name()) {
      c.warnings.push_back(fmt::format("different spaces: {} is '{}', {} is '{}'", first_label, first.space.name(), lab,
                                       s.space.name()));
    }
    const std::string diff = first_difference(space_core(first.study["space"]), space_core(s.study["space"]));
    if (!diff.empty()) {
      c.warnings.push_back(fmt::format("space definitions differ ({} vs {}: {}); a best config of one may lie "
                                       "outside the other's space",
                                       first_label, lab, diff));
    }
    auto wdiff = [&](const char* what, const std::string& a, const std::string& b) {
      if (a != b) c.warnings.push_back(fmt::format("different {}: {} {} vs {} {}", what, first_label, a, lab, b));
    };
    wdiff("operation", first.workload.operation, s.workload.operation);
    wdiff("dtype", first.workload.dtype, s.workload.dtype);
    wdiff("ranks", std::to_string(first.workload.ranks), std::to_string(s.workload.ranks));
    wdiff("units", first.unit, s.unit);
    const Json m1 = first.study.value("measure", Json::object()), m2 = s.study.value("measure", Json::object());
    const std::string mdiff = first_difference(m1, m2);
    if (!mdiff.empty()) {
      c.warnings.push_back(fmt::format("different measurement settings ({} vs {}: {})", first_label, lab, mdiff));
    }
    if (!s.finished) c.warnings.push_back(unfinished_warning(lab, s.dir));
  }
  if (!first.finished) c.warnings.push_back(unfinished_warning(first_label, first.dir));
}

// The sizes only some of the studies measured, each with the studies that did, and a warning.
void note_other_sizes(const std::vector<StudyData>& in, Comparison& c) {
  std::set<uint64_t> all_sizes;
  for (const auto& s : in) all_sizes.insert(s.workload.sizes.begin(), s.workload.sizes.end());
  for (uint64_t b : all_sizes) {
    if (std::find(c.sizes.begin(), c.sizes.end(), b) != c.sizes.end()) continue;
    std::vector<std::string> labels;
    for (size_t k = 0; k < in.size(); ++k) {
      if (has_size(in[k], b)) labels.push_back(c.studies[k].label);
    }
    c.other_sizes.emplace_back(b, labels);
  }
  if (!c.other_sizes.empty()) {
    std::vector<std::string> parts;
    for (const auto& [b, labels] : c.other_sizes) parts.push_back(fmt::format("{} (only {})", format_bytes(b), join(labels, ", ")));
    c.warnings.push_back(fmt::format("the studies measured different sizes: compared at {}; not compared: {}",
                                     sizes_text(c.sizes), join(parts, ", ")));
  }
}

// One study at one size: its default (the measured trial first, else its best table's), its best,
// certified and delivered figures.
CompareCell cell_at(const StudyData& s, uint64_t bytes) {
  CompareCell cell;
  const SizeBest* sb = nullptr;
  for (const auto& e : s.best.sizes) {
    if (e.bytes == bytes) sb = &e;
  }
  if (const Trial* d = default_trial(s)) {
    const Measurement* m = d->at_size(bytes);
    if (m && m->state == State::ok) {
      cell.default_value = finite(m->value);
      cell.default_p10 = finite(m->value_p10);
      cell.default_p90 = finite(m->value_p90);
    }
  }
  if (sb) {
    // The exported config and its one figure (exported_figure), as `best` and the report show it;
    // the default beside it from the same rounds.
    const ExportedFigure f = exported_figure(s.best, *sb);
    if (f.default_value && f.what.find("certified") != std::string::npos) {
      cell.default_value = finite(*f.default_value);
      cell.default_p10 = cell.default_p90 = std::nullopt;
    }
    if (!cell.default_value && sb->default_value) cell.default_value = sb->default_value;
    if (f.value) {
      cell.best_trial = f.trial;
      cell.best_value = finite(*f.value);
      cell.best_config = f.config;
      if (f.trial && sb->best_trial && *f.trial == *sb->best_trial && f.what.find("certified") == std::string::npos) {
        cell.best_p10 = finite(sb->best_p10);
        cell.best_p90 = finite(sb->best_p90);
      }
    }
    cell.certified = sb->certified;
    cell.significant = sb->significant;
    cell.certified_ratio = sb->certified_ratio;
    cell.ci_low = sb->ci_low;
    cell.ci_high = sb->ci_high;
    cell.delivered = sb->delivered;
  }
  if (cell.best_value && cell.default_value && *cell.default_value > 0) {
    cell.gain = *cell.best_value / *cell.default_value;
  }
  return cell;
}

// Each study's best and default against the first study's, at one size.
void relate_to_first(std::vector<CompareCell>& row) {
  for (size_t k = 1; k < row.size(); ++k) {
    if (row[k].best_value && row[0].best_value && *row[0].best_value > 0) {
      row[k].best_vs_first = *row[k].best_value / *row[0].best_value;
    }
    if (row[k].default_value && row[0].default_value && *row[0].default_value > 0) {
      row[k].default_vs_first = *row[k].default_value / *row[0].default_value;
    }
  }
}

// Where the best configs differ at one size, param by param (params of any of the studies).
void add_config_differences(uint64_t bytes, const std::vector<CompareCell>& row,
                            std::vector<ConfigDifference>& out) {
  std::vector<std::string> params;
  for (const auto& cell : row) {
    for (const auto& [k, v] : cell.best_config.items()) {
      if (std::find(params.begin(), params.end(), k) == params.end()) params.push_back(k);
    }
  }
  for (const auto& p : params) {
    ConfigDifference d;
    d.bytes = bytes;
    d.param = p;
    bool differ = false;
    for (const auto& cell : row) {
      d.values.push_back(cell.best_config.contains(p) ? cell.best_config[p] : Json(nullptr));
      if (d.values.back() != d.values.front()) differ = true;
    }
    if (differ) out.push_back(std::move(d));
  }
}

Json whole_fingerprint(const StudyData& s) {
  Json fp = s.study.value("fingerprint", Json::object());
  return strip_volatile(fp.is_object() ? fp : Json::object());
}

// Fingerprints: the subset the ids hash when every study has it, else the whole probe; with the
// subset, the differences outside it apart.
void compare_fingerprints(const std::vector<StudyData>& in, Comparison& c) {
  std::vector<Json> fps;
  bool all_subset = true;
  for (const auto& s : in) {
    bool subset = false;
    fps.push_back(comparable_fingerprint(s.study, &subset));
    all_subset = all_subset && subset;
  }
  if (!all_subset) {
    fps.clear();
    for (const auto& s : in) fps.push_back(whole_fingerprint(s));
  }
  c.fingerprint_subset = all_subset;
  c.fingerprint_differences = field_differences(fps);
  if (all_subset) {
    std::vector<Json> whole;
    for (const auto& s : in) whole.push_back(whole_fingerprint(s));
    std::set<std::string> hashed;
    for (const auto& d : c.fingerprint_differences) hashed.insert(d.field);
    for (auto& d : field_differences(whole)) {
      if (!hashed.count(d.field)) c.other_fingerprint_differences.push_back(std::move(d));
    }
  }
}

}  // namespace

Expected<Comparison> compare_studies(const std::vector<StudyData>& in) {
  if (in.size() < 2) return input_error("compare needs at least two study directories");
  Comparison c;
  for (size_t k = 0; k < in.size(); ++k) c.studies.push_back(describe_study(in[k], k));
  ACCELTUNE_TRY_ASSIGN(c.sizes, comparable_sizes(in));
  warn_differences(in, c);
  note_other_sizes(in, c);
  c.unit = in[0].unit;
  for (uint64_t bytes : c.sizes) {
    std::vector<CompareCell> row;
    for (const auto& s : in) row.push_back(cell_at(s, bytes));
    relate_to_first(row);
    add_config_differences(bytes, row, c.config_differences);
    c.cells.push_back(std::move(row));
  }
  compare_fingerprints(in, c);
  return c;
}

}  // namespace acceltune
