// Export ucx-env: the UCX_* variables of the chosen config as KEY=VALUE lines, for
// `acceltune exec --config FILE` and for a shell (`set -a; . FILE; set +a`). UCX reads these once
// per process at ucp_init, so one value per variable: the config chosen for the most sizes, with
// comment lines for the size ranges whose choice differs.
#include "tuner/best.hpp"
#include "tuner/plan.hpp"

namespace acceltune {
namespace {

// A value a POSIX shell reads back unchanged without quotes, so the same file serves both.
bool shell_plain(const std::string& s) {
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == ',' || c == '.' || c == ':' || c == '-' || c == '+' || c == '/' || c == '^';
    if (!ok) return false;
  }
  return true;
}

Expected<std::string> emit_ucx_env(const BestTable& best) {
  if (best.trials_ok == 0) {
    return runtime_error("space {}: no trial measured ok, so there is no config to export", best.space);
  }
  std::vector<std::pair<std::string, std::string>> vars;  // param name, variable
  for (const auto& [param, var] : best.env) {
    if (var.rfind("UCX_", 0) == 0) vars.emplace_back(param, var);
  }
  if (vars.empty()) {
    return input_error("space {}: no param sets a UCX_* variable; use --format env for this study", best.space);
  }
  std::string out = export_header(best);
  out += "# use: acceltune exec --config THIS_FILE -- COMMAND, or in a shell: set -a; . THIS_FILE; set +a\n";
  // The plan's UCX_* variables: UCX reads them once per process, so one value for the job.
  ACCELTUNE_TRY_ASSIGN(PlanEnv pe, plan_env(best));
  for (const auto& [var, v] : pe.vars) {
    if (var.rfind("UCX_", 0) != 0) continue;
    if (!shell_plain(v)) {
      return runtime_error("space {}: the value '{}' of {} needs shell quoting, which acceltune exec would keep; "
                           "use --format env", best.space, v, var);
    }
    out += fmt::format("{}={}\n", var, v);
  }
  for (const auto& h : pe.held) {
    if (h.var.rfind("UCX_", 0) == 0) out += fmt::format("# held back: {}\n# {}={}\n", h.why, h.var, h.value);
  }
  for (const auto& c : pe.comments) {
    if (c.rfind("UCX_", 0) == 0) out += "# " + c + "\n";
  }
  return out;
}

}  // namespace

ACCELTUNE_REGISTER(EmitterInfo, "ucx-env",
                   (EmitterInfo{"KEY=VALUE lines of the UCX_* variables (acceltune exec, or a shell with set -a)",
                                emit_ucx_env, {}, {}, {}}))

}  // namespace acceltune
