// The definitions behind tuner/best.hpp: the best-per-size table of a study, and the emitters that
// turn it into files that the communication libraries read.
#include "tuner/best.hpp"

#include <algorithm>
#include <cmath>

#include "tuner/plan.hpp"

namespace acceltune {

namespace {
Json opt(const std::optional<double>& x) { return x ? Json(*x) : Json(nullptr); }
std::optional<double> get_opt(const Json& j, const char* k) {
  if (j.contains(k) && j[k].is_number()) return j[k].get<double>();
  return std::nullopt;
}

// A gain with its interval and medians (a certification candidate, a delivered gain); a gain
// with fewer than two good rounds has no interval: JSON holds null there.
template <class Gain>
void read_gain(const Json& k, Gain& g) {
  g.ratio = get_opt(k, "ratio").value_or(0.0);
  g.ci_low = get_opt(k, "ci_low").value_or(0.0);
  g.ci_high = get_opt(k, "ci_high").value_or(INFINITY);
  g.value = get_opt(k, "value").value_or(0.0);
  g.default_value = get_opt(k, "default_value").value_or(0.0);
  g.rounds = k.value("rounds", 0);
}

Json exported_json(const BestTable& b, const SizeBest& s) {
  const ExportedFigure f = exported_figure(b, s);
  const auto opt = [](const auto& v) { return v ? Json(*v) : Json(nullptr); };
  return Json{{"config", f.config},
              {"trial", opt(f.trial)},
              {"value", opt(f.value)},
              {"default_value", opt(f.default_value)},
              {"value_is", f.what}};
}

}  // namespace

Json BestTable::to_json() const {
  Json j = Json::object();
  // 2: the plan, the delivered gains and the model's interval; a table without "schema" is 1.
  j["schema"] = kBestSchema;
  j["space"] = space;
  j["kernel"] = kernel;
  j["unit"] = unit;
  if (!value_is.empty()) j["value_is"] = value_is;
  j["trials"] = trials;
  j["trials_ok"] = trials_ok;
  j["recommended_by"] = recommended_by;
  Json sz = Json::array();
  for (const auto& s : sizes) {
    Json e = Json::object();
    e["bytes"] = s.bytes;
    e["size"] = format_bytes(s.bytes);
    e["best_trial"] = s.best_trial ? Json(*s.best_trial) : Json(nullptr);
    e["config"] = s.best_config;
    e["value"] = s.best_trial ? Json(s.best_value) : Json(nullptr);
    e["value_p10"] = s.best_trial ? Json(s.best_p10) : Json(nullptr);
    e["value_p90"] = s.best_trial ? Json(s.best_p90) : Json(nullptr);
    e["predicted"] = opt(s.predicted);
    e["model"] = Json{{"value", opt(s.predicted)}, {"ci_low", opt(s.predicted_low)}, {"ci_high", opt(s.predicted_high)}};
    e["observed_trial"] = s.observed_trial ? Json(*s.observed_trial) : Json(nullptr);
    e["observed_value"] = s.observed_trial ? Json(s.observed_value) : Json(nullptr);
    e["default_value"] = opt(s.default_value);
    e["ratio"] = opt(s.ratio);
    if (s.certified) {
      Json c = Json::object();
      c["trial"] = s.certified_trial ? Json(*s.certified_trial) : Json(nullptr);
      c["ratio"] = opt(s.certified_ratio);
      c["ci_low"] = opt(s.ci_low);
      c["ci_high"] = opt(s.ci_high);
      c["significant"] = s.significant;
      c["confirmed"] = s.confirmed;
      c["rounds"] = s.certified_rounds;
      c["value"] = s.certified_trial ? Json(s.certified_value) : Json(nullptr);
      c["default_value"] = s.certified_trial ? Json(s.certified_default_value) : Json(nullptr);
      Json cands = Json::array();
      for (const auto& k : s.candidates) {
        cands.push_back(Json{{"trial", k.trial}, {"config", k.config}, {"ratio", k.ratio}, {"ci_low", k.ci_low},
                             {"ci_high", k.ci_high}, {"value", k.value}, {"default_value", k.default_value},
                             {"rounds", k.rounds}});
      }
      c["candidates"] = cands;
      e["certified"] = c;
    }
    e["chosen_config"] = s.chosen_config;
    e["chosen_is_default"] = s.chosen_is_default;
    e["exported"] = exported_json(*this, s);  // its one figure; the fields above name the others
    if (s.delivered) {
      const Delivered& d = *s.delivered;
      e["delivered"] = Json{{"ratio", d.ratio},       {"ci_low", d.ci_low},   {"ci_high", std::isfinite(d.ci_high) ? Json(d.ci_high) : Json(nullptr)},
                            {"value", d.value},       {"default_value", d.default_value},
                            {"rounds", d.rounds},     {"slower", d.slower},   {"faster", d.faster}};
    } else {
      e["delivered"] = nullptr;
    }
    sz.push_back(e);
  }
  j["sizes"] = sz;
  j["certified"] = certified;
  Json rs = Json::array();
  for (const auto& r : ranges) {
    rs.push_back(Json{{"min_bytes", r.min_bytes}, {"max_bytes", r.max_bytes}, {"sizes", r.sizes},
                      {"config", r.config}, {"is_default", r.is_default}});
  }
  j["ranges"] = rs;
  j["export_config"] = export_config;
  Json scopes = Json::object();
  for (const auto& [p, sc] : plan.scopes) scopes[p] = to_string(sc);
  j["plan"] = Json{{"job", plan.job}, {"job_is_default", plan.job_is_default}, {"scopes", scopes},
                   {"chosen_by", plan.chosen_by}, {"notes", plan.notes}};
  // What a job's environment gets (plan_env), for the runtime loader, which reads no space.
  if (auto pe = plan_env(*this)) {
    Json vars = Json::array();
    for (const auto& [k, v] : pe->vars) vars.push_back(Json::array({k, v}));
    j["plan"]["env"] = vars;
    Json held = Json::array();
    for (const auto& h : pe->held) held.push_back(Json{{"var", h.var}, {"value", h.value}, {"why", h.why}});
    j["plan"]["held"] = held;
  }
  j["delivery"] = Json{{"state", delivery.state}, {"why", delivery.why},           {"client", delivery.client},
                       {"fingerprint", delivery.fingerprint}, {"at", delivery.at}, {"rounds", delivery.rounds},
                       {"verdict", delivery.verdict}, {"verdict_why", delivery.verdict_why}};
  j["overall"] = Json{{"trial", overall_trial ? Json(*overall_trial) : Json(nullptr)},
                      {"config", overall_config},
                      {"value", overall_trial ? Json(overall_value) : Json(nullptr)},
                      {"default_value", opt(default_overall_value)}};
  j["default_config"] = default_config;
  Json env_j = Json::object();
  for (const auto& [p, e] : env) env_j[p] = e;
  j["env"] = env_j;
  return j;
}

namespace {

// The fields a reader relies on, with the JSON path of the first that is wrong.
Status check_best_shape(const Json& j) {
  if (!j.is_object()) return input_error("not a best.json table: the top level is not an object");
  if (j.contains("schema") && (!j["schema"].is_number_integer() || j["schema"].get<int64_t>() < 1)) {
    return input_error("field 'schema' must be a positive integer, not {}", j["schema"].dump());
  }
  if (j.contains("schema") && j["schema"].get<int64_t>() > kBestSchema) {
    return input_error("field 'schema' is {}, newer than this acceltune reads ({}); upgrade acceltune",
                       j["schema"].get<int64_t>(), kBestSchema);
  }
  if (!j.contains("sizes") || !j["sizes"].is_array()) return input_error("field 'sizes' is missing or not an array");
  if (!j.contains("overall") || !j["overall"].is_object()) {
    return input_error("field 'overall' is missing or not an object");
  }
  for (const char* f : {"space", "kernel", "unit", "value_is", "recommended_by"}) {
    if (j.contains(f) && !j[f].is_string()) return input_error("field '{}' must be a string", f);
  }
  for (const char* f : {"default_config", "export_config", "env", "plan", "delivery"}) {
    if (j.contains(f) && !j[f].is_object()) return input_error("field '{}' must be an object", f);
  }
  for (size_t i = 0; i < j["sizes"].size(); ++i) {
    const Json& e = j["sizes"][i];
    if (!e.is_object()) return input_error("field 'sizes[{}]' must be an object", i);
    if (!e.contains("bytes") || !e["bytes"].is_number_unsigned()) {
      return input_error("field 'sizes[{}].bytes' is missing or not a byte count", i);
    }
    for (const char* f : {"certified", "delivered", "model"}) {
      if (e.contains(f) && !e[f].is_null() && !e[f].is_object()) {
        return input_error("field 'sizes[{}].{}' must be an object or null", i, f);
      }
    }
    for (const char* f : {"config", "chosen_config"}) {
      if (e.contains(f) && !e[f].is_object()) return input_error("field 'sizes[{}].{}' must be an object", i, f);
    }
  }
  if (j.contains("ranges") && !j["ranges"].is_array()) return input_error("field 'ranges' must be an array");
  return {};
}

}  // namespace

Expected<BestTable> BestTable::from_json(const Json& j) {
  ACCELTUNE_TRY(check_best_shape(j));
  try {
    return from_json_unchecked(j);
  } catch (const Json::exception& e) {
    return input_error("a field has the wrong type: {}", e.what());
  }
}

namespace {

// A size's "certified" object: its figures, and every candidate of its shared rounds.
void read_certified(const Json& c, SizeBest& s) {
  s.certified = true;
  if (c.contains("trial") && c["trial"].is_number()) s.certified_trial = c["trial"].get<int64_t>();
  s.certified_ratio = get_opt(c, "ratio");
  s.ci_low = get_opt(c, "ci_low");
  s.ci_high = get_opt(c, "ci_high");
  s.significant = c.value("significant", false);
  s.confirmed = c.value("confirmed", false);
  s.certified_rounds = c.value("rounds", 0);
  s.certified_value = get_opt(c, "value").value_or(0.0);
  s.certified_default_value = get_opt(c, "default_value").value_or(0.0);
  for (const auto& k : c.value("candidates", Json::array())) {
    Candidate cd;
    cd.trial = k.value("trial", int64_t{0});
    cd.config = k.value("config", Json::object());
    // A candidate with fewer than two good rounds has no interval: JSON holds null there.
    read_gain(k, cd);
    s.candidates.push_back(std::move(cd));
  }
}

SizeBest size_best_from_json(const Json& e) {
  SizeBest s;
  s.bytes = e.value("bytes", uint64_t{0});
  if (e.contains("best_trial") && e["best_trial"].is_number()) s.best_trial = e["best_trial"].get<int64_t>();
  s.best_config = e.value("config", Json::object());
  s.best_value = get_opt(e, "value").value_or(0);
  s.best_p10 = get_opt(e, "value_p10").value_or(0);
  s.best_p90 = get_opt(e, "value_p90").value_or(0);
  s.predicted = get_opt(e, "predicted");
  if (e.contains("observed_trial") && e["observed_trial"].is_number()) {
    s.observed_trial = e["observed_trial"].get<int64_t>();
    s.observed_value = get_opt(e, "observed_value").value_or(0);
  }
  s.default_value = get_opt(e, "default_value");
  s.ratio = get_opt(e, "ratio");
  if (e.contains("certified") && e["certified"].is_object()) read_certified(e["certified"], s);
  s.chosen_config = e.value("chosen_config", s.best_config);
  s.chosen_is_default = e.value("chosen_is_default", false);
  if (e.contains("model") && e["model"].is_object()) {
    s.predicted_low = get_opt(e["model"], "ci_low");
    s.predicted_high = get_opt(e["model"], "ci_high");
  }
  if (e.contains("delivered") && e["delivered"].is_object()) {
    const Json& d = e["delivered"];
    Delivered dv;
    read_gain(d, dv);
    dv.slower = d.value("slower", false);
    dv.faster = d.value("faster", false);
    s.delivered = dv;
  }
  return s;
}

SizeRange size_range_from_json(const Json& r) {
  SizeRange sr;
  sr.min_bytes = r.value("min_bytes", uint64_t{0});
  sr.max_bytes = r.value("max_bytes", uint64_t{0});
  sr.sizes = r.value("sizes", std::vector<uint64_t>{});
  sr.config = r.value("config", Json::object());
  sr.is_default = r.value("is_default", false);
  return sr;
}

// The export plan as stored, or for schema 1 (which had none) the one its single-valued export
// config implies: that config held the job-wide values.
void read_plan(const Json& j, BestTable& b) {
  if (!j.contains("plan")) {
    b.plan.scopes = param_scopes(b.kernel, b.default_config, b.env);
    b.plan.job = job_part(b.export_config, b.plan.scopes);
    b.plan.job_is_default = b.plan.job == job_part(b.default_config, b.plan.scopes);
    b.export_config = with_job(b.default_config, b.plan.job);
    return;
  }
  const Json& p = j["plan"];
  b.plan.job = p.value("job", Json::object());
  b.plan.job_is_default = p.value("job_is_default", true);
  b.plan.chosen_by = p.value("chosen_by", "observed");
  b.plan.notes = p.value("notes", std::vector<std::string>{});
  const Json scopes = p.contains("scopes") && p["scopes"].is_object() ? p["scopes"] : Json::object();
  for (const auto& [param, sc] : scopes.items()) {
    const std::string t = sc.is_string() ? sc.get<std::string>() : "";
    b.plan.scopes[param] = t == "per-size" ? Scope::per_size : t == "job" ? Scope::job : Scope::application;
  }
}

}  // namespace

Expected<BestTable> BestTable::from_json_unchecked(const Json& j) {
  BestTable b;
  b.space = j.value("space", "");
  b.kernel = j.value("kernel", "");
  b.unit = j.value("unit", "");
  b.value_is = j.value("value_is", "");
  b.trials = j.value("trials", int64_t{0});
  b.trials_ok = j.value("trials_ok", int64_t{0});
  b.recommended_by = j.value("recommended_by", "observed");
  for (const auto& e : j["sizes"]) b.sizes.push_back(size_best_from_json(e));
  b.certified = j.value("certified", false);
  for (const auto& r : j.value("ranges", Json::array())) b.ranges.push_back(size_range_from_json(r));
  const Json& o = j["overall"];
  if (o.contains("trial") && o["trial"].is_number()) b.overall_trial = o["trial"].get<int64_t>();
  b.overall_config = o.value("config", Json::object());
  b.overall_value = get_opt(o, "value").value_or(0);
  b.default_overall_value = get_opt(o, "default_value");
  b.default_config = j.value("default_config", Json::object());
  b.export_config = j.value("export_config", b.overall_config);
  if (j.contains("env")) {
    for (const auto& [p, e] : j["env"].items()) b.env[p] = e.get<std::string>();
  }
  read_plan(j, b);
  if (j.contains("delivery")) {
    const Json& d = j["delivery"];
    b.delivery.state = d.value("state", "not verified");
    b.delivery.why = d.value("why", "");
    b.delivery.client = d.value("client", "");
    b.delivery.fingerprint = d.value("fingerprint", "");
    b.delivery.at = d.value("at", "");
    b.delivery.rounds = d.value("rounds", 0);
    b.delivery.verdict = d.value("verdict", "");
    b.delivery.verdict_why = d.value("verdict_why", "");
  }
  return b;
}

BestTable compute_recommended_best(const Space& space, const Workload& workload, const std::vector<Trial>& trials,
                                   const std::string& unit, uint64_t seed, Ranking* ranking) {
  std::string ranked_by;
  Ranking r = rank_measured(space, trials, workload.sizes, seed, &ranked_by);
  BestTable b = compute_best(space, workload, trials, unit, &r, ranked_by);
  if (ranking) *ranking = std::move(r);
  return b;
}

BestTable compute_best(const Space& space, const Workload& workload, const std::vector<Trial>& trials,
                       const std::string& unit, const Ranking* ranking, const std::string& ranked_by) {
  BestTable b;
  b.recommended_by = ranking ? ranked_by : "observed";
  std::map<int64_t, const Trial*> by_number;
  for (const auto& t : trials) by_number.emplace(t.number, &t);
  b.space = space.name();
  b.kernel = space.kernel();
  b.unit = unit;
  b.default_config = space.config_to_json(space.default_config());
  for (const auto& p : space.params()) {
    if (!p.env.empty()) b.env[p.name] = p.env;
  }
  b.trials = static_cast<int64_t>(trials.size());
  const std::string default_key = space.key(space.default_config());
  const Trial* best_overall = nullptr;
  const Trial* default_trial = nullptr;
  for (const auto& t : trials) {
    if (t.state == State::ok) ++b.trials_ok;
    for (const auto& m : t.measurements) {
      if (b.value_is.empty() && m.state == State::ok && m.details.contains("value_is") &&
          m.details["value_is"].is_string()) {
        b.value_is = m.details["value_is"].get<std::string>();
      }
    }
    if (t.effort < 1.0) continue;  // screening trials rank configs; full measurements decide
    if (t.key == default_key && !default_trial) default_trial = &t;
    if (t.value && (!best_overall || *t.value > *best_overall->value)) best_overall = &t;
  }
  for (uint64_t bytes : workload.sizes) {
    SizeBest s;
    s.bytes = bytes;
    const Trial* best = nullptr;
    const Measurement* best_m = nullptr;
    for (const auto& t : trials) {
      const Measurement* m = t.at_size(bytes);
      if (!m || m->state != State::ok || t.effort < 1.0) continue;
      if (!best_m || m->value > best_m->value) {
        best = &t;
        best_m = m;
      }
    }
    if (best) {
      s.observed_trial = best->number;
      s.observed_value = best_m->value;
    }
    // The recommendation, when it names a trial measured ok at this size.
    if (ranking) {
      auto it = ranking->find(bytes);
      if (it != ranking->end() && !it->second.empty()) {
        auto t = by_number.find(it->second.front().trial);
        const Measurement* m = t == by_number.end() ? nullptr : t->second->at_size(bytes);
        if (m && m->state == State::ok && t->second->effort >= 1.0) {
          best = t->second;
          best_m = m;
          s.predicted = it->second.front().predicted;
          s.predicted_low = it->second.front().low;
          s.predicted_high = it->second.front().high;
        }
      }
    }
    if (best) {
      s.best_trial = best->number;
      s.best_config = space.config_to_json(best->config);
      s.best_value = best_m->value;
      s.best_p10 = best_m->value_p10;
      s.best_p90 = best_m->value_p90;
    }
    if (default_trial) {
      const Measurement* m = default_trial->at_size(bytes);
      if (m && m->state == State::ok) s.default_value = m->value;
    }
    if (best && s.default_value && *s.default_value > 0) s.ratio = s.best_value / *s.default_value;
    s.chosen_config = best ? s.best_config : b.default_config;
    s.chosen_is_default = !best || s.best_config == b.default_config;
    b.sizes.push_back(std::move(s));
  }
  if (best_overall) {
    b.overall_trial = best_overall->number;
    b.overall_config = space.config_to_json(best_overall->config);
    b.overall_value = *best_overall->value;
  }
  if (default_trial && default_trial->value) b.default_overall_value = *default_trial->value;
  choose_plan(b, space, trials, ranking);
  return b;
}

void finish_ranges(BestTable& b) {
  b.ranges.clear();
  for (const auto& s : b.sizes) {
    if (!b.ranges.empty() && b.ranges.back().config == s.chosen_config) {
      b.ranges.back().sizes.push_back(s.bytes);
      continue;
    }
    if (!b.ranges.empty()) b.ranges.back().max_bytes = s.bytes - 1;
    SizeRange r;
    r.min_bytes = b.ranges.empty() ? 0 : s.bytes;
    r.sizes = {s.bytes};
    r.config = s.chosen_config;
    r.is_default = s.chosen_is_default;
    b.ranges.push_back(std::move(r));
  }
  if (!b.ranges.empty()) b.ranges.back().max_bytes = UINT64_MAX;
  b.export_config = with_job(b.default_config, b.plan.job);
}

Expected<std::string> emit(const std::string& format, const BestTable& best) {
  const EmitterInfo* info = EmitterRegistry::instance().find(format);
  if (!info) {
    return input_error("unknown export format '{}' (this build has: {})", format,
                       join_names(EmitterRegistry::instance().names()));
  }
  return info->emit(best);
}

std::string fingerprint_header(const Json& study) {
  const Json fp = study.is_object() ? study.value("fingerprint", Json::object()) : Json::object();
  if (!fp.is_object() || !fp.contains("id") || !fp["id"].is_string()) return "";
  std::string out = fmt::format("# acceltune fingerprint: {}\n", fp["id"].get<std::string>());
  if (fp.contains("loader_fields") && fp["loader_fields"].is_object()) {
    out += fmt::format("# acceltune fingerprint_fields: {}\n", fp["loader_fields"].dump());
  }
  return out;
}

std::map<uint64_t, Delivered> delivered_sizes(const BestTable& best) {
  std::map<uint64_t, Delivered> out;
  for (const auto& s : best.sizes) {
    if (s.delivered) out[s.bytes] = *s.delivered;
  }
  return out;
}

std::string delivered_range_text(const std::map<uint64_t, Delivered>& sizes) {
  const std::pair<const uint64_t, Delivered>*top = nullptr, *worst = nullptr;
  std::string slower;
  for (const auto& kv : sizes) {
    if (!top || kv.second.ratio > top->second.ratio) top = &kv;
    if (!worst || kv.second.ratio < worst->second.ratio) worst = &kv;
    if (kv.second.slower) slower += (slower.empty() ? "" : ", ") + format_bytes(kv.first);
  }
  if (!top) return "";
  const auto figure = [](const std::pair<const uint64_t, Delivered>& kv) {
    return fmt::format("{} at {}", gain_interval_text(kv.second.ratio, kv.second.ci_low, kv.second.ci_high),
                       format_bytes(kv.first));
  };
  return fmt::format("{}{}{}", figure(*top), worst == top ? "" : ", worst " + figure(*worst),
                     slower.empty() ? "" : "; slower at " + slower);
}

namespace {

// What proves the plan, over all its sizes: the delivered verdict with its best and worst size, or
// why nothing was delivered; then the certified figures.
std::string verdict_header(const BestTable& best) {
  std::string out;
  if (best.delivery.state == "measured") {
    out += fmt::format("# delivered (a plain job, {} rounds): {}{}\n", best.delivery.rounds,
                       best.delivery.verdict.empty() ? std::string("no verdict") : "verdict '" + best.delivery.verdict + "'",
                       best.delivery.verdict_why.empty() ? "" : ": " + best.delivery.verdict_why);
    const std::string range = delivered_range_text(delivered_sizes(best));
    if (!range.empty()) out += "# delivered per size: " + range + "\n";
  } else if (!best.delivery.why.empty()) {
    out += "# not verified: " + best.delivery.why + "\n";
  }
  const std::string certified = certified_range_text(best);
  if (!certified.empty()) out += "# certified (inside acceltune): " + certified + "\n";
  return out;
}

}  // namespace

ExportedFigure exported_figure(const BestTable& best, const SizeBest& s) {
  ExportedFigure f;
  f.config = s.chosen_config.empty() ? s.best_config : s.chosen_config;
  const bool is_default = f.config == best.default_config;
  if (best.certified && s.certified && s.certified_trial) {
    const Candidate* w = nullptr;
    const Candidate* same = nullptr;  // a certified candidate with the exported config
    for (const auto& c : s.candidates) {
      if (c.trial == *s.certified_trial) w = &c;
      if (c.config == f.config && !same) same = &c;
    }
    const bool own = s.certified_rounds > 0;
    const double cv = own ? s.certified_value : w ? w->value : NAN;
    const double dv = own ? s.certified_default_value : w ? w->default_value : NAN;
    if (std::isfinite(dv)) f.default_value = dv;
    if (is_default) {
      f.value = f.default_value;
      f.what = "the default's certified median";
    } else if (*s.certified_trial < 0 || (w && w->config == f.config) || (!w && s.significant)) {
      if (std::isfinite(cv)) f.value = cv;
      if (*s.certified_trial >= 0) f.trial = *s.certified_trial;
      f.what = "certified medians";
    } else if (same) {
      f.value = same->value;
      f.default_value = same->default_value;
      f.trial = same->trial;
      f.what = "its certification candidate's medians";
    } else {
      f.what = "not measured in certification (the plan's job-wide part chose it)";
    }
    return f;
  }
  if (s.default_value) f.default_value = *s.default_value;
  const bool single = best.recommended_by != "posterior-mean";
  if (is_default) {
    f.value = f.default_value;
    f.what = "the default's median in the search";
  } else if (s.best_trial && f.config == s.best_config) {
    f.value = s.best_value;
    f.trial = *s.best_trial;
    f.what = single ? "the search's best single measurement" : "the search's median";
  } else {
    f.what = "not measured on its own (the plan's job-wide part chose it)";
  }
  return f;
}

std::string certified_range_text(const BestTable& best, bool as_planned) {
  const SizeBest *top = nullptr, *worst = nullptr;
  for (const auto& s : best.sizes) {
    if (!s.certified || !s.certified_ratio) continue;
    if (as_planned && s.chosen_is_default && best.plan.job_is_default) continue;
    if (!worst || *s.certified_ratio < *worst->certified_ratio) worst = &s;
    if (!s.significant || (as_planned && s.chosen_is_default)) continue;
    if (!top || *s.certified_ratio > *top->certified_ratio) top = &s;
  }
  if (!top) return "";
  const auto figure = [](const SizeBest& s) {
    return fmt::format("{} at {}", gain_interval_text(*s.certified_ratio, s.ci_low.value_or(0), s.ci_high.value_or(INFINITY)),
                       format_bytes(s.bytes));
  };
  return figure(*top) + (!worst || worst == top ? "" : ", worst " + figure(*worst));
}

std::string export_header(const BestTable& best) {
  std::string out = fmt::format("# acceltune: space {}, kernel {}, {} trials{}\n", best.space, best.kernel, best.trials,
                                best.certified ? ", gains certified against the default" : "");
  const std::string fp = fingerprint_header(best.study);
  out += fp.empty() ? "# no fingerprint: exported without its study record\n" : fp;
  const bool all_default = std::all_of(best.ranges.begin(), best.ranges.end(),
                                       [&](const SizeRange& r) { return r.config == best.default_config; });
  if (best.export_config == best.default_config && all_default) {
    out += "# no significant gain over the library default\n";
  }
  return out + verdict_lines(best);
}

std::string verdict_lines(const BestTable& best) {
  std::string out = verdict_header(best);
  for (const auto& n : best.plan.notes) out += "# plan: " + n + "\n";
  return out;
}

}  // namespace acceltune
