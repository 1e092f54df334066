// The one reader of KEY=VALUE env files (see env_file.hpp). Line by line without iostreams: the
// runtime loader calls it in every process a job starts.
#include "tuner/env_file.hpp"

namespace acceltune {

bool is_env_name(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

Expected<EnvFileText> parse_env_text(std::string_view text, const std::string& source) {
  EnvFileText out;
  size_t at = 0;
  for (int n = 1; at < text.size(); ++n) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    if (line.empty()) continue;
    if (line[0] == '#') {
      out.comments.emplace_back(n, std::string(line));
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos || !is_env_name(line.substr(0, eq))) {
      return input_error("{}:{}: expected KEY=VALUE, got '{}'", source, n, line);
    }
    out.vars.emplace_back(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
  }
  return out;
}

bool is_bundle_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  return std::filesystem::is_directory(dir, ec) && std::filesystem::is_regular_file(dir / kBundleMarker, ec);
}

void relocate_bundle_files(std::vector<std::pair<std::string, std::string>>& vars,
                           const std::filesystem::path& bundle_dir) {
  std::error_code ec;
  const std::filesystem::path here = std::filesystem::absolute(bundle_dir, ec);
  for (auto& [var, value] : vars) {
    if (value.size() < 2 || value[0] != '/') continue;
    const std::filesystem::path name = std::filesystem::path(value).filename();
    if (name.empty() || name == kBundleMarker) continue;
    const std::filesystem::path beside = here / name;
    if (std::filesystem::is_regular_file(beside, ec)) value = beside.lexically_normal().string();
  }
}

}  // namespace acceltune
