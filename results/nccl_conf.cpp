// Export format nccl-conf: a file for NCCL_CONF_FILE (or ~/.nccl.conf), NCCL_ lines only, with
// the machine's fingerprint in a header comment so the runtime loader (libacceltune) can refuse
// it on other hardware.
#include "tuner/best.hpp"
#include "tuner/plan.hpp"

namespace acceltune {
namespace {

// NCCL reads NCCL_ALGO=auto as an algorithm name; a value meaning "NCCL decides" is left out.
bool nccl_decides(const Json& v) {
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
  // The plan's NCCL_* variables, the tuner plugin's switch among them where the plan chooses per
  // size (NCCL reads NCCL_CONF_FILE into its environment, so the plugin finds its table).
  ACCELTUNE_TRY_ASSIGN(PlanEnv pe, plan_env(best));
  for (const auto& c : pe.comments) {
    if (c.rfind("NCCL_", 0) == 0) out += "# " + c + "\n";
  }
  for (const auto& [var, v] : pe.vars) {
    if (var.rfind("NCCL_", 0) != 0) continue;
    if (nccl_decides(Json(v))) {
      out += fmt::format("# {}: NCCL's own choice\n", var);
      continue;
    }
    out += fmt::format("{}={}\n", var, v);
  }
  return out;
}

}  // namespace

ACCELTUNE_REGISTER(EmitterInfo, "nccl-conf",
                   (EmitterInfo{"NCCL_ lines for NCCL_CONF_FILE, with the hardware fingerprint", emit_nccl_conf, {}, {}, {}}))

}  // namespace acceltune
