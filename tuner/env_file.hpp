// KEY=VALUE files, as acceltune's env exports write them and `acceltune exec` and the runtime
// loader read them: one variable a line, blank lines and '#' comments skipped (comments are kept
// for readers that look for tags in them), trailing white space and CR dropped, every KEY a
// valid environment variable name. One reader, so the command and the loader never diverge.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tuner/expected.hpp"

namespace acceltune {

struct EnvFileText {
  std::vector<std::pair<std::string, std::string>> vars;  // in file order
  std::vector<std::pair<int, std::string>> comments;      // line number, the whole '#' line
};

// Letters, digits and '_', not starting with a digit.
bool is_env_name(std::string_view name);
// Parses the text of an env file; `source` names it in errors ("FILE:LINE: expected KEY=VALUE, got '...'").
Expected<EnvFileText> parse_env_text(std::string_view text, const std::string& source);

// A bring-up bundle is a folder holding bringup.json; its jobs load its merged acceltune.env.
inline constexpr const char* kBundleMarker = "bringup.json";
inline constexpr const char* kBundleEnv = "acceltune.env";
bool is_bundle_dir(const std::filesystem::path& dir);
// acceltune.env names the bundle's own files (rules, tables) by the absolute path where the bundle
// was written; read from `bundle_dir`, each such value becomes the file of that name beside it now,
// as job.sh finds them, so a moved or copied bundle loads its own files. A value naming a file the
// bundle lacks stays as it is.
void relocate_bundle_files(std::vector<std::pair<std::string, std::string>>& vars,
                           const std::filesystem::path& bundle_dir);

}  // namespace acceltune
