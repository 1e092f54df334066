// lint's env checks (env, ucx-env and a bundle's acceltune.env): lines tuner/env_file.hpp's reader
// refuses, each UCX_* variable against the installed UCX (results/lint_ucx.cpp), the switches a
// per-size file needs to be read at all (Open MPI reads coll_tuned_dynamic_rules_filename only
// with coll_tuned_use_dynamic_rules=1), files named that are not there, variables set twice, and a
// value one path's study chose that governs another path too (tools/bringup/merge.cpp's
// leave_out_unmeasured_paths: a family with one environment for all its paths, such as UCX, ships
// a value only when every path was measured under it).
#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>

#include "results/lint.hpp"
#include "tuner/best.hpp"
#include "tuner/env_file.hpp"
#include "tuner/family.hpp"

namespace fs = std::filesystem;

namespace acceltune {
namespace {

struct LintEnvLine {
  int line = 0;
  std::string var, value;
};

struct LintParsedEnv {
  std::vector<LintEnvLine> vars;
  std::map<int, std::string> comments;  // line: the whole '#' line
};

// The project's reader, line by line so that every bad line is a finding with its number: a
// line the reader refuses is reported and left out, and the rest read again.
LintParsedEnv parse_lines(const std::string& path, const std::string& text, LintReport& r) {
  std::vector<std::string> lines;
  for (size_t pos = 0; pos <= text.size();) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    lines.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  LintParsedEnv out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const int n = static_cast<int>(i) + 1;
    auto parsed = parse_env_text(lines[i], path);
    if (!parsed) {
      std::string why = parsed.error().message;
      const size_t colon = why.find(": ", path.size());  // "PATH:1: what"
      if (colon != std::string::npos) why = why.substr(colon + 2);
      r.findings.push_back({path, n, why, "KEY=VALUE with KEY a variable name (letters, digits, '_'), or '#' before a comment"});
      continue;
    }
    for (auto& [var, value] : parsed->vars) out.vars.push_back({n, var, value});
    for (auto& [k, c] : parsed->comments) out.comments[n] = c;
  }
  return out;
}

// The comment block right above a line.
std::string comment_above(const LintParsedEnv& env, int line) {
  std::string out;
  for (int l = line - 1; env.comments.count(l); --l) out = env.comments.at(l) + "\n" + out;
  return out;
}

bool names_study(const std::string& comment, const std::string& space) {
  const std::regex re("(from |; )" + space + "( |\\(|;|$)");
  return std::regex_search(comment, re);
}

// A value a study of one path chose that, unprefixed, governs the family's other paths too.
void lint_paths(const std::string& path, const LintParsedEnv& env, const UcxFacts* ucx, LintReport& r) {
  for (const auto& v : env.vars) {
    const std::string comment = comment_above(env, v.line);
    if (comment.find("from ") == std::string::npos) continue;
    for (const auto& [name, f] : families_in_order()) {
      if (!f->one_env_for_all_paths) continue;
      if (std::none_of(f->env_prefixes.begin(), f->env_prefixes.end(),
                       [&](const std::string& p) { return v.var.rfind(p, 0) == 0; })) {
        continue;
      }
      std::vector<std::string> named, other;
      for (const auto& s : f->spaces) (names_study(comment, s) ? named : other).push_back(s);
      if (named.empty() || other.empty()) continue;
      // A transport-prefixed variable governs its transport only.
      std::vector<std::string> prefixed;
      const std::string field = v.var.substr(v.var.find('_') + 1);
      bool is_prefixed = false;
      for (const auto& t : ucx ? ucx->transport_prefixes : std::set<std::string>{}) {
        if (field.rfind(t, 0) == 0 && ucx->names.count(v.var)) is_prefixed = true;
        if (ucx->names.count("UCX_" + t + field)) prefixed.push_back("UCX_" + t + field);
      }
      if (is_prefixed) continue;
      const std::string named_text = fmt::format("{}", fmt::join(named, ", "));
      const std::string other_text = fmt::format("{}", fmt::join(other, ", "));
      const std::string forms =
          !ucx ? std::string("a transport-prefixed name where UCX has one (ucx_info -c lists them)")
          : prefixed.empty()
              ? fmt::format("the line commented out (# {}={}) for jobs that leave {}'s path (the installed UCX has no "
                            "per-transport form of {})",
                            v.var, v.value, named_text, v.var)
              : fmt::format("a transport-prefixed name ({})",
                            fmt::join(prefixed.begin(), prefixed.begin() + std::min<size_t>(3, prefixed.size()), ", "));
      r.findings.push_back(
          {path, v.line,
           fmt::format("{}={} was set by {} but also governs {}'s path (one {} environment for every path), which did "
                       "not measure it",
                       v.var, v.value, named_text, other_text, name),
           fmt::format("{}, or measure both paths (acceltune bringup runs {} and {})", forms, named_text, other_text)});
    }
  }
}

void lint_switches(const std::string& path, const LintParsedEnv& env, LintReport& r) {
  std::map<std::string, const LintEnvLine*> last;
  for (const auto& v : env.vars) {
    if (const auto it = last.find(v.var); it != last.end() && it->second->value != v.value) {
      r.findings.push_back({path, v.line,
                            fmt::format("{} is set again (line {} set {}); the last line wins", v.var,
                                        it->second->line, it->second->value),
                            fmt::format("one {} line", v.var)});
    }
    last[v.var] = &v;
  }
  const auto rules = last.find("OMPI_MCA_coll_tuned_dynamic_rules_filename");
  if (rules != last.end()) {
    const auto use = last.find("OMPI_MCA_coll_tuned_use_dynamic_rules");
    const std::string on = use == last.end() ? "" : use->second->value;
    if (on != "1" && on != "true" && on != "yes") {
      r.findings.push_back({path, use == last.end() ? rules->second->line : use->second->line,
                            "Open MPI reads the rules file " + rules->second->value +
                                " only with coll_tuned_use_dynamic_rules on, which " +
                                (use == last.end() ? "this file does not set" : "this file sets to '" + on + "'"),
                            "OMPI_MCA_coll_tuned_use_dynamic_rules=1"});
    }
  }
  // Files named (a bundle's are read beside it, as job.sh and the loader do).
  std::vector<std::pair<std::string, std::string>> vars;
  for (const auto& v : env.vars) vars.emplace_back(v.var, v.value);
  const fs::path folder = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  if (is_bundle_dir(folder)) relocate_bundle_files(vars, folder);
  // The variables that name a per-size file: those the export formats switch their files on with.
  std::set<std::string> file_vars = {"ACCELTUNE_NCCL_TUNER_TABLE", "NCCL_CONF_FILE"};
  for (const auto& format : EmitterRegistry::instance().names()) {
    const EmitterInfo* e = EmitterRegistry::instance().find(format);
    if (!e || !e->switch_on) continue;
    for (const auto& [var, value] : e->switch_on("/FILE")) {
      if (value == "/FILE") file_vars.insert(var);
    }
  }
  std::error_code ec;
  for (size_t i = 0; i < vars.size(); ++i) {
    const auto& [var, value] = vars[i];
    if (!file_vars.count(var)) continue;
    if (value.empty() || value[0] != '/' || fs::exists(value, ec)) continue;
    r.findings.push_back({path, env.vars[i].line, fmt::format("{} names {}, which does not exist", var, value),
                          fmt::format("{}= with the path of the file (or remove the line)", var)});
  }
}

}  // namespace

void lint_env_text(const std::string& path, const std::string& text, bool ucx_only, LintContext& ctx, LintReport& r) {
  const LintParsedEnv env = parse_lines(path, text, r);
  std::string why;
  const bool any_ucx =
      std::any_of(env.vars.begin(), env.vars.end(), [](const LintEnvLine& v) { return v.var.rfind("UCX_", 0) == 0; });
  const UcxFacts* ucx = any_ucx ? ctx.ucx(why) : nullptr;
  if (any_ucx && !ucx) r.notes.push_back(fmt::format("{}: UCX check skipped: {}", path, why));
  for (const auto& v : env.vars) {
    if (v.var.rfind("UCX_", 0) == 0) {
      if (ucx) lint_ucx_variable(path, v.line, v.var, v.value, *ucx, r);
    } else if (ucx_only) {
      r.findings.push_back({path, v.line, fmt::format("{} is no UCX variable, and a ucx-env file holds only UCX_* lines", v.var),
                            "it in an env file (acceltune export --format env), or remove it here"});
    }
  }
  lint_switches(path, env, r);
  lint_paths(path, env, ucx, r);
}

}  // namespace acceltune
