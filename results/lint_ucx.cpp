// lint's UCX checks: what the installed UCX reads (`ucx_info -cf`: every field with its full name
// and syntax, per component and transport; `ucx_info -d`: the transports here), a UCX_* variable's
// name against it (UCX's naming rule: a transport's field is read as UCX_<TRANSPORT>_<FIELD> for
// that transport and as UCX_<FIELD> for all of them), its value against the field's syntax where
// the domain is clear, and UCX_TLS's transports.
#include <cctype>
#include <regex>
#include <sstream>

#include "results/lint.hpp"

namespace acceltune {
namespace {

// UCX's own transport aliases (ucx_info -cf's UCX_TLS doc): accepted even where the transport
// itself is absent, since a job may run on another node.
const std::set<std::string>& tls_aliases() {
  static const std::set<std::string> a = {
      "all",      "sm",     "shm",      "mm",      "posix",    "sysv",     "xpmem",   "cma",    "knem",
      "self",     "tcp",    "ib",       "rc",      "rc_v",     "rc_x",     "rc_verbs", "rc_mlx5", "ud",
      "ud_v",     "ud_x",   "ud_verbs", "ud_mlx5", "dc",       "dc_x",     "dc_mlx5", "cuda",   "cuda_copy",
      "cuda_ipc", "gdr_copy", "rocm",   "rocm_copy", "rocm_ipc", "ugni",   "ugni_rdma", "ugni_udt", "ugni_smsg"};
  return a;
}

std::string ucx_upper(std::string s) {
  for (char& c : s) c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> split_on(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, sep);) out.push_back(item);
  return out;
}

// ucx_info -cf: sections ("# tcp transport configuration"), each field's "# syntax:" and its line.
UcxFacts parse_ucx_config(const std::string& text) {
  static const std::regex transport_section(R"(^# ([A-Za-z0-9_-]+) (transport|memory domain|connection manager) configuration$)");
  static const std::regex other_section(R"(^# .* configuration$)");
  static const std::regex field(R"(^(UCX_[A-Z0-9_]+)=)");
  UcxFacts f;
  std::string prefix, syntax;
  std::istringstream in(text);
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# UCX library configuration file", 0) == 0) continue;
    if (std::regex_match(line, m, transport_section)) {
      prefix = ucx_upper(m[1].str()) + "_";
      f.transport_prefixes.insert(prefix);
    } else if (std::regex_match(line, other_section)) {
      prefix.clear();
    } else if (line.rfind("# syntax:", 0) == 0) {
      syntax = line.substr(9);
      syntax.erase(0, syntax.find_first_not_of(' '));
    } else if (std::regex_search(line, m, field)) {
      const std::string name = m[1].str();
      f.names.insert(name);
      f.syntax.emplace(name, syntax);
      // A transport's field is also read unprefixed, for every transport at once.
      const std::string full_prefix = "UCX_" + prefix;
      if (!prefix.empty() && name.rfind(full_prefix, 0) == 0) {
        const std::string all = "UCX_" + name.substr(full_prefix.size());
        f.names.insert(all);
        f.syntax.emplace(all, syntax);
      }
      syntax.clear();
    }
  }
  return f;
}

bool matches(const std::string& v, const char* pattern) {
  return std::regex_match(v, std::regex(pattern, std::regex::icase));
}

// "" when `value` fits the syntax (or the syntax is not one lint checks), else what it takes.
std::string value_problem(const std::string& syntax, const std::string& value) {
  struct Rule {
    const char* starts;
    const char* pattern;
    const char* takes;
  };
  static const Rule rules[] = {
      {"memory units", R"((inf|auto|\d+(\.\d+)?\s*([kmgt]b?|b)?))", "a size (8K, 65536, 1M), inf or auto"},
      {"unsigned long: <number>, \"inf\"", R"((inf|auto|\d+))", "a number, inf or auto"},
      {"unsigned integer", R"(\d+)", "a non-negative integer"},
      {"unsigned long", R"(\d+)", "a non-negative integer"},
      {"integer", R"(-?\d+)", "an integer"},
      {"floating point number", R"(-?\d+(\.\d*)?(e-?\d+)?)", "a number"},
      {"<y|n>", R"((y|n|yes|no|1|0))", "y or n"},
      {"<yes|no|try>", R"((y|n|yes|no|try|1|0))", "yes, no or try"},
      {"<yes|no|try|auto>", R"((y|n|yes|no|try|auto|1|0))", "yes, no, try or auto"},
      {"<on|off|auto>", R"((on|off|auto|y|n|yes|no|1|0))", "on, off or auto"},
      {"time value: <number>[s|us|ms|ns], \"inf\"", R"((inf|auto|\d+(\.\d+)?(s|ms|us|ns|m)?))",
       "a time (10ms, 1s), inf or auto"},
      {"time value", R"(\d+(\.\d+)?(s|ms|us|ns|m)?)", "a time (10ms, 1s)"},
  };
  for (const auto& r : rules) {
    if (syntax.rfind(r.starts, 0) != 0) continue;
    return matches(value, r.pattern) ? "" : r.takes;
  }
  // [A|B|C] and "comma-separated list of: [A|B]": the names UCX takes.
  const bool list = syntax.rfind("comma-separated list of: [", 0) == 0;
  if (!list && (syntax.empty() || syntax[0] != '[')) return "";
  const size_t b = syntax.find('['), e = syntax.rfind(']');
  if (b == std::string::npos || e == std::string::npos || e < b) return "";
  const auto names = split_on(lint_lower(syntax.substr(b + 1, e - b - 1)), '|');
  const std::set<std::string> known(names.begin(), names.end());
  for (const auto& item : list ? split_on(value, ',') : std::vector<std::string>{value}) {
    if (!known.count(lint_lower(item))) return (list ? "a comma-separated list of " : "one of ") + syntax.substr(b);
  }
  return "";
}

