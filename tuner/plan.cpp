// The definitions behind tuner/plan.hpp: export plans.
#include "tuner/plan.hpp"

#include "tuner/family.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "tuner/atomic_file.hpp"

namespace acceltune {

namespace {

std::string value_text(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// The space definition's params as stored in study.json, by name.
std::map<std::string, Json> study_params(const Json& study) {
  std::map<std::string, Json> out;
  if (!study.is_object() || !study.contains("space") || !study["space"].is_object()) return out;
  for (const auto& p : study["space"].value("params", Json::array())) {
    if (p.is_object() && p.contains("name") && p["name"].is_string()) out[p["name"].get<std::string>()] = p;
  }
  return out;
}

}  // namespace

const char* to_string(Scope s) {
  switch (s) {
    case Scope::per_size: return "per-size";
    case Scope::job: return "job";
    case Scope::application: return "application";
  }
  return "?";
}

std::map<std::string, Scope> param_scopes(const std::string& kernel, const Json& default_config,
                                          const std::map<std::string, std::string>& env) {
  std::map<std::string, Scope> out;
  if (!default_config.is_object()) return out;
  for (const auto& [name, v] : default_config.items()) {
    const auto e = env.find(name);
    const ParamRef ref{kernel, name, e == env.end() ? "" : e->second};
    Scope scope = Scope::application;
    for (const auto& [format, info] : EmitterRegistry::instance().entries()) {
      if (!info.carries) continue;
      const auto s = info.carries(ref);
      if (s == Scope::per_size) scope = Scope::per_size;
      if (s == Scope::job && scope == Scope::application) scope = Scope::job;
    }
    out[name] = scope;
  }
  return out;
}

Json job_part(const Json& config, const std::map<std::string, Scope>& scopes) {
  Json j = Json::object();
  for (const auto& [name, scope] : scopes) {
    if (scope == Scope::job && config.contains(name)) j[name] = config[name];
  }
  return j;
}

Json with_job(const Json& default_config, const Json& job) {
  Json c = default_config;
  for (const auto& [k, v] : job.items()) c[k] = v;
  return c;
}

namespace {

// Whether the space has params only the application sets beside params a job loads.
bool mixes_application_params(const std::map<std::string, Scope>& scopes) {
  bool application = false, loaded = false;
  for (const auto& [name, scope] : scopes) (scope == Scope::application ? application : loaded) = true;
  return application && loaded;
}

}  // namespace

bool plan_may_carry(const Json& config, const Json& default_config, const std::map<std::string, Scope>& scopes) {
  if (!mixes_application_params(scopes)) return true;
  for (const auto& [name, scope] : scopes) {
    if (scope != Scope::application || !config.contains(name)) continue;
    if (!default_config.contains(name) || config[name] != default_config[name]) return false;
  }
  return true;
}

std::string application_advice(const Json& config, const Json& default_config,
                               const std::map<std::string, Scope>& scopes) {
  if (!mixes_application_params(scopes)) return "";
  std::string out;
  for (const auto& [name, scope] : scopes) {
    if (scope != Scope::application || !config.contains(name)) continue;
    if (default_config.contains(name) && config[name] == default_config[name]) continue;
    const Json& v = config[name];
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", name, v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

std::vector<std::string> application_advice_lines(const BestTable& best) {
  std::vector<std::string> out;
  for (const auto& s : best.sizes) {
    const std::string advice = application_advice(s.best_config, best.default_config, best.plan.scopes);
    if (advice.empty()) continue;
    out.push_back(fmt::format("at {}: {}{}", format_bytes(s.bytes), advice,
                              s.ratio ? fmt::format(" ({:.2f}x the defaults, observed in the search)", *s.ratio) : ""));
  }
  return out;
}

std::vector<Json> joint_candidates(const Space& space, const std::vector<Trial>& trials,
                                   const std::vector<uint64_t>& sizes, const std::map<std::string, Scope>& scopes) {
  const Json default_job = job_part(space.config_to_json(space.default_config()), scopes);
  const std::string default_key = space.key(space.default_config());
  std::map<uint64_t, double> default_value;
  for (const auto& t : trials) {
    if (t.key != default_key || t.effort < 1.0) continue;
    for (uint64_t b : sizes) {
      const Measurement* m = t.at_size(b);
      if (m && m->state == State::ok && m->value > 0 && !default_value.count(b)) default_value[b] = m->value;
    }
  }
  // Per job-wide assignment, its best value at each size.
  std::map<std::string, std::pair<Json, std::map<uint64_t, double>>> by_job;
  for (const auto& t : trials) {
    if (t.effort < 1.0) continue;
    const Json job = job_part(space.config_to_json(t.config), scopes);
    auto& entry = by_job[job.dump()];
    entry.first = job;
    for (uint64_t b : sizes) {
      const Measurement* m = t.at_size(b);
      if (!m || m->state != State::ok) continue;
      auto [it, fresh] = entry.second.emplace(b, m->value);
      if (!fresh) it->second = std::max(it->second, m->value);
    }
  }
  std::vector<std::pair<double, Json>> scored;
  bool default_in = false;
  for (const auto& [key, entry] : by_job) {
    double log_sum = 0;
    bool every_size = default_value.size() == sizes.size();
    for (uint64_t b : sizes) {
      const auto it = entry.second.find(b);
      if (it == entry.second.end() || !every_size) {
        every_size = false;
        break;
      }
      log_sum += std::log(it->second / default_value[b]);
    }
    if (!every_size && entry.first != default_job) continue;
    default_in = default_in || entry.first == default_job;
    scored.emplace_back(every_size ? log_sum / static_cast<double>(sizes.size()) : 0.0, entry.first);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<Json> out;
  for (auto& [score, job] : scored) out.push_back(std::move(job));
  if (!default_in) out.push_back(default_job);
  return out;
}

std::vector<const Trial*> trials_with_job(const Space& space, const std::vector<Trial>& trials, uint64_t bytes,
                                          const Json& job, const std::map<std::string, Scope>& scopes,
                                          const Ranking* ranking) {
  std::vector<const Trial*> ok;
  const Json defaults = space.config_to_json(space.default_config());
  for (const auto& t : trials) {
    const Measurement* m = t.at_size(bytes);
    if (!m || m->state != State::ok || t.effort < 1.0) continue;
    const Json config = space.config_to_json(t.config);
    if (job_part(config, scopes) != job || !plan_may_carry(config, defaults, scopes)) continue;
    ok.push_back(&t);
  }
  std::map<int64_t, size_t> rank;  // trial number -> position in the noise-aware order
  if (ranking) {
    if (auto it = ranking->find(bytes); it != ranking->end()) {
      for (size_t k = 0; k < it->second.size(); ++k) rank.emplace(it->second[k].trial, k);
    }
  }
  std::stable_sort(ok.begin(), ok.end(), [&](const Trial* a, const Trial* b) {
    if (!rank.empty()) {
      const auto ra = rank.find(a->number), rb = rank.find(b->number);
      const size_t pa = ra == rank.end() ? SIZE_MAX : ra->second, pb = rb == rank.end() ? SIZE_MAX : rb->second;
      if (pa != pb) return pa < pb;
    }
    return a->at_size(bytes)->value > b->at_size(bytes)->value;
  });
  return ok;
}

void choose_plan(BestTable& best, const Space& space, const std::vector<Trial>& trials, const Ranking* ranking) {
  best.plan = Plan{};
  best.plan.scopes = param_scopes(best.kernel, best.default_config, best.env);
  const Json default_job = job_part(best.default_config, best.plan.scopes);
  std::vector<uint64_t> sizes;
  for (const auto& s : best.sizes) sizes.push_back(s.bytes);
  const std::vector<Json> jobs = joint_candidates(space, trials, sizes, best.plan.scopes);
  best.plan.job = jobs.empty() ? default_job : jobs.front();
  best.plan.job_is_default = best.plan.job == default_job;
  for (auto& s : best.sizes) {
    const auto ts = trials_with_job(space, trials, s.bytes, best.plan.job, best.plan.scopes, ranking);
    s.chosen_config = ts.empty() ? with_job(best.default_config, best.plan.job) : space.config_to_json(ts.front()->config);
    s.chosen_is_default = s.chosen_config == best.default_config;
  }
  finish_ranges(best);
}

namespace {

// Why a job across paths must not get `var=value` of this study's plan; empty when it may.
std::string held_back_why(const BestTable& best, const std::string& var, const std::string& value) {
  const FamilyInfo* f = family_of_kernel(best.kernel);
  if (!f) return "";
  if (f->single_node_only) {
    std::string why = f->single_node_only(var, value);
    if (!why.empty()) return why;
  }
  if (!f->one_env_for_all_paths) return "";
  const bool its_var = std::any_of(f->env_prefixes.begin(), f->env_prefixes.end(),
                                   [&](const std::string& p) { return var.rfind(p, 0) == 0; });
  std::string others;
  for (const auto& space : f->spaces) {
    if (space != best.space) others += (others.empty() ? "" : ", ") + space;
  }
  if (!its_var || others.empty()) return "";
  return fmt::format("the {} family's jobs read one environment for every path: this study measured {}'s path only, and {} governs "
                     "{}'s too; the bring-up bundle measures every path, or uncomment it for jobs that stay on {}'s "
                     "path",
                     family_name_of_kernel(best.kernel), best.space, var, others, best.space);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> own_path_env(const PlanEnv& pe) {
  std::vector<std::pair<std::string, std::string>> out = pe.vars;
  for (const auto& h : pe.held) out.emplace_back(h.var, h.value);
  return out;
}

Expected<PlanEnv> plan_env(const BestTable& best) {
  PlanEnv out;
  const std::map<std::string, Scope> scopes =
      best.plan.scopes.empty() ? param_scopes(best.kernel, best.default_config, best.env) : best.plan.scopes;
  const std::map<std::string, Json> defs = study_params(best.study);
  const Json& job = best.export_config;
  std::map<std::string, std::string> needed;
  auto add_needs = [&](const std::string& param, const Json& v) {
    const auto d = defs.find(param);
    if (d == defs.end() || !d->second.contains("needs")) return;
    const Json& needs = d->second["needs"];
    const std::string text = value_text(v);
    if (!needs.contains(text)) return;
    for (const auto& [var, value] : needs[text].items()) needed[var] = value_text(value);
  };
  for (const auto& [param, var] : best.env) {
    const auto sc = scopes.find(param);
    if (sc == scopes.end() || sc->second != Scope::job || !job.contains(param)) continue;
    const Json& v = job[param];
    // A single-valued param is the space's pinned context (UCX_TLS=tcp): the job gets it too.
    const auto d = defs.find(param);
    const bool pinned = d != defs.end() && d->second.value("values", Json::array()).size() == 1;
    if (unsets_env(v) || (!pinned && best.default_config.contains(param) && best.default_config[param] == v)) {
      out.comments.push_back(fmt::format("{} is left to the library", var));
      continue;
    }
    out.vars.emplace_back(var, value_text(v));
    add_needs(param, v);
  }
  // Per-size values that need something (none of the shipped spaces has one, but a space may).
  for (const auto& r : best.ranges) {
    for (const auto& [param, scope] : scopes) {
      if (scope == Scope::per_size && r.config.contains(param)) add_needs(param, r.config[param]);
    }
  }
  for (const auto& [var, value] : needed) {
    const bool dup = std::any_of(out.vars.begin(), out.vars.end(), [&](const auto& kv) { return kv.first == var; });
    if (!dup) out.vars.emplace_back(var, value);
  }
  // The per-size files, switched on where some range chose other than the library's own.
  for (const auto& [format, info] : EmitterRegistry::instance().entries()) {
    if (!info.switch_on || info.plan_file.empty() || !info.carries) continue;
    bool used = false;
    for (const auto& [param, scope] : scopes) {
      if (scope != Scope::per_size) continue;
      const auto e = best.env.find(param);
      if (info.carries(ParamRef{best.kernel, param, e == best.env.end() ? "" : e->second}) != Scope::per_size) continue;
      for (const auto& r : best.ranges) {
        if (r.config.contains(param) && best.default_config.contains(param) &&
            r.config[param] != best.default_config[param]) {
          used = true;
        }
      }
    }
    if (!used) continue;
    if (best.dir.empty()) {
      return input_error("space {}: the plan chooses per size through a {} file, which lives in the study directory; "
                         "export from the study directory, not from a copy of its best.json",
                         best.space, format);
    }
    std::error_code ec;
    const std::string path = std::filesystem::absolute(std::filesystem::path(best.dir) / "plan" / info.plan_file, ec).string();
    for (auto& kv : info.switch_on(path)) out.vars.push_back(std::move(kv));
    out.files.emplace_back(format, path);
  }
  std::vector<std::pair<std::string, std::string>> kept;
  for (auto& [var, value] : out.vars) {
    std::string why = held_back_why(best, var, value);
    if (why.empty()) {
      kept.emplace_back(std::move(var), std::move(value));
    } else {
      out.held.push_back(HeldVar{var, value, std::move(why)});
    }
  }
  out.vars = std::move(kept);
  if (best.study.is_object() && best.study.contains("space") && best.study["space"].is_object()) {
    const std::string advice = best.study["space"].value("job_advice", "");
    if (!advice.empty()) out.comments.push_back("launcher advice: " + advice);
  }
  return out;
}

Status write_plan_files(const BestTable& best) {
  ACCELTUNE_TRY_ASSIGN(PlanEnv pe, plan_env(best));
  for (const auto& [format, path] : pe.files) {
    ACCELTUNE_TRY_ASSIGN(std::string text, emit(format, best));
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    {
      std::ifstream in(path, std::ios::binary);
      if (in) {
        const std::string now((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (now == text) continue;
      }
    }
    ACCELTUNE_TRY(write_file_atomically(path, text, {.what = fmt::format("the plan's {} file", format)}));
  }
  return {};
}

std::vector<std::pair<std::string, std::string>> pinned_env(const Json& study) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, p] : study_params(study)) {
    if (!p.contains("env") || !p["env"].is_string()) continue;
    const Json values = p.value("values", Json::array());
    if (values.size() != 1 || unsets_env(values[0])) continue;
    out.emplace_back(p["env"].get<std::string>(), value_text(values[0]));
  }
  return out;
}

}  // namespace acceltune
