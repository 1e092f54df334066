// Export format nccl-conf: a file for NCCL_CONF_FILE (or ~/.nccl.conf), NCCL_ lines only, with
// the machine's fingerprint in a header comment so the runtime loader (libacceltune) can refuse
// it on other hardware.
#include "tuner/best.hpp"

namespace acceltune {
namespace {

std::string value_text(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// NCCL reads NCCL_ALGO=auto as an algorithm name; a value meaning "NCCL decides" is left out.
bool leaves_choice(const Json& v) {
  if (!v.is_string()) return false;
  std::string s;
  for (char c : v.get<std::string>()) s += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return s.empty() || s == "auto" || s == "default";
}

Expected<std::string> emit_nccl_conf(const BestTable& best) {
  if (best.trials_ok == 0) {
    return runtime_error("space {}: no trial measured ok, so there is no config to export", best.space);
  }
  std::map<std::string, std::string> nccl;  // param -> variable
  for (const auto& [param, var] : best.env) {
    if (var.rfind("NCCL_", 0) == 0) nccl[param] = var;
  }
  if (nccl.empty()) {
    return input_error("space {}: no param sets an NCCL_* variable; use --format env for this study", best.space);
  }
  std::string out = export_header(best);
  for (const auto& [param, var] : nccl) {
    if (!best.export_config.contains(param)) continue;
    const Json& v = best.export_config[param];
    if (leaves_choice(v)) {
      out += fmt::format("# {}: NCCL's own choice\n", var);
      continue;
    }
    out += fmt::format("{}={}\n", var, value_text(v));
  }
  // One value per variable: the ranges that chose otherwise are noted, for the tuner plugin.
  for (const auto& r : best.ranges) {
    std::string diff;
    for (const auto& [param, var] : nccl) {
      if (r.config.contains(param) && best.export_config.contains(param) &&
          r.config[param] != best.export_config[param]) {
        diff += fmt::format(" {}={}", var, value_text(r.config[param]));
      }
    }
    if (!diff.empty()) {
      out += fmt::format("# bytes {}..{} choose:{} (per-size choices: --format nccl-tuner)\n", r.min_bytes,
                         r.max_bytes == UINT64_MAX ? std::string("max") : std::to_string(r.max_bytes), diff);
    }
  }
  return out;
}

}  // namespace

ACCELTUNE_REGISTER(EmitterInfo, "nccl-conf",
                   (EmitterInfo{"NCCL_ lines for NCCL_CONF_FILE, with the hardware fingerprint", emit_nccl_conf}))

}  // namespace acceltune
