// Export formats that need nothing but the best-per-size table: json and env.
#include "tuner/best.hpp"
#include "tuner/plan.hpp"

namespace acceltune {
namespace {

Expected<std::string> emit_json(const BestTable& best) { return best.to_json().dump(2) + "\n"; }

std::string scalar_text(const Json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// KEY=VALUE lines, also valid as an NCCL_CONF_FILE: the plan's job-wide variables, what its
// values need to run, and the switches of its per-size files (never a per-size param itself: Open
// MPI checks a forced algorithm before its rules file). Comment lines give the per-size choices.
Expected<std::string> emit_env(const BestTable& best) {
  if (best.trials_ok == 0) {
    return runtime_error("space {}: no trial measured ok, so there is no config to export", best.space);
  }
  std::string out = export_header(best);
  if (best.env.empty()) {
    out += "# no param of this space is applied through an environment variable\n";
    return out;
  }
  ACCELTUNE_TRY_ASSIGN(PlanEnv pe, plan_env(best));
  for (const auto& c : pe.comments) out += "# " + c + "\n";
  for (const auto& [var, value] : pe.vars) out += fmt::format("{}={}\n", var, value);
  for (const auto& h : pe.held) out += fmt::format("# held back: {}\n# {}={}\n", h.why, h.var, h.value);
  for (const auto& [format, path] : pe.files) out += fmt::format("# per-size choices: the {} file above\n", format);
  for (const auto& r : best.ranges) {
    std::string diff;
    for (const auto& [param, var] : best.env) {
      const auto sc = best.plan.scopes.find(param);
      if (sc == best.plan.scopes.end() || sc->second != Scope::per_size || !r.config.contains(param)) continue;
      if (best.default_config.contains(param) && r.config[param] == best.default_config[param]) continue;
      diff += fmt::format(" {}={}", param, scalar_text(r.config[param]));
    }
    if (!diff.empty()) {
      out += fmt::format("# bytes {}..{} choose:{}\n", r.min_bytes,
                         r.max_bytes == UINT64_MAX ? std::string("max") : std::to_string(r.max_bytes), diff);
    }
  }
  return out;
}

// Any env-bound param can be one variable for the whole job.
std::optional<Scope> env_carries(const ParamRef& p) {
  if (p.env.empty()) return std::nullopt;
  return Scope::job;
}

}  // namespace

ACCELTUNE_REGISTER(EmitterInfo, "json", (EmitterInfo{"the best-per-size table as JSON", emit_json, {}, {}, {}}))
ACCELTUNE_REGISTER(EmitterInfo, "env",
                   (EmitterInfo{"KEY=VALUE lines of the plan: job-wide variables and per-size files switched on "
                                "(also an NCCL_CONF_FILE)",
                                emit_env, env_carries, {}, {}}))

}  // namespace acceltune
