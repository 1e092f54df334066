// A bring-up bundle read back as the input of other commands: `exec --config BUNDLE` and the
// loader load its merged acceltune.env, `verify BUNDLE` measures that environment again through
// every study's plain client, `best`, `report` and `compare` show its studies (all, or one by name).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "results/study_dir.hpp"
#include "tuner/env_file.hpp"
#include "tuner/expected.hpp"

namespace acceltune::cli {

// A folder holding bringup.json (tuner/env_file.hpp's is_bundle_dir).
bool is_bundle(const std::string& path);

// The bundle's study folders (studies/SPACE holding a study.json) in the order bring-up ran them;
// with `only`, the one of that space, or bad input naming the spaces there.
Expected<std::vector<std::string>> bundle_study_dirs(const std::string& bundle, const std::string& only = "");

// Those studies read back, each with its best table.
Expected<std::vector<StudyData>> load_bundle_studies(const std::string& bundle, const std::string& only = "");

// The merged acceltune.env as the bundle's jobs get it: its active lines, a path to a bundle file
// being the file beside acceltune.env now (the bundle may have moved since it was written).
Expected<std::vector<std::pair<std::string, std::string>>> bundle_env(const std::string& bundle);

// The findings of `acceltune lint` on the bundle's files, one line each (FILE:LINE: ...); a file
// lint cannot read is a line too. Empty when the bundle is clean.
std::vector<std::string> lint_bundle(const std::string& bundle);

}  // namespace acceltune::cli
