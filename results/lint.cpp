// The lint entry points behind results/lint.hpp: a file's format from its name and content, a
// bundle folder file by file, the fingerprint header against this machine, and the helpers the
// format checks share (closest names, a tool's output). Each format's checks are in lint_FORMAT.cpp.
#include "results/lint.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sys/wait.h>

#include "probe/fingerprint.hpp"
#include "tuner/env_file.hpp"
#include "tuner/regular_file.hpp"

namespace fs = std::filesystem;

namespace acceltune {
namespace {

constexpr const char* kLintFingerprintTag = "# acceltune fingerprint:";
constexpr const char* kLintFieldsTag = "# acceltune fingerprint_fields:";

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The first line that is neither blank nor a comment.
std::string lint_first_content_line(const std::string& text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    const size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    return line.substr(b);
  }
  return "";
}

bool all_ucx_vars(const std::string& text) {
  auto parsed = parse_env_text(text, "");
  if (!parsed || parsed->vars.empty()) return false;
  return std::all_of(parsed->vars.begin(), parsed->vars.end(),
                     [](const auto& kv) { return kv.first.rfind("UCX_", 0) == 0; });
}

// Files of a bundle that are no tuning file: the page, the record, the scripts.
bool not_a_lint_target(const std::string& name) {
  return name == "report.html" || name == "bringup.json" || name == "job.sh" || name == "tcp-settings.sh";
}

Expected<std::string> read_text(const std::string& path) {
  std::string text, why;
  if (!read_regular_file(path.c_str(), text, why)) return input_error("{}: {}", path, why);
  return text;
}

Expected<LintReport> lint_one(const std::string& path, const std::string& format, LintContext& ctx, LintReport r) {
  ACCELTUNE_TRY_ASSIGN(const std::string text, read_text(path));
  const std::string f = format.empty() ? detect_lint_format(path, text) : format;
  if (f.empty()) {
    return input_error("{}: not a file lint knows (env, ucx-env, ompi-rules, nccl-tuner, mpich-json by name or "
                       "content); name its format with --format",
                       path);
  }
  r.linted.push_back(path + " (" + f + ")");
  if (f == "env" || f == "ucx-env") lint_env_text(path, text, f == "ucx-env", ctx, r);
  else if (f == "ompi-rules") lint_ompi_rules_text(path, text, ctx, r);
  else if (f == "nccl-tuner") lint_nccl_tuner_text(path, text, r);
  else if (f == "mpich-json") lint_mpich_json_text(path, text, r);
  if (f != "mpich-json") lint_fingerprint(path, text, ctx, r);
  // This file's findings in line order.
  const auto first = std::find_if(r.findings.begin(), r.findings.end(), [&](const LintFinding& x) { return x.path == path; });
  std::stable_sort(first, r.findings.end(), [](const LintFinding& a, const LintFinding& b) { return a.line < b.line; });
  return r;
}

}  // namespace

std::string to_string(const LintFinding& f) {
  return f.path + ":" + std::to_string(f.line) + ": " + f.problem + (f.fix.empty() ? "" : "; write " + f.fix);
}

const std::vector<std::string>& lint_formats() {
  static const std::vector<std::string> f = {"env", "ucx-env", "ompi-rules", "nccl-tuner", "mpich-json"};
  return f;
}

std::string closest_name(const std::string& name, const std::set<std::string>& names) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& n : names) {
    const size_t d = edit_distance(name, n);
    if (d < best_d) best_d = d, best = n;
  }
  // A third of the name at most, so a wholly other word is not offered as a spelling.
  return best_d <= std::max<size_t>(2, name.size() / 3) ? best : "";
}

std::optional<std::string> run_for_output(const std::vector<std::string>& argv, std::string& why) {
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;  // fixed words of this program only
  std::FILE* p = ::popen((cmd + " 2>/dev/null").c_str(), "r");
  if (!p) {
    why = "cannot start " + argv[0];
    return std::nullopt;
  }
  std::string out;
  char buf[65536];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = ::pclose(p);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    why = WIFEXITED(status) && WEXITSTATUS(status) == 127 ? argv[0] + " is not installed"
                                                           : "'" + cmd + "' failed";
    return std::nullopt;
  }
  return out;
}

const Json& LintContext::fingerprint() {
  if (!fingerprint_) fingerprint_ = probe_fingerprint(ProbeScope::identity);
  return *fingerprint_;
}

void LintContext::set_ucx(std::optional<UcxFacts> f, std::string why) {
  ucx_asked_ = true;
  ucx_ = std::move(f);
  ucx_why_ = std::move(why);
}

void LintContext::set_ompi(std::optional<OmpiFacts> f, std::string why) {
  ompi_asked_ = true;
  ompi_ = std::move(f);
  ompi_why_ = std::move(why);
}