// UCX_TLS: every transport named must be one UCX knows here or one of its aliases.
void lint_tls(const std::string& path, int line, const std::string& value, const UcxFacts& ucx, LintReport& r) {
  std::set<std::string> known = tls_aliases();
  known.insert(ucx.transports.begin(), ucx.transports.end());
  std::string v = value;
  if (!v.empty() && v[0] == '^') v.erase(0, 1);
  for (std::string t : split_on(v, ',')) {
    if (!t.empty() && t[0] == '\\') t.erase(0, 1);
    if (known.count(lint_lower(t))) continue;
    const std::string near = closest_name(lint_lower(t), known);
    r.findings.push_back({path, line,
                          fmt::format("UCX_TLS names '{}', which is no transport of the installed UCX", t),
                          near.empty() ? "transports from `ucx_info -d` (here: " + fmt::format("{}", fmt::join(ucx.transports, ",")) +
                                             ") or UCX's aliases (sm, shm, tcp, rc, ud, dc, ...)"
                                       : "UCX_TLS with '" + near + "' for '" + t + "'"});
  }
}

}  // namespace

std::string lint_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

const UcxFacts* LintContext::ucx(std::string& why) {
  if (!ucx_asked_) {
    ucx_asked_ = true;
    auto config = run_for_output({"ucx_info", "-c", "-f"}, ucx_why_);
    if (config) {
      UcxFacts f = parse_ucx_config(*config);
      std::string d_why;
      if (auto devices = run_for_output({"ucx_info", "-d"}, d_why)) {
        static const std::regex transport(R"(#\s+Transport:\s+(\S+))");
        for (std::sregex_iterator it(devices->begin(), devices->end(), transport), end; it != end; ++it) {
          f.transports.insert((*it)[1].str());
        }
      }
      if (f.names.empty()) ucx_why_ = "ucx_info -c -f listed no UCX_* variable";
      else ucx_ = std::move(f);
    }
  }
  why = ucx_why_;
  return ucx_ ? &*ucx_ : nullptr;
}

void lint_ucx_variable(const std::string& path, int line, const std::string& var, const std::string& value,
                       const UcxFacts& ucx, LintReport& r) {
  if (!ucx.names.count(var)) {
    // A field no transport has (UCP's thresholds) with a transport's prefix: UCX reads only its plain name.
    for (const auto& t : ucx.transport_prefixes) {
      const std::string plain = "UCX_" + var.substr(std::min(var.size(), 4 + t.size()));
      if (var.rfind("UCX_" + t, 0) != 0 || !ucx.names.count(plain)) continue;
      r.findings.push_back({path, line,
                            fmt::format("{} is no variable of the installed UCX: {} takes no transport prefix "
                                        "(ucx_info -c lists no {}{})",
                                        var, plain, "UCX_" + t, plain.substr(4)),
                            fmt::format("{}={} (it then governs every transport)", plain, value)});
      return;
    }
    const std::string near = closest_name(var, ucx.names);
    r.findings.push_back({path, line,
                          fmt::format("{} is no variable of the installed UCX (ucx_info -c lists none of that name; "
                                      "UCX ignores it and warns)",
                                      var),
                          near.empty() ? "a name `ucx_info -c` lists, or remove the line"
                                       : fmt::format("{}={}", near, value)});
    return;
  }
  if (var == "UCX_TLS") return lint_tls(path, line, value, ucx, r);
  const auto s = ucx.syntax.find(var);
  if (s == ucx.syntax.end()) return;
  const std::string takes = value_problem(s->second, value);
  if (!takes.empty()) {
    r.findings.push_back({path, line, fmt::format("{}='{}' is not a value UCX reads for it ({})", var, value, s->second),
                          fmt::format("{}= with {}", var, takes)});
  }
}

}  // namespace acceltune
