// Export formats that need nothing but the best-per-size table: json and env.
#include "tuner/best.hpp"

namespace acceltune {
namespace {

Expected<std::string> emit_json(const BestTable& best) { return best.to_json().dump(2) + "\n"; }

std::string scalar_text(const Json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// KEY=VALUE lines, also valid as an NCCL_CONF_FILE. An environment holds one value per
// variable, so this is the config of the best trial over all sizes; lines starting with '#'
// record where the per-size bests disagree.
Expected<std::string> emit_env(const BestTable& best) {
  std::string out = fmt::format("# acceltune: space {}, kernel {}\n", best.space, best.kernel);
  if (!best.overall_trial) {
    return runtime_error("space {}: no trial measured ok, so there is no best config to export", best.space);
  }
  out += fmt::format("# best over all sizes: trial {} ({:.4g} {} geometric mean", *best.overall_trial,
                     best.overall_value, best.unit);
  if (best.default_overall_value && *best.default_overall_value > 0) {
    out += fmt::format(", {:.3f}x the default", best.overall_value / *best.default_overall_value);
  }
  out += ")\n";
  if (best.env.empty()) {
    out += "# no param of this space is applied through an environment variable\n";
    return out;
  }
  for (const auto& [param, var] : best.env) {
    if (!best.overall_config.contains(param)) continue;
    out += fmt::format("{}={}\n", var, scalar_text(best.overall_config[param]));
  }
  for (const auto& s : best.sizes) {
    if (!s.best_trial || *s.best_trial == *best.overall_trial) continue;
    std::string diff;
    for (const auto& [param, var] : best.env) {
      if (s.best_config.contains(param) && best.overall_config.contains(param) &&
          s.best_config[param] != best.overall_config[param]) {
        diff += fmt::format(" {}={}", var, scalar_text(s.best_config[param]));
      }
    }
    if (!diff.empty()) out += fmt::format("# at {} the best was trial {}:{}\n", format_bytes(s.bytes), *s.best_trial, diff);
  }
  return out;
}

}  // namespace

ACCELTUNE_REGISTER(EmitterInfo, "json", (EmitterInfo{"the best-per-size table as JSON", emit_json}))
ACCELTUNE_REGISTER(EmitterInfo, "env",
                   (EmitterInfo{"KEY=VALUE lines of the env-bound params (also an NCCL_CONF_FILE)", emit_env}))

}  // namespace acceltune
