// The definitions behind tools/bundle_input.hpp: a bring-up bundle as the input of other commands.
#include "tools/bundle_input.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "results/lint.hpp"
#include "tuner/value.hpp"

namespace acceltune::cli {

namespace fs = std::filesystem;

bool is_bundle(const std::string& path) { return is_bundle_dir(path); }

Expected<std::vector<std::string>> bundle_study_dirs(const std::string& bundle, const std::string& only) {
  std::error_code ec;
  const fs::path root(bundle);
  std::vector<std::string> spaces;
  // bring-up's order, from bringup.json; then any other study folder, by name.
  std::ifstream in(root / kBundleMarker);
  const Json summary = Json::parse(in, nullptr, false);
  if (summary.is_object() && summary.contains("families") && summary["families"].is_array()) {
    for (const auto& f : summary["families"]) {
      if (!f.is_object() || !f.contains("studies") || !f["studies"].is_array()) continue;
      for (const auto& s : f["studies"]) {
        if (s.is_object() && s.contains("space") && s["space"].is_string()) spaces.push_back(s["space"].get<std::string>());
      }
    }
  }
  std::vector<std::string> others;
  for (const auto& e : fs::directory_iterator(root / "studies", ec)) {
    const std::string name = e.path().filename().string();
    if (std::find(spaces.begin(), spaces.end(), name) == spaces.end()) others.push_back(name);
  }
  std::sort(others.begin(), others.end());
  spaces.insert(spaces.end(), others.begin(), others.end());
  std::vector<std::string> dirs, names;
  for (const auto& s : spaces) {
    const fs::path dir = root / "studies" / s;
    if (!fs::exists(dir / "study.json", ec)) continue;  // skipped or never started
    names.push_back(s);
    if (only.empty() || only == s) dirs.push_back(dir.string());
  }
  if (!only.empty() && dirs.empty()) {
    return input_error("{}: the bundle has no study of space '{}' (it has: {})", bundle, only,
                       names.empty() ? std::string("none") : join(names, ", "));
  }
  if (dirs.empty()) return input_error("{}: the bundle holds no study (bring-up finished none)", bundle);
  return dirs;
}

Expected<std::vector<StudyData>> load_bundle_studies(const std::string& bundle, const std::string& only) {
  ACCELTUNE_TRY_ASSIGN(const std::vector<std::string> dirs, bundle_study_dirs(bundle, only));
  std::vector<StudyData> out;
  for (const auto& d : dirs) {
    ACCELTUNE_TRY_ASSIGN(StudyData s, load_study_dir(d));
    out.push_back(std::move(s));
  }
  return out;
}

Expected<std::vector<std::pair<std::string, std::string>>> bundle_env(const std::string& bundle) {
  const fs::path path = fs::path(bundle) / kBundleEnv;
  std::ifstream in(path);
  if (!in) return input_error("{}: cannot read the bundle's environment: {}", path.string(), std::strerror(errno));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ACCELTUNE_TRY_ASSIGN(EnvFileText parsed, parse_env_text(text, path.string()));
  relocate_bundle_files(parsed.vars, bundle);
  return parsed.vars;
}

std::vector<std::string> lint_bundle(const std::string& bundle) {
  LintContext ctx;
  std::vector<std::string> out;
  auto report = lint_path(bundle, "", ctx);
  if (!report) return {report.error().message};
  for (const auto& f : report->findings) out.push_back(to_string(f));
  return out;
}

}  // namespace acceltune::cli
