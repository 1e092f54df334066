// Export formats that need nothing but the best-per-size table: json and env.
#include "tuner/best.hpp"

namespace acceltune {
namespace {

Expected<std::string> emit_json(const BestTable& best) { return best.to_json().dump(2) + "\n"; }

std::string scalar_text(const Json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// KEY=VALUE lines, also valid as an NCCL_CONF_FILE. An environment holds one value per
// variable, so this is the config chosen for the most sizes; comment lines give the ranges
// whose choice differs.
Expected<std::string> emit_env(const BestTable& best) {
  if (best.trials_ok == 0) {
    return runtime_error("space {}: no trial measured ok, so there is no config to export", best.space);
  }
  std::string out = export_header(best);
  if (best.env.empty()) {
    out += "# no param of this space is applied through an environment variable\n";
    return out;
  }
  for (const auto& [param, var] : best.env) {
    if (!best.export_config.contains(param)) continue;
    if (unsets_env(best.export_config[param])) {
      out += fmt::format("# {} is left to the library (unset)\n", var);
      continue;
    }
    out += fmt::format("{}={}\n", var, scalar_text(best.export_config[param]));
  }
  for (const auto& r : best.ranges) {
    std::string diff;
    for (const auto& [param, var] : best.env) {
      if (r.config.contains(param) && best.export_config.contains(param) && r.config[param] != best.export_config[param]) {
        diff += fmt::format(" {}={}", var, scalar_text(r.config[param]));
      }
    }
    if (!diff.empty()) {
      out += fmt::format("# bytes {}..{} choose:{}\n", r.min_bytes,
                         r.max_bytes == UINT64_MAX ? std::string("max") : std::to_string(r.max_bytes), diff);
    }
  }
  return out;
}

}  // namespace

ACCELTUNE_REGISTER(EmitterInfo, "json", (EmitterInfo{"the best-per-size table as JSON", emit_json}))
ACCELTUNE_REGISTER(EmitterInfo, "env",
                   (EmitterInfo{"KEY=VALUE lines of the env-bound params (also an NCCL_CONF_FILE)", emit_env}))

}  // namespace acceltune