std::string detect_lint_format(const std::string& path, const std::string& text) {
  const std::string name = fs::path(path).filename().string();
  const std::string ext = fs::path(path).extension().string();
  const std::string first = lint_first_content_line(text);
  const size_t eq = first.find('=');
  const bool env_line = eq != std::string::npos && is_env_name(first.substr(0, eq));
  // By name: the bundle's files and the exports' usual names.
  if (name.find("ompi-rules") != std::string::npos) return "ompi-rules";
  if (name.find("nccl-tuner") != std::string::npos) return "nccl-tuner";
  if (ext == ".json" && text.find("collective=") != std::string::npos) return "mpich-json";
  if (name == "ucx.env" || ((ext == ".env" || env_line) && all_ucx_vars(text))) return "ucx-env";
  if (ext == ".env" || name == kBundleEnv) return "env";
  // By content: the first line that is not a comment.
  if (!first.empty()) {
    if (first[0] == '{') return "mpich-json";
    if (env_line) return "env";
    if (std::count(first.begin(), first.end(), ',') >= 7) return "nccl-tuner";
    if (first[0] >= '0' && first[0] <= '9') return "ompi-rules";
    return "";
  }
  // Comments only: the header the writer left.
  if (text.find("Open MPI coll/tuned") != std::string::npos) return "ompi-rules";
  if (text.find("nccl-tuner table") != std::string::npos) return "nccl-tuner";
  if (text.find("# acceltune: space ") != std::string::npos) return "env";  // an env export that sets nothing
  return "";
}

void lint_fingerprint(const std::string& path, const std::string& text, LintContext& ctx, LintReport& r) {
  std::string id;
  Json fields;
  int id_line = 0, fields_line = 0, n = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    const std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++n;
    if (line.rfind(kLintFieldsTag, 0) == 0) {
      fields = Json::parse(line.substr(std::string(kLintFieldsTag).size()), nullptr, false);
      fields_line = n;
    } else if (line.rfind(kLintFingerprintTag, 0) == 0) {
      id = line.substr(std::string(kLintFingerprintTag).size());
      id.erase(0, id.find_first_not_of(' '));
      id = id.substr(0, id.find(' '));
      id_line = n;
    }
  }
  if (fields_line && (fields.is_discarded() || !fields.is_object())) {
    r.findings.push_back({path, fields_line, "the fingerprint fields are not a JSON object",
                          "the line as `acceltune export` writes it, or remove it"});
    return;
  }
  if (!id_line && !fields_line) return;
  const Json& here = ctx.fingerprint();
  const std::string here_id = here.value("id", "");
  if (fields_line) {
    const Json own = here.value("loader_fields", Json::object());
    std::string diff;
    for (const auto& [k, v] : fields.items()) {
      if (own.contains(k) && own[k] == v) continue;
      diff += fmt::format("{}{} (file {}, here {})", diff.empty() ? "" : ", ", k, v.dump(),
                          own.contains(k) ? own[k].dump() : "absent");
    }
    if (!diff.empty()) {
      r.findings.push_back({path, fields_line,
                            fmt::format("exported for other hardware (fingerprint {}, this machine {}): {}",
                                        id.empty() ? "?" : id, here_id, diff),
                            "a file searched on this machine (acceltune search, then export), or keep it for the "
                            "machines it was measured on"});
    }
    return;
  }
  if (!id.empty() && !here_id.empty() && id != here_id) {
    r.findings.push_back({path, id_line,
                          fmt::format("exported for fingerprint {}, this machine is {} (the file carries no "
                                      "fingerprint_fields to say what differs)",
                                      id, here_id),
                          "an export made on this machine, or keep it for the machines it was measured on"});
  }
}

Expected<LintReport> lint_path(const std::string& path, const std::string& format, LintContext& ctx) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return input_error("{}: no such file or directory", path);
  if (!fs::is_directory(path, ec)) return lint_one(path, format, ctx, {});
  LintReport r;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    if (e.is_regular_file(ec) && !not_a_lint_target(e.path().filename().string())) files.push_back(e.path());
  }
  if (ec) return input_error("{}: cannot list the folder: {}", path, ec.message());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    auto text = read_text(f.string());
    if (!text) return text.error();
    // A folder lints what it recognises; other files (logs, notes) are no tuning files.
    const std::string fmt_of = format.empty() ? detect_lint_format(f.string(), *text) : format;
    if (fmt_of.empty()) continue;
    ACCELTUNE_TRY_ASSIGN(r, lint_one(f.string(), fmt_of, ctx, std::move(r)));
  }
  if (r.linted.empty()) {
    return input_error("{}: holds no file lint recognises (acceltune.env, ucx.env, ompi-rules.conf, "
                       "nccl-tuner.conf, a selection .json)",
                       path);
  }
  return r;
}

std::vector<LintFinding> lint_file(const std::string& path, const std::string& format) {
  LintContext ctx;
  auto r = lint_path(path, format, ctx);
  if (!r) return {{path, 0, r.error().message, "a readable file in one of the formats lint knows"}};
  return r->findings;
}

}  // namespace acceltune
